"""The JSON-RPC error model: one `RpcError` family, each class knowing its code.

An `RpcError` is what a peer told us (or what we tell a peer): it builds its
`ErrorObject` / `ErrorResponse` and is rebuilt from one (`from_error_object`).
Codes that no registered class claims stay as plain `RpcError` with the code kept,
so a peer's implementation-defined error is a generic failure, never a crash.
Protocol packages add their codes by subclassing with a `CODE` class attribute;
`__init_subclass__` registers them.

Errors of *our* caller (misuse of the API) and the end of a connection are not
`RpcError`s: see `ConnectionClosed` and `ProtocolMisuse`.
"""

from __future__ import annotations

from typing import ClassVar

import msgspec

from ._messages import ErrorObject, ErrorResponse, RequestId

# code -> class, per protocol: A2A's -32002 is not ACP's -32002. "" is the core's.
_REGISTRIES: dict[str, dict[int, type[RpcError]]] = {"": {}}


class RpcError(Exception):
    """A JSON-RPC error: raised by handlers to answer with it, raised to callers when
    the peer answered with it.

    Subclasses set `CODE` and `MESSAGE`; constructing one without a message
    uses the default. The base class carries any code (unknown codes from peers).
    """

    CODE: ClassVar[int] = 0
    MESSAGE: ClassVar[str] = "Error"
    #: the protocol whose code table the class belongs to ("" = the core's)
    PROTOCOL: ClassVar[str] = ""

    def __init__(
        self,
        message: str | None = None,
        data: object = msgspec.UNSET,
        *,
        code: int | None = None,
    ) -> None:
        self.code: int = type(self).CODE if code is None else code
        self.message: str = type(self).MESSAGE if message is None else message
        self.data: object = data
        #: rebuilt from a peer's answer (not raised by our own code)
        self.from_peer = False
        super().__init__(self.message)

    def __init_subclass__(
        cls, code: int | None = None, message: str | None = None, **kwargs: object
    ) -> None:
        """`class X(RpcError, code=-32001, message="..."): ...` sets CODE and MESSAGE."""
        super().__init_subclass__(**kwargs)
        if code is not None:
            cls.CODE = code
        if message is not None:
            cls.MESSAGE = message
        if "CODE" in cls.__dict__:
            registry = _REGISTRIES.setdefault(cls.PROTOCOL, {})
            existing = registry.get(cls.CODE)
            if existing is not None and not issubclass(cls, existing):
                raise TypeError(
                    f"JSON-RPC error code {cls.CODE} is already registered by "
                    f"{existing.__qualname__}"
                )
            registry[cls.CODE] = cls

    def __repr__(self) -> str:
        data = "" if self.data is msgspec.UNSET else f", data={self.data!r}"
        return f"{type(self).__name__}(code={self.code}, message={self.message!r}{data})"

    def __str__(self) -> str:
        """`message (code): reason`, the reason read from `data` (its `detail`, else a
        short rendering of its fields), on one line and bounded in length."""
        text = f"{_bounded(self.message, _MESSAGE_LIMIT)} ({self.code})"
        reason = _reason(self.data)
        return f"{text}: {reason}" if reason and reason not in self.message else text

    # -- wire -------------------------------------------------------------------------

    def to_error_object(self) -> ErrorObject:
        return ErrorObject(code=self.code, message=self.message, data=self.data)

    def to_response(self, id: RequestId | None) -> ErrorResponse:
        return ErrorResponse(id=id, error=self.to_error_object())

    @staticmethod
    def from_response(response: ErrorResponse) -> RpcError:
        return RpcError.from_error_object(response.error)

    @staticmethod
    def from_error_object(error: ErrorObject, protocol: str = "") -> RpcError:
        """Rebuild the exception a peer's error object stands for, looking the code up in
        `protocol`'s table first, then in the core's.

        A code no class claims gives a plain `RpcError` that keeps the code.
        """
        cls = _REGISTRIES.get(protocol, {}).get(error.code) or _REGISTRIES[""].get(error.code)
        if cls is None:
            exc = RpcError(error.message, error.data, code=error.code)
        else:
            exc = cls.__new__(cls)
            RpcError.__init__(exc, error.message, error.data, code=error.code)
        exc.from_peer = True
        return exc

    # -- constructors (the names the protocols use) ------------------------------------

    @staticmethod
    def parse_error(detail: str | None = None) -> ParseError:
        return ParseError(data=_detail(detail))

    @staticmethod
    def invalid_request(detail: str | None = None) -> InvalidRequest:
        return InvalidRequest(data=_detail(detail))

    @staticmethod
    def method_not_found(method: str) -> MethodNotFound:
        return MethodNotFound(data={"method": method})

    @staticmethod
    def invalid_params(data: object = msgspec.UNSET) -> InvalidParams:
        return InvalidParams(data=data)

    @staticmethod
    def internal_error(data: object = msgspec.UNSET) -> InternalError:
        return InternalError(data=data)

    @staticmethod
    def request_cancelled() -> RequestCancelled:
        return RequestCancelled()

    @staticmethod
    def auth_required(data: object = msgspec.UNSET) -> AuthRequired:
        return AuthRequired(data=data)

    @staticmethod
    def resource_not_found(uri: str | None = None) -> ResourceNotFound:
        return ResourceNotFound(data=msgspec.UNSET if uri is None else {"uri": uri})


