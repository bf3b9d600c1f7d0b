"""`interlink acp serve MODULE:ATTR`: run any agent object on stdio, so an editor can
launch every interlink agent through one command.

ATTR names an `Agent` instance, an `Agent` subclass, or a factory returning an agent;
MODULE is an importable module name or a path to a `.py` file.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from interlink.cli._parser import Commands, subcommand

__all__ = ["AgentLoadError", "add_parser", "load_agent", "load_object", "run"]


class AgentLoadError(Exception):
    """The MODULE:ATTR given does not name an agent."""


def add_parser(commands: Commands) -> None:
    serve = subcommand(
        commands,
        "serve",
        "serve an agent object on stdin/stdout",
        "Serve an ACP agent on stdio. TARGET is MODULE:ATTR or path/to/file.py:ATTR, "
        "where ATTR is an Agent instance, an Agent subclass or a factory function.",
    )
    serve.add_argument("target", metavar="MODULE:ATTR")
    serve.add_argument(
        "--max-message-size",
        type=int,
        default=None,
        metavar="BYTES",
        help="refuse incoming messages larger than this (default 64 MiB)",
    )


def _module(target: str) -> ModuleType:
    if target.endswith(".py") or "/" in target:
        path = Path(target).resolve()
        if not path.is_file():
            raise AgentLoadError(f"no such file: {target}")
        sys.path.insert(0, str(path.parent))
        spec = importlib.util.spec_from_file_location(path.stem, path)
        if spec is None or spec.loader is None:
            raise AgentLoadError(f"cannot load {target}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        spec.loader.exec_module(module)
        return module
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError as exc:
        raise AgentLoadError(f"cannot import {target!r}: {exc}") from None


def load_object(spec: str, kind: type, description: str) -> object:
    """The object that `MODULE:ATTR` names, called first when it is a class or factory
    rather than a `kind` instance."""
    target, sep, attr = spec.rpartition(":")
    if not sep or not target or not attr:
        raise AgentLoadError(f"expected MODULE:ATTR or path/to/file.py:ATTR, got {spec!r}")
    module = _module(target)
    try:
        obj: object = getattr(module, attr)
    except AttributeError:
        raise AgentLoadError(f"{target} has no attribute {attr!r}") from None
    if not isinstance(obj, kind) and callable(obj):
        try:
            obj = obj()
        except TypeError as exc:
            raise AgentLoadError(f"calling {spec} failed: {exc}") from None
    if not isinstance(obj, kind):
        raise AgentLoadError(f"{spec} is a {type(obj).__name__}, not {description}")
    return obj


def load_agent(spec: str) -> object:
    """The ACP agent that `MODULE:ATTR` names (instantiated when a class or factory)."""
    from interlink.acp import Agent

    return load_object(spec, Agent, "an interlink.acp.Agent")


def run(args: argparse.Namespace) -> int:
    from interlink.acp import Agent, run_agent

    try:
        agent = load_agent(args.target)
    except AgentLoadError as exc:
        print(f"interlink acp serve: {exc}", file=sys.stderr)
        return 2
    assert isinstance(agent, Agent)
    run_agent(agent, max_message_size=args.max_message_size)
    return 0
