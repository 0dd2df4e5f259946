"""`npu-gate reduce`: shrink a model while an external command keeps failing."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from npu_gate.commands.common import refuse_overwriting_inputs, writing
from npu_gate.errors import EXIT_PASS
from npu_gate.files import write_atomic


def run(args: argparse.Namespace) -> int:
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
    outputs = [("--out" if args.out else "the reduced model (default --out)", str(out)),
               ("--log" if args.log else "the step log (default --log)", str(log))]
    if "{inputs}" in args.check:  # the reduced model's inputs are written beside it
        outputs.append(("the inputs written beside --out", str(out.with_suffix(".npz"))))
    inputs = [("the model this run reduces", model), ("the --inputs samples this run reads", args.inputs)]
    refuse_overwriting_inputs(inputs, outputs, model=model)
    reducer = Reducer(model, args.check, timeout=args.timeout, match=args.match,
                      inputs=Path(args.inputs) if args.inputs else None, samples=args.samples,
                      max_steps=args.max_steps, progress=progress)
    outcome = reducer.run()
    with writing(out):
        out.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(out, outcome.model.SerializeToString())
    if reducer.wants_inputs:
        with writing(out.with_suffix(".npz")):
            reducer.write_inputs(outcome.model, out.with_suffix(".npz"))
    with writing(log):
        write_log(log, model, args.check, reducer, outcome, out)
    if not args.quiet:
        print(f"{len(reducer.order)} -> {len(outcome.nodes)} nodes in {len(outcome.steps)} steps: "
              f"{out} (log: {log})")
    return EXIT_PASS
