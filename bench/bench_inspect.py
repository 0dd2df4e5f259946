"""Time `npu-gate inspect` against the floor (onnx.load + infer_shapes) and ORT's usability checker.

Each command runs as a fresh process, as a CI step would; runs are interleaved (floor,
inspect, ORT, floor, ...) so that a burst of load on a shared machine hits all of them.
Prints the median of ``--repeat`` runs, the ratios and PASS/FAIL against the targets:

    .venv/bin/python bench/bench_inspect.py [--sizes 1000 10000 50000] [--repeat 5] [--phases]
        [--before TREE]

Targets (issue 16, restating issue 2's): `npu-gate inspect` takes at most 0.5x
onnxruntime's check_onnx_model_mobile_usability at every size; at most 1.5x the floor (a
fresh `python -c` doing onnx.load + strict infer_shapes) on graphs up to 10k nodes and at
most 3x above (the issue's 50k point); and grows linearly. `inspect` is timed twice: with
`--json FILE` (the CI step's form; the JSON of a 50k-node graph is ~30 MB, one line per
node) and without (text summary only). PASS/FAIL is judged on the `--json` form. The
issue's "on real models" is not timed here: this script generates its graphs.

Linear growth, as judged here: with the sizes sorted, the time per added node between the
two largest sizes (seconds of `inspect --json` gained / nodes added) is at most 2x the time
per added node between the two smallest. A linear t = a + b*n gives 1x; n*log(n) about 1.2x
at the default sizes; n**1.5 2.4x; n**2 5.5x (its slopes grow as n1 + n2). The bound is 2x,
not tighter, because the small slope is a difference of ~0.25 s measured on a shared machine
(+-0.05-0.1 s between runs): past figures of this linear tool range 0.95-1.5x, and one
loaded run 2.2x. Needs three sizes or more; with fewer the line says n/a.

``--before TREE`` also times `inspect --json` of an earlier npu_gate source tree (for
instance ``git worktree add /tmp/before <commit>``), interleaved with the rest, and prints
the before time, the after time (the `insp+json` column again) and after/before per size.
Both sides run with PYTHONPATH set to their own tree and the working directory in a
temporary folder, so neither imports an installed npu_gate or the current directory's; the
origin of each side's npu_gate is checked and printed before timing. The `inspect` runs (of
either tree, with or without ``--before``) keep their bytecode in a temporary
PYTHONPYCACHEPREFIX, written by one untimed run per tree, so that both sides load .pyc files
as an installed package does, even under PYTHONDONTWRITEBYTECODE, and nothing is written
into the trees.

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
from typing import Any, NoReturn

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the repository root: `tests.helpers` holds the generated graphs

from tests.helpers import model_zoo  # noqa: E402  (generated graphs live with the tests)

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
MAX_ORT_RATIO = 0.5  # at every size
MAX_FLOOR_RATIO = 1.5  # up to FLOOR_RATIO_NODES nodes
FLOOR_RATIO_NODES = 10_000
MAX_FLOOR_RATIO_LARGE = 3.0  # above FLOOR_RATIO_NODES (issue 16: at 50k)
MAX_SLOPE_RATIO = 2.0  # linear growth: see the module docstring


def max_floor_ratio(nodes: int) -> float:
    return MAX_FLOOR_RATIO if nodes <= FLOOR_RATIO_NODES else MAX_FLOOR_RATIO_LARGE


def run_once(cmd: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False, env=env, cwd=cwd)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):  # 1: the gate failed (expected on the demo profile)
        raise SystemExit(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stderr.decode()[-2000:]}")
    return seconds


def medians(commands: dict[str, list[str]], repeat: int, envs: dict[str, dict[str, str]], cwd: Path
            ) -> dict[str, float]:
    """Median seconds per command; ``envs`` gives the environment of the commands that need their own."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, cmd in commands.items():
            times[name].append(run_once(cmd, envs.get(name), cwd))
    return {name: statistics.median(values) for name, values in times.items()}


