"""The client speaking A2A 0.3: the dialects of 0.3 for the JSON-RPC transport
(`_jsonrpc.DIALECTS["0.3"]`, `V03`) and the HTTP+JSON one (`_rest.DIALECTS["0.3"]`,
`V03_REST`).

The client builds every request in 1.0 as always; on the wire it becomes the 0.3 method
and params (`compat.request_to_v03`), and each result, stream event and error comes back
as its 1.0 type (`compat.result_from_v03`, `compat.error_from_v03`), so the caller sees
the same objects and the same typed errors whatever version the agent speaks. Over
HTTP+JSON the 0.3 call goes to its `/v1/...` route in the ProtoJSON of the 0.3 proto and
its answer comes back the same way (`compat._v03_rest_calls`); an error is the 0.3 error
object, or (the official SDK's server) `{"message"}` and an HTTP status that names it.
`ListTasks` has no 0.3 form: asking a 0.3 agent for it is `UnsupportedOperation`,
before anything is sent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, TypeVar, cast

import msgspec

from interlink.a2a._errors import InvalidAgentResponse, UnsupportedOperation
from interlink.a2a._methods import Method
from interlink.a2a.client._http import RestRequest
from interlink.a2a.compat import _v03 as compat
from interlink.a2a.compat import _v03_rest_calls as rest
from interlink.a2a.compat import _v03_types as v
from interlink.jsonrpc import ErrorResponse, RpcError, decode_message

__all__ = ["V03", "V03_REST"]

R = TypeVar("R", bound=msgspec.Struct)


def _old(method: Method[msgspec.Struct, msgspec.Struct]) -> str:
    """The 0.3 method of `method`; `UnsupportedOperation` naming it when there is none."""
    old = compat.METHOD_TO_V03.get(method.name)
    if old is None:
        raise UnsupportedOperation(f"{method.name} has no A2A 0.3 form: the agent speaks 0.3")
    return old


def _result(method: Method[msgspec.Struct, R], read: Callable[[], object]) -> R:
    """The 1.0 result of `method` from the 0.3 JSON-RPC result that `read` gives (decoded
    JSON); `InvalidAgentResponse` when it is not one."""
    old = _old(method)
    try:
        return cast(R, compat.result_from_v03(old, read()))
    except (msgspec.ValidationError, msgspec.DecodeError, ValueError) as exc:
        raise InvalidAgentResponse(f"{old}: invalid 0.3 result: {exc}") from None


def _typed(error: v.JSONRPCError) -> RpcError:
    return RpcError.from_error_object(compat.error_from_v03(error), "a2a")


class _V03:
    """A2A 0.3 over JSON-RPC: `message/send` ..., `kind`-tagged objects, free-form error
    data."""

    version: Final = "0.3"

    def method_name(self, method: Method[msgspec.Struct, msgspec.Struct]) -> str:
        return _old(method)

    def encode_params(
        self, method: Method[msgspec.Struct, msgspec.Struct], params: msgspec.Struct
    ) -> bytes:
        """The 0.3 params; `{}` for a method without any (JSON-RPC params are structured)."""
        _, old = compat.request_to_v03(method.name, params)
        return b"{}" if old is None else msgspec.json.encode(old)

    def decode_result(self, method: Method[msgspec.Struct, R], result: msgspec.Raw) -> R:
        return _result(method, lambda: msgspec.json.decode(result))

    def null_result_may_be_absent(self, method: Method[msgspec.Struct, msgspec.Struct]) -> bool:
        # the 0.3 delete's result is null, which the 0.3 SDK's server leaves out
        return method.name == "DeleteTaskPushNotificationConfig"

    def error(self, body: bytes) -> RpcError | None:
        message = decode_message(body)
        if not isinstance(message, ErrorResponse):
            return None
        error = message.error
        return _typed(v.JSONRPCError(code=error.code, message=error.message, data=error.data))


class _V03Rest:
    """A2A 0.3 over HTTP+JSON: `/v1/message:send` ..., ProtoJSON of the 0.3 proto."""

    version: Final = "0.3"
    content_type: Final = "application/json"

    def request(
        self, method: Method[msgspec.Struct, msgspec.Struct], params: msgspec.Struct
    ) -> RestRequest:
        _old(method)  # (ListTasks: refused before anything is made)
        name, value = compat.request_to_v03(method.name, params)
        call = rest.request_to_rest(name, None if value is None else msgspec.to_builtins(value))
        body = None if call.body is None else msgspec.json.encode(call.body)
        return RestRequest(call.verb, call.path, call.query, body)

    def decode_result(self, method: Method[msgspec.Struct, R], body: bytes) -> R:
        old = _old(method)
        return _result(method, lambda: rest.result_from_rest(old, msgspec.json.decode(body)))

    def error(self, body: bytes) -> RpcError | None:
        old = rest.error_from_rest(body)
        return None if old is None else _typed(old)

    def status_error(self, method: str, status: int, body: bytes) -> RpcError | None:
        old = rest.error_from_status(compat.METHOD_TO_V03.get(method, ""), status, body)
        return None if old is None else _typed(old)


V03: Final = _V03()
V03_REST: Final = _V03Rest()