def _detail(detail: str | None) -> object:
    return msgspec.UNSET if detail is None else {"detail": detail}


_MESSAGE_LIMIT = 500
_REASON_LIMIT = 300
_ITEMS = 20  # (of a list or an object: enough to read, a bound on the work)


def _bounded(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _reason(data: object) -> str:
    """Why, as `data` says it: `{"detail": ...}` (the core's and ACP's errors), a
    string, the field violations and `ErrorInfo` metadata of A2A's
    `[ErrorInfo, BadRequest]` arrays, else the fields as `key=value`."""
    if data is msgspec.UNSET or data is None:
        return ""
    try:
        text = _render(data)
    except (TypeError, ValueError, RecursionError):  # not JSON-like: as Python shows it
        text = repr(data)
    return _bounded(text, _REASON_LIMIT)


def _render(data: object) -> str:
    if isinstance(data, str):
        return data
    if isinstance(data, list):
        parts = [part for part in map(_render, data[:_ITEMS]) if part]
        if not parts:  # only ErrorInfos without metadata: their reasons say it
            parts = [str(item["reason"]) for item in data if _is_error_info(item)]
        return "; ".join(dict.fromkeys(parts))
    if not isinstance(data, dict):
        return _scalar(data)
    detail = data.get("detail")
    if isinstance(detail, str):
        return detail
    violations = data.get("fieldViolations")
    if isinstance(violations, list):
        return "; ".join(
            f"{v.get('field', '')}: {v.get('description', '')}"
            for v in violations
            if isinstance(v, dict)
        )
    if _is_error_info(data):
        return _render(data.get("metadata") or {})
    fields = [(key, value) for key, value in data.items() if key != "@type"][:_ITEMS]
    return ", ".join(f"{key}={_scalar(value)}" for key, value in fields)


def _scalar(value: object) -> str:
    return value if isinstance(value, str) else msgspec.json.encode(value).decode()


def _is_error_info(item: object) -> bool:
    return isinstance(item, dict) and "@type" in item and "reason" in item


class ParseError(RpcError, code=-32700, message="Parse error"): ...


class InvalidRequest(RpcError, code=-32600, message="Invalid request"): ...


class MethodNotFound(RpcError, code=-32601, message="Method not found"): ...


class InvalidParams(RpcError, code=-32602, message="Invalid params"): ...


class InternalError(RpcError, code=-32603, message="Internal error"): ...


class RequestCancelled(RpcError, code=-32800, message="Request cancelled"): ...


class AuthRequired(RpcError, code=-32000, message="Authentication required"): ...


class ResourceNotFound(RpcError, code=-32002, message="Resource not found"): ...


class ConnectionClosed(Exception):
    """The connection ended before the awaited answer arrived.

    `reason` says why (EOF, a transport error, a child process that exited, ...).
    """

    def __init__(self, reason: str = "connection closed") -> None:
        self.reason = reason
        super().__init__(reason)


class ProtocolMisuse(Exception):
    """Our caller used the API in a way the protocol forbids (a local bug, not a
    peer's fault): for example sending on a closed connection."""
