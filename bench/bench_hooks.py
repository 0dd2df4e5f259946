"""Wall time of what the pre-commit hooks run, median of several runs, beside the floors.

    .venv/bin/python bench/bench_hooks.py [--runs 7]

Each figure is one whole process, as pre-commit starts it (pre-commit's own overhead is
not included). The cache lives in a temporary folder; it is warmed once before the timed
cache-hit runs, which is what a hook run on an unchanged model is.

--pre-commit adds `pre-commit run HOOK` itself, in a throwaway consumer repository whose
.pre-commit-config.yaml points at this repository's HEAD commit: the hook environment is
installed once from PyPI (untimed, needs the network), then every run reuses it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # the repository root: `tests.helpers` holds the fixtures

from tests.helpers.hook_fixtures import contract_doc, tiny_model, write_onnx_contract  # noqa: E402


def npu_gate() -> list[str]:
    script = Path(sys.executable).parent / "npu-gate"
    return [str(script)] if script.exists() else [sys.executable, "-m", "npu_gate"]


Row = tuple[str, list[str], tuple[int, ...], Path]


def timed(cmd: list[str], cwd: Path, env: dict[str, str], runs: int, ok: tuple[int, ...]) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
        times.append(time.perf_counter() - start)
        if done.returncode not in ok:
            raise SystemExit(f"{' '.join(cmd)} exited {done.returncode}:\n"
                             f"{done.stdout}{done.stderr}")
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--pre-commit", action="store_true",
                        help="also time `pre-commit run` of each hook (installs the hook env)")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="npu-gate-bench-"))
    try:
        path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
        env = os.environ | {"NPU_GATE_CACHE_DIR": str(work / "cache"), "PYTHONPATH": path}
        seed = work / "seed"
        shutil.copytree(REPO / "examples" / "seed-hardswish", seed,
                        ignore=shutil.ignore_patterns("__pycache__"))
        onnx_contract = write_onnx_contract(work / "onnx", tiny_model())
        files = [onnx_contract, seed / "npu-gate.json"]
        for i in range(2):
            extra = work / f"npu-gate.extra{i}.json"
            doc = contract_doc("onnx/model.onnx", gates={"max_cpu_nodes": i})
            extra.write_text(json.dumps(doc))
            files.append(extra)
        for i in range(2):
            profile = work / f"board{i}.npu-profile.json"
            shutil.copy(REPO / "npu_gate" / "profiles" / "demo.json", profile)
            files.append(profile)

        gate = npu_gate()
        py = sys.executable
        rows: list[Row] = [
            ("floor: python -c pass", [py, "-c", "pass"], (0,), work),
            ("floor: python -c 'import onnx'", [py, "-c", "import onnx"], (0,), work),
            ("npu-gate hook, torch contract, cache hit", [*gate, "check", str(seed), "-q"], (0, 1),
             work),
            ("npu-gate-onnx hook, cache hit", [*gate, "check-onnx", "onnx/model.onnx", "-q"],
             (0, 1), work),
            (f"npu-gate-contract hook, {len(files)} files", [*gate, "validate", *map(str, files)],
             (0,), work),
            ("npu-gate-onnx hook, --no-cache (fresh)",
             [*gate, "check-onnx", "--no-cache", "onnx/model.onnx", "-q"], (0, 1), work),
            ("npu-gate inspect (fresh)", [*gate, "inspect", "onnx/model.onnx", "-q"], (0, 1), work),
        ]
        if args.pre_commit:
            rows += pre_commit_rows(work, seed, env)
        # Warm the cache (the torch export runs here, once) and the OS file cache.
        for _, cmd, ok, cwd in rows:
            timed(cmd, cwd, env, 1, ok)
        print(f"median wall time of {args.runs} runs "
              f"(python {sys.version.split()[0]}, {os.cpu_count()} cpus)")
        for label, cmd, ok, cwd in rows:
            print(f"  {timed(cmd, cwd, env, args.runs, ok):7.3f} s  {label}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def pre_commit_rows(work: Path, seed: Path, env: dict[str, str]) -> list[Row]:
    """A consumer repo using all three hooks at this repository's HEAD; installs the env."""
    repo = work / "consumer"
    write_onnx_contract(repo / "models", tiny_model())
    shutil.copytree(seed, repo / "seed")
    rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True,
                         check=True).stdout.strip()
    (repo / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {REPO}\n    rev: {rev}\n    hooks:\n"
        "      - id: npu-gate-contract\n      - id: npu-gate-onnx\n"
        "      - id: npu-gate\n        args: [seed]\n")
    for cmd in (["init", "-q"], ["add", "-A"]):
        subprocess.run(["git", *cmd], cwd=repo, check=True, capture_output=True)
    env["PRE_COMMIT_HOME"] = str(work / "pre-commit-home")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"  # npu-gate: system
    pc = [sys.executable, "-m", "pre_commit"]
    start = time.perf_counter()
    subprocess.run([*pc, "install-hooks"], cwd=repo, env=env, check=True, capture_output=True)
    print(f"pre-commit install-hooks (once, from PyPI): {time.perf_counter() - start:.1f} s")
    return [
        ("pre-commit run npu-gate-onnx, cache hit",
         [*pc, "run", "npu-gate-onnx", "--files", "models/model.onnx"], (0, 1), repo),
        ("pre-commit run npu-gate-contract, 1 file",
         [*pc, "run", "npu-gate-contract", "--files", "models/npu-gate.json"], (0,), repo),
        ("pre-commit run npu-gate (torch), cache hit",
         [*pc, "run", "npu-gate", "--files", "seed/seed_net.py"], (0, 1), repo),
    ]


if __name__ == "__main__":
    main()
