"""Packages of `src/interlink` use each other through their `__init__` only: a module that
imports a private module (`_name`) of another package fails here, naming the line. What
another package needs is exported from that package's `__init__.py`."""

from __future__ import annotations

import ast
from pathlib import Path

import interlink

SRC = Path(interlink.__file__).parent


def private_imports(source: str, package: str) -> list[tuple[int, str]]:
    """(line, module) of each import, in `source`, of a private module of a package other
    than `package`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # (`from interlink.a2a import _card` imports a private module too)
            names = [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue  # (a relative import stays in its own package: src has no `..`)
        for name in names:
            parts = name.split(".")
            if parts[0] != "interlink" or len(parts) < 2 or parts[1] == package:
                continue
            if any(part.startswith("_") and not part.startswith("__") for part in parts[1:]):
                found.append((node.lineno, name))
    return found


def test_no_module_imports_another_packages_private_module() -> None:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC).parts
        package = parts[0] if len(parts) > 1 else ""  # (interlink/__main__.py: none)
        for line, name in private_imports(path.read_text(encoding="utf-8"), package):
            found.append(f"{path.relative_to(SRC.parent)}:{line}: {name}")
    assert found == []


def test_the_scan_tells_private_from_public_and_own_from_other() -> None:
    source = (
        "from interlink.aio._stdio import open_stdio\n"
        "import interlink.a2a._codec\n"
        "from interlink.aio import Connection\n"
        "from interlink.cli._terminal import Style\n"
        "from interlink import __version__\n"
        "from ._parser import Parser\n"
        "from interlink.a2a import _card, types\n"
    )
    assert private_imports(source, "cli") == [
        (1, "interlink.aio._stdio.open_stdio"),
        (2, "interlink.a2a._codec"),
        (7, "interlink.a2a._card"),
    ]


#: which packages of `src/interlink` each package may import (ARCHITECTURE.md: arrows
#: point down only; `acp` and `a2a` never import each other; `bridge` is the one package
#: that imports both, and only the command sits above it)
LAYERS = {
    "jsonrpc": set(),
    "aio": {"jsonrpc"},
    "acp": {"jsonrpc", "aio"},
    "a2a": {"jsonrpc"},  # (HTTP and gRPC need no stream connection)
    "bridge": {"jsonrpc", "aio", "acp", "a2a"},
    "check": {"jsonrpc", "aio", "acp", "a2a"},
    "cli": {"jsonrpc", "aio", "acp", "a2a", "bridge", "check"},
}


def imported_packages(source: str) -> set[str]:
    """The packages of interlink (`interlink.X`) that `source` imports."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "interlink" and len(parts) > 1 and parts[1] in LAYERS:
                found.add(parts[1])
    return found


def test_packages_import_only_the_layers_below_them() -> None:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC).parts
        if len(parts) < 2:
            continue
        package = parts[0]
        assert package in LAYERS, f"{package}: a new package needs its place in LAYERS"
        for other in imported_packages(path.read_text(encoding="utf-8")) - {package}:
            if other not in LAYERS[package]:
                found.append(f"{path.relative_to(SRC.parent)}: {package} imports {other}")
    assert found == []


def test_only_the_bridge_imports_both_protocols_in_one_module() -> None:
    """(`check` and `cli` serve each protocol too, but each module of theirs one of them.)"""
    both = [
        str(path.relative_to(SRC.parent))
        for path in sorted(SRC.rglob("*.py"))
        if path.relative_to(SRC).parts[0] != "bridge"
        and {"acp", "a2a"} <= imported_packages(path.read_text(encoding="utf-8"))
    ]
    assert both == []
