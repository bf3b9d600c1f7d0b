"""Turn `interlink acp check --json` reports into the README's Markdown table.

python tools/acp_check_table.py NAME=REPORT.json [NAME=REPORT.json ...]
"""

from __future__ import annotations

import json
import sys


def row(name: str, path: str) -> str:
    with open(path, encoding="utf-8") as file:
        report = json.load(file)
    summary = report["summary"]
    failed = summary["failed"]
    return (
        f"| {name} | {summary['total']} | {summary['passed']} | {failed['MUST']} | "
        f"{failed['SHOULD']} | {summary['skipped']} | {report['exitStatus']} | "
        f"{report['seconds']:.0f} s |"
    )


def main(argv: list[str]) -> int:
    if not argv or any("=" not in arg for arg in argv):
        print(__doc__, file=sys.stderr)
        return 2
    print("| agent | cases | passed | failed MUST | failed SHOULD | skipped | exit | time |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for arg in argv:
        name, _, path = arg.partition("=")
        print(row(name, path))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
