"""The `interlink a2a` renderer on its own: what the example agent never sends."""

from __future__ import annotations

import io

from interlink.a2a import types as t
from interlink.cli._a2a_render import Screen, TaskView, card_lines
from interlink.cli._terminal import Style


def test_card_lines_show_every_kind_of_security_scheme() -> None:
    flows = t.OAuthFlows(client_credentials=t.ClientCredentialsOAuthFlow(token_url="https://x/t"))
    card = t.AgentCard(
        name="full",
        version="2.0",
        provider=t.AgentProvider(organization="Acme", url="https://acme.example"),
        documentation_url="https://acme.example/docs",
        capabilities=t.AgentCapabilities(
            extended_agent_card=True,
            extensions=[t.AgentExtension(uri="urn:x", description="an extension", required=True)],
        ),
        security_schemes={
            "key": t.SecurityScheme(
                api_key_security_scheme=t.APIKeySecurityScheme(location="query", name="k")
            ),
            "jwt": t.SecurityScheme(
                http_auth_security_scheme=t.HTTPAuthSecurityScheme(
                    scheme="Bearer", bearer_format="JWT", description="a token"
                )
            ),
            "oauth": t.SecurityScheme(oauth2_security_scheme=t.OAuth2SecurityScheme(flows=flows)),
            "oidc": t.SecurityScheme(
                open_id_connect_security_scheme=t.OpenIdConnectSecurityScheme(
                    open_id_connect_url="https://acme.example/.well-known/openid-configuration"
                )
            ),
            "mtls": t.SecurityScheme(mtls_security_scheme=t.MutualTlsSecurityScheme()),
        },
        security_requirements=[
            t.SecurityRequirement(schemes={"key": t.StringList(), "jwt": t.StringList()})
        ],
    )
    lines = card_lines(card, Style(color=False))
    assert lines[:4] == [
        "full  v2.0",
        "provider: Acme https://acme.example",
        "docs: https://acme.example/docs",
        "",
    ]
    assert "  extended card" in lines
    assert "  extension urn:x (required) — an extension" in lines
    assert lines[lines.index("security") :] == [
        "security",
        "  key: API key in query 'k'",
        "  jwt: HTTP Bearer (JWT) — a token",
        "  oauth: OAuth 2 (client credentials)",
        "  oidc: OpenID Connect https://acme.example/.well-known/openid-configuration",
        "  mtls: mutual TLS",
        "  requires: key + jwt",
    ]
    assert "interfaces\n  none" in "\n".join(lines)


def test_task_view_renders_parts_chunks_and_a_held_question() -> None:
    out = io.StringIO()
    screen = Screen(out, Style(color=False))
    view = TaskView(screen)

    def chunk(artifact_id: str, part: t.Part, append: bool, last: bool) -> None:
        artifact = t.Artifact(artifact_id=artifact_id, name=artifact_id, parts=[part])
        view.apply(
            t.TaskArtifactUpdateEvent(
                task_id="t1", context_id="c1", artifact=artifact, append=append, last_chunk=last
            )
        )

    view.apply(
        t.Task(id="t1", context_id="c1", status=t.TaskStatus(state=t.TaskState.TASK_STATE_WORKING))
    )
    chunk("a", t.Part(text="one "), False, False)
    screen.hold()
    screen.ask("cancel? ")
    chunk("a", t.Part(text="two"), True, True)  # held while the question is open
    screen.typed()
    screen.release()
    chunk("b", t.Part(data={"k": 1}), False, False)
    chunk("b", t.Part(raw=b"abc", filename="f.bin", media_type="application/x"), True, False)
    chunk("b", t.Part(url="https://x/y"), True, True)
    agent = t.Message(message_id="m", role=t.Role.ROLE_AGENT, parts=[t.Part(text="bad input")])
    failed = t.TaskStatus(state=t.TaskState.TASK_STATE_FAILED, message=agent)
    view.apply(t.TaskStatusUpdateEvent(task_id="t1", context_id="c1", status=failed))
    assert view.state == t.TaskState.TASK_STATE_FAILED
    assert out.getvalue().splitlines() == [
        "task t1 · context c1",
        "● working",
        "▸ a",
        "one ",
        "cancel? two",  # the person's answer (its echo) would end the question's line
        "▸ b",
        '{"k": 1}[file f.bin, application/x, 3 bytes][file https://x/y]',
        "● failed · bad input",
    ]
