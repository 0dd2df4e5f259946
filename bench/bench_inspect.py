"""Time `npu-gate inspect` against the floor (onnx.load + infer_shapes) and ORT's usability checker.

Each command runs as a fresh process, as a CI step would; runs are interleaved (floor,
inspect, ORT, floor, ...) so that a burst of load on a shared machine hits all of them.
Prints the median of ``--repeat`` runs, the ratios and PASS/FAIL against the targets:

    .venv/bin/python bench/bench_inspect.py [--sizes 1000 10000 50000] [--repeat 5] [--phases]

Targets (issue 2): inspect <= 0.5x onnxruntime's check_onnx_model_mobile_usability, and
<= 1.5x a fresh `python -c` doing onnx.load + infer_shapes. `inspect` is timed twice:
with `--json FILE` (the CI step's form; the JSON of a 50k-node graph is ~30 MB, one line
per node) and without (text summary only). PASS/FAIL is judged on the `--json` form.

``--profile`` chooses the profile (default ``demo``: it supports Conv/Add/Mul but not
Relu/Clip, so placements alternate and the 50k graph has 40k partitions and ~40k
boundary crossings, the worst case for the partition passes; ``rknn-toolkit2-v2.1``
supports every op of the graph: one partition).

``--phases`` adds an in-process breakdown (where the time goes inside one `inspect`),
beside the floor measured the same way. In-process figures exclude interpreter start-up
and imports (~1 s for onnx alone), which both sides pay.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import model_zoo  # noqa: E402  (generated graphs live with the tests)

FLOOR = (
    "import sys, onnx; m = onnx.load(sys.argv[1]); "
    "onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True, data_prop=True)"
)
# --lower-bound: the least a Python tool must do to write this kind of JSON result, with no
# analysis at all: the floor's imports and inference plus the checker, reading every node's
# fields and every tensor's type through protobuf, and one orjson line per node.
LOWER_BOUND = """
import sys, onnx, orjson
m = onnx.load(sys.argv[1])
onnx.checker.check_model(m)
i = onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True, data_prop=True)
types = {v.name: v.type.SerializeToString() for v in i.graph.value_info}
with open(sys.argv[2], "wb") as out:
    for n in i.graph.node:
        out.write(orjson.dumps({"name": n.name, "op_type": n.op_type, "domain": n.domain,
                                "inputs": n.input[:], "outputs": n.output[:],
                                "types": [len(types.get(o, b"")) for o in n.output]}) + b"\\n")
