"""The A2A gRPC binding (§10), server and client: `pip install interlink[grpc]`.

Server: `create_grpc_server(executor, card, ...)` serves an agent over gRPC alone, with
the options of `create_app`; `GrpcServer.for_app(app)` serves gRPC beside an HTTP app,
sharing its `A2AServer` (one store, one runtime): `interlink a2a serve --grpc-port N`
does that; `GrpcServer.for_router(router)` serves each tenant of a `TenantRouter` by the
`tenant` of its requests. Importing this module imports grpcio and protobuf;
`interlink.a2a` does not.
"""

from interlink.a2a.server.bindings._grpc import (
    SERVICE,
    GrpcBinding,
    GrpcServer,
    create_grpc_server,
)

__all__ = ["SERVICE", "GrpcBinding", "GrpcServer", "create_grpc_server"]
