"""`bound`: serve an app on uvicorn and get a driver of the binding under test.

`binding` is parametrized over `BINDINGS` (jsonrpc, rest, grpc); every test that uses
`bound` runs once per binding, so each behaviour is asserted once for all of them
(§5.1). The gRPC driver talks to a `GrpcServer` beside the app, sharing its server.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from interlink.a2a import A2AApp, TenantRouter
from tests.a2a.bindings.drivers import BINDINGS, DRIVERS, Driver
from tests.a2a.conftest import Served
from tests.spec import unavailable

Bound = Callable[[A2AApp | TenantRouter], Awaitable[Driver]]


@pytest.fixture(params=sorted(BINDINGS))
def binding(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def bound(serve: Callable[[A2AApp], Awaitable[Served]], binding: str) -> AsyncIterator[Bound]:
    opened = []

    async def start(app: A2AApp | TenantRouter) -> Driver:
        served = await serve(app)  # type: ignore[arg-type]
        if binding != "grpc":
            return DRIVERS[binding](served.client, served.url)
        try:
            from tests.a2a.bindings.grpc_driver import Grpc
        except ImportError as exc:  # pragma: no cover - the dev extra has it
            unavailable(f"grpcio and protobuf are not installed ({exc})")
        driver = await Grpc.open(app)
        opened.append(driver)
        return driver

    yield start
    for driver in opened:
        await driver.aclose()
