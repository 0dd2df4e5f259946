"""Time `npu-gate profile calibrate` with one long-lived compiler process against one process per point.

    .venv/bin/python bench/bench_calibrate.py [--venv .venv-rknn] [--sweep tiny] [--repeat 3]

Each run is a fresh `npu-gate profile calibrate --compiler rknn --target rk3588` process, as a
user would start it, writing into a temporary folder; runs alternate between the two modes.
Prints the median wall time per mode, seconds per point, and the ratio. Needs the compiler's
venv (`npu-gate probe setup rknn .venv-rknn`); without it the script says so and exits 2.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_once(venv: str, sweep: str, batch: bool, out: Path) -> tuple[float, int]:
    """(wall seconds, points measured) of one calibrate process."""
    cmd = [sys.executable, "-m", "npu_gate", "profile", "calibrate", "--compiler", "rknn", "--target", "rk3588",
           "--venv", venv, "--sweep", sweep, "--out", str(out)]
    if not batch:
        cmd.append("--no-batch")
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    record = json.loads(out.with_name(out.stem + ".calibration.json").read_text(encoding="utf-8"))
    return seconds, len(record["points"])


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--venv", default=str(ROOT / ".venv-rknn"))
    parser.add_argument("--sweep", default="tiny", help="tiny (7 points) or standard (282 points)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per mode (median)")
    args = parser.parse_args()
    if not (Path(args.venv) / "bin" / "python").exists():
        print(f"bench_calibrate: no compiler venv at {args.venv}: run `npu-gate probe setup rknn {args.venv}`",
              file=sys.stderr)
        return 2
    times: dict[str, list[float]] = {"batch": [], "per point": []}
    points = 0
    with tempfile.TemporaryDirectory() as folder:
        for i in range(args.repeat):
            for mode in times:
                seconds, points = run_once(args.venv, args.sweep, mode == "batch", Path(folder) / f"p{i}.json")
                times[mode].append(seconds)
    print(f"sweep {args.sweep}: {points} points, median of {args.repeat} fresh processes per mode")
    print(f"{'mode':>10} {'wall s':>8} {'s/point':>8}")
    for mode, values in times.items():
        median = statistics.median(values)
        print(f"{mode:>10} {median:>8.2f} {median / points:>8.3f}")
    ratio = statistics.median(times["per point"]) / statistics.median(times["batch"])
    print(f"one process per point takes {ratio:.1f}x the batch")
    return 0


if __name__ == "__main__":
    sys.exit(main())
