"""Authentication for the card's security schemes, before any JSON-RPC is read.

An `Authenticator` looks at a request's headers and query and returns the caller's
principal, or `None` when the request does not carry its credentials. The app tries
each authenticator of the agent; when none accepts, the answer is HTTP 401 with a
`WWW-Authenticate` challenge (authentication failures are not JSON-RPC errors). API key
(header or query) and HTTP bearer are built in; anything else implements the protocol.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, Mapping
from typing import Literal, Protocol

from interlink.a2a._types import (
    APIKeySecurityScheme,
    HTTPAuthSecurityScheme,
    SecurityScheme,
)

__all__ = ["ApiKeyAuth", "Authenticator", "BearerAuth", "Request"]


class Request(Protocol):
    """What an authenticator sees of an HTTP request."""

    @property
    def headers(self) -> Mapping[str, str]:
        """Lower-cased names."""
        ...

    @property
    def query(self) -> Mapping[str, list[str]]: ...


class Authenticator(Protocol):
    """Names a security scheme of the card and checks requests against it."""

    name: str
    """The key of the scheme in the card's `securitySchemes`."""

    def scheme(self) -> SecurityScheme: ...

    def challenge(self) -> str:
        """The `WWW-Authenticate` value when credentials are missing or wrong."""
        ...

    async def authenticate(self, request: Request) -> str | None: ...


def _lookup(
    credentials: Mapping[str, str] | Callable[[str], Awaitable[str | None]],
) -> Callable[[str], Awaitable[str | None]]:
    if callable(credentials):
        return credentials
    table = dict(credentials)

    async def lookup(secret: str) -> str | None:
        for known, principal in table.items():  # constant time per comparison
            if hmac.compare_digest(known.encode(), secret.encode()):
                return principal
        return None

    return lookup


class ApiKeyAuth:
    """An API key in a header (default `X-API-Key`) or a query parameter.

    `keys` maps each key to the principal it stands for, or is an async function that
    does so (returning `None` for unknown keys).
    """

    def __init__(
        self,
        keys: Mapping[str, str] | Callable[[str], Awaitable[str | None]],
        *,
        parameter: str = "X-API-Key",
        location: Literal["header", "query"] = "header",
        name: str = "apiKey",
    ) -> None:
        self._lookup = _lookup(keys)
        self.parameter = parameter
        self.location = location
        self.name = name

    def scheme(self) -> SecurityScheme:
        return SecurityScheme(
            api_key_security_scheme=APIKeySecurityScheme(
                location=self.location, name=self.parameter
            )
        )

    def challenge(self) -> str:
        return f'ApiKey {self.location}="{self.parameter}"'

    async def authenticate(self, request: Request) -> str | None:
        if self.location == "header":
            secret = request.headers.get(self.parameter.lower(), "")
        else:
            secret = (request.query.get(self.parameter) or [""])[0]
        return await self._lookup(secret) if secret else None


class BearerAuth:
    """`Authorization: Bearer <token>`; `tokens` maps tokens to principals (or is an
    async function that does, e.g. to verify a JWT)."""

    def __init__(
        self,
        tokens: Mapping[str, str] | Callable[[str], Awaitable[str | None]],
        *,
        name: str = "bearer",
        bearer_format: str = "",
        realm: str = "a2a",
    ) -> None:
        self._lookup = _lookup(tokens)
        self.name = name
        self.bearer_format = bearer_format
        self.realm = realm

    def scheme(self) -> SecurityScheme:
        return SecurityScheme(
            http_auth_security_scheme=HTTPAuthSecurityScheme(
                scheme="Bearer", bearer_format=self.bearer_format
            )
        )

    def challenge(self) -> str:
        return f'Bearer realm="{self.realm}"'

    async def authenticate(self, request: Request) -> str | None:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        return await self._lookup(token.strip())
