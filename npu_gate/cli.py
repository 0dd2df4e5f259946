"""Command line: parses the arguments and runs the command's module (npu_gate/commands/).

Exit codes: 0 the gate passed, 1 the gate failed, 2 the gate could not run (141: stdout closed early;
130 and 143: stopped by SIGINT or SIGTERM, after removing what the run had staged).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import math
import os
import signal
import sys
from collections.abc import Iterator, Sequence
from types import FrameType

from npu_gate import __version__
from npu_gate.commands.common import print_problems, write_log
from npu_gate.errors import EXIT_ERROR, GateError

DEFAULT_INSPECT_PROFILE = "demo"
QUANT_MODES = ("int8", "int16", "fp16", "none")  # probe --quantize: npu_gate.probe.base.QUANT_MODES
DEFAULT_TIMEOUT = 1800.0  # --timeout's default: npu_gate.stages.timeout.DEFAULT_SECONDS (a test keeps them equal)
EXIT_SIGPIPE = 141  # 128 + SIGPIPE (13): what a shell reports for a process SIGPIPE killed
EXIT_SIGINT = 130  # 128 + SIGINT (2), as for SIGPIPE
EXIT_SIGTERM = 143  # 128 + SIGTERM (15)
DEBUG_HELP = "show tracebacks of internal errors"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="npu-gate",
        description="Gate a PyTorch/ONNX model against an NPU target profile.",
        epilog="Exit codes: 0 pass, 1 gate failed, 2 could not run.",
    )
    parser.add_argument("--version", action="version", version=f"npu-gate {__version__}")
    parser.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    check = sub.add_parser("check", help="gate one or more contracts (default: ./npu-gate.json)")
    check.add_argument("contracts", nargs="*", metavar="PATH",
                       help="contract file, or a folder holding npu-gate.json")
    _add_outputs(check)
    _add_html(check)
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
    _add_timeout(check, "each model's run (export, analysis, probe, numerics)")

    inspect = sub.add_parser("inspect", help="analyse an ONNX file without a contract")
    inspect.add_argument("model", metavar="MODEL.onnx")
    inspect.add_argument("--profile", default=DEFAULT_INSPECT_PROFILE,
                         help=f"built-in profile name or profile file (default: {DEFAULT_INSPECT_PROFILE})")
    _add_outputs(inspect)
    _add_html(inspect)
    inspect.add_argument("--out", metavar="DIR", help="write the evidence bundle into DIR")
    _add_timeout(inspect, "the analysis")

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
                            "(default: warn about them)")
    check_onnx.add_argument("--contracts", action="append", metavar="GLOB",
                            help="also these files are contracts, whatever their names (repeatable; "
                                 "npu-gate.json / npu-gate.*.json anywhere in the repository always are)")
    check_onnx.add_argument("--require-contract", action="store_true",
                            help="a file no contract names (and no --profile gates) fails, exit 1")
    check_onnx.add_argument("-q", "--quiet", action="store_true", help="no terminal summary")
    check_onnx.set_defaults(json=None, markdown=None, html=None, log=None, today=None)  # as `check` has
    _add_cache(check_onnx)
    _add_timeout(check_onnx, "each model's run")

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
    _debug_everywhere(parser)
    return parser


def _add_ratchet(p: argparse.ArgumentParser) -> None:
    p.add_argument("--baseline", metavar="FILE",
                   help="result JSON of the base branch: report new/fixed findings and deltas")
    p.add_argument("--fail-on", choices=["errors", "regressions", "never"], default="errors",
                   help="exit 1 on the gate's errors (default), only on regressions against "
                        "--baseline, or never")


def _add_profile_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    profile = sub.add_parser("profile", help="check, show or document target profiles")
    psub = profile.add_subparsers(dest="profile_command", required=True, metavar="SUBCOMMAND")
    pcheck = psub.add_parser("check", help="validate a profile file (exit 1 when it has errors, "
                                           "2 when it cannot be read)")
    pcheck.add_argument("file", metavar="FILE")
    show = psub.add_parser("show", help="a profile's ops and constraints in words")
    show.add_argument("name", metavar="NAME", help="built-in name or profile file")
    show.add_argument("--format", choices=["text", "markdown", "json"], default="text",
                      help="text: plain text (default); markdown: the docs/profiles page; "
                           "json: the resolved profile (bases merged in)")
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
    cal.add_argument("--sweep", default="standard",
                     choices=["tiny", "standard", "standard-int8", "standard-einsum", "qdq", "ethos-u", "splits"],
                     help="which sweep (default: standard; tiny: 7 points, for quick checks; standard-int8: "
                          "standard plus int8 builds; standard-einsum: standard plus 22 Einsum equations; qdq: ops "
                          "in float and quantized for QNN's HTP, uint8 and uint16; ethos-u: 17 torch points for "
                          "--compiler ethos-u, which lowers PyTorch modules; splits: MatMul/Gemm heads and "
                          "Transposes around 8192 that RKNN splits across NPU and CPU)")
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


def _add_probe(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    probe = sub.add_parser(
        "probe", help="build the model with a real compiler and compare its placement with the prediction",
        usage="npu-gate probe MODEL.onnx --compiler NAME --target T [--venv VENV] [--inputs NAME:DIMS ...] "
              "[--soc-model N]\n"
              "                      [--quantize int8|int16|fp16|none [--calibration S.npz] [--holdout S.npz]]\n"
              "       npu-gate probe --factory MODULE:FUNCTION --compiler ethos-u --target T --inputs NAME:DIMS ...\n"
              "       npu-gate probe setup COMPILER VENV [--torch] [--force]",
        epilog="Exit codes: 0 the compiler built the model, 1 compiler-failed (or quantization-failed: "
               "the QNN QDQ preparation raised on the model), 2 the probe could not run.")
    probe.add_argument("model", metavar="MODEL.onnx", nargs="?",
                       help="the model, or `setup` to create a compiler venv")
    probe.add_argument("setup_args", nargs="*", metavar="COMPILER VENV", help=argparse.SUPPRESS)
    probe.add_argument("--compiler", default="rknn", help="compiler plug-in (default: rknn)")
    probe.add_argument("--target", help="target platform (default: the compiler's, rk3588 for rknn, htp for qnn)")
    probe.add_argument("--venv", metavar="VENV", help="the compiler's venv (default: .venv-COMPILER)")
    probe.add_argument("--soc-model", type=int, metavar="N",
                       help="qnn: QNN's id of the Snapdragon SoC to prepare for (default: 57, Snapdragon 8 Gen 3)")
    probe.add_argument("--factory", metavar="MODULE:FUNCTION",
                       help="a torch factory instead of MODEL.onnx (compilers on the PyTorch module: ethos-u)")
    probe.add_argument("--quantize", choices=QUANT_MODES, metavar="MODE",
                       help="build quantized: int8 | int16 | fp16 | none (default: the compiler's default build; "
                            "qnn: a float model is quantized to QDQ for the HTP first); "
                            "int8/int16 calibrate on --calibration (or samples drawn from [0, 1]) and measure the "
                            "compiler's accuracy on --holdout")
    probe.add_argument("--calibration", metavar="SAMPLES.npz",
                       help="calibration samples for --quantize int8/int16: one array per input, sample k in row k "
                            "(without --holdout its last 8 rows are the hold-out samples)")
    probe.add_argument("--holdout", metavar="SAMPLES.npz",
                       help="hold-out samples the quantized build's accuracy is measured on (never calibration rows)")
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


def _debug_everywhere(parser: argparse.ArgumentParser) -> None:
    """``--debug`` after the command too (``npu-gate check C --debug``), on every command and
    subcommand, as the internal-error line advises ("rerun with --debug"). Given nowhere, the
    top-level default (False) stands: the subcommands' flag has no default of its own."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):  # an alias is the same parser
                sub.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=DEBUG_HELP)
                _debug_everywhere(sub)


