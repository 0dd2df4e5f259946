"""CPU seconds of fresh `npu-gate inspect --json` processes, this tree against an earlier one.

On a machine shared with other jobs wall times say little; the CPU time a process used
(user + system, from ``os.wait4``) is steadier. Each run is a fresh process, interleaved
(floor, before, after, floor, ...), and the median of ``--repeat`` runs is printed per size,
with the ratios to the floor (``bench_inspect.py``'s: onnx.load + strict infer_shapes):

    .venv/bin/python bench/inspect_cpu.py --before TREE [--sizes 1000 10000 50000] [--repeat 7]
        [--importtime 7]

``--importtime N`` also runs ``python -X importtime -m npu_gate inspect`` N times per tree on
the smallest graph and prints the medians of the cumulative import time of ``npu_gate.cli``
and of the sum of every ``npu_gate`` module's own time (microseconds as Python reports them:
wall time of one process, so noisier than the CPU seconds). Both trees run as in
``bench_inspect.py --before``: PYTHONPATH set to the tree, the working directory outside it,
bytecode in a temporary PYTHONPYCACHEPREFIX written by one untimed run per tree.
These CPU figures are not the issue's targets (those are whole-process wall ratios, measured
by ``bench_inspect.py`` on a quiet machine); they show what a change takes out.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_inspect import FLOOR, check_origin, tree_env  # noqa: E402
from tests.helpers import model_zoo  # noqa: E402


def cpu_seconds(cmd: list[str], env: dict[str, str], cwd: Path) -> float:
    """User + system CPU seconds of one fresh process (exit 0 or 1: the gate may fail)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd)
    _, status, usage = os.wait4(proc.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} exited {code}")
    return usage.ru_utime + usage.ru_stime


def import_times(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[int, int, int]:
    """(cumulative µs of npu_gate.cli, the sum of npu_gate modules' own µs, their count) of one run."""
    done = subprocess.run([sys.executable, "-X", "importtime", *cmd[1:]], capture_output=True, text=True,
                          env=env, cwd=cwd, check=False)
    cli = own = count = 0
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        own_us, cumulative, name = line.split(":", 1)[1].split("|")
        if name.strip() == "npu_gate.cli":
            cli = int(cumulative)
        if name.strip().startswith("npu_gate"):
            own += int(own_us)
            count += 1
    return cli, own, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 50000])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--importtime", type=int, default=0)
    parser.add_argument("--profile", default="demo")
    args = parser.parse_args()
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory(prefix="inspect-cpu-") as tmp:
        work = Path(tmp)
        envs = {"before": tree_env(args.before.resolve(), work / "pyc-before"),
                "after": tree_env(ROOT, work / "pyc-after")}
        for label, env in envs.items():
            check_origin(label, env, work, show=True)
        plain = {**os.environ}
        for n in args.sizes:
            model = work / f"m{n}.onnx"
            model.write_bytes(model_zoo.many_nodes(n).SerializeToString())
            cmds = {"floor": [sys.executable, "-c", FLOOR, str(model)]}
            for label in envs:
                cmds[label] = [sys.executable, "-m", "npu_gate", "inspect", str(model), "--profile", args.profile,
                               "--json", str(work / f"{label}.json")]
                cpu_seconds(cmds[label], envs[label], work)  # untimed: writes the bytecode
            times: dict[str, list[float]] = {name: [] for name in cmds}
            for _ in range(args.repeat):
                for name, cmd in cmds.items():
                    times[name].append(cpu_seconds(cmd, envs.get(name, plain), work))
            med = {name: statistics.median(values) for name, values in times.items()}
            print(f"{n} nodes, CPU s (median of {args.repeat}): floor {med['floor']:.3f}, before {med['before']:.3f}"
                  f" ({med['before'] / med['floor']:.2f}x floor), after {med['after']:.3f}"
                  f" ({med['after'] / med['floor']:.2f}x floor), after/before {med['after'] / med['before']:.3f};"
                  f" after - before {med['after'] - med['before']:+.3f} s")
            if args.importtime and n == min(args.sizes):
                rows: dict[str, list[tuple[int, int, int]]] = {label: [] for label in envs}
                for _ in range(args.importtime):
                    for label in envs:
                        rows[label].append(import_times(cmds[label], envs[label], work))
                for label, values in rows.items():
                    print(f"  -X importtime {label}: npu_gate.cli cumulative {statistics.median(v[0] for v in values)}"
                          f" us, npu_gate modules' own {statistics.median(v[1] for v in values)} us"
                          f" ({values[0][2]} modules), median of {args.importtime}")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
