"""The A2A gRPC binding (§10), server and client: `pip install interlink[grpc]`.

Server: `create_grpc_server(executor, card, ...)` serves an agent over gRPC alone, with
the options of `create_app`; `GrpcServer.for_app(app)` serves gRPC beside an HTTP app,
sharing its `A2AServer` (one store, one runtime): `interlink a2a serve --grpc-port N`
does that; `GrpcServer.for_router(router)` serves each tenant of a `TenantRouter` by the
`tenant` of its requests. Importing this module imports grpcio and protobuf;
`interlink.a2a` does not. For raw clients (the checker): `POOL`, the descriptor pool of
a2a.proto's messages, and `STATUS_KEY`/`decode_status` for the `google.rpc.Status` of an
error's trailing metadata.
"""

from interlink.a2a._grpc._status import KEY as STATUS_KEY
from interlink.a2a._grpc._status import decode as decode_status
from interlink.a2a._grpc.a2a_pb2 import POOL
from interlink.a2a.server.bindings._grpc import (
    SERVICE,
    GrpcBinding,
    GrpcServer,
    create_grpc_server,
)

__all__ = [
    "POOL",
    "SERVICE",
    "STATUS_KEY",
    "GrpcBinding",
    "GrpcServer",
    "create_grpc_server",
    "decode_status",
]
