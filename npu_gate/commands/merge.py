"""`npu-gate merge`: combine result JSONs (e.g. from matrix jobs) into one report."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from npu_gate.commands.common import refuse_overwriting_inputs, write_output
from npu_gate.errors import GateError


def run(args: argparse.Namespace) -> int:
    from npu_gate.compare.merge import attach_baseline, load_reports, merged_document
    from npu_gate.compare.report import exit_code, should_fail
    from npu_gate.render.report import render_report
    from npu_gate.render.text import text_lines

    if args.fail_on == "regressions" and not args.baseline:
        raise GateError("--fail-on regressions needs --baseline FILE")
    refuse_overwriting_inputs([*(("a result this run reads", p) for p in args.results),
                               ("the baseline this run reads", args.baseline)],
                              [("--json", args.json), ("--markdown", args.markdown)])
    models = load_reports([Path(p) for p in args.results], Path(args.markdown) if args.markdown else None)
    missing = attach_baseline(models, Path(args.baseline)) if args.baseline else []
    failed = should_fail(models, args.fail_on)
    if args.json:
        doc = merged_document(models, [m.comparison for m in models])
        write_output(args.json, json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    if args.markdown:
        write_output(args.markdown, render_report(models, failed=failed, fail_on=args.fail_on, missing=missing))
    if not args.quiet:
        sys.stdout.write(text_lines(models, args.fail_on, missing))
    return exit_code(models, args.fail_on)
