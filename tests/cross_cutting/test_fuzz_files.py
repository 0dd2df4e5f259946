"""A seeded fuzz over profile chains and stack-trace metadata (issue 43, item 5): whatever the files
a PR holds, the gate ends with a result (exit 0 or 1) or one-line errors (exit 2), never an internal
error or a traceback; and no file outside the repository is shown as ``file:line`` or annotated.

Deterministic (one seed, the same cases on every run) and small enough for the fast loop."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path
from typing import Any

from onnx import StringStringEntryProto

from npu_gate.action import annotate
from npu_gate.compare.report import ModelReport
from npu_gate.graph.source import in_repository
from npu_gate.result.read import result_from_dict
from tests.helpers.common import RunCli
from tests.helpers.hook_fixtures import tiny_model

SEED = 43
HEAD = {"name": "p", "description": "d", "source": "s", "evidence": "illustrative"}
CHAINS = 8  # profile chains tried
TRACES = 8  # models with random stack traces tried


def _check_outcome(code: int, out: str, err: str, *, allowed: tuple[int, ...]) -> None:
    assert code in allowed, (code, err)
    assert "Traceback" not in out + err and "internal error" not in err, err
    for line in err.splitlines():
        assert line.startswith(("npu-gate: error: ", "npu-gate: warning: ")), line
        assert len(line) < 3_000, line[:200]


def _hostile_ref(rng: random.Random, outside: Path, count: int) -> str:
    return rng.choice([
        f"p{rng.randrange(count)}.json",  # a cycle, or itself
        "nope", "gone.json", "/etc/passwd", "/proc/self/environ", str(outside), "../outside/secret.json",
        "../../outside/secret.json", "link-out.json", "link-in.json", "a\u0000b.json", "x" * 300 + ".json",
        "d/" * 2_100 + "p.json", "p0.json/..", ".", "", "\u202e.json", "..\\..\\outside\\secret.json",
    ])


def _document(rng: random.Random, ref: Any, broken: bool) -> str:
    """A chain file: a valid profile extending ``ref``, or (``broken``) a file broken in one way."""
    doc: dict[str, Any] = HEAD | {"extends": ref, "ops": {}}
    kind = rng.randrange(5) if broken else None
    if kind == 0:
        return "{"  # not JSON
    if kind == 1:
        doc["extends"] = rng.choice([1e300, 7, [ref], {"a": ref}])
    if kind == 2:
        doc["ops"] = {"Cnov": {"constraints": []}}
    if kind == 3:
        return json.dumps(doc).replace('"ops": {}', '"ops": {}, "n": ' + "9" * 5_000)
    if kind == 4:
        return '{"schema_version": "calibration-1"}'
    return json.dumps(doc)


def test_profile_chains_end_in_a_result_or_one_line_errors(tmp_path: Path, run_cli: RunCli) -> None:
    rng = random.Random(SEED)
    outside = tmp_path / "outside" / "secret.json"
    outside.parent.mkdir()
    outside.write_text(json.dumps({"name": "ghp_" + "s" * 36}), encoding="utf-8")
    model = tmp_path / "repo" / "m.onnx"
    model.parent.mkdir()
    (model.parent / ".git").mkdir()
    model.write_bytes(tiny_model().SerializeToString())
    codes = set()
    for case in range(CHAINS):
        folder = model.parent / f"chain{case}"
        folder.mkdir()
        (folder / "link-out.json").symlink_to(outside)
        (folder / "link-in.json").symlink_to(folder / "p1.json")
        count = rng.randrange(1, 22)  # above MAX_EXTENDS sometimes
        hostile = rng.randrange(-count, count)  # the file with a hostile extends (none when negative)
        broken = rng.randrange(-count, count)  # the file broken otherwise
        for i in range(count):
            ref = _hostile_ref(rng, outside, count) if i == hostile else f"p{i + 1}.json"
            (folder / f"p{i}.json").write_text(_document(rng, ref, i == broken), encoding="utf-8")
        (folder / f"p{count}.json").write_text(json.dumps(HEAD | {"ops": {"Mul": {}, "Add": {}}}), encoding="utf-8")
        for command in (["inspect", model, "--profile", folder / "p0.json", "-q"],
                        ["profile", "check", folder / "p0.json"]):
            r = run_cli(*command)
            _check_outcome(r.code, r.out, r.err, allowed=(0, 1, 2))
            assert "ghp_" not in r.out + r.err
            codes.add(r.code)
    assert codes == {0, 1, 2}  # the seed reaches clean chains, problems and refusals


def _frame(rng: random.Random, root: Path) -> str:
    file = rng.choice([
        f"{root}/models/zoo.py", "models/zoo.py", "/etc/passwd", "../../etc/passwd", "models/a\x00b.py",
        f"{root}/{'a' * 300}.py", "/abcdefgh" * 600 + ".py", "C:\\Users\\x\\zoo.py", "zoo\x1b[31m.py",
        "/home/ci/checkout/models/zoo.py", f"{root}/models/link.py", "\u202ezoo.py", "",
    ])
    line = rng.choice(["1", "72", "0", "9" * rng.randrange(1, 12), "9" * 5_000])
    function = rng.choice(["forward", "f" * 5_000, "<lambda>"])
    return f'File "{file}", line {line}, in {function}\n    {"y = x" * rng.randrange(1, 80)}\n'


def test_stack_trace_metadata_ends_in_a_result_and_never_points_outside(tmp_path: Path, run_cli: RunCli) -> None:
    rng = random.Random(SEED)
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "models").mkdir()
    (root / "models" / "zoo.py").write_text("# the model\n", encoding="utf-8")
    (root / "models" / "link.py").symlink_to("/etc/passwd")
    for case in range(TRACES):
        model = tiny_model(cpu_op="Relu")  # a CPU node: a finding to annotate
        for node in model.graph.node:
            stack = "".join(_frame(rng, root) for _ in range(rng.randrange(1, 4)))
            node.metadata_props.append(StringStringEntryProto(key="pkg.torch.onnx.stack_trace", value=stack))
            node.metadata_props.append(StringStringEntryProto(key="pkg.torch.onnx.name_scopes",
                                                              value="['', 'up', 'up.conv', 'x']"))
        path = root / f"m{case}.onnx"
        path.write_bytes(model.SerializeToString())
        report = root / f"m{case}.json"
        r = run_cli("inspect", path, "--profile", "demo", "--json", report, "--markdown", root / f"m{case}.md", "-q")
        _check_outcome(r.code, r.out, r.err, allowed=(1,))
        doc = json.loads(report.read_text(encoding="utf-8"))
        for node in doc["nodes"]:
            source = node.get("source") or {}
            if source.get("file") and not in_repository(source["file"]):
                assert source["line"] is None, source  # nothing can point there
        out = io.StringIO()
        annotate([ModelReport(f"m{case}", result=result_from_dict(doc), file=str(root / "npu-gate.json"))], root, out)
        for line in out.getvalue().splitlines():
            at = line.split("::")[1]
            assert at.startswith(("error file=npu-gate.json,", "error file=models/zoo.py,")), line