"""
MAX_FLOOR_RATIO = 1.5
MAX_ORT_RATIO = 0.5


def run_once(cmd: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):  # 1: the gate failed (expected on the demo profile)
        raise SystemExit(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stderr.decode()[-2000:]}")
    return seconds


def medians(commands: dict[str, list[str]], repeat: int) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, cmd in commands.items():
            times[name].append(run_once(cmd))
    return {name: statistics.median(values) for name, values in times.items()}


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def import_onnx_seconds(repeat: int) -> float:
    return statistics.median(run_once([sys.executable, "-c", "import onnx"]) for _ in range(repeat))


def _version(dist: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "absent"


def load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def bench(sizes: list[int], repeat: int, skip_ort: bool, tmp: Path, profile: str, lower_bound: bool) -> None:
    py = sys.executable
    env_note = f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, median of {repeat}, profile {profile}"
    print(f"load average before: {load_average()}  ({env_note})")
    print(f"import onnx alone: {import_onnx_seconds(repeat):.2f} s (median; ml_dtypes {_version('ml_dtypes')}: "
          "see docs/speed.md; both sides of every ratio pay it)")
    header = (f"{'nodes':>7} {'floor s':>8} {'insp s':>7} {'insp+json s':>11} {'json MB':>8} "
              f"{'ort s':>7} {'json/floor':>10} {'json/ort':>9} {'plain/floor':>11} {'plain/ort':>9}  "
              f"target (<= {MAX_FLOOR_RATIO}x floor, <= {MAX_ORT_RATIO}x ort)")
    print(header)
    for n in sizes:
        path = tmp / f"g{n}.onnx"
        path.write_bytes(model_zoo.many_nodes(n).SerializeToString())
        out = tmp / f"r{n}.json"
        commands = {
            "floor": [py, "-c", FLOOR, str(path)],
            "plain": [py, "-m", "npu_gate", "inspect", str(path), "-q", "--profile", profile],
            "json": [py, "-m", "npu_gate", "inspect", str(path), "-q", "--profile", profile, "--json", str(out)],
        }
        if lower_bound:
            commands["lower"] = [py, "-c", LOWER_BOUND, str(path), str(tmp / f"lower{n}.jsonl")]
        if not skip_ort:
            commands["ort"] = [py, "-m", "onnxruntime.tools.check_onnx_model_mobile_usability", str(path)]
        t = medians(commands, repeat)
        ort = t.get("ort", float("nan"))
        floor_ok = t["json"] <= MAX_FLOOR_RATIO * t["floor"]
        ort_text = "skipped" if skip_ort else verdict(t["json"] <= MAX_ORT_RATIO * ort)
        print(f"{n:>7} {t['floor']:>8.2f} {t['plain']:>7.2f} {t['json']:>11.2f} "
              f"{out.stat().st_size / 1e6:>8.1f} {ort:>7.2f} {t['json'] / t['floor']:>10.2f} "
              f"{t['json'] / ort:>9.2f} {t['plain'] / t['floor']:>11.2f} {t['plain'] / ort:>9.2f}  "
              f"floor {verdict(floor_ok)}, ort {ort_text}", flush=True)
        if lower_bound:
            print(f"{'':>7} lower bound (read + write, no analysis): {t['lower']:.2f} s = "
                  f"{t['lower'] / t['floor']:.2f}x floor; inspect --json spends "
                  f"{t['json'] - t['lower']:.2f} s more", flush=True)
    print(f"load average after: {load_average()}")


# In-process phases: (label, module, attribute). The analysis stage imports most of these by
# name, so they are wrapped where it looks them up. Phases do not nest.
PHASES = [
    ("load_onnx", "npu_gate.pipeline", "load_onnx"),
    ("run_checker", "npu_gate.graph.facts", "run_checker"),
    ("infer_shapes", "npu_gate.graph.facts", "infer_shapes"),
    ("graph.collect", "npu_gate.graph.facts", "collect"),
    ("symbolic.refine_stage", "npu_gate.graph.symbolic", "refine_stage"),
    ("node_dependencies", "npu_gate.graph.facts", "node_dependencies"),
    ("topological_order", "npu_gate.graph.facts", "topological_order"),
    ("fold", "npu_gate.stages.analyse", "fold"),
    ("shape_chains.find_chains", "npu_gate.graph.shape_chains", "find_chains"),
    ("tensor_layouts", "npu_gate.stages.analyse", "tensor_layouts"),
    ("place_all", "npu_gate.stages.analyse", "place_all"),
    ("collect_subgraph_nodes", "npu_gate.stages.analyse", "collect_subgraph_nodes"),
    ("build_partitions", "npu_gate.stages.analyse", "build_partitions"),
    ("boundaries", "npu_gate.stages.analyse", "boundaries"),
    ("_node_entry (all nodes)", "npu_gate.stages.analyse", "_node_entry"),
    ("_placement_findings", "npu_gate.stages.analyse", "_placement_findings"),
    ("_dynamic_shape_findings", "npu_gate.stages.analyse", "_dynamic_shape_findings"),
    ("result.to_dict", "npu_gate.result.types", "GateResult.to_dict"),
    ("json_.dumps", "npu_gate.render.json_", "dumps"),
]


def _timed(fn: Callable[..., Any], label: str, spent: dict[str, float]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[label] = spent.get(label, 0.0) + time.perf_counter() - start

    return wrapper


def phases(sizes: list[int], tmp: Path, profile_name: str) -> None:
    import importlib

    import onnx

    from npu_gate.gc_pause import gc_paused
    from npu_gate.pipeline import inspect_model
    from npu_gate.render import json_
    from npu_gate.target.profile import load_profile

    spent: dict[str, float] = {}
    for label, module_name, attr in PHASES:
        owner: Any = importlib.import_module(module_name)
        *parents, name = attr.split(".")
        for part in parents:
            owner = getattr(owner, part)
        setattr(owner, name, _timed(getattr(owner, name), label, spent))
    profile = load_profile(profile_name, ROOT, where="--profile")
    print(f"\nin-process phases (seconds; load average {load_average()})")
    for n in sizes:
        path = tmp / f"g{n}.onnx"
        if not path.exists():
            path.write_bytes(model_zoo.many_nodes(n).SerializeToString())
        start = time.perf_counter()
        model = onnx.load(str(path))
        onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)
        floor = time.perf_counter() - start
        spent.clear()
        start = time.perf_counter()
        with gc_paused():  # as `npu-gate inspect` runs (cli._inspect)
            json_.render(inspect_model(path, profile))
        total = time.perf_counter() - start
        print(f"{n} nodes: floor (load + infer_shapes) {floor:.3f}, inspect + JSON {total:.3f} "
              f"({total / floor:.2f}x)")
        for label, seconds in sorted(spent.items(), key=lambda kv: -kv[1]):
            print(f"  {label:<28} {seconds:>7.3f}")
        print(f"  {'(rest)':<28} {total - sum(spent.values()):>7.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 50000])
    parser.add_argument("--repeat", type=int, default=5, help="runs per command (median)")
    parser.add_argument("--skip-ort", action="store_true", help="skip the (slow) ORT usability checker")
    parser.add_argument("--profile", default="demo", help="profile passed to inspect (default: demo)")
    parser.add_argument("--lower-bound", action="store_true",
                        help="also time the least a Python tool must do to write this JSON (no analysis)")
    parser.add_argument("--phases", action="store_true", help="also print an in-process phase breakdown")
    parser.add_argument("--phases-only", action="store_true", help="only the in-process breakdown")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        if not args.phases_only:
            bench(args.sizes, args.repeat, args.skip_ort, tmp, args.profile, args.lower_bound)
        if args.phases or args.phases_only:
            phases(args.sizes, tmp, args.profile)


if __name__ == "__main__":
    main()
