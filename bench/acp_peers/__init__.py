"""The ACP peers of `python -m bench acp`: one client and one agent per implementation.

Each `*_client` is a program of its own: it spawns its matching `*_agent`, runs the
workload of `bench.acp_peers._measure` and prints its numbers as one JSON line. The
TypeScript pair (`ts_client.mjs`, `ts_agent.mjs`) mirrors the Python loop; its SDK is
pinned in `package.json` (`npm ci` in this folder installs it).
"""
