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

from npu_gate import __version__
from npu_gate.errors import EXIT_ERROR, EXIT_FAIL, EXIT_PASS, GateError

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

    inspect = sub.add_parser("inspect", help="analyse an ONNX file without a contract")
    inspect.add_argument("model", metavar="MODEL.onnx")
    inspect.add_argument("--profile", default=DEFAULT_INSPECT_PROFILE,
                         help=f"built-in profile name or profile file (default: {DEFAULT_INSPECT_PROFILE})")
    _add_outputs(inspect)

    rules = sub.add_parser("rules", help="list rule ids with one-line docs")
    rules.add_argument("--format", choices=["text", "json"], default="text")
    sub.add_parser("profiles", help="list built-in target profiles")
    explain = sub.add_parser("explain", help="show the documentation of a rule id")
    explain.add_argument("id")
    _add_probe(sub)
    return parser


def _add_probe(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    probe = sub.add_parser(
        "probe", help="build the model with a real compiler and compare its placement with the prediction",
        usage="npu-gate probe MODEL.onnx --compiler NAME --target T [--venv VENV] [--inputs NAME:DIMS ...]\n"
              "       npu-gate probe setup COMPILER VENV [--torch] [--force]",
        epilog="Exit codes: 0 the compiler built the model, 1 compiler-failed, 2 the probe could not run.")
    probe.add_argument("model", metavar="MODEL.onnx", help="the model, or `setup` to create a compiler venv")
    probe.add_argument("setup_args", nargs="*", metavar="COMPILER VENV", help=argparse.SUPPRESS)
    probe.add_argument("--compiler", default="rknn", help="compiler plug-in (default: rknn)")
    probe.add_argument("--target", default="rk3588", help="target platform (default: rk3588)")
    probe.add_argument("--venv", metavar="VENV", help="the compiler's venv (default: .venv-COMPILER)")
    probe.add_argument("--inputs", nargs="+", metavar="NAME:DIMS", default=[],
                       help="static input shapes for the compiler, e.g. images:1,3,224,224")
    probe.add_argument("--profile", default=DEFAULT_INSPECT_PROFILE,
                       help=f"profile for the prediction to compare with (default: {DEFAULT_INSPECT_PROFILE})")
    probe.add_argument("--timeout", type=_seconds, metavar="SECONDS",
                       help="kill the compiler after this long (default: the plug-in's, 600 s for rknn)")
    probe.add_argument("--log", metavar="PATH", help="write the compiler's full (cleaned) log")
    probe.add_argument("--keep-work", metavar="DIR", help="keep the compiler's work folder (its dumps) in DIR")
    probe.add_argument("--torch", action="store_true", help="setup: install real torch instead of the import stub")
    probe.add_argument("--force", action="store_true", help="setup: recreate the venv even if it is up to date")
    probe.add_argument("--python", metavar="PYTHON", help="setup: interpreter for the venv (default: this one)")
    _add_outputs(probe)


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
        if args.command == "profiles":
            return _profiles()
        if args.command == "explain":
            return _explain(args)
        if args.command == "probe":
            return _probe(args)
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
    if len(paths) > 1 and (args.json or args.markdown or args.log):
        raise GateError("--json, --markdown and --log take one contract; run one check per contract")
    contracts = [load_contract(p) for p in paths]  # every contract is valid before any model runs
    worst = EXIT_PASS
    for contract in contracts:
        result = check_contract(contract, today=args.today)
        _emit(result, args)
        if args.log:
            _write(args.log, "\n".join(result.log) + ("\n" if result.log else ""))
        worst = max(worst, EXIT_PASS if result.passed else EXIT_FAIL)
    return worst


def _inspect(args: argparse.Namespace) -> int:
    from npu_gate.pipeline import inspect_model
    from npu_gate.profile import load_profile

    profile = load_profile(args.profile, Path.cwd(), where="--profile")
    result = inspect_model(Path(args.model), profile)
    _emit(result, args)
    return EXIT_PASS if result.passed else EXIT_FAIL


def _emit(result: object, args: argparse.Namespace) -> None:
    from npu_gate.render import json_, markdown, text

    if args.json:
        _write(args.json, json_.render(result))  # type: ignore[arg-type]
    if args.markdown:
        _write(args.markdown, markdown.render(result))  # type: ignore[arg-type]
    if not args.quiet:
        sys.stdout.write(text.render(result))  # type: ignore[arg-type]


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


def _probe(args: argparse.Namespace) -> int:
    from npu_gate.probe import get_compiler

    if args.model == "setup":
        if len(args.setup_args) != 2:
            raise GateError("usage: npu-gate probe setup COMPILER VENV [--torch] [--force]")
        return _probe_setup(get_compiler(args.setup_args[0]), Path(args.setup_args[1]), args)
    if args.setup_args:
        raise GateError(f"probe: unexpected arguments {' '.join(args.setup_args)} (one MODEL.onnx per probe)")
    from npu_gate.probe.report import markdown, text
    from npu_gate.probe.runner import probe
    from npu_gate.profile import load_profile

    compiler = get_compiler(args.compiler)
    venv = Path(args.venv or f".venv-{compiler.name}")
    profile = load_profile(args.profile, Path.cwd(), where="--profile")
    result = probe(Path(args.model), compiler, args.target, compiler.python(venv),
                   inputs=_input_shapes(args.inputs), profile=profile, timeout=args.timeout,
                   keep=Path(args.keep_work).resolve() if args.keep_work else None)
    if args.json:
        _write(args.json, json.dumps(result.to_dict(), indent=2) + "\n")
    if args.markdown:
        _write(args.markdown, markdown(result))
    if args.log:
        _write(args.log, "\n".join(result.log) + "\n")
    if not args.quiet:
        sys.stdout.write(text(result))
    return EXIT_PASS if result.built else EXIT_FAIL


def _probe_setup(compiler: object, venv: Path, args: argparse.Namespace) -> int:
    from npu_gate.probe.setup_env import setup

    doc = setup(compiler, venv, torch=args.torch, python=args.python, force=args.force)  # type: ignore[arg-type]
    if not args.quiet:
        how = "reused" if doc["reused"] else f"created in {doc['setup_s']:.1f} s"
        packages = doc.get("packages", {})
        version = packages.get(doc.get("product"), "?")
        print(f"npu-gate probe setup: {venv}: {doc['product']} {version}, torch {doc['torch']}, "
              f"{doc['size_bytes'] / 1e6:.0f} MB, {how}")
    return EXIT_PASS


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return value


def _input_shapes(specs: list[str]) -> dict[str, list[int]]:
    shapes: dict[str, list[int]] = {}
    for spec in specs:
        name, sep, dims = spec.rpartition(":")
        try:
            shape = [int(d) for d in dims.replace("x", ",").split(",")]
        except ValueError:
            shape = []
        if not sep or not name or not shape or any(d < 1 for d in shape):
            raise GateError(f"--inputs {spec}: expected NAME:DIMS with positive dims, e.g. images:1,3,224,224")
        shapes[name] = shape
    return shapes