def tree_env(tree: Path, pycache: Path) -> dict[str, str]:
    """The environment that makes ``python -m npu_gate`` import ``tree``'s package (run it outside the tree).

    Bytecode is written to and read from ``pycache`` (not the trees), whatever PYTHONDONTWRITEBYTECODE says:
    without .pyc files every run would compile npu_gate again (~0.2 s), and a tree that happened to
    have them would look faster than one that had not."""
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONPYCACHEPREFIX": str(pycache)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def check_origin(label: str, env: dict[str, str], cwd: Path, show: bool) -> None:
    """Exit 2 unless a fresh interpreter with ``env`` finds the npu_gate of its PYTHONPATH; ``show``: say so."""
    tree = Path(env["PYTHONPATH"])
    expected = (tree / "npu_gate" / "__init__.py").resolve()
    done = subprocess.run(
        [sys.executable, "-c", "import importlib.util; print(importlib.util.find_spec('npu_gate').origin)"],
        capture_output=True, text=True, check=False, env=env, cwd=cwd,
    )
    found = done.stdout.strip()
    if done.returncode != 0 or Path(found).resolve() != expected:
        fail(f"{label}: python -m npu_gate would import {found or 'nothing'}, not {expected}")
    if show:
        print(f"{label}: npu_gate from {tree}")


def fail(message: str) -> NoReturn:
    print(f"bench_inspect.py: {message}", file=sys.stderr)
    raise SystemExit(2)


def growth(sizes: list[int], seconds: dict[int, float]) -> tuple[float, float] | None:
    """Seconds per added node between the two smallest sizes and between the two largest (three sizes or more)."""
    ordered = sorted(set(sizes))
    if len(ordered) < 3:
        return None
    (a, b), (c, d) = ordered[:2], ordered[-2:]
    return (seconds[b] - seconds[a]) / (b - a), (seconds[d] - seconds[c]) / (d - c)


def growth_line(sizes: list[int], seconds: dict[int, float], judged: bool) -> str:
    slopes = growth(sizes, seconds)
    if slopes is None:
        return "n/a (needs three sizes or more)"
    small, large = slopes
    ordered = sorted(set(sizes))
    text = (f"{large * 1e6:.1f} us per added node from {ordered[-2]} to {ordered[-1]} nodes, "
            f"{small * 1e6:.1f} us from {ordered[0]} to {ordered[1]}")
    if small <= 0:
        return f"n/a ({text}: no growth between the smallest sizes, noise; choose sizes further apart)"
    ratio = f"{large / small:.2f}x"
    if not judged:
        return f"{ratio} ({text})"
    return f"{verdict(large <= MAX_SLOPE_RATIO * small)} {ratio} ({text}; target <= {MAX_SLOPE_RATIO:g}x)"


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


