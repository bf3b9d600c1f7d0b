"""The HTTP+JSON routes compiled from the generated table, and query parameters."""

from __future__ import annotations

from urllib.parse import parse_qs

import msgspec
import pytest

from interlink.a2a import _codec
from interlink.a2a._methods import METHODS
from interlink.a2a._routes import ROUTES, Route, allowed, find, route_of
from interlink.a2a._types import ListTasksRequest, TaskState
from interlink.a2a.server._asgi import parse_query
from interlink.a2a.server._http import _raw_path


@pytest.mark.parametrize("name", list(METHODS))
@pytest.mark.parametrize("tenant", [False, True])
def test_each_route_finds_itself_from_its_expansion(name: str, tenant: bool) -> None:
    route = route_of(METHODS[name], tenant=tenant)
    values = {f: f"v {f}/x" for f in route.fields}  # (a space and a slash travel encoded)
    path = route.expand(values)
    found = find(route.rule.verb, path)
    assert found is not None
    assert found[0].method.name == name
    assert found[1] == values


def test_every_method_has_a_route_and_one_under_a_tenant() -> None:
    assert {r.method.name for r in ROUTES if "tenant" not in r.fields} == set(METHODS)
    assert {r.method.name for r in ROUTES if "tenant" in r.fields} == set(METHODS)


@pytest.mark.parametrize(
    ("verb", "path", "method", "fields"),
    [
        ("POST", "/tasks/x:cancel", "CancelTask", {"id": "x"}),
        ("GET", "/tasks/x:subscribe", "SubscribeToTask", {"id": "x"}),
        ("GET", "/tasks/tasks", "GetTask", {"id": "tasks"}),  # not a tenant's ListTasks
        ("GET", "/acme/tasks", "ListTasks", {"tenant": "acme"}),
        ("GET", "/tasks/t/pushNotificationConfigs", "ListTaskPushNotificationConfigs",
         {"taskId": "t"}),
        ("DELETE", "/a/tasks/t/pushNotificationConfigs/c", "DeleteTaskPushNotificationConfig",
         {"tenant": "a", "taskId": "t", "id": "c"}),
    ],
)  # fmt: skip
def test_the_more_literal_route_wins(
    verb: str, path: str, method: str, fields: dict[str, str]
) -> None:
    found = find(verb, path)
    assert found is not None
    assert (found[0].method.name, found[1]) == (method, fields)


@pytest.mark.parametrize("path", ["/tasks/", "//tasks", "/tasks/x/", "/nothing", "/"])
def test_paths_of_no_route(path: str) -> None:
    assert find("GET", path) is None


def test_allowed_verbs_of_a_path() -> None:
    assert allowed("/tasks") == ["GET"]
    assert allowed("/tasks/t/pushNotificationConfigs") == ["GET", "POST"]
    assert allowed("/nothing/at/all/here/really/x") == []


def _linear_find(verb: str, path: str) -> tuple[Route, dict[str, str]] | None:
    """The reference for `find`: every route in `ROUTES` order, the first that matches."""
    for route in ROUTES:
        if route.rule.verb == verb:
            values = route.match(path)
            if values is not None:
                return route, values
    return None


def _linear_allowed(path: str) -> list[str]:
    return sorted({r.rule.verb for r in ROUTES if r.match(path) is not None})


def _near_misses() -> list[str]:
    values = ["abc", "tasks", "message", "a%2Fb", "%7Bid%7D", "x:send", "pushNotificationConfigs"]
    paths = {"", "/", "//", "/message", "/message:", ":send", "message:send", "/a/b/c/d/e/f"}
    for route in ROUTES:
        for value in values:
            path = route.expand(dict.fromkeys(route.fields, value))
            bare = path.removesuffix(route.suffix) if route.suffix else path
            paths |= {path, path + "/", path + "/x", "/x" + path, path[:-1] + "/", bare}
            paths |= {bare + s for s in (":send", ":stream", ":cancel", ":subscribe", ":x")}
            paths |= {path.replace(value, "", 1), path.replace("/", "//", 1)}
            paths |= {path.replace(value, "tasks"), path.replace(value, "extendedAgentCard")}
    return sorted(paths)


