"""`interlink a2a check` cases: the gRPC binding (§10) when the card declares it.

Every shared case is asked again over gRPC as `grpc.<id>`: each method by its generic
call, service parameters as metadata (§10.2), errors judged by their status code and the
`google.rpc.ErrorInfo` in their details (§5.4, §10.6), streams as server-streaming calls
(§10.7). They SKIP, with the reason, when the card declares no gRPC interface the checker
may contact or when interlink[grpc] is not installed."""

from __future__ import annotations

from interlink.check._a2a_bindings import GRPC
from interlink.check._a2a_runner import on_binding

__all__: list[str] = []

CASES, SLOW = on_binding(GRPC, "grpc")
