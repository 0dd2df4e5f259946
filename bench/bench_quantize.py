"""Time quantization + accuracy of examples/quantize-mobilenet, in process, median of runs.

    PYTHONPATH=. .venv/bin/python bench/bench_quantize.py [--runs 5]

Times the stage's own parts on the example's contract (32 synthetic calibration samples, 8
hold-out): onnxruntime's quantize_static (QDQ, MinMax), the per-output comparison and the
per-layer matching (qdq_loss_debug), then the whole `check_contract` of the example (analysis
and the quantized graph's placement included). Prints medians in seconds and the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from npu_gate.contract.spec import load_contract  # noqa: E402
from npu_gate.pipeline import check_contract  # noqa: E402
from npu_gate.quantize import run as quant  # noqa: E402
from npu_gate.quantize.samples import sample_sets  # noqa: E402

EXAMPLE = REPO / "examples" / "quantize-mobilenet"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    contract = load_contract(EXAMPLE / "npu-gate.json")
    assert contract.quantization is not None
    sets = sample_sets(contract)
    model = EXAMPLE / "mobilenet.onnx"
    times: dict[str, list[float]] = {"quantize_static": [], "outputs": [], "layers": [], "check_contract": []}
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as folder:
            work = Path(folder)
            start = time.perf_counter()
            quant.quantize(model, work / "q.onnx", sets.calibration, contract.quantization)
            quantized = time.perf_counter()
            quant.output_accuracy(model, work / "q.onnx", sets.holdout)
            outputs = time.perf_counter()
            quant.layer_errors(model, work / "q.onnx", sets.holdout, work)
            done = time.perf_counter()
        times["quantize_static"].append(quantized - start)
        times["outputs"].append(outputs - quantized)
        times["layers"].append(done - outputs)
        start = time.perf_counter()
        result = check_contract(contract)
        times["check_contract"].append(time.perf_counter() - start)
        assert result.verdict == "pass", result.verdict
    print(f"examples/quantize-mobilenet, median of {args.runs} runs, load average {os.getloadavg()[0]:.2f}")
    for name, values in times.items():
        print(f"  {name:16s} {statistics.median(values):.3f} s")


if __name__ == "__main__":
    main()
