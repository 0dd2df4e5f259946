"""Command line: parses arguments, calls the pipeline, writes what renderers return.

Exit codes: 0 the gate passed, 1 the gate failed, 2 the gate could not run (141: stdout closed early).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from npu_gate import __version__
from npu_gate.errors import EXIT_ERROR, EXIT_FAIL, EXIT_PASS, GateError
from npu_gate.escape import visible

if TYPE_CHECKING:  # annotations only: the CLI imports the pipeline lazily
    from npu_gate.contract.spec import Contract
    from npu_gate.result.types import GateResult

DEFAULT_INSPECT_PROFILE = "demo"
EXIT_SIGPIPE = 141  # 128 + SIGPIPE (13): what a shell reports for a process SIGPIPE killed


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
    _add_ratchet(check)
    _add_cache(check)

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
    reduce.add_argument("--out", metavar="PATH",
                        help="reduced model (default: MODEL-reduced.onnx in the current folder)")
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

    diff = sub.add_parser("diff", help="how two models, contracts or result JSONs differ",
                          epilog="Exit codes: 0 no differences, 1 differences, 2 could not run.")
    diff.add_argument("a", metavar="A",
                      help="an .onnx model, a contract (file or folder) or a result .json")
    diff.add_argument("b", metavar="B", help="the same kinds as A")
    diff.add_argument("--profile", default=DEFAULT_INSPECT_PROFILE,
                      help=f"profile for .onnx sides (default: {DEFAULT_INSPECT_PROFILE})")
    diff.add_argument("--today", metavar="YYYY-MM-DD", type=_date,
                      help="date used to expire waivers of contract sides (default: today)")
    _add_outputs(diff)

    validate = sub.add_parser(
        "validate", help="validate contract and profile files against the schemas (exit 0 or 2)")
    validate.add_argument("files", nargs="+", metavar="FILE",
                          help="a contract (npu-gate.json, npu-gate.*.json) or a profile "
                               "(*.npu-profile.json)")
    validate.add_argument("-q", "--quiet", action="store_true", help="print problems only")

    check_onnx = sub.add_parser(
        "check-onnx", help="gate ONNX files with the contracts that name them (pre-commit hook)")
    check_onnx.add_argument("files", nargs="+", metavar="MODEL.onnx")
    check_onnx.add_argument("--profile", help="gate files no contract names with this profile "
                            "(default: skip them)")
    check_onnx.add_argument("-q", "--quiet", action="store_true", help="no terminal summary")
    check_onnx.set_defaults(json=None, markdown=None, log=None, today=None)  # as `check` has
    _add_cache(check_onnx)

    rules = sub.add_parser("rules", help="list rule ids with one-line docs")
    rules.add_argument("--format", choices=["text", "json", "markdown"], default="text")
    sub.add_parser("profiles", help="list built-in target profiles")
    rewrites = sub.add_parser("rewrites", help="list the rewrite catalog (contract key `rewrites`)")
    rewrites.add_argument("--format", choices=["text", "json", "markdown"], default="text")
    explain = sub.add_parser("explain", help="show the documentation of a rule or constraint id")
    explain.add_argument("id", help="rule id, constraint id, or PROFILE:CONSTRAINT-ID")
    _add_profile_parser(sub)
    _add_probe(sub)

    merge = sub.add_parser("merge",
                           help="combine result JSONs (e.g. from matrix jobs) into one report")
    merge.add_argument("results", nargs="+", metavar="RESULT.json",
                       help="result JSON or merged document from `check --json` / `merge --json`")
    _add_outputs(merge)
    _add_ratchet(merge)
    return parser


def _add_ratchet(p: argparse.ArgumentParser) -> None:
    p.add_argument("--baseline", metavar="FILE",
                   help="result JSON of the base branch: report new/fixed findings and deltas")
    p.add_argument("--fail-on", choices=["errors", "regressions", "never"], default="errors",
                   help="exit 1 on the gate's errors (default), only on regressions against "
                        "--baseline, or never")


def _add_profile_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    profile = sub.add_parser("profile", help="check, show or document target profiles")
    psub = profile.add_subparsers(dest="profile_command", required=True, metavar="SUBCOMMAND")
    pcheck = psub.add_parser("check", help="validate a profile file (exit 1 when it has errors, "
                                           "2 when it cannot be read)")
    pcheck.add_argument("file", metavar="FILE")
    show = psub.add_parser("show", help="a profile's ops and constraints in words")
    show.add_argument("name", metavar="NAME", help="built-in name or profile file")
    show.add_argument("--format", choices=["text", "json"], default="text",
                      help="json: the resolved profile (bases merged in)")
    docs = psub.add_parser("docs", help="development: regenerate the built-in profiles' pages (npu_gate's own "
                                        "docs/profiles/<name>.md); `profile show NAME` prints one")
    docs.add_argument("--out", default="docs/profiles", metavar="DIR",
                      help="folder of the pages (default: docs/profiles under the current folder)")
    docs.add_argument("--check", action="store_true",
                      help="write nothing; exit 1 when a page is missing or out of date")
    cal = psub.add_parser("calibrate", help="measure a profile with a real compiler over deliberate sweeps of "
                                            "single-op and pattern models")
    cal.add_argument("--compiler", default="rknn", help="compiler plug-in (default: rknn)")
    cal.add_argument("--target", help="the compiler's target, e.g. rk3588 (with --from-record: the record's)")
    cal.add_argument("--out", required=True, metavar="PROFILE.json",
                     help="the profile to write; the record goes to PROFILE.calibration.json")
    cal.add_argument("--venv", help="the compiler's venv (default: .venv-COMPILER)")
    cal.add_argument("--sweep", default="standard", choices=["tiny", "standard"],
                     help="which sweep (default: standard; tiny: 7 points, for quick checks)")
    cal.add_argument("--name", help="profile name (default: the file name)")
    cal.add_argument("--extends", help="a base profile: ops measured off the NPU are removed from it (null), "
                                       "the rest stays its claim")
    cal.add_argument("--patterns-from", metavar="PROFILE",
                     help="a profile whose fusion patterns and rank-adapter rule the pattern and adapter points check; "
                          "the confirmed ones are written")
    cal.add_argument("--diff-against", metavar="PROFILE",
                     help="print what the calibrated profile claims differently from PROFILE and write it to "
                          "OUT.diff.json and OUT.diff.md beside --out (OUT: its name without .json)")
    cal.add_argument("--from-record", metavar="RECORD",
                     help="derive the profile from an existing calibration record, without the compiler; "
                          "the record is written beside --out with its verdicts derived again (points unchanged)")
    cal.add_argument("--no-batch", action="store_true",
                     help="one compiler process per point instead of one long-lived batch process")
    cal.add_argument("--keep-work", metavar="DIR", help="keep every point's model, log and compiler dumps in DIR")
    cal.add_argument("--timeout", type=_seconds, help="seconds per point (default: the plug-in's)")
    pdiff = psub.add_parser("diff", help="what profile B claims differently from profile A")
    pdiff.add_argument("a", metavar="A", help="built-in name or profile file")
    pdiff.add_argument("b", metavar="B", help="built-in name or profile file")
    pdiff.add_argument("--json", metavar="OUT", help="write the diff as JSON")
    pdiff.add_argument("--markdown", metavar="OUT", help="write the diff as Markdown")


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


def _add_cache(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-cache", action="store_true",
                   help="ignore cached results and run the gate afresh (the new result is stored)")
    p.add_argument("--cache-dir", metavar="DIR",
                   help="result cache folder (default: $NPU_GATE_CACHE_DIR, else "
                        "$XDG_CACHE_HOME/npu-gate or ~/.cache/npu-gate)")


def _date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a YYYY-MM-DD date") from None


def main(argv: Sequence[str] | None = None) -> int:
    try:
        code = _main(argv)
        sys.stdout.flush()  # a reader that went away shows here, not in Python's exit-time flush
    except BrokenPipeError:
        # `npu-gate rules | head -3`: the reader stopped early. End quietly, with the status
        # of a process killed by SIGPIPE, and point stdout at devnull so that the exit-time
        # flush of what is still buffered does not complain either.
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_SIGPIPE
    return code


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "check":
            return _check(args)
        if args.command == "inspect":
            return _inspect(args)
        if args.command == "diff":
            return _diff(args)
        if args.command == "rules":
            return _rules(args)
        if args.command == "reduce":
            return _reduce(args)
        if args.command == "profiles":
            return _profiles()
        if args.command == "explain":
            return _explain(args)
        if args.command == "merge":
            return _merge(args)
        if args.command == "profile":
            return _profile(args)
        if args.command == "validate":
            return _validate(args)
        if args.command == "check-onnx":
            return _check_onnx(args)
        if args.command == "rewrites":
            return _rewrites(args)
        if args.command == "probe":
            return _probe(args)
    except GateError as exc:
        _print_problems(exc, args)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return EXIT_ERROR
    except SystemExit as exc:
        # npu-gate never raises it here: user code did (a factory, forward(), a metric). Its
        # code must not become the gate's (sys.exit(0) would read as "pass").
        print(f"npu-gate: error: user code called sys.exit({exc.code!r}); the gate could not run",
              file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:
        raise  # main() ends quietly
    except Exception as exc:
        if args.debug:
            raise
        print(f"npu-gate: internal error: {_internal_error(exc, args)}", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_ERROR


def _print_problems(exc: GateError, args: argparse.Namespace) -> None:
    """One line per problem; the details behind them (a factory's traceback, what its module
    printed) go to `check --log PATH`, so the terminal stays one line per problem."""
    for problem in exc.problems:
        print(f"npu-gate: error: {visible(problem)}", file=sys.stderr)
    log = args.log if args.command == "check" else None
    if log and exc.details and _write_log(log, "\n".join(exc.details) + "\n"):
        print(f"npu-gate: details in {log}", file=sys.stderr)


def _write_log(path: str, text: str) -> bool:
    """Write a could-not-run log; False when it cannot be written (the error line still says why
    the gate stopped, which matters more than the log)."""
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text, encoding="utf-8")
    except OSError:
        return False
    return True


def _internal_error(exc: Exception, args: argparse.Namespace) -> str:
    """One line for an internal error: the message's first line, terminal escapes shown as
    text. The traceback goes to `check --log PATH` when given (the details in the log), else
    `--debug` shows it."""
    import traceback

    from npu_gate.escape import term
    from npu_gate.model.user_code import one_line

    where = "rerun with --debug for the traceback"
    log = args.log if args.command == "check" else None
    if log and _write_log(log, "".join(traceback.format_exception(exc))):
        where = f"traceback in {log}"
    return f"{term(one_line(exc))} ({where})"


def _check(args: argparse.Namespace) -> int:
    # Keep this path free of onnx/numpy/torch until a cache miss: a hit must stay cheap.
    from npu_gate.contract.spec import find_contract

    paths = [find_contract(p) for p in (args.contracts or [None])]
    if len(paths) > 1 and (args.json or args.markdown or args.log or args.out):
        raise GateError("--json, --markdown, --log and --out take one contract; run one check per "
                        "contract (or use --bundle)")
    # Every contract is valid before any model runs. A plain gate may be answered from the
    # cache: its lookup skips the onnx-based profile lint, which a miss then runs in full.
    cacheable = not _uncached_run(args)
    contracts = [_load_contract(p, cheap=cacheable) for p in paths]
    _require_torch(contracts)
    baseline = _baseline(args)
    if baseline is not None:
        _refuse_shared_names(contracts)
    if args.device_timings:
        import dataclasses

        timings = Path(args.device_timings)
        if not timings.is_file():
            raise GateError(f"--device-timings: file {args.device_timings!r} not found")
        contracts = [dataclasses.replace(c, device_timings=timings) for c in contracts]
    if args.out or args.bundle:
        _check_bundle_folders(contracts, args)
    missing: list[str] = []
    if baseline is not None:
        from npu_gate.compare.baseline import absent

        missing = absent([c.name for c in contracts], baseline)
    worst = EXIT_PASS
    for contract in contracts:
        try:
            if not cacheable:
                code = _check_uncached(contract, args, baseline, missing)
            else:
                code = _check_cached(contract, args)
        except GateError as exc:
            if len(contracts) == 1:
                raise
            # One model that cannot be read must not hide the others' verdicts.
            _print_problems(exc, args)
            code = EXIT_ERROR
        worst = max(worst, code)
    if missing and not args.quiet:
        from npu_gate.compare.merge import absent_line

        sys.stdout.write(absent_line(missing))
    return worst


def _refuse_shared_names(contracts: list[Contract]) -> None:
    """The baseline matches models by name: two contracts of one name would both be compared
    with its one result of that name (a new model's errors then read as no regression)."""
    first: dict[str, Contract] = {}
    problems = []
    for c in contracts:
        other = first.setdefault(c.name, c)
        if Path(other.path).resolve() != Path(c.path).resolve():
            problems.append(f"{c.path}: name {c.name!r} is also {other.path}'s: give one of the contracts "
                            "another \"name\" (--baseline matches models by name)")
    if problems:
        raise GateError(*problems)


def _require_torch(contracts: list[Contract]) -> None:
    """Without PyTorch (the ONNX-only install), a contract with a torch model could not run:
    say so for each one before any model runs, as for any other contract that cannot run."""
    import importlib.util

    if importlib.util.find_spec("torch") is not None:
        return
    problems = []
    for c in contracts:
        if c.torch is not None:
            problems.append(f"{c.path}: model.torch needs PyTorch: pip install 'npu-gate[torch]'")
        if c.replacement is not None and c.replacement.torch is not None:
            problems.append(f"{c.path}: replacement.torch needs PyTorch: pip install 'npu-gate[torch]'")
    if problems:
        raise GateError(*problems)


def _uncached_run(args: argparse.Namespace) -> bool:
    """Bundle, ratchet and device-timing runs always run the whole gate."""
    return bool(args.out or args.bundle or args.baseline or args.fail_on != "errors"
                or args.device_timings)


def _load_contract(path: Path, *, cheap: bool) -> Contract:
    from npu_gate.contract.spec import load_contract
    from npu_gate.errors import ContractError

    try:
        return load_contract(path, check_onnx=not cheap)
    except ContractError:
        if cheap:
            load_contract(path)  # the full check: every problem in one go
        raise


def _check_uncached(contract: Contract, args: argparse.Namespace, baseline: Any, missing: list[str]) -> int:
    """Bundle and ratchet runs: always the whole gate (they need the live artifacts)."""
    from npu_gate.pipeline import check_contract

    folder: Path | None = None
    if args.out or args.bundle:
        result, folder = _check_bundle(contract, args)
    else:
        result = check_contract(contract, today=args.today)
    _warn_device_timings(result.device_timings, result.name)
    if args.log:
        _write(args.log, "\n".join(result.log) + ("\n" if result.log else ""))
    if args.baseline or args.fail_on != "errors":
        return _emit_ratchet(result, str(contract.path), baseline, args, bundle=folder, missing=missing)
    _emit(result, args, bundle=folder)
    return EXIT_PASS if result.passed else EXIT_FAIL


def _check_bundle_folders(contracts: list[Contract], args: argparse.Namespace) -> None:
    """Every bundle folder is usable and each contract has its own, before any model runs."""
    from npu_gate.evidence import bundle

    folders: dict[Path, Contract] = {}
    problems = []
    for contract in contracts:
        folder = Path(args.out) if args.out else bundle.default_folder(contract)
        # "Model" and "model" are one folder on macOS and Windows file systems
        other = folders.setdefault(Path(str(folder.resolve()).casefold()), contract)
        if other is not contract:
            problems.append(f"{contract.path}: its bundle folder {folder} is also {other.path}'s; "
                            "give one of the contracts another \"name\"")
            continue
        try:
            bundle.check_target(folder)
        except GateError as exc:
            problems.extend(exc.problems)
    if problems:
        raise GateError(*problems)


def _check_bundle(contract: Contract, args: argparse.Namespace) -> tuple[GateResult, Path]:
    """check_contract, then the evidence bundle (--out DIR or npu-gate-out/<name>/); the
    result and the bundle's folder."""
    from npu_gate.evidence import bundle
    from npu_gate.pipeline import Artifacts, check_contract

    folder = Path(args.out) if args.out else bundle.default_folder(contract)
    with bundle.staged(folder) as stage:
        art = Artifacts(stage)
        result = check_contract(contract, today=args.today, keep=art)
        bundle.write(stage, contract, result, art)
    if not args.quiet:
        print(f"evidence bundle: {folder}")
    return result, folder


def _inspect(args: argparse.Namespace) -> int:
    from npu_gate.gc_pause import gc_paused

    # No cyclic collection while a large graph is analysed and rendered (gc_pause.py). The
    # result is freed (reference counting) when _inspect_run returns, so the collector,
    # back on, does not have to scan it.
    with gc_paused():
        return _inspect_run(args)


def _inspect_run(args: argparse.Namespace) -> int:
    from npu_gate.pipeline import inspect_model
    from npu_gate.target.profile import load_profile

    profile = load_profile(args.profile, Path.cwd(), where="--profile")
    if args.out:
        from npu_gate.evidence import bundle
        from npu_gate.pipeline import Artifacts

        folder = Path(args.out)
        with bundle.staged(folder) as stage:
            art = Artifacts(stage)
            result = inspect_model(Path(args.model), profile, keep=art)
            bundle.write_any(stage, result, art, profile, None)
        if not args.quiet:
            print(f"evidence bundle: {folder}")
    else:
        result = inspect_model(Path(args.model), profile)
    _emit(result, args, bundle=Path(args.out) if args.out else None)
    return EXIT_PASS if result.passed else EXIT_FAIL


def _emit(result: GateResult, args: argparse.Namespace, bundle: Path | None = None) -> None:
    from npu_gate.render import text

    if args.json:
        from npu_gate.render import json_

        _write(args.json, json_.render(result))
    if args.markdown:
        from npu_gate.render import markdown

        _write(args.markdown, markdown.render(result, _bundle_dir(bundle, args.markdown)))
    if not args.quiet:
        sys.stdout.write(text.render(result))


def _bundle_dir(bundle: Path | None, report: str) -> str:
    """The bundle folder relative to the folder of the Markdown report at ``report`` (POSIX,
    "" when they are the same): links into the bundle resolve from the report."""
    if bundle is None:
        return ""
    relative = Path(os.path.relpath(bundle.resolve(), Path(report).resolve().parent)).as_posix()
    return "" if relative == "." else relative


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
    from npu_gate.resources import builtin_profile_names
    from npu_gate.target.profile import load_profile

    profiles = [load_profile(name) for name in builtin_profile_names()]
    width = max(len(p.name) for p in profiles)
    for p in profiles:
        print(f"{p.name:<{width}} {p.evidence:<22} {len(p.ops):>3} ops  {p.description}")
    return EXIT_PASS


def _explain(args: argparse.Namespace) -> int:
    from npu_gate.rules import RETIRED, RULES

    r = RULES.get(args.id)
    if r is None:
        if args.id in RETIRED:
            raise GateError(f"{args.id}: retired in {RETIRED[args.id]}")
        return _explain_constraint(args.id)
    print(f"{r.id} ({r.severity if r.finding else 'stops the run, exit 2'})\n\n{r.summary}\n\n{r.doc}")
    return EXIT_PASS


def _reduce(args: argparse.Namespace) -> int:
    from npu_gate.evidence.reduce import Reducer, Step, write_log

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
def _baseline(args: argparse.Namespace) -> list[dict[str, Any]] | None:
    from npu_gate.result.read import load_results

    if args.fail_on == "regressions" and not args.baseline:
        raise GateError("--fail-on regressions needs --baseline FILE")
    return load_results(Path(args.baseline)) if args.baseline else None


def _emit_ratchet(result: GateResult, label: str, baseline: list[dict[str, Any]] | None,
                  args: argparse.Namespace, bundle: Path | None = None, missing: Sequence[str] = ()) -> int:
    """`check` with --baseline / --fail-on: the report gains the baseline section (and names
    the baseline's ``missing`` models; the terminal line for them comes after all contracts)."""
    from npu_gate.compare.baseline import compare_all
    from npu_gate.compare.merge import should_fail, text_lines
    from npu_gate.render import json_
    from npu_gate.render.report import ModelReport, render_report

    model = ModelReport(label, result=result)
    if args.markdown:
        model.bundle_dir = _bundle_dir(bundle, args.markdown)
    if baseline is not None:
        model.comparison = compare_all([result.to_dict()], baseline)[0]
    failed = should_fail([model], args.fail_on)
    if args.json:
        _write(args.json, json_.render(result))
    if args.markdown:
        _write(args.markdown, render_report([model], failed=failed, fail_on=args.fail_on, missing=missing))
    if not args.quiet:
        sys.stdout.write(text_lines([model], args.fail_on))
    return EXIT_FAIL if failed else EXIT_PASS


def _merge(args: argparse.Namespace) -> int:
    from npu_gate.compare.merge import (
        attach_baseline,
        exit_code,
        load_reports,
        merged_document,
        should_fail,
        text_lines,
    )
    from npu_gate.render.report import render_report

    if args.fail_on == "regressions" and not args.baseline:
        raise GateError("--fail-on regressions needs --baseline FILE")
    models = load_reports([Path(p) for p in args.results], Path(args.markdown) if args.markdown else None)
    missing = attach_baseline(models, Path(args.baseline)) if args.baseline else []
    failed = should_fail(models, args.fail_on)
    if args.json:
        doc = merged_document(models, [m.comparison for m in models])
        _write(args.json, json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    if args.markdown:
        _write(args.markdown, render_report(models, failed=failed, fail_on=args.fail_on, missing=missing))
    if not args.quiet:
        sys.stdout.write(text_lines(models, args.fail_on, missing))
    return exit_code(models, args.fail_on)
def _explain_constraint(ref: str) -> int:
    from npu_gate.target.limits import LIMIT_IDS
    from npu_gate.target.pages import LIMIT_WORDS, describe_limit, explain_constraint, find_constraints
    from npu_gate.target.profile import load_profile

    limit = {v: k for k, v in LIMIT_IDS.items()}.get(ref.rsplit(":", 1)[-1])
    # PROFILE:limit-... is that profile's limit: one it does not set is unknown there, as a
    # constraint id it does not have is (a profile name that is not one is an error).
    scoped = load_profile(ref.rsplit(":", 1)[0], where="explain") if limit and ":" in ref else None
    if limit is not None and (scoped is None or limit in scoped.limits):
        effect = ("A model whose opset is outside it gets one finding without a node: the target's converter is "
                  "expected to refuse the model." if limit == "opset" else
                  "A node that breaks it runs on CPU; the finding names the tensor, the value seen and the limit.")
        print(f"{ref} (profile limit `limits.{limit}`, rule profile-limit)\n\n"
              f"Limits {LIMIT_WORDS[limit]} for every op of a profile. {effect}")
        if scoped is not None:
            print(f"\nIn profile {scoped.name} ({scoped.evidence}): {describe_limit(limit, scoped.limits[limit])}.")
        return EXIT_PASS
    found = [] if limit is not None else find_constraints(ref)
    if not found:
        raise GateError(f"{ref}: unknown rule or constraint id (see `npu-gate rules` and "
                        "`npu-gate profile show NAME`)")
    print("\n\n---\n\n".join(explain_constraint(p, key, c) for p, key, c in found))
    return EXIT_PASS


def _profile(args: argparse.Namespace) -> int:
    from npu_gate.resources import builtin_profile_names, profile_dir
    from npu_gate.target import pages as profile_docs
    from npu_gate.target.profile import load_profile

    if args.profile_command == "check":
        from npu_gate.target.lint import check_file

        path = Path(args.file)
        if not path.is_file():
            raise GateError(f"{args.file}: file not found")
        errors, warnings, deferred = check_file(path)
        for line in warnings:
            print(f"npu-gate: warning: {visible(line)}", file=sys.stderr)
        for line in errors:
            print(f"npu-gate: error: {visible(line)}", file=sys.stderr)
        if errors:
            later = ("; the other checks (constraint ids and subjects, references, `extends`) run once the "
                     "schema errors are fixed") if deferred else ""
            print(f"{args.file}: {len(errors)} error(s){later}")
            return EXIT_FAIL
        p = load_profile(str(path))
        count = sum(len(s.get("constraints", [])) for s in p.ops.values())
        base = f"; extends {' -> '.join(p.extends)}" if p.extends else ""
        print(f"{args.file}: ok: profile {p.name} ({p.evidence}), {len(p.ops)} ops, "
              f"{count} constraints{base}")
        return EXIT_PASS
    if args.profile_command == "calibrate":
        return _profile_calibrate(args)
    if args.profile_command == "diff":
        d = _write_profile_diff(load_profile(args.a, Path.cwd(), where="profile diff"),
                                load_profile(args.b, Path.cwd(), where="profile diff"),
                                Path(args.json) if args.json else None, Path(args.markdown) if args.markdown else None)
        return EXIT_PASS if d["identical"] else EXIT_FAIL
    if args.profile_command == "show":
        p = load_profile(args.name, Path.cwd(), where="profile show")
        if args.format == "json":
            print(json.dumps(p.document(), indent=2))
        else:
            # A built-in's files (its calibration record) are inside the installed package, not
            # under the current folder: named as text. A profile file's resolve from here.
            page_dir = None if p.origin == "builtin" else "."
            page = profile_docs.render_markdown(p, _origin(p), page_dir=page_dir, page=False)
            # a profile file's text may hold escape sequences: shown as text, line by line
            sys.stdout.write("".join(visible(line) + "\n" for line in page.splitlines()))
        return EXIT_PASS
    out = Path(args.out)
    stale = []
    for name in builtin_profile_names():
        p = load_profile(name)
        origin = _origin(p)
        # Link the profile's files (its calibration record) only from within npu_gate's own
        # checkout, where origin's folder is the installed one; elsewhere the link would be broken.
        reachable = Path(origin).parent.resolve() == profile_dir().resolve()
        text = profile_docs.render_markdown(p, origin, page_dir=str(out) if reachable else None)
        target = out / f"{name}.md"
        current = target.read_text(encoding="utf-8") if target.is_file() else None
        if current == text:
            continue
        if args.check:
            stale.append(str(target))
        else:
            _write(str(target), text)
            print(f"wrote {target}")
    for page in stale:
        print(f"npu-gate: error: {page} is missing or out of date; run `npu-gate profile docs`",
              file=sys.stderr)
    return EXIT_FAIL if stale else EXIT_PASS


def _profile_calibrate(args: argparse.Namespace) -> int:
    from npu_gate import calibrate
    from npu_gate.target.profile import load_profile

    out = Path(args.out)
    record_path = out.with_name(out.stem + ".calibration.json")
    # A typo in a profile named on the command line fails before the sweep runs.
    against = load_profile(args.diff_against, Path.cwd(), where="--diff-against") if args.diff_against else None
    if args.from_record:
        record = calibrate.load_record(Path(args.from_record))
        measured_for = record["compiler"].get("target")
        if args.target is not None and args.target != measured_for:
            raise GateError(f"--target {args.target}: {args.from_record} was measured for {measured_for}")
        # The profile and its record go together: the record is written beside --out, named after it.
        beside = Path(args.from_record).resolve() == record_path.resolve()
        record = {**record, "name": args.name or (record["name"] if beside else out.stem),
                  "record_name": record_path.name}
    else:
        if args.target is None:
            raise GateError("--target: required to measure (the compiler's target, e.g. rk3588); "
                            "only --from-record takes it from the record")
        from npu_gate.probe import get_compiler

        compiler = get_compiler(args.compiler)
        if args.extends:
            load_profile(args.extends, Path.cwd(), where="--extends")
        candidates = calibrate.candidates_from(
            load_profile(args.patterns_from, Path.cwd(), where="--patterns-from") if args.patterns_from else None)
        families = calibrate.SWEEPS[args.sweep]()

        def progress(point: dict[str, object]) -> None:
            if point["status"] != "ok":
                print(f"  {point['point']}: {point['status']}: {point.get('error')}", file=sys.stderr)

        measured = calibrate.measure(
            compiler, args.target, compiler.python(Path(args.venv or f".venv-{compiler.name}")), families,
            batch=not args.no_batch, timeout=args.timeout, keep=Path(args.keep_work) if args.keep_work else None,
            progress=progress)
        record = calibrate.record_document(
            measured, name=args.name or out.stem, record_name=record_path.name, sweep=args.sweep,
            command=_calibrate_command(args), extends=args.extends, patterns_from=args.patterns_from,
            candidates=candidates)
    doc, derived = calibrate.derive_profile(record, schema=calibrate.schema_reference(out))
    record["verdicts"] = derived.verdicts
    _write(str(out), json.dumps(doc, indent=2) + "\n")
    # --from-record derives the verdicts again and keeps the points as measured.
    _write(str(record_path), calibrate.record_json(record))
    for key, v in derived.verdicts.items():
        if v["verdict"] in ("unexplained", "contradicted"):
            print(f"npu-gate: warning: {key}: {v['verdict']}; points against it: "
                  f"{', '.join(v.get('contradicted_by', []))}", file=sys.stderr)
    t = record["timings"]
    if args.from_record:
        c = record["compiler"]
        print(f"derived from {args.from_record}: {t['points']} points measured with {c.get('name')} "
              f"{c.get('version')} {c.get('target')}; no compiler ran")
    else:
        print(f"{t['points']} points in {t['total_s']} s ({t['mode']}, median {t['median_point_s']} s per point, "
              f"{t['processes']} compiler process(es))")
    print(f"wrote {out} ({len(doc['ops'])} ops, {len(doc.get('patterns', []))} patterns) and {record_path}")
    if against is not None:
        _write_profile_diff(against, load_profile(str(out)), out.with_name(out.stem + ".diff.json"),
                            out.with_name(out.stem + ".diff.md"))
    return EXIT_PASS


def _calibrate_command(args: argparse.Namespace) -> str:
    """The command that reproduces a calibration (without the machine-specific --venv)."""
    parts = ["npu-gate profile calibrate", f"--compiler {args.compiler}", f"--target {args.target}",
             f"--sweep {args.sweep}"]
    for flag in ("name", "extends", "patterns_from"):
        if getattr(args, flag):
            parts.append(f"--{flag.replace('_', '-')} {getattr(args, flag)}")
    return " ".join([*parts, f"--out {args.out}"])


def _write_profile_diff(a: object, b: object, json_path: Path | None, md_path: Path | None) -> dict[str, object]:
    from npu_gate.calibrate.diff import diff_profiles, render_markdown, render_text

    d = diff_profiles(a, b, _measured_ops(b))
    sys.stdout.write(render_text(d))
    if json_path is not None:
        _write(str(json_path), json.dumps(d, indent=2) + "\n")
    if md_path is not None:
        _write(str(md_path), render_markdown(d))
    return d


def _measured_ops(profile: Any) -> set[str] | None:
    """The ops the calibration record beside a calibrated profile that extends nothing measured
    (None otherwise, or when there is no readable record)."""
    if profile.evidence != "measured" or profile.extends:
        return None
    origin = Path(_origin(profile))
    if profile.origin == "builtin":
        from npu_gate.resources import profile_dir

        origin = profile_dir() / origin.name
    try:
        record = json.loads(origin.with_name(origin.stem + ".calibration.json").read_text(encoding="utf-8"))
        return set(record["verdicts"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _origin(profile: object) -> str:
    origin = getattr(profile, "origin", "")
    name = getattr(profile, "name", "")
    return f"npu_gate/profiles/{name}.json" if origin == "builtin" else str(origin)
def _diff(args: argparse.Namespace) -> int:
    from npu_gate.compare.diff import diff_results, load_side
    from npu_gate.render import diff_md

    a = load_side(args.a, args.profile, args.today)
    b = load_side(args.b, args.profile, args.today)
    result = diff_results(a, b, (args.a, args.b))
    if args.json:
        _write(args.json, json.dumps(result, indent=2) + "\n")
    if args.markdown:
        _write(args.markdown, diff_md.render(result))
    if not args.quiet:
        sys.stdout.write(diff_md.render_text(result))
    return EXIT_PASS if result["identical"] else EXIT_FAIL
# --- result cache, validate, check-onnx ---------------------------------------------------

def _check_cached(contract: Any, args: argparse.Namespace) -> int:
    """Gate one contract, answering from the result cache when its key is unchanged."""
    from npu_gate import cache

    today = args.today or dt.date.today()
    outputs = [Path(p) for p in (args.json, args.markdown, args.log) if p]

    def key() -> str:
        return cache.contract_key(contract, today, exclude=outputs)

    def run() -> tuple[Any, list[Any] | None]:
        from npu_gate.contract.spec import load_contract
        from npu_gate.pipeline import check_contract

        full = load_contract(contract.path)  # with the onnx-based profile lint skipped above
        result = check_contract(full, today=args.today)
        deps = cache.onnx_dependencies(contract.onnx_path) if contract.onnx_path else []
        return result, deps

    return _cached(args, str(contract.path), key, run)


def _cached(args: argparse.Namespace, label: str, key_fn: Callable[[], str],
            run: Callable[[], tuple[Any, list[Any] | None]]) -> int:
    """Answer from the cache, or ``run()`` the gate (result, external files read) and store."""
    from npu_gate import cache

    # --no-cache skips the lookup only: the fresh result replaces whatever was stored.
    store = cache.Store(cache.resolve_dir(args.cache_dir))
    key = None
    uncached = None  # said once the run has a result: a run that cannot start says only why
    try:
        key = key_fn()
    except cache.NotCacheable as exc:
        uncached = str(exc)
    except OSError as exc:  # an unreadable file in a torch contract's folder, say
        uncached = f"cannot read {exc.filename}: {exc.strerror}"
    if key is not None and not args.no_cache:
        entry = store.get(key)
        if entry is not None:
            _emit_cached(entry, args)
            return entry.exit_code
    result, deps = run()
    json_text, markdown_text, terminal = _render_all(result)
    _emit_texts(args, json_text, markdown_text, terminal, result.log)
    _warn_device_timings(result.device_timings, result.name)
    if uncached is not None:
        print(f"npu-gate: note: {label}: not cached: {uncached}", file=sys.stderr)
    code = EXIT_PASS if result.passed else EXIT_FAIL
    if key is not None and deps is not None:
        store.put(cache.new_entry(key, code, json_text, markdown_text, terminal, result.log, deps))
    return code


def _render_all(result: Any) -> tuple[str, str, str]:
    from npu_gate.render import json_, markdown, text

    return json_.render(result), markdown.render(result), text.render(result)


def _emit_texts(args: argparse.Namespace, json_text: str, markdown_text: str, terminal: str,
                log: list[str]) -> None:
    if args.json:
        _write(args.json, json_text)
    if args.markdown:
        _write(args.markdown, markdown_text)
    if args.log:
        _write(args.log, "\n".join(log) + ("\n" if log else ""))
    if not args.quiet:
        sys.stdout.write(terminal)


def _emit_cached(entry: Any, args: argparse.Namespace) -> None:
    """The stored outputs, each saying that it came from the cache."""
    note = f"result from cache (key {entry.key[:12]}, computed {entry.created})"
    doc = json.loads(entry.json)
    doc["cache"] = {"hit": True, "key": entry.key, "created": entry.created}
    json_text = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    markdown_text = (f"{entry.markdown}\n_{note[0].upper()}{note[1:]}; "
                     "`npu-gate check --no-cache` recomputes it._\n")
    _emit_texts(args, json_text, markdown_text, f"{entry.text}  {note}\n", entry.log)
    _warn_device_timings(doc.get("device_timings"), doc["name"])


def _warn_device_timings(doc: dict[str, Any] | None, name: str) -> None:
    from npu_gate.contract.device_timings import unmatched_warnings

    for line in unmatched_warnings(doc, name):
        print(f"npu-gate: warning: {visible(line)}", file=sys.stderr)


def _validate(args: argparse.Namespace) -> int:
    """Contract or profile files against the schemas (and what schemas cannot say).

    Exit 2 when any file is invalid: the same "could not run" a `check` gives for it.
    """
    from npu_gate.contract.spec import load_contract
    from npu_gate.target.profile import load_profile
    from npu_gate.validation import read_document

    problems: list[str] = []
    for name in args.files:
        path = Path(name)
        kind = "contract"
        if name.endswith(".npu-profile.json"):
            kind = "profile"
        elif not Path(name).name.startswith("npu-gate"):
            try:  # any other name: a profile has ops and no model
                doc = read_document(path, name)
                if isinstance(doc, dict) and "ops" in doc and "model" not in doc:
                    kind = "profile"
            except ValueError:
                pass
        try:
            if kind == "profile":
                load_profile(str(path) if path.suffix else f"./{path}", where=name)
            else:
                load_contract(path)
        except GateError as exc:
            problems.extend(exc.problems)
            continue
        if not args.quiet:
            print(f"{name}: valid {kind}")
    for problem in problems:
        print(f"npu-gate: error: {visible(problem)}", file=sys.stderr)
    return EXIT_ERROR if problems else EXIT_PASS


def _check_onnx(args: argparse.Namespace) -> int:
    """Gate ONNX files: with every contract that names one, else with --profile, else skip.

    Like `check`, contracts and --profile load without the onnx-based profile lint, so a
    cache hit imports no onnx or numpy; a miss reloads them with the full check."""
    profile = None
    if args.profile:
        profile = _load_profile_option(args.profile, cheap=True)
    worst = EXIT_PASS
    seen: set[Path] = set()
    for name in args.files:
        model = Path(name)
        if not model.is_file():
            raise GateError(f"{name}: file not found")
        contracts = [c for c in contracts_naming(model) if c not in seen]
        seen.update(contracts)
        if contracts:
            for path in contracts:
                worst = max(worst, _check_cached(_load_contract(path, cheap=True), args))
        elif profile is not None:
            worst = max(worst, _inspect_cached(model, profile, args))
        elif not args.quiet:
            print(f"npu-gate: {name}: skipped: no npu-gate contract names it "
                  "(pass --profile to gate it anyway)")
    return worst


def _load_profile_option(ref: str, *, cheap: bool) -> Any:
    from npu_gate.errors import ProfileError
    from npu_gate.target.profile import load_profile

    try:
        return load_profile(ref, Path.cwd(), where="--profile", check_onnx=not cheap)
    except ProfileError:
        if cheap:
            load_profile(ref, Path.cwd(), where="--profile")  # the full check: every problem
        raise


def _inspect_cached(model: Path, profile: Any, args: argparse.Namespace) -> int:
    from npu_gate import cache

    def run() -> tuple[Any, list[Any] | None]:
        from npu_gate.pipeline import inspect_model

        full = _load_profile_option(args.profile, cheap=False)  # the lint the lookup skipped
        return inspect_model(model, full), cache.onnx_dependencies(model)

    return _cached(args, str(model), lambda: cache.inspect_key(model, profile), run)


def contracts_naming(model: Path) -> list[Path]:
    """Contracts (npu-gate.json, npu-gate.*.json, YAML too) in the model's folder or any
    folder above it up to the working directory whose ``model.onnx`` is this file."""
    import importlib.util

    from npu_gate.validation import read_document

    target = model.resolve()
    cwd = Path.cwd().resolve()
    folders = [target.parent]
    if target.is_relative_to(cwd):
        folders += [p for p in target.parent.parents if p.is_relative_to(cwd)]
    found = []
    for folder in folders:
        for path in sorted(folder.glob("npu-gate*")):
            if not re.fullmatch(r"npu-gate(\.[^/]+)?\.(json|ya?ml)", path.name):
                continue
            try:
                doc = read_document(path, str(path))
                ref = doc["model"]["onnx"]
            except (ValueError, KeyError, TypeError) as exc:
                # Without PyYAML whether a YAML contract names this model is unknown: skipping it
                # would pass a model its contract may fail.
                if (isinstance(exc, ValueError) and path.suffix.lower() in (".yaml", ".yml")
                        and importlib.util.find_spec("yaml") is None):
                    raise GateError(str(exc)) from None
                continue  # not a contract of an ONNX file, or broken: npu-gate-contract says why
            if isinstance(ref, str) and (folder / ref).resolve() == target:
                found.append(path)
    return found


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
def _probe(args: argparse.Namespace) -> int:
    from npu_gate.probe import get_compiler

    if args.model == "setup":
        if len(args.setup_args) != 2:
            raise GateError("usage: npu-gate probe setup COMPILER VENV [--torch] [--force]")
        return _probe_setup(get_compiler(args.setup_args[0]), Path(args.setup_args[1]), args)
    if args.setup_args:
        raise GateError(f"probe: unexpected arguments {' '.join(args.setup_args)} (one MODEL.onnx per probe)")
    from npu_gate.pipeline import probe_model
    from npu_gate.render.probe import markdown, text
    from npu_gate.target.profile import load_profile

    compiler = get_compiler(args.compiler)
    venv = Path(args.venv or f".venv-{compiler.name}")
    profile = load_profile(args.profile, Path.cwd(), where="--profile")
    result = probe_model(Path(args.model), compiler, args.target, compiler.python(venv),
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
