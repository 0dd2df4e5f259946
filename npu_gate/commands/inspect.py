"""`npu-gate inspect`: analyse an ONNX file with a profile, without a contract."""

from __future__ import annotations

import argparse
from pathlib import Path

from npu_gate.commands.common import emit, profile_inputs, refuse_overwriting_inputs, writing
from npu_gate.errors import EXIT_FAIL, EXIT_PASS


def run(args: argparse.Namespace) -> int:
    from npu_gate.process.gc_pause import gc_paused

    # No cyclic collection while a large graph is analysed and rendered (gc_pause.py). The
    # result is freed (reference counting) when _inspect_run returns, so the collector,
    # back on, does not have to scan it.
    with gc_paused():
        return _inspect_run(args)


def _inspect_run(args: argparse.Namespace) -> int:
    from npu_gate.pipeline import inspect_model
    from npu_gate.profile.spec import load_profile

    profile = load_profile(args.profile, Path.cwd(), where="--profile")
    refuse_overwriting_inputs(
        [("the model this run reads", args.model), *profile_inputs(profile)],
        [("--json", args.json), ("--markdown", args.markdown), ("--html", args.html)], model=Path(args.model),
        bundle=args.out)
    if args.out:
        from npu_gate.evidence import bundle
        from npu_gate.pipeline import Artifacts

        folder = Path(args.out)
        with bundle.staged(folder) as stage:
            art = Artifacts(stage)
            result = inspect_model(Path(args.model), profile, keep=art, time_limit=args.timeout)
            with writing(folder, "cannot write the evidence bundle"):
                bundle.write_any(stage, result, art, profile, None)
        if not args.quiet:
            print(f"evidence bundle: {folder}")
    else:
        result = inspect_model(Path(args.model), profile, time_limit=args.timeout)
    emit(result, args, bundle=Path(args.out) if args.out else None)
    return EXIT_PASS if result.passed else EXIT_FAIL
