"""`bound`: serve an app on uvicorn and get a driver of the binding under test.

`binding` is parametrized over `DRIVERS` (jsonrpc, rest); every test that uses `bound`
runs once per binding, so each behaviour is asserted once for all of them (§5.1).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from interlink.a2a import A2AApp, TenantRouter
from tests.a2a.bindings.drivers import DRIVERS, Driver
from tests.a2a.conftest import Served

Bound = Callable[[A2AApp | TenantRouter], Awaitable[Driver]]


@pytest.fixture(params=sorted(DRIVERS))
def binding(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def bound(serve: Callable[[A2AApp], Awaitable[Served]], binding: str) -> Bound:
    async def start(app: A2AApp | TenantRouter) -> Driver:
        served = await serve(app)  # type: ignore[arg-type]
        return DRIVERS[binding](served.client, served.url)

    return start
