"""Plain-text tables for benchmark output (Markdown, so they paste into notes)."""

from __future__ import annotations

import importlib.metadata


def print_table(header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    print(line(header))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in rows:
        print(line(row))


def version(distribution: str) -> str:
    """The installed version of `distribution`, or "not installed"."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def choices(value: str, allowed: tuple[str, ...], what: str) -> list[str]:
    """The comma-separated `value`'s items, in `allowed`'s order; exits on unknown ones."""
    chosen = [v for v in value.split(",") if v]
    unknown = set(chosen) - set(allowed)
    if unknown:
        raise SystemExit(f"unknown {what}: {', '.join(sorted(unknown))}")
    return [v for v in allowed if v in chosen]
