"""Handler registration shared by `Agent` and `Client`: `obj.on(methods.X)(handler)`.

A registered handler takes precedence over the class's method of the same protocol
method, so an agent can be a bare `Agent()` with handlers, a subclass, or both.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

from interlink.jsonrpc import RpcError

if TYPE_CHECKING:
    from interlink.acp._methods import MethodSpec

__all__ = ["Handlers"]

P = TypeVar("P")
R = TypeVar("R")


class Handlers:
    """Mixin: a per-instance table of registered handlers, by wire method, and the
    extension methods' defaults (-32601 for a request, ignored for a notification)."""

    #: by wire method; the class's empty one until `on` gives the instance its own
    _registered: Mapping[str, Callable[[Any], Awaitable[Any]]] = MappingProxyType({})

    def on(
        self, method: MethodSpec[P, R]
    ) -> Callable[[Callable[[P], Awaitable[R]]], Callable[[P], Awaitable[R]]]:
        """Register the decorated coroutine function as the handler of `method` (a
        notification's handler returns None)."""

        def register(handler: Callable[[P], Awaitable[R]]) -> Callable[[P], Awaitable[R]]:
            self._registered = {**self._registered, method.name: handler}
            return handler

        return register

    def registered(self, method: str) -> Callable[[Any], Awaitable[Any]] | None:
        return self._registered.get(method)

    async def ext_method(self, method: str, params: object) -> object:
        raise RpcError.method_not_found(method)

    async def ext_notification(self, method: str, params: object) -> None:
        return None
