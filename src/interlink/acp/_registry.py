"""Handler registration shared by `Agent` and `Client`: `obj.on(methods.X)(handler)`.

A registered handler takes precedence over the class's method of the same protocol
method, so an agent can be a bare `Agent()` with handlers, a subclass, or both.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar, overload

from interlink.jsonrpc import NotificationType, RequestType

__all__ = ["Handlers"]

P = TypeVar("P")
R = TypeVar("R")


class Handlers:
    """Mixin: a per-instance table of registered handlers, by wire method."""

    _registered: dict[str, Callable[[object], Awaitable[object]]]

    @overload
    def on(
        self, method: RequestType[P, R]
    ) -> Callable[[Callable[[P], Awaitable[R]]], Callable[[P], Awaitable[R]]]: ...

    @overload
    def on(
        self, method: NotificationType[P]
    ) -> Callable[[Callable[[P], Awaitable[None]]], Callable[[P], Awaitable[None]]]: ...

    def on(  # type: ignore[misc]  # one implementation serves both overloads
        self, method: RequestType[P, R] | NotificationType[P]
    ) -> Callable[[Callable[[P], Awaitable[object]]], Callable[[P], Awaitable[object]]]:
        """Register the decorated coroutine function as the handler of `method`."""

        def register(handler: Callable[[P], Awaitable[object]]) -> Callable[[P], Awaitable[object]]:
            if "_registered" not in self.__dict__:
                self._registered = {}
            self._registered[method.method] = handler  # type: ignore[assignment]
            return handler

        return register

    def registered(self, method: str) -> Callable[[object], Awaitable[object]] | None:
        table = self.__dict__.get("_registered")
        return None if table is None else table.get(method)
