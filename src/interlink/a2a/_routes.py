"""The routes of the HTTP+JSON binding (§11), compiled from the generated table.

Each `Method` carries its `google.api.http` rules (`_methods.HttpRule`); here they
become `Route`s that match a request path (server) and build one (client). A template
is `/segment/{field=*}/...[:verb]`: `{field}` takes one non-empty path segment,
percent-decoded, as the request field of that proto name (reported by its JSON name);
a trailing `:verb` is literal. `find` tries the rules before the additional bindings
(`/{tenant}/...`) and, among those, the templates with more literal parts first, so
`/tasks/x:cancel` is CancelTask and `/tasks/tasks` is GetTask, never ListTasks of a
tenant named `tasks`. An index by the shape of a path (`_Index`) gives the few routes
that could take it, so a search tries those, not every route.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final, NamedTuple
from urllib.parse import quote, unquote

import msgspec

from interlink.a2a._methods import METHODS, HttpRule, Method

__all__ = ["ROUTES", "Route", "allowed", "find", "route_of"]

_VARIABLE: Final = re.compile(r"\{(?P<name>[a-z_][a-z0-9_]*)(?:=\*)?\}")
_LITERAL: Final = re.compile(r"[A-Za-z0-9._~-]+")


def _json_name(proto_name: str) -> str:
    head, *rest = proto_name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


class Route(NamedTuple):
    """One rule of one method: `segments` are literals, or `None` where a field goes
    (named in order by `fields`, JSON names); `suffix` is the `:verb` ("" for none).
    `literal_at` and `field_at` are where the literals and the fields are, by segment."""

    method: Method[msgspec.Struct, msgspec.Struct]
    rule: HttpRule
    segments: tuple[str | None, ...]
    fields: tuple[str, ...]
    suffix: str
    additional: bool
    literal_at: tuple[tuple[int, str], ...]
    field_at: tuple[tuple[str, int], ...]

    @classmethod
    def compile(
        cls, method: Method[msgspec.Struct, msgspec.Struct], rule: HttpRule, additional: bool
    ) -> Route:
        path, suffix = rule.path, ""
        last = path.rsplit("/", 1)[-1]
        if ":" in last.rsplit("}", 1)[-1]:
            path, _, verb = path.rpartition(":")
            suffix = ":" + verb
        segments: list[str | None] = []
        fields: list[str] = []
        for part in path.strip("/").split("/"):
            variable = _VARIABLE.fullmatch(part)
            if variable is not None:
                segments.append(None)
                fields.append(_json_name(variable["name"]))
            elif _LITERAL.fullmatch(part):
                segments.append(part)
            else:
                raise ValueError(f"{method.name}: unsupported path template {rule.path!r}")
        literal_at = tuple((i, s) for i, s in enumerate(segments) if s is not None)
        holes = [i for i, s in enumerate(segments) if s is None]
        field_at = tuple(zip(fields, holes, strict=True))
        return cls(
            method, rule, tuple(segments), tuple(fields), suffix, additional, literal_at, field_at
        )

    @property
    def literals(self) -> int:
        return sum(s is not None for s in self.segments) + bool(self.suffix)

    def match(self, path: str) -> dict[str, str] | None:
        """The fields of `path` (the app's own path, not decoded) when it is this route's."""
        return self.match_parts(_parts(path))

    def match_parts(self, parts: list[str] | None) -> dict[str, str] | None:
        """`match` of a path split into its segments (`_parts`)."""
        if parts is None or len(parts) != len(self.segments):  # (strict: no empty
            return None  # segment, no trailing slash)
        suffix = self.suffix
        if suffix:
            last = parts[-1]
            if not last.endswith(suffix):
                return None
            parts = [*parts[:-1], last[: -len(suffix)]]
        for i, literal in self.literal_at:
            if parts[i] != literal:
                return None
        values: dict[str, str] = {}
        for name, i in self.field_at:
            part = parts[i]
            if not part:
                return None
            values[name] = unquote(part) if "%" in part else part
        return values

    def expand(self, values: Mapping[str, str]) -> str:
        """The path of this route for `values` (by JSON name), each percent-encoded.
        Raises `KeyError` for a field it needs that `values` lacks or leaves empty."""
        names = iter(self.fields)
        parts = []
        for segment in self.segments:
            if segment is None:
                name = next(names)
                value = values[name]
                if not value:
                    raise KeyError(name)
                parts.append(quote(value, safe=""))
            else:
                parts.append(segment)
        return "/" + "/".join(parts) + self.suffix


def _parts(path: str) -> list[str] | None:
    """The segments of `path` (`/a/b:verb`: `a`, `b:verb`), None when it is no absolute path."""
    return path[1:].split("/") if path.startswith("/") else None


ROUTES: Final[tuple[Route, ...]] = tuple(
    sorted(
        (
            Route.compile(method, rule, additional=i > 0)
            for method in METHODS.values()
            for i, rule in enumerate(method.http)
        ),
        key=lambda r: (r.additional, -r.literals),
    )
)
"""Every route of every method, in the order `find` tries them."""


class _Index:
    """Some routes (in `ROUTES` order) by the shape of the paths they take: a path's
    segment count and its first segment when some of them begin with that literal
    (`None` for any other: those that begin with a field). Each key holds the routes
    that could match a path of it, so a search tries those alone, in the order the
    linear one would, and finds what it would. (One look-up: a finer key, a literal at
    each position, costs more to compute than the few routes it would spare.)"""

    def __init__(self, routes: tuple[Route, ...]) -> None:
        self._shapes: dict[tuple[int, str | None], tuple[Route, ...]] = {}
        for n in sorted({len(r.segments) for r in routes}):
            group = [r for r in routes if len(r.segments) == n]
            firsts = sorted({s for r in group if (s := r.segments[0]) is not None})
            for first in (*firsts, None):
                fits = tuple(r for r in group if r.segments[0] in (None, first))
                if fits:
                    self._shapes[n, first] = fits

    def candidates(self, parts: list[str] | None) -> tuple[Route, ...]:
        """The routes that could match a path of these segments (`_parts`), in `ROUTES`
        order (none that could not match it is left out; some may still not)."""
        if parts is None:
            return ()
        n = len(parts)
        # (a literal holds no `:`: only a last segment may carry a `:verb` beside it)
        first = parts[0].partition(":")[0] if n == 1 else parts[0]
        found = self._shapes.get((n, first))
        return self._shapes.get((n, None), ()) if found is None else found


_BY_VERB: Final[dict[str, _Index]] = {
    verb: _Index(tuple(r for r in ROUTES if r.rule.verb == verb))
    for verb in sorted({r.rule.verb for r in ROUTES})
}
_ALL: Final = _Index(ROUTES)


def _search(verb: str, path: str) -> tuple[Route, dict[str, str]] | None:
    index = _BY_VERB.get(verb)
    if index is None or not path.startswith("/"):
        return None
    parts = path[1:].split("/")
    for route in index.candidates(parts):
        values = route.match_parts(parts)
        if values is not None:
            return route, values
    return None


_EXACT: Final[dict[tuple[str, str], Route]] = {
    (route.rule.verb, path): route
    for route in ROUTES
    if not route.fields
    and (path := route.expand({}))
    and _search(route.rule.verb, path) == (route, {})
}
"""The routes whose path holds no field (`/message:send` ...), by verb and path: what
the search finds for that very path, found without computing its shape."""


def find(verb: str, path: str) -> tuple[Route, dict[str, str]] | None:
    """The route of `verb path` and the fields its path holds, or `None`."""
    route = _EXACT.get((verb, path))
    if route is not None:
        return route, {}
    return _search(verb, path)


def allowed(path: str) -> list[str]:
    """The verbs some route takes at `path` (for a 405 `Allow`)."""
    parts = _parts(path)
    return sorted({r.rule.verb for r in _ALL.candidates(parts) if r.match_parts(parts) is not None})


def route_of(method: Method[msgspec.Struct, msgspec.Struct], *, tenant: bool = False) -> Route:
    """The route a client uses for `method`: its rule, or with `tenant` the additional
    binding whose path holds the tenant."""
    for route in ROUTES:
        if route.method.name == method.name and ("tenant" in route.fields) == tenant:
            return route
    raise LookupError(f"{method.name} has no HTTP route{' with a tenant' if tenant else ''}")
