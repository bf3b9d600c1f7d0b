"""The client speaking A2A 0.3 over JSON-RPC: the `Dialect` of 0.3 for the JSON-RPC
transport (`_jsonrpc.DIALECTS["0.3"]`).

The client builds every request in 1.0 as always; on the wire it becomes the 0.3 method
and params (`compat.request_to_v03`), and each result, stream event and error comes back
as its 1.0 type (`compat.result_from_v03`, `compat.error_from_v03`), so the caller sees
the same objects and the same typed errors whatever version the agent speaks.
`ListTasks` has no 0.3 form: asking a 0.3 agent for it is `UnsupportedOperation`,
before anything is sent.
"""

from __future__ import annotations

from typing import Final, TypeVar, cast

import msgspec

from interlink.a2a._errors import InvalidAgentResponse, UnsupportedOperation
from interlink.a2a._methods import Method
from interlink.a2a.compat import _v03 as compat
from interlink.a2a.compat import _v03_types as v
from interlink.jsonrpc import ErrorResponse, RpcError, decode_message

__all__ = ["V03"]

R = TypeVar("R", bound=msgspec.Struct)


class _V03:
    """A2A 0.3: `message/send` ..., `kind`-tagged objects, free-form error data."""

    version: Final = "0.3"

    def method_name(self, method: Method[msgspec.Struct, msgspec.Struct]) -> str:
        old = compat.METHOD_TO_V03.get(method.name)
        if old is None:
            raise UnsupportedOperation(f"{method.name} has no A2A 0.3 form: the agent speaks 0.3")
        return old

    def encode_params(
        self, method: Method[msgspec.Struct, msgspec.Struct], params: msgspec.Struct
    ) -> bytes:
        """The 0.3 params; `{}` for a method without any (JSON-RPC params are structured)."""
        _, old = compat.request_to_v03(method.name, params)
        return b"{}" if old is None else msgspec.json.encode(old)

    def decode_result(self, method: Method[msgspec.Struct, R], result: msgspec.Raw) -> R:
        old = self.method_name(method)
        try:
            return cast(R, compat.result_from_v03(old, msgspec.json.decode(result)))
        except (msgspec.ValidationError, msgspec.DecodeError, ValueError) as exc:
            raise InvalidAgentResponse(f"{old}: invalid 0.3 result: {exc}") from None

    def error(self, body: bytes) -> RpcError | None:
        message = decode_message(body)
        if not isinstance(message, ErrorResponse):
            return None
        error = message.error
        old = v.JSONRPCError(code=error.code, message=error.message, data=error.data)
        return RpcError.from_error_object(compat.error_from_v03(old), "a2a")


V03: Final = _V03()
