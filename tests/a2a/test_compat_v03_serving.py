"""The server to A2A 0.3 clients: the card they read and the 0.3 JSON-RPC calls they make
(without `A2A-Version`), answered by the 1.0 handler through `interlink.a2a.compat`.

The 0.3 shapes are checked against the official SDK's 0.3 models (`a2a.compat.v0_3.types`,
shipped with `a2a-sdk` 1.x); the interop with a real 0.3 client is in
`tests/interop/a2a/test_v03.py`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import msgspec
import pytest

from interlink.a2a import A2AApp, create_app
from interlink.a2a import types as t
from interlink.a2a._codec import decode, encode
from interlink.a2a.server._card_serve import PublishedCard
from tests.a2a.agents import Scripted, card
from tests.a2a.conftest import Served

Serve = Callable[[A2AApp], Awaitable[Served]]
CARD = ".well-known/agent-card.json"


def sdk_v03() -> object:
    return pytest.importorskip("a2a.compat.v0_3.types", reason="a2a-sdk 1.x (pip install a2a-sdk)")


def request(version: str | None) -> tuple[dict[str, object], dict[str, str]]:
    headers = {"host": "agent.example"} | ({} if version is None else {"a2a-version": version})
    raw = [(k.encode(), v.encode()) for k, v in headers.items()]
    scope: dict[str, object] = {"type": "http", "scheme": "https", "headers": raw}
    return scope, headers


# -- the card ---------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [None, "0.3", "0.3.0"])
def test_a_0_3_reader_gets_the_0_3_fields_beside_the_1_0_card(version: str | None) -> None:
    published = PublishedCard(card(extended_agent_card=True))
    status, headers, body = published.response(*request(version))
    assert status == 200
    assert dict(headers)[b"vary"] == b"Host, A2A-Version"
    served = msgspec.json.decode(body)
    assert served["url"] == "https://agent.example/"
    assert served["preferredTransport"] == "JSONRPC"
    assert served["protocolVersion"] == "0.3.0"
    assert served["supportsAuthenticatedExtendedCard"] is True
    assert "additionalInterfaces" not in served  # (one interface: `url` says it)
    # what a 1.0 reader parses is the 1.0 card, field for field
    _, _, alone = published.response(*request("1.0"))
    assert encode(decode(t.AgentCard, body)) == alone
    assert "url" not in msgspec.json.decode(alone)
    v03 = sdk_v03()
    parsed = v03.AgentCard.model_validate(served)  # type: ignore[attr-defined]
    assert parsed.url == "https://agent.example/"
    assert parsed.capabilities.streaming is True


def test_each_version_of_the_card_has_its_own_etag() -> None:
    published = PublishedCard(card())
    tags = {dict(published.response(*request(v))[1])[b"etag"] for v in (None, "0.3", "1.0")}
    assert len(tags) == 2
    old_tag = dict(published.response(*request(None))[1])[b"etag"]
    scope, headers = request("1.0")
    assert published.response(scope, {**headers, "if-none-match": old_tag.decode()})[0] == 200
    scope, headers = request(None)
    assert published.response(scope, {**headers, "if-none-match": old_tag.decode()})[0] == 304


def test_security_schemes_are_readable_in_both_versions() -> None:
    bearer = t.SecurityScheme(
        http_auth_security_scheme=t.HTTPAuthSecurityScheme(scheme="Bearer", bearer_format="JWT")
    )
    secured = msgspec.structs.replace(
        card(),
        security_schemes={"bearer": bearer},
        security_requirements=[t.SecurityRequirement(schemes={"bearer": t.StringList(list=[])})],
    )
    _, _, body = PublishedCard(secured).response(*request(None))
    served = msgspec.json.decode(body)
    assert served["securitySchemes"]["bearer"]["type"] == "http"
    assert served["security"] == [{"bearer": []}]
    assert decode(t.AgentCard, body).security_schemes == {"bearer": bearer}
    v03 = sdk_v03()
    parsed = v03.AgentCard.model_validate(served)  # type: ignore[attr-defined]
    assert parsed.security_schemes["bearer"].root.scheme == "Bearer"


async def test_a_signed_card_verifies_for_1_0_readers_in_both_versions(
    serve: Serve, tmp_path: Path
) -> None:
    pytest.importorskip("joserfc")
    from interlink.a2a._card_sign import verify_card
    from tests.a2a.test_card_sign import pem_pair

    private, public = pem_pair(tmp_path, "ES256")
    served = await serve(create_app(Scripted(), card(), signing_key=private))
    for headers in ({}, {"A2A-Version": "1.0"}):
        answer = await served.client.get(served.url + CARD, headers=headers)
        assert answer.headers["vary"] == "Host, A2A-Version"
        verify_card(decode(t.AgentCard, answer.content), public)  # a reader that parses
        verify_card(answer.json(), public)  # one that has the JSON as received
