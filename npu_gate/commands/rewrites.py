"""`npu-gate rewrites`: list the rewrite catalog (contract key `rewrites`)."""

from __future__ import annotations

import argparse
import json
import sys

from npu_gate.errors import EXIT_PASS


def run(args: argparse.Namespace) -> int:
    from npu_gate.rewrites import REWRITES, rewrites_markdown

    if args.format == "json":
        doc = [{"name": r.name, "exact": r.exact, "matches": r.matches, "emits": r.emits, "doc": r.doc}
               for r in REWRITES.values()]
        print(json.dumps(doc, indent=2, ensure_ascii=False))
    elif args.format == "markdown":
        sys.stdout.write(rewrites_markdown())
    else:
        width = max(len(r.name) for r in REWRITES.values())
        for r in REWRITES.values():
            print(f"{r.name:<{width}}  {'exact' if r.exact else 'approx':<6}  {r.matches} -> {r.emits}")
    return EXIT_PASS