def test_the_index_finds_what_the_linear_search_finds() -> None:
    verbs = sorted({r.rule.verb for r in ROUTES} | {"HEAD", "PUT", "PATCH", ""})
    paths = _near_misses()
    assert len(paths) > 500
    found = 0
    for path in paths:
        assert allowed(path) == _linear_allowed(path), path
        for verb in verbs:
            assert find(verb, path) == _linear_find(verb, path), (verb, path)
            found += find(verb, path) is not None
    assert found > 200  # (and many of them do match some route)


def test_expand_needs_every_field() -> None:
    with pytest.raises(KeyError):
        route_of(METHODS["GetTask"]).expand({})
    with pytest.raises(KeyError):
        route_of(METHODS["GetTask"]).expand({"id": ""})


def test_query_parameters_both_ways() -> None:
    request = ListTasksRequest(
        context_id="c", status=TaskState.TASK_STATE_WORKING, page_size=5, include_artifacts=True
    )
    query = _codec.to_query(_codec.to_builtins(request))
    assert sorted(query) == sorted(
        [
            ("contextId", "c"),
            ("status", "TASK_STATE_WORKING"),
            ("pageSize", "5"),
            ("includeArtifacts", "true"),
        ]
    )
    grouped: dict[str, list[str]] = {}
    for key, value in query:
        grouped.setdefault(key, []).append(value)
    fields = _codec.from_query(ListTasksRequest, grouped)
    assert _codec.decode(ListTasksRequest, msgspec.json.encode(fields)) == request


def test_bad_query_parameters_are_violations() -> None:
    with pytest.raises(_codec.ValidationError) as caught:
        _codec.from_query(
            ListTasksRequest,
            {"pageSize": ["many"], "includeArtifacts": ["1"], "context_id": ["a", "b"]},
        )
    assert [v.field for v in caught.value.violations] == [
        "pageSize",
        "includeArtifacts",
        "contextId",
    ]
    with pytest.raises(ValueError, match="message"):
        _codec.to_query({"message": {"text": "x"}})


def test_snake_case_and_unknown_query_parameters() -> None:
    assert _codec.from_query(ListTasksRequest, {"page_size": ["3"], "A2A-Version": ["1.0"]}) == {
        "pageSize": 3
    }


def test_the_query_parser_reads_what_parse_qs_reads() -> None:
    pieces = [
        "a",
        "b",
        "=",
        "&",
        "+",
        "%",
        "%2",
        "%20",
        "%zz",
        "%C3%A9",
        "é",
        "x=",
        "&&",
        "%26",
        "%FF",
    ]
    queries = {"", "historyLength=2", "a=1&a=2&b", "a=&=b&&c=d=e"}
    queries |= {x + y + z for x in pieces for y in pieces for z in pieces}
    for query in sorted(queries):
        assert parse_query(query) == parse_qs(query, keep_blank_values=True), query


@pytest.mark.parametrize(
    ("root", "raw", "path", "below"),
    [
        ("", "/tasks/a%2Fb?x=1", "/tasks/a/b", "/tasks/a%2Fb"),
        ("/acme", "/acme/tasks/a%2Fb", "/tasks/a/b", "/tasks/a%2Fb"),
        ("/acme/", "/acme", "/", "/"),
        ("/acme", "/acme//x", "//x", "//x"),
        ("/a b", "/a%20b/tasks/x", "/tasks/x", "/tasks/x"),  # (a root sent encoded)
        ("/a%b", "/a%25b/t", "/t", "/t"),
        ("/x/y", "/x%2Fy/t", "/t", "/t"),
        ("/acme", "/acmex/tasks", "/acmex/tasks", "/acmex/tasks"),  # (not below the root)
    ],
)  # fmt: skip
def test_the_path_below_the_root_as_sent(root: str, raw: str, path: str, below: str) -> None:
    assert _raw_path({"raw_path": raw.encode()}, root, path) == below
