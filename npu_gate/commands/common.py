"""Helpers every command shares: could-not-run problems and their log, writing outputs, the
terminal summary and reports of one result."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from npu_gate.errors import GateError
from npu_gate.escape import visible

if TYPE_CHECKING:  # annotations only: the commands import the pipeline lazily
    from npu_gate.result.types import GateResult


def print_problems(exc: GateError, args: argparse.Namespace) -> None:
    """One line per problem; the details behind them (a factory's traceback, what its module
    printed) go to `check --log PATH`, so the terminal stays one line per problem."""
    for problem in exc.problems:
        print(f"npu-gate: error: {visible(problem)}", file=sys.stderr)
    log = args.log if args.command == "check" else None
    if log and exc.details and write_log(log, "\n".join(exc.details) + "\n"):
        print(f"npu-gate: details in {log}", file=sys.stderr)


def write_log(path: str, text: str) -> bool:
    """Write a could-not-run log; False when it cannot be written (the error line still says why
    the gate stopped, which matters more than the log)."""
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text, encoding="utf-8")
    except OSError:
        return False
    return True


def write_output(path: str, content: str) -> None:
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    except OSError as exc:
        raise GateError(f"{path}: cannot write: {exc.strerror}") from None


def emit(result: GateResult, args: argparse.Namespace, bundle: Path | None = None) -> None:
    from npu_gate.render import text

    if args.json:
        from npu_gate.render import json_

        write_output(args.json, json_.render(result))
    if args.markdown:
        from npu_gate.render import markdown

        write_output(args.markdown, markdown.render(result, bundle_dir(bundle, args.markdown)))
    if not args.quiet:
        sys.stdout.write(text.render(result))


def bundle_dir(bundle: Path | None, report: str) -> str:
    """The bundle folder relative to the folder of the Markdown report at ``report`` (POSIX,
    "" when they are the same): links into the bundle resolve from the report."""
    if bundle is None:
        return ""
    relative = Path(os.path.relpath(bundle.resolve(), Path(report).resolve().parent)).as_posix()
    return "" if relative == "." else relative


def warn_device_timings(doc: dict[str, Any] | None, name: str) -> None:
    from npu_gate.contract.device_timings import unmatched_warnings

    for line in unmatched_warnings(doc, name):
        print(f"npu-gate: warning: {visible(line)}", file=sys.stderr)
