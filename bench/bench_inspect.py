"""Time `npu-gate inspect` against the floor (onnx.load + infer_shapes) and ORT's usability checker.

Each command runs as a fresh process, as a CI step would. Prints medians and ratios:

    .venv/bin/python bench/bench_inspect.py [--sizes 1000 10000 50000] [--repeat 3]

Targets (issue 2): inspect <= 0.5x onnxruntime's check_onnx_model_mobile_usability, and
<= 1.5x a fresh `python -c` doing onnx.load + infer_shapes.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import model_zoo  # generated graphs live with the tests

FLOOR = (
    "import sys, onnx; m = onnx.load(sys.argv[1]); "
    "onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True, data_prop=True)"
)


def timed(cmd: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 50000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-ort", action="store_true", help="skip the (slow) ORT usability checker")
    args = parser.parse_args()
    py = sys.executable
    print(f"{'nodes':>7} {'floor s':>9} {'inspect s':>10} {'ort check s':>12} {'insp/floor':>11} {'insp/ort':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            path = Path(tmp) / f"g{n}.onnx"
            path.write_bytes(model_zoo.many_nodes(n).SerializeToString())
            floor = timed([py, "-c", FLOOR, str(path)], args.repeat)
            inspect = timed([py, "-m", "npu_gate", "inspect", str(path), "-q",
                             "--json", str(Path(tmp) / "r.json")], args.repeat)
            ort = float("nan")
            if not args.skip_ort:
                ort = timed([py, "-m", "onnxruntime.tools.check_onnx_model_mobile_usability", str(path)],
                            args.repeat)
            print(f"{n:>7} {floor:>9.2f} {inspect:>10.2f} {ort:>12.2f} {inspect / floor:>11.2f} "
                  f"{inspect / ort:>9.2f}")


if __name__ == "__main__":
    main()
