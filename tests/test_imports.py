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
