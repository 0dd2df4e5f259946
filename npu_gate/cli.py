"""Command line: parses arguments, calls the pipeline, writes what renderers return.

Exit codes: 0 the gate passed, 1 the gate failed, 2 the gate could not run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from npu_gate import __version__
from npu_gate.errors import EXIT_ERROR, EXIT_FAIL, EXIT_PASS, GateError

if TYPE_CHECKING:  # annotations only: the CLI imports the pipeline lazily
    from npu_gate.contract import Contract
    from npu_gate.result import GateResult

DEFAULT_INSPECT_PROFILE = "demo"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="npu-gate",
        description="Gate a PyTorch/ONNX model against an NPU target profile.",
        epilog="Exit codes: 0 pass, 1 gate failed, 2 could not run.",
    )
    parser.add_argument("--version", action="version", version=f"npu-gate {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    check = sub.add_parser("check", help="gate one or more contracts (default: ./npu-gate.json)")
    check.add_argument("contracts", nargs="*", metavar="PATH",
                       help="contract file, or a folder holding npu-gate.json")
    _add_outputs(check)
    check.add_argument("--log", metavar="PATH", help="write the conversion log (exporter output)")
    check.add_argument("--today", metavar="YYYY-MM-DD", type=_date,
                       help="date used to expire waivers (default: today)")
    check.add_argument("--device-timings", metavar="FILE",
                       help="latencies measured on the board (.json or .csv keyed by model, partition or "
                            "node) for the review table; overrides the contract's device_timings")
    bundle = check.add_mutually_exclusive_group()
    bundle.add_argument("--out", metavar="DIR",
                        help="write the evidence bundle into DIR (one contract)")
    bundle.add_argument("--bundle", action="store_true",
                        help="write each contract's evidence bundle to "
                             "npu-gate-out/<contract name>/")

    inspect = sub.add_parser("inspect", help="analyse an ONNX file without a contract")
    inspect.add_argument("model", metavar="MODEL.onnx")
    inspect.add_argument("--profile", default=DEFAULT_INSPECT_PROFILE,
                         help=f"built-in profile name or profile file (default: {DEFAULT_INSPECT_PROFILE})")
    _add_outputs(inspect)
    inspect.add_argument("--out", metavar="DIR", help="write the evidence bundle into DIR")

    reduce = sub.add_parser("reduce", help="shrink a model while an external command keeps failing")
    reduce.add_argument("model", metavar="MODEL.onnx")
    reduce.add_argument("--check", required=True, metavar="COMMAND",
                        help='command run per candidate, e.g. "vendor-compile {model}"; failing '
                             "means a non-zero exit. {inputs} becomes a .npz of the candidate's "
                             "inputs")
    reduce.add_argument("--out", metavar="PATH", help="reduced model (default: MODEL-reduced.onnx)")
    reduce.add_argument("--log", metavar="PATH",
                        help="JSON record of every step (default: the --out path + .json)")
    reduce.add_argument("--timeout", type=float, default=120.0, metavar="SECONDS",
                        help="per step; a timeout counts as not failing (default: 120)")
    reduce.add_argument("--match", metavar="TEXT",
                        help="also require TEXT in the command's output (the same failure)")
    reduce.add_argument("--inputs", metavar="NPZ",
                        help="samples for {inputs} (layout of a bundle's inputs.npz)")
    reduce.add_argument("--samples", type=int, default=1,
                        help="generated samples per input when --inputs is not given")
    reduce.add_argument("--max-steps", type=int, default=1000)
    reduce.add_argument("-q", "--quiet", action="store_true", help="no progress lines")

    rules = sub.add_parser("rules", help="list rule ids with one-line docs")
    rules.add_argument("--format", choices=["text", "json", "markdown"], default="text")
    sub.add_parser("profiles", help="list built-in target profiles")
    rewrites = sub.add_parser("rewrites", help="list the rewrite catalog (contract key `rewrites`)")
    rewrites.add_argument("--format", choices=["text", "json", "markdown"], default="text")
    explain = sub.add_parser("explain", help="show the documentation of a rule id")
    explain.add_argument("id")
    return parser


def _add_outputs(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", metavar="PATH", help="write the JSON result")
    p.add_argument("--markdown", metavar="PATH", help="write the Markdown report")
    p.add_argument("-q", "--quiet", action="store_true", help="no terminal summary")


def _date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a YYYY-MM-DD date") from None


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "check":
            return _check(args)
        if args.command == "inspect":
            return _inspect(args)
        if args.command == "rules":
            return _rules(args)
        if args.command == "reduce":
            return _reduce(args)
        if args.command == "profiles":
            return _profiles()
        if args.command == "explain":
            return _explain(args)
        if args.command == "rewrites":
            return _rewrites(args)
    except GateError as exc:
        for problem in exc.problems:
            print(f"npu-gate: error: {problem}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return EXIT_ERROR
    except Exception as exc:
        if args.debug:
            raise
        print(f"npu-gate: internal error: {type(exc).__name__}: {exc} (rerun with --debug for the "
              "traceback)", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_ERROR


def _check(args: argparse.Namespace) -> int:
    from npu_gate.contract import find_contract, load_contract
    from npu_gate.pipeline import check_contract

    paths = [find_contract(p) for p in (args.contracts or [None])]
    if len(paths) > 1 and (args.json or args.markdown or args.log or args.out):
        raise GateError("--json, --markdown, --log and --out take one contract; run one check per "
                        "contract (or use --bundle)")
    contracts = [load_contract(p) for p in paths]  # every contract is valid before any model runs
    if args.device_timings:
        import dataclasses

        timings = Path(args.device_timings)
        if not timings.is_file():
            raise GateError(f"--device-timings: file {args.device_timings!r} not found")
        contracts = [dataclasses.replace(c, device_timings=timings) for c in contracts]
    worst = EXIT_PASS
    for contract in contracts:
        if args.out or args.bundle:
            result = _check_bundle(contract, args)
        else:
            result = check_contract(contract, today=args.today)
        _emit(result, args)
        if args.log:
            _write(args.log, "\n".join(result.log) + ("\n" if result.log else ""))
        worst = max(worst, EXIT_PASS if result.passed else EXIT_FAIL)
    return worst


def _check_bundle(contract: Contract, args: argparse.Namespace) -> GateResult:
    """check_contract, then the evidence bundle (--out DIR or npu-gate-out/<name>/)."""
    from npu_gate import bundle
    from npu_gate.pipeline import Artifacts, check_contract

    folder = Path(args.out) if args.out else bundle.default_folder(contract)
    bundle.prepare(folder)
    art = Artifacts(folder)
    result = check_contract(contract, today=args.today, keep=art)
    bundle.write(folder, contract, result, art)
    if not args.quiet:
        print(f"evidence bundle: {folder}")
    return result


def _inspect(args: argparse.Namespace) -> int:
    from npu_gate.pipeline import inspect_model
    from npu_gate.profile import load_profile

    profile = load_profile(args.profile, Path.cwd(), where="--profile")
    if args.out:
        from npu_gate import bundle
        from npu_gate.pipeline import Artifacts

        folder = Path(args.out)
        bundle.prepare(folder)
        art = Artifacts(folder)
        result = inspect_model(Path(args.model), profile, keep=art)
        bundle.write_any(folder, result, art, profile, None)
        if not args.quiet:
            print(f"evidence bundle: {folder}")
    else:
        result = inspect_model(Path(args.model), profile)
    _emit(result, args)
    return EXIT_PASS if result.passed else EXIT_FAIL


def _emit(result: GateResult, args: argparse.Namespace) -> None:
    from npu_gate.render import text

    if args.json:
        from npu_gate.render import json_

        _write(args.json, json_.render(result))
    if args.markdown:
        from npu_gate.render import markdown

        _write(args.markdown, markdown.render(result))
    if not args.quiet:
        sys.stdout.write(text.render(result))


def _write(path: str, content: str) -> None:
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    except OSError as exc:
        raise GateError(f"{path}: cannot write: {exc.strerror}") from None


def _rules(args: argparse.Namespace) -> int:
    from npu_gate.rules import RULES

    if args.format == "json":
        doc = [{"id": r.id, "severity": r.severity, "finding": r.finding, "summary": r.summary,
                "doc": r.doc} for r in RULES.values()]
        print(json.dumps(doc, indent=2))
        return EXIT_PASS
    if args.format == "markdown":
        from npu_gate.rules import rules_markdown

        sys.stdout.write(rules_markdown())
        return EXIT_PASS
    width = max(len(r.id) for r in RULES.values())
    for r in RULES.values():
        severity = r.severity if r.finding else "exit 2"
        print(f"{r.id:<{width}}  {severity:<7}  {r.summary}")
    return EXIT_PASS


def _profiles() -> int:
    from npu_gate.profile import load_profile
    from npu_gate.resources import builtin_profile_names

    for name in builtin_profile_names():
        p = load_profile(name)
        print(f"{p.name:<16} {p.evidence:<22} {len(p.ops):>3} ops  {p.description}")
    return EXIT_PASS


def _explain(args: argparse.Namespace) -> int:
    from npu_gate.rules import RETIRED, RULES

    r = RULES.get(args.id)
    if r is None:
        if args.id in RETIRED:
            raise GateError(f"{args.id}: retired in {RETIRED[args.id]}")
        raise GateError(f"{args.id}: unknown rule id (see `npu-gate rules`)")
    print(f"{r.id} ({r.severity if r.finding else 'stops the run, exit 2'})\n\n{r.summary}\n\n{r.doc}")
    return EXIT_PASS


def _reduce(args: argparse.Namespace) -> int:
    from npu_gate.reduce import Reducer, Step, write_log

    def progress(step: Step) -> None:
        if not args.quiet:
            what = "timeout" if step.exit_code is None else f"exit {step.exit_code}"
            verdict = "fails, kept" if step.failing else "passes"
            print(f"step {step.step}: {step.phase} {step.nodes} nodes: {what}, {verdict}",
                  file=sys.stderr)

    model = Path(args.model)
    out = Path(args.out) if args.out else Path(f"{model.stem}-reduced.onnx")
    log = Path(args.log) if args.log else out.with_name(out.name + ".json")
    reducer = Reducer(model, args.check, timeout=args.timeout, match=args.match,
                      inputs=Path(args.inputs) if args.inputs else None, samples=args.samples,
                      max_steps=args.max_steps, progress=progress)
    outcome = reducer.run()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(outcome.model.SerializeToString())
    if reducer.wants_inputs:
        reducer.write_inputs(outcome.model, out.with_suffix(".npz"))
    write_log(log, model, args.check, reducer, outcome, out)
    if not args.quiet:
        print(f"{len(reducer.order)} -> {len(outcome.nodes)} nodes in {len(outcome.steps)} steps: "
              f"{out} (log: {log})")
    return EXIT_PASS


def _rewrites(args: argparse.Namespace) -> int:
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