def _add_outputs(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", metavar="PATH", help="write the JSON result")
    p.add_argument("--markdown", metavar="PATH", help="write the Markdown report")
    p.add_argument("-q", "--quiet", action="store_true", help="no terminal summary")


def _add_html(p: argparse.ArgumentParser) -> None:
    p.add_argument("--html", metavar="PATH",
                   help="write the report as one self-contained HTML page (the partition map drawn as SVG)")


def _add_cache(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-cache", action="store_true",
                   help="ignore cached results and run the gate afresh (the new result is stored)")
    p.add_argument("--cache-dir", metavar="DIR",
                   help="result cache folder (default: $NPU_GATE_CACHE_DIR, else "
                        "$XDG_CACHE_HOME/npu-gate or ~/.cache/npu-gate)")


def _add_timeout(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--timeout", type=_time_limit, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help=f"time limit of {what}: past it the stages not yet run are skipped and the gate fails "
                        f"with a gate-timeout finding and a full report (0: no limit; default: {DEFAULT_TIMEOUT:g})")


def _time_limit(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not (value >= 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds >= 0 (0: no limit)")
    return value


def _date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a YYYY-MM-DD date") from None


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return value


class _Terminated(KeyboardInterrupt):
    """SIGTERM (a CI job cancelled, a timeout's kill), raised where the run is, as SIGINT raises
    KeyboardInterrupt: ``finally:`` blocks run, so no staging folder is left behind."""


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise _Terminated


@contextlib.contextmanager
def _sigterm_raises() -> Iterator[None]:
    """SIGTERM raises _Terminated while the command runs, unless something (an embedding
    program) installed its own handler; outside the main thread signals cannot be handled."""
    try:
        previous = signal.getsignal(signal.SIGTERM)
        if previous is not signal.SIG_DFL:
            previous = None
        else:
            signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread
        previous = None
    try:
        yield
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        with _sigterm_raises():
            code = _main(argv)
            sys.stdout.flush()  # a reader that went away shows here, not in Python's exit-time flush
    except KeyboardInterrupt as exc:  # SIGINT or SIGTERM, after the run's `finally:` blocks
        print("npu-gate: interrupted", file=sys.stderr)
        return EXIT_SIGTERM if isinstance(exc, _Terminated) else EXIT_SIGINT
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
        return _run(args)
    except GateError as exc:
        print_problems(exc, args)
        return EXIT_ERROR
    except KeyboardInterrupt:
        raise  # main() says so
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


def _run(args: argparse.Namespace) -> int:
    """Run the command: its module is imported only now, so `--help` and every other command
    stay free of what it imports."""
    command = args.command
    if command == "check":
        from npu_gate.commands import check

        return check.run(args)
    if command == "inspect":
        from npu_gate.commands import inspect

        return inspect.run(args)
    if command == "diff":
        from npu_gate.commands import diff

        return diff.run(args)
    if command == "rules":
        from npu_gate.commands import rules

        return rules.run(args)
    if command == "reduce":
        from npu_gate.commands import reduce

        return reduce.run(args)
    if command == "profiles":
        from npu_gate.commands import profiles

        return profiles.run()
    if command == "explain":
        from npu_gate.commands import explain

        return explain.run(args)
    if command == "merge":
        from npu_gate.commands import merge

        return merge.run(args)
    if command == "profile":
        from npu_gate.commands import profile

        return profile.run(args)
    if command == "validate":
        from npu_gate.commands import validate

        return validate.run(args)
    if command == "check-onnx":
        from npu_gate.commands import check_onnx

        return check_onnx.run(args)
    if command == "rewrites":
        from npu_gate.commands import rewrites

        return rewrites.run(args)
    if command == "probe":
        from npu_gate.commands import probe

        return probe.run(args)
    return EXIT_ERROR


def _internal_error(exc: Exception, args: argparse.Namespace) -> str:
    """One line for an internal error: the message's first line, terminal escapes shown as
    text. The traceback goes to `check --log PATH` when given (the details in the log), else
    `--debug` shows it."""
    import traceback

    from npu_gate.errors import one_line
    from npu_gate.escape import term

    where = "rerun with --debug for the traceback"
    log = args.log if args.command == "check" else None
    if log and write_log(log, "".join(traceback.format_exception(exc))):
        where = f"traceback in {log}"
    return f"{term(one_line(exc))} ({where})"