def bench(sizes: list[int], repeat: int, skip_ort: bool, tmp: Path, profile: str, lower_bound: bool,
          before: Path | None) -> None:
    py = sys.executable
    envs = {"plain": tree_env(ROOT, tmp / "pycache"), "json": tree_env(ROOT, tmp / "pycache")}
    check_origin("after", envs["json"], tmp, show=before is not None)
    if before is not None:
        envs["before"] = tree_env(before, tmp / "pycache")
        check_origin("before", envs["before"], tmp, show=True)
    env_note = f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, median of {repeat}, profile {profile}"
    print(f"load average before: {load_average()}  ({env_note})")
    print(f"import onnx alone: {import_onnx_seconds(repeat):.2f} s (median; ml_dtypes {_version('ml_dtypes')}: "
          "see docs/speed.md; both sides of every ratio pay it)")
    before_header = f" {'before s':>8} {'after s':>7} {'after/before':>12}" if before is not None else ""
    header = (f"{'nodes':>7} {'floor s':>8} {'insp s':>7} {'insp+json s':>11} {'json MB':>8} "
              f"{'ort s':>7} {'json/floor':>10} {'json/ort':>9} {'plain/floor':>11} {'plain/ort':>9}{before_header}  "
              f"target (<= {MAX_ORT_RATIO}x ort; <= {MAX_FLOOR_RATIO}x floor to {FLOOR_RATIO_NODES} nodes, "
              f"<= {MAX_FLOOR_RATIO_LARGE:g}x above)")
    print(header)
    after_times: dict[int, float] = {}
    before_times: dict[int, float] = {}
    for n in sizes:
        path = tmp / f"g{n}.onnx"
        path.write_bytes(model_zoo.many_nodes(n).SerializeToString())
        out = tmp / f"r{n}.json"
        inspect = ["-m", "npu_gate", "inspect", str(path), "-q", "--profile", profile]
        commands = {
            "floor": [py, "-c", FLOOR, str(path)],
            "plain": [py, *inspect],
            "json": [py, *inspect, "--json", str(out)],
        }
        if before is not None:
            commands["before"] = [py, *inspect, "--json", str(tmp / f"before{n}.json")]
        if lower_bound:
            commands["lower"] = [py, "-c", LOWER_BOUND, str(path), str(tmp / f"lower{n}.jsonl")]
        if not skip_ort:
            commands["ort"] = [py, "-m", "onnxruntime.tools.check_onnx_model_mobile_usability", str(path)]
        if n == sizes[0]:  # untimed: writes each tree's bytecode (and that of what it imports)
            for name in ("json", "before"):
                if name in commands:
                    run_once(commands[name], envs[name], tmp)
        t = medians(commands, repeat, envs, tmp)
        after_times[n] = t["json"]
        ort = t.get("ort", float("nan"))
        limit = max_floor_ratio(n)
        floor_ok = t["json"] <= limit * t["floor"]
        ort_text = "skipped" if skip_ort else verdict(t["json"] <= MAX_ORT_RATIO * ort)
        before_text = ""
        if before is not None:
            before_times[n] = t["before"]
            before_text = f" {t['before']:>8.2f} {t['json']:>7.2f} {t['json'] / t['before']:>12.2f}"
        print(f"{n:>7} {t['floor']:>8.2f} {t['plain']:>7.2f} {t['json']:>11.2f} "
              f"{out.stat().st_size / 1e6:>8.1f} {ort:>7.2f} {t['json'] / t['floor']:>10.2f} "
              f"{t['json'] / ort:>9.2f} {t['plain'] / t['floor']:>11.2f} {t['plain'] / ort:>9.2f}{before_text}  "
              f"floor {verdict(floor_ok)} (<= {limit:g}x), ort {ort_text}", flush=True)
        if lower_bound:
            print(f"{'':>7} lower bound (read + write, no analysis): {t['lower']:.2f} s = "
                  f"{t['lower'] / t['floor']:.2f}x floor; inspect --json spends "
                  f"{t['json'] - t['lower']:.2f} s more", flush=True)
    print(f"linear growth: {growth_line(sizes, after_times, judged=True)}")
    if before is not None:
        print(f"linear growth of before (not judged): {growth_line(sizes, before_times, judged=False)}")
    print(f"load average after: {load_average()}")


# In-process phases: (label, module, attribute). The analysis stage imports most of these by
# name, so they are wrapped where it looks them up. Phases do not nest.
PHASES = [
    ("load_onnx", "npu_gate.stages.load", "load_onnx"),
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
    ("placement_findings", "npu_gate.findings.placement", "placement_findings"),
    ("dynamic_shape_findings", "npu_gate.findings.shapes", "dynamic_shape_findings"),
    ("memory.partition_memory", "npu_gate.placement.memory", "partition_memory"),
    ("_attach_sources", "npu_gate.stages.analyse", "_attach_sources"),
    ("fusions.fuse", "npu_gate.stages.analyse", "patterns.fuse"),
    ("eliminate", "npu_gate.stages.analyse", "eliminate"),
    ("refusals", "npu_gate.stages.analyse", "refusals"),
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

    sys.path.insert(0, str(ROOT))  # this tree's npu_gate, as for the processes, not an installed one

    import onnx

    from npu_gate.pipeline import inspect_model
    from npu_gate.process.gc_pause import gc_paused
    from npu_gate.profile.spec import load_profile
    from npu_gate.render import json_

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
    parser.add_argument("--before", type=Path, metavar="TREE",
                        help="also time `inspect --json` of this earlier npu_gate source tree (after/before per size)")
    args = parser.parse_args()
    before = args.before
    if before is not None:
        if args.phases_only:
            fail("--before times processes; it does nothing with --phases-only")
        if not (before / "npu_gate" / "__init__.py").is_file():
            fail(f"--before {before}: not an npu_gate source tree (no npu_gate/__init__.py)")
        before = before.resolve()
    profile = args.profile
    if not (ROOT / "npu_gate" / "profiles" / f"{profile}.json").is_file() and Path(profile).is_file():
        profile = str(Path(profile).resolve())  # a profile file, not a built-in: the commands run elsewhere
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        if not args.phases_only:
            bench(args.sizes, args.repeat, args.skip_ort, tmp, profile, args.lower_bound, before)
        if args.phases or args.phases_only:
            phases(args.sizes, tmp, args.profile)


if __name__ == "__main__":
    main()
