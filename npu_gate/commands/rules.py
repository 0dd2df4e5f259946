"""`npu-gate rules`: list the rule ids with their one-line docs."""

from __future__ import annotations

import argparse
import json
import sys

from npu_gate.errors import EXIT_PASS


def run(args: argparse.Namespace) -> int:
    from npu_gate.rules import RULES

    if args.format == "json":
        from npu_gate.findings.catalog import doc_text

        doc = [{"id": r.id, "severity": r.severity, "finding": r.finding, "summary": r.summary,
                "doc": doc_text(r.id)} for r in RULES.values()]
        print(json.dumps(doc, indent=2))
        return EXIT_PASS
    if args.format == "markdown":
        from npu_gate.findings.catalog import rules_markdown

        sys.stdout.write(rules_markdown())
        return EXIT_PASS
    width = max(len(r.id) for r in RULES.values())
    for r in RULES.values():
        severity = r.severity if r.finding else "exit 2"
        print(f"{r.id:<{width}}  {severity:<7}  {r.summary}")
    return EXIT_PASS
