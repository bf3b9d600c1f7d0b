"""`python -m bench NAME [options]`: run one benchmark; `--help` lists them."""

from __future__ import annotations

import argparse
import importlib

BENCHMARKS = {
    "jsonrpc": "JSON-RPC round trips over an OS pipe between two processes, vs the floor",
    "acp": "ACP prompt turns, client to spawned agent, vs the floor and the official SDKs",
    "a2a": "A2A servers under HTTP load (send, stream, get), vs the official SDK and the floor",
    "streams": "A2A streams whose clients do not read: server memory, readers' cadence",
    "replicas": "A2A events across two replicas on PostgreSQL, vs the official SDK's cluster mode",
    "bridge": "prompt turns through bridge a2a and bridge acp, vs the same agents called directly",
}


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="interlink benchmarks: each prints interlink and its peers side by side.",
        epilog="benchmarks:\n"
        + "\n".join(f"  {name:<10} {text}" for name, text in BENCHMARKS.items()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("benchmark", choices=sorted(BENCHMARKS))
    parser.add_argument("args", nargs=argparse.REMAINDER, help="options of the benchmark")
    ns = parser.parse_args()
    module = importlib.import_module(f"bench.{ns.benchmark}")
    module.main(ns.args)


if __name__ == "__main__":
    main()
