"""Profiles as data: loading with extends, `npu-gate profile check/show/docs`, `explain`
for constraint ids, generated docs up to date, built-in transcriptions complete."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from npu_gate.errors import ProfileError
from npu_gate.profile.spec import load_profile
from npu_gate.resources import builtin_profile_names
from tests.helpers.common import REPO, CliRun

Run = Callable[..., CliRun]
HEAD = {"name": "p", "description": "d", "source": "s", "evidence": "illustrative"}


def _write(tmp_path: Path, doc: dict[str, Any], name: str = "p.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(HEAD | doc), encoding="utf-8")
    return path


def test_typos_in_op_types_and_attribute_names_are_errors(tmp_path: Path, run_cli: Run) -> None:
    path = _write(
        tmp_path,
        {
            "ops": {
                "Cnov": {"constraints": []},
                "Conv": {
                    "constraints": [
                        {"id": "s", "attribute": "stride", "each": True, "in": [1]},
                        {
                            "id": "p",
                            "attribute": "pads",
                            "each": True,
                            "max": {"ref": {"attribute": "kernel"}, "add": -1},
                        },
                        {"id": "w", "input": 3, "constant": True},
                    ]
                },
            }
        },
    )
    r = run_cli("profile", "check", path)
    assert r.code == 1
    assert r.err.splitlines() == [
        f"npu-gate: error: {path}: ops.Cnov: unknown op type 'Cnov' in domain ai.onnx "
        "(did you mean 'Conv'?)",
        f"npu-gate: error: {path}: ops.Conv.constraints[0].attribute: Conv has no attribute "
        "'stride' (did you mean 'strides'?); its attributes: auto_pad, dilations, group, "
        "kernel_shape, pads, strides",
        f"npu-gate: error: {path}: ops.Conv.constraints[1].max.ref.attribute: Conv has no "
        "attribute 'kernel' (did you mean 'kernel_shape'?); its attributes: auto_pad, dilations, "
        "group, kernel_shape, pads, strides",
        f"npu-gate: error: {path}: ops.Conv.constraints[2].input: Conv has at most 3 inputs; "
        "index 3 does not exist",
    ]
    assert r.out == f"{path}: 4 error(s)\n"


def test_schema_errors_name_json_paths(tmp_path: Path, run_cli: Run) -> None:
    path = _write(
        tmp_path,
        {
            "evidence": "guess",
            "ops": {
                "Conv": {
                    "constraints": [
                        {"id": "Bad_Id", "attribute": "group", "in": 1},
                        {"id": "k", "attribute": "group", "frob": 1},
                    ]
                }
            },
        },
    )
    r = run_cli("profile", "check", path)
    assert r.code == 1
    assert r.err.splitlines() == [
        f"npu-gate: error: {path}: evidence: 'guess' is not one of "
        "['illustrative', 'vendor-documentation', 'measured']",
        f"npu-gate: error: {path}: ops.Conv.constraints[0].id: 'Bad_Id' does not match "
        "'^[a-z0-9]+(-[a-z0-9]+)*$'",
        f"npu-gate: error: {path}: ops.Conv.constraints[0].in: 1 is not of type 'array'",
        f"npu-gate: error: {path}: ops.Conv.constraints[1]: Additional properties are not "
        "allowed ('frob' was unexpected)",
    ]


def test_schema_errors_and_onnx_name_typos_in_one_run(tmp_path: Path, run_cli: Run) -> None:
    """A profile that fails its schema still gets its op types and attribute names checked:
    every problem in one run, one line each, schema errors first."""
    path = _write(tmp_path, {"ops": {
        "Cnov": {},
        "Conv": {"constraints": [{"id": "c1", "attribute": "stride", "in": [1], "rank": 4}]},
        "Relu": {"constraints": [{"id": "r", "input": 5, "rank": {"max": 4}}]}},
        "patterns": [{"name": "p", "becomes": "HardSwish", "nodes": [{"op": "HardSigmod", "inputs": "x"}]}]})
    r = run_cli("profile", "check", path)
    assert r.code == 1
    assert r.err.splitlines() == [
        f"npu-gate: error: {path}: ops.Conv.constraints[0].rank: 4 is not of type 'object'",
        f"npu-gate: error: {path}: patterns[0].nodes[0].inputs: 'x' is not of type 'array'",
        f"npu-gate: error: {path}: ops.Cnov: unknown op type 'Cnov' in domain ai.onnx (did you mean 'Conv'?)",
        f"npu-gate: error: {path}: ops.Conv.constraints[0].attribute: Conv has no attribute 'stride' "
        "(did you mean 'strides'?); its attributes: auto_pad, dilations, group, kernel_shape, pads, strides",
        f"npu-gate: error: {path}: ops.Relu.constraints[0].input: Relu has at most 1 inputs; index 5 does not exist",
        f"npu-gate: error: {path}: patterns[0].nodes[0].op: unknown op type 'HardSigmod' "
        "(did you mean 'HardSigmoid'?)",
    ]
    assert r.out == (f"{path}: 6 error(s); the other checks (constraint ids and subjects, references, "
                     "`extends`) run once the schema errors are fixed\n")


def test_a_broken_extends_does_not_hide_onnx_name_typos(tmp_path: Path, run_cli: Run) -> None:
    """The op types and attribute names do not depend on the base: a base that cannot be
    loaded is reported together with them (and the warnings), not instead of them."""
    path = _write(tmp_path, {"extends": "nope", "ops": {
        "Cnov": {"constraints": []},
        "Conv": {"constraints": [{"id": "s", "attribute": "stride", "in": [1]}]},
        "com.vendor::MyNpuOp": {"constraints": []}}})
    r = run_cli("profile", "check", path)
    assert r.code == 1
    assert r.err.splitlines() == [
        f"npu-gate: warning: {path}: ops.com.vendor::MyNpuOp: domain com.vendor is not described by "
        "onnx.defs; op type and attribute names not checked",
        f"npu-gate: error: {path}: extends: unknown profile 'nope' (built-in: "
        f"{', '.join(builtin_profile_names())}; or a path to a .json file)",
        f"npu-gate: error: {path}: ops.Cnov: unknown op type 'Cnov' in domain ai.onnx (did you mean 'Conv'?)",
        f"npu-gate: error: {path}: ops.Conv.constraints[0].attribute: Conv has no attribute 'stride' "
        "(did you mean 'strides'?); its attributes: auto_pad, dilations, group, kernel_shape, pads, strides",
    ]
    assert r.out == f"{path}: 3 error(s)\n"


@pytest.mark.parametrize("doc", [
    {"ops": ["Conv"]},
    {"ops": {"Conv": 3, "Relu": {"constraints": {"id": "x"}}}},
    {"ops": {"Conv": {"constraints": ["c", {"id": "a", "attribute": 3, "input": "0", "in": 1, "max": [1],
                                            "value": [1], "any_of": {"input": 9}},
                                      {"id": "b", "any_of": [1, {"input": True, "min": {"ref": "group"}}]}]}},
     "patterns": [{"name": "p", "becomes": "X", "nodes": "Relu"}, 7,
                  {"name": "q", "becomes": "Y", "nodes": [{"op": 5, "attributes": ["alpha"]}, "Relu"]}]},
])
def test_a_profile_of_the_wrong_shape_gets_schema_errors_only(tmp_path: Path, run_cli: Run,
                                                              doc: dict[str, Any]) -> None:
    """The ONNX lint skips what is not shaped as the schema says (the schema names it): no lint
    line and no internal error (exit 2) for values of the wrong type."""
    from npu_gate.validation import schema_problems

    path = _write(tmp_path, doc)
    expected = schema_problems(json.loads(path.read_text()), "profile", str(path))
    r = run_cli("profile", "check", path)
    assert r.code == 1
    assert expected and r.err.splitlines() == [f"npu-gate: error: {line}" for line in expected]


def test_constraint_shape_problems(tmp_path: Path, run_cli: Run) -> None:
    path = _write(
        tmp_path,
        {
            "ops": {
                "Conv": {
                    "constraints": [
                        {"id": "a", "attribute": "group", "input": 0, "in": [1]},
                        {"id": "b", "attribute": "group"},
                        {"id": "c", "attribute": "group", "in": [{"ref": {"input": 0}}]},
                        {
                            "id": "d",
                            "any_of": [{"input": 1, "constant": True}, {"attribute": "group"}],
                        },
                        {"id": "d", "input": 0, "static": True},
                        {"id": "e", "unchecked": True, "attribute": "group"},
                    ]
                }
            }
        },
    )
    r = run_cli("profile", "check", path)
    where = f"npu-gate: error: {path}: ops.Conv.constraints"
    assert r.err.splitlines() == [
        f"{where}[0]: needs exactly one subject (attribute, input or output), has attribute, input",
        f"{where}[1]: no test (one of in, not_in, min, max, all_equal, absent, matches, dtype, rank, dim, "
        "constant, static, max_elements, max_bytes, layout, value, same_non_unit_dims_as, any_of, "
        "unchecked)",
        f"{where}[2].in[0].ref: a tensor reference needs an axis",
        f"{where}[3].any_of[1]: no test (one of in, not_in, min, max, all_equal, absent, matches, dtype, "
        "rank, dim, constant, static, max_elements, max_bytes, layout, value, same_non_unit_dims_as, any_of, "
        "unchecked)",
        f"{where}[4].id: duplicate constraint id 'd'",
        f"{where}[5]: an unchecked condition has no subject or test; remove attribute",
        f"{where}[5]: an unchecked condition needs a message saying what is not checked",
    ]


def test_valid_profile_with_other_domains_warns(tmp_path: Path, run_cli: Run) -> None:
    path = _write(
        tmp_path,
        {"extends": "demo", "ops": {"com.vendor::MyNpuOp": {"constraints": []}, "Div": None}},
    )
    r = run_cli("profile", "check", path)
    assert r.code == 0
    assert r.out == f"{path}: ok: profile p (illustrative), 5 ops, 0 constraints; extends demo\n"
    assert r.err == (
        f"npu-gate: warning: {path}: ops.com.vendor::MyNpuOp: domain com.vendor is "
        "not described by onnx.defs; op type and attribute names not checked\n"
    )


def test_ops_outside_the_profiles_own_domains_limit_are_a_warning(tmp_path: Path, run_cli: Run) -> None:
    """An op the profile lists but whose domain its limits.domains leave out can never be placed
    on the NPU: every such node falls back on limit-domains."""
    path = _write(tmp_path, {"extends": "demo", "limits": {"domains": ["com.vendor"]},
                             "ops": {"com.vendor::MyNpuOp": {"constraints": []}}})
    r = run_cli("profile", "check", path)
    assert r.code == 0
    assert r.err.splitlines()[1:] == [
        f"npu-gate: warning: {path}: ops.{op}: domain ai.onnx is not in limits.domains ['com.vendor']; "
        "every such node falls back to CPU (limit-domains)" for op in ("Conv", "Add", "Mul", "Div")
    ]
    path = _write(tmp_path, {"extends": "demo", "limits": {"domains": ["ai.onnx"]}, "ops": {}})
    assert run_cli("profile", "check", path).err == ""


def test_unreadable_profile_is_exit_2(tmp_path: Path, run_cli: Run) -> None:
    (tmp_path / "p.json").write_text("{", encoding="utf-8")
    assert run_cli("profile", "check", tmp_path / "p.json").code == 2
    assert run_cli("profile", "check", tmp_path / "missing.json").code == 2
    (tmp_path / "list.json").write_text("[]", encoding="utf-8")  # JSON, but not a profile: its errors
    r = run_cli("profile", "check", tmp_path / "list.json")
    assert (r.code, r.err) == (1, f"npu-gate: error: {tmp_path / 'list.json'}: (root): [] is not of type 'object'\n")


def test_extends_overrides_removes_and_merges_limits(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "name": "base",
            "limits": {"max_rank": 4, "dtypes": ["float32"]},
            "ops": {
                "Conv": {"constraints": []},
                "Resize": {"constraints": []},
                "Relu": {"constraints": []},
            },
        },
        "base.json",
    )
    path = _write(
        tmp_path,
        {
            "name": "team",
            "extends": "base.json",
            "limits": {"dtypes": None, "static_shapes": True},
            "ops": {
                "Resize": None,
                "Conv": {"constraints": [{"id": "conv-group", "attribute": "group", "in": [1]}]},
            },
        },
    )
    p = load_profile(str(path))
    assert p.extends == ["base"]
    assert sorted(p.ops) == ["Conv", "Relu"]
    assert p.ops["Conv"]["constraints"][0]["id"] == "conv-group"
    assert p.limits == {"max_rank": 4, "static_shapes": True}
    assert p.to_dict()["extends"] == ["base"]


@pytest.mark.parametrize(
    ("doc", "problem"),
    [
        ({"ops": {"Conv": None}}, "ops.Conv: null removes an op, but the profile extends nothing"),
        (
            {"extends": "demo", "ops": {"Resize": None}},
            "ops.Resize: null removes an op that demo does not have",
        ),
        ({"extends": "nope", "ops": {}}, "extends: unknown profile 'nope'"),
        ({"extends": "p.json", "ops": {}}, "extends: cycle"),
    ],
)
def test_extends_problems(tmp_path: Path, doc: dict[str, Any], problem: str) -> None:
    path = _write(tmp_path, doc)
    with pytest.raises(ProfileError) as info:
        load_profile(str(path))
    assert problem in "\n".join(info.value.problems)


def test_contract_naming_a_profile_with_a_typo_cannot_run(
    tmp_path: Path, run_cli: Run, write_contract: Callable[..., Path]
) -> None:
    _write(tmp_path, {"ops": {"Cnov": {"constraints": []}}})
    contract = write_contract(
        {
            "model": {"onnx": "m.onnx"},
            "target": {"profile": "p.json"},
            "inputs": [{"name": "x", "shape": [1], "dtype": "float32"}],
        }
    )
    r = run_cli("check", contract)
    assert r.code == 2
    assert "ops.Cnov: unknown op type 'Cnov' in domain ai.onnx (did you mean 'Conv'?)" in r.err


def test_profile_show(run_cli: Run) -> None:
    r = run_cli("profile", "show", "ort-nnapi", "--format", "json")
    assert r.code == 0
    doc = json.loads(r.out)
    assert doc["name"] == "ort-nnapi"
    assert doc["ops"]["DepthToSpace"]["constraints"][0]["any_of"][1]["in"] == ["DCR"]
    text = run_cli("profile", "show", "ort-nnapi", "--format", "markdown").out
    assert (
        "| `Gemm` | `gemm-b`: one of: (input 1: constant (initializer or folded)) \\| "
        "(attribute transB: in {1}) *Fix:* use nn.Linear (constant weights) rather than a matmul with a computed "
        'tensor<br>*Note:* Table: "If input B is not constant, transB should be 1." |' in text
    )
    plain = run_cli("profile", "show", "ort-nnapi").out  # a terminal gets plain text (issue 19)
    assert plain.startswith("Target profile ort-nnapi (vendor-documentation)\n")
    assert ("  Gemm\n    gemm-b: one of: (input 1: constant (initializer or folded)) | (attribute transB: in {1})\n"
            "      fix: use nn.Linear (constant weights) rather than a matmul with a computed tensor\n"
            '    note: Table: "If input B is not constant, transB should be 1."\n') in plain
    assert "|" not in plain.replace(") | (", "") and "<br>" not in plain and "`" not in plain


def test_profile_show_text_of_the_demo_profile(run_cli: Run) -> None:
    assert run_cli("profile", "show", "demo").out == (
        "Target profile demo (illustrative)\n"
        "  The lesson's teaching allowlist: Conv, Add, Mul, Constant, Div. Illustrative only; it is not any "
        "vendor's support table.\n"
        "  source: npu_gate seed lesson (DEMO allowlist); no vendor document\n"
        "\n"
        "A static prediction, not a device result: a listed op is predicted to run on the target\n"
        "when every condition below holds; anything else falls back to CPU.\n"
        "\n"
        "Supported operators (5):\n"
        "  Add: no conditions\n  Constant: no conditions\n  Conv: no conditions\n  Div: no conditions\n"
        "  Mul: no conditions\n")



def test_profile_show_prints_a_profile_files_escape_sequences_as_text(run_cli: Run, tmp_path: Path) -> None:
    doc = json.loads((REPO / "examples" / "custom-profile" / "team-npu.json").read_text(encoding="utf-8"))
    doc["description"] = "team limits\x1b]0;title\x07 \u202egnp.exe"
    (tmp_path / "p.json").write_text(json.dumps(doc), encoding="utf-8")
    text = run_cli("profile", "show", str(tmp_path / "p.json")).out
    assert "team limits\\x1b]0;title\\x07 \\u202egnp.exe" in text
    assert not any(ch in text for ch in "\x1b\x07\u202e")


def test_explain_constraint_ids(run_cli: Run) -> None:
    r = run_cli("explain", "depthtospace-dcr")
    assert r.code == 0
    assert r.out.splitlines()[:3] == [
        "depthtospace-dcr (constraint of DepthToSpace in profile ort-nnapi, vendor-documentation)",
        "",
        "one of: (attribute mode: not set (its default only)) | (attribute mode: in {DCR}).",
    ]
    scoped = run_cli("explain", "ort-coreml-mlprogram:gemm-const-b")
    assert scoped.out.startswith("gemm-const-b (constraint of Gemm in profile ort-coreml-mlprogram")
    both = run_cli("explain", "conv-const-bias").out
    assert both.count("(constraint of Conv in profile") == 2  # in both ORT profiles
    assert run_cli("explain", "limit-max-rank").out.startswith(
        "limit-max-rank (profile limit `limits.max_rank`, rule profile-limit)"
    )
    missing = run_cli("explain", "no-such-id")
    assert missing.code == 2
    assert "no-such-id: unknown rule or constraint id" in missing.err
    assert run_cli("explain", "profile-limit").out.startswith("profile-limit (error)")


def test_explain_a_profile_limit_of_one_profile(run_cli: Run) -> None:
    """PROFILE:limit-... is that profile's limit, with its value; one the profile does not set is
    unknown there (it used to print the generic text for any prefix, even a profile that is not one)."""
    r = run_cli("explain", "rknn-toolkit2-v2.1:limit-opset")
    assert (r.code, r.out.splitlines()) == (0, [
        "rknn-toolkit2-v2.1:limit-opset (profile limit `limits.opset`, rule profile-limit)",
        "",
        "Limits model opset (default domain) for every op of a profile. A model whose opset is outside it gets one "
        "finding without a node: the target's converter is expected to refuse the model.",
        "",
        "In profile rknn-toolkit2-v2.1 (vendor-documentation): model opset (default domain): at most 19.",
    ])
    team = REPO / "examples" / "custom-profile" / "team-npu.json"
    assert run_cli("explain", f"{team}:limit-dtypes").out.endswith(
        "A node that breaks it runs on CPU; the finding names the tensor, the value seen and the limit.\n\n"
        "In profile team-npu (illustrative): dtypes of runtime tensors: {float32, float16, int8, uint8}.\n")
    r = run_cli("explain", "demo:limit-opset")
    assert (r.code, r.out) == (2, "")
    assert r.err == ("npu-gate: error: demo:limit-opset: unknown rule or constraint id (see `npu-gate rules` and "
                     "`npu-gate profile show NAME`)\n")
    r = run_cli("explain", "nope:limit-dtypes")
    assert (r.code, r.err.startswith("npu-gate: error: explain: unknown profile 'nope'")) == (2, True)


def test_generated_docs_are_up_to_date(run_cli: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    r = run_cli("profile", "docs", "--check")
    assert r.err == ""
    assert r.code == 0
    assert (
        sorted(p.stem for p in (REPO / "docs" / "profiles").glob("*.md")) == builtin_profile_names()
    )


def test_docs_check_reports_stale_pages(tmp_path: Path, run_cli: Run) -> None:
    (tmp_path / "demo.md").write_text("old\n", encoding="utf-8")
    r = run_cli("profile", "docs", "--check", "--out", tmp_path)
    assert r.code == 1
    assert f"{tmp_path / 'demo.md'} is missing or out of date" in r.err
    assert (tmp_path / "demo.md").read_text(encoding="utf-8") == "old\n"


def test_docs_outside_the_repository_name_the_record_without_a_broken_link(
    tmp_path: Path, run_cli: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.helpers.markdown_links import broken_links, links

    monkeypatch.chdir(tmp_path)  # a user's repository: npu_gate/profiles is not under it
    r = run_cli("profile", "docs")
    assert r.code == 0
    pages = sorted((tmp_path / "docs" / "profiles").glob("*.md"))
    assert sorted(p.stem for p in pages) == builtin_profile_names()
    for page in pages:
        assert broken_links(page, tmp_path) == [], page.name
        assert all(re.match(r"https?://", target) for target in links(page)), page.name
    text = (tmp_path / "docs" / "profiles" / "rknn-rk3588.md").read_text(encoding="utf-8")
    assert ("(1 of 14 points off the NPU; rknn-rk3588.calibration.json#Add); uint8 was measured only as a "
            "quantized (QDQ) Add, in the compiler's int8 build” (`npu_gate/profiles/rknn-rk3588.calibration.json#Add`)"
            "<br>") in text
    assert run_cli("profile", "docs", "--check").code == 0
    # in the repository the same reference is a link to the record
    repo_page = (REPO / "docs" / "profiles" / "rknn-rk3588.md").read_text(encoding="utf-8")
    assert ("; rknn-rk3588.calibration.json#Add); uint8 was measured only as a quantized (QDQ) Add, in the "
            "compiler's int8 build” ([doc](../../npu_gate/profiles/rknn-rk3588.calibration.json))") in repo_page


@pytest.mark.parametrize("name", builtin_profile_names())
def test_builtin_profiles_are_valid_and_cite_their_source(name: str, run_cli: Run) -> None:
    r = run_cli("profile", "check", REPO / "npu_gate" / "profiles" / f"{name}.json")
    assert r.code == 0, r.err
    p = load_profile(name)
    assert p.source
    if p.evidence == "vendor-documentation":
        assert re.search(r"\d+\.\d+", p.source), "a vendor profile names the document's version"


_TABLES = {
    "ort-nnapi": "nnapi_supported_ops.md",
    "ort-coreml-mlprogram": "coreml_supported_mlprogram_ops.md",
}


@pytest.mark.parametrize("name", sorted(_TABLES))
def test_ort_profiles_transcribe_every_row(name: str) -> None:
    """Every |domain:op| row of the table that ships in the onnxruntime wheel is in the profile."""
    ort = pytest.importorskip("onnxruntime")
    table = Path(ort.__file__).parent / "tools" / "mobile_helpers" / _TABLES[name]
    if not table.is_file():
        pytest.skip(f"{table.name} not shipped with this onnxruntime")
    transcribed = re.match(r"onnxruntime (\S+) ", load_profile(name).source or "")
    if transcribed is None or transcribed.group(1) != ort.__version__:  # e.g. Python 3.10 gets an older wheel
        pytest.skip(f"{name} transcribes another onnxruntime than the installed {ort.__version__}")
    rows = re.findall(
        r"^\|(ai\.onnx|com\.microsoft):(\w+)\|", table.read_text(encoding="utf-8"), re.M
    )
    keys = {op if domain == "ai.onnx" else f"{domain}::{op}" for domain, op in rows}
    keys = {
        "ArgMax" if k == "Argmax" else k for k in keys
    }  # the table's typo, see the profile's note
    assert keys == set(load_profile(name).ops)


def test_report_links_constraint_docs_and_groups_by_reason(tmp_path: Path) -> None:
    from npu_gate.pipeline import inspect_model
    from npu_gate.render import markdown
    from tests.helpers import profile_builders

    path = _write(tmp_path, {"ops": {"Conv": {"constraints": [
        {"id": "conv-group", "attribute": "group", "in": [4], "doc": "https://example.com/a(b)"}]}}})
    (tmp_path / "m.onnx").write_bytes(profile_builders.conv(group=2).SerializeToString())
    result = inspect_model(tmp_path / "m.onnx", load_profile(str(path)))
    finding = next(f for f in result.findings if f.rule == "op-constraint")
    assert (finding.doc, finding.evidence) == ("https://example.com/a(b)", "illustrative")
    report = markdown.render(result)
    assert ("| conv-group: attribute group 2 not in &#123;4&#125; ([doc](https://example.com/a%28b%29)) |"
            in report.replace("  ", ""))
    assert ("<code>Conv</code> <code>conv-group</code>: allowed &#91;4&#93; "
            "([doc](https://example.com/a%28b%29))") in report


def test_doc_links_are_http_urls_or_relative_paths(tmp_path: Path, run_cli: Run) -> None:
    bad = ["javascript:alert(1)", "data:text/html,x", "file:///etc/passwd", "//evil.example/x", "/etc/passwd"]
    good = ["https://example.com/a(b)", "http://example.com", "p.calibration.json#Conv", "../docs/npu.md"]
    constraints = [{"id": f"c{i}", "attribute": "group", "in": [1], "doc": doc} for i, doc in enumerate(bad + good)]
    path = _write(tmp_path, {"ops": {"Conv": {"constraints": constraints}},
                             "limits": {"max_tensor_bytes": 10, "doc": "vbscript:x"},
                             "rank_adapters": {"rank": 4, "doc": "https://example.com/r"}})
    r = run_cli("validate", path)
    expected = "expected an http(s) URL or a relative path (e.g. rknn-rk3588.calibration.json#Resize)"
    assert (r.code, r.out) == (2, "")
    assert r.err.splitlines() == [
        f"npu-gate: error: {path}: limits.doc: 'vbscript:x': {expected}",
        *[f"npu-gate: error: {path}: ops.Conv.constraints[{i}].doc: {doc!r}: {expected}" for i, doc in enumerate(bad)]]


def test_profile_show_prints_no_generated_file_comment(run_cli: Run) -> None:
    shown = run_cli("profile", "show", "demo", "--format", "markdown").out
    page = (REPO / "docs" / "profiles" / "demo.md").read_text()
    assert "<!--" not in shown
    assert page.startswith("# Target profile `demo`\n\n<!-- Generated from npu_gate/profiles/demo.json by ")
    assert shown.splitlines() == [line for i, line in enumerate(page.splitlines()) if i not in (2, 3)]


def test_profile_show_names_a_builtins_calibration_record_as_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli: Run
) -> None:
    """Outside npu_gate's checkout (an installed wheel), npu_gate/profiles/ is not under the
    current folder: a link there would be broken, the file's place in the package is named."""
    monkeypatch.chdir(tmp_path)
    shown = run_cli("profile", "show", "rknn-rk3588", "--format", "markdown").out
    assert "](npu_gate/profiles/" not in shown
    assert ("(6 of 13 points off the NPU; rknn-rk3588.calibration.json#ConvTranspose)” "
            "(`npu_gate/profiles/rknn-rk3588.calibration.json#ConvTranspose`) *Fix:* use stride 1, 2, 4 or 8 in "
            "nn.ConvTranspose2d (or upsample with nn.Upsample, then a Conv2d)<br>") in shown


def test_value_tests_in_words(run_cli: Run) -> None:
    """The built-in calibrated profile's value constraints, as explain and the docs page say them."""
    words = {i: run_cli("explain", f"rknn-rk3588:{i}").out.splitlines()[2]
             for i in ("resize-linear-scales-measured", "slice-steps-1-or-minus-1", "pad-not-c-and-h")}
    assert words == {
        "resize-linear-scales-measured": "one of: (attribute mode: in {nearest}) | "
                                         "(input 2: constant value, elements [2, 3]: each element in "
                                         "{0.125, 0.25, 0.3333333, 0.5, 1, 2, 3, 4, 5, 8}) | "
                                         "(input 3: constant value divided by input 0's dims, elements [2, 3]: "
                                         "each element in {0.125, 0.25, 0.3333333, 0.5, 1, 2, 3, 4, 5, 8}).",
        "slice-steps-1-or-minus-1": "input 4: constant value: each element in {1, -1} "
                                    "(when absent: [1], the op's default).",
        "pad-not-c-and-h": "input 1: constant value, the axes it pads (begin or end ≠ 0): not in {[1, 2]}.",
    }
    from npu_gate.render.profile_pages import describe

    assert describe({"id": "x", "output": 0, "value": {"min": 0, "max": 3, "all_equal": True}}) == (
        "output 0: constant value: ≥ 0 and ≤ 3 and all elements equal")


def test_value_test_problems(tmp_path: Path, run_cli: Run) -> None:
    """Schema (a value test needs a test; padded_axes excludes elements and ratio_to_input), semantics
    (no value test on an attribute or on a fused op) and the lint (the input indexes exist)."""
    schema = _write(tmp_path, {"ops": {"Slice": {"constraints": [
        {"id": "a", "input": 4, "value": {"each": True}},
        {"id": "b", "input": 1, "value": {"elements": [0], "padded_axes": True, "in": [1]}},
        {"id": "c", "input": 4, "value": {"in": [1], "step": 2}},
        {"id": "d", "input": 1, "value": {"ratio_to_input": 0, "padded_axes": True, "in": [1]}},
        {"id": "e", "input": 1, "value": {"ratio_to_input": -1, "in": [1]}}]}}}, "schema.json")
    r = run_cli("profile", "check", schema)
    where = f"npu-gate: error: {schema}: ops.Slice.constraints"
    assert (r.code, r.err.splitlines()) == (1, [
        f"{where}[0].value: {{'each': True}} is not valid under any of the given schemas "
        "('in' is a required property)",
        f"{where}[1].value: {{'elements': [0], 'padded_axes': True, 'in': [1]}} should not be valid under "
        "{'required': ['elements', 'padded_axes']}",
        f"{where}[2].value: Additional properties are not allowed ('step' was unexpected)",
        f"{where}[3].value: {{'ratio_to_input': 0, 'padded_axes': True, 'in': [1]}} should not be valid under "
        "{'required': ['ratio_to_input', 'padded_axes']}",
        f"{where}[4].value.ratio_to_input: -1 is less than the minimum of 0"])
    semantic = _write(tmp_path, {
        "ops": {"Slice": {"constraints": [{"id": "a", "attribute": "axes", "value": {"in": [1]}},
                                          {"id": "b", "input": 5, "value": {"each": True, "in": [1]}},
                                          {"id": "d", "input": 4, "value": {"ratio_to_input": 5, "in": [1]}}]}},
        "patterns": [{"name": "p", "becomes": "HardSwish",
                      "nodes": [{"op": "HardSigmoid", "inputs": [{"tensor": "x"}]}],
                      "inputs": ["x"], "constraints": [{"id": "c", "input": 0, "value": {"in": [1]}}]}]},
        "semantic.json")
    r = run_cli("profile", "check", semantic)
    assert r.code == 1
    where = f"npu-gate: error: {semantic}: "
    assert r.err.splitlines() == [
        f"{where}ops.Slice.constraints[0].value: a value test is on an input or output tensor; test attribute "
        "axes with in/not_in/min/max",
        f"{where}patterns[0].constraints[0]: value tests are not evaluated on a fused op; match a pattern node's "
        "constant input with \"const\"",
        f"{where}ops.Slice.constraints[1].input: Slice has at most 5 inputs; index 5 does not exist",
        f"{where}ops.Slice.constraints[2].value.ratio_to_input: Slice has at most 5 inputs; index 5 does not exist"]


def test_dim_product_and_reference_problems(tmp_path: Path, run_cli: Run) -> None:
    """A dim test names one dim (axis) or several (axes, two at least); its in takes numbers or a
    reference to a tensor's dim (with an axis), not an attribute."""
    schema = _write(tmp_path, {"ops": {"Reshape": {"constraints": [
        {"id": "a", "output": 0, "dim": {"axis": -1, "axes": [-2, -1], "multiple_of": 8}},
        {"id": "b", "output": 0, "dim": {"axes": [-1], "multiple_of": 8}},
        {"id": "c", "output": 0, "dim": {"axis": -1, "in": ["x"]}}]}}}, "schema.json")
    r = run_cli("profile", "check", schema)
    where = f"npu-gate: error: {schema}: ops.Reshape.constraints"
    assert (r.code, r.err.splitlines()) == (1, [
        f"{where}[0].dim: {{'axis': -1, 'axes': [-2, -1], 'multiple_of': 8}} is valid under each of "
        "{'required': ['axes']}, {'required': ['axis']}",
        f"{where}[1].dim.axes: [-1] is too short",
        f"{where}[2].dim.in[0]: 'x' is not valid under any of the given schemas ('x' is not of type 'integer')"])
    semantic = _write(tmp_path, {"ops": {"Reshape": {"constraints": [
        {"id": "a", "output": 0, "dim": {"axis": -1, "in": [{"ref": {"attribute": "allowzero"}}]}},
        {"id": "b", "any_of": [{"output": 0, "dim": {"axis": -1, "in": [{"ref": {"input": 0}}]}},
                               {"output": 0, "rank": {"max": 3}}]}]}}}, "semantic.json")
    r = run_cli("profile", "check", semantic)
    where = f"npu-gate: error: {semantic}: ops.Reshape.constraints"
    assert (r.code, r.err.splitlines()) == (1, [
        f"{where}[0].dim.in[0].ref: a dim is compared with a tensor's dim (input or output with an axis), "
        "not an attribute",
        f"{where}[1].any_of[0].dim.in[0].ref: a tensor reference needs an axis"])


def test_reshape_constraints_in_words(run_cli: Run) -> None:
    """The calibrated Reshape rule as explain says it: the dims multiplied, the reference by name."""
    words = run_cli("explain", "rknn-rk3588:reshape-rank4-keeps-last-dim-or-channels").out.splitlines()[2]
    assert words == ("one of: (input 0: dims -2 × -1 multiplied a multiple of 8) | "
                     "(output 0: dim -1 in {input 0 dim -1}) | "
                     "(output 0: dim 1 a multiple of 8 and in {input 0 dim 1}) | "
                     "(output 0: the dims of input 0 with only dims of size 1 added, dropped or moved) | "
                     "(output 0: rank ≤ 3) | (output 0: rank ≥ 5) | (input 0: rank ≤ 3).")


def test_a_misspelt_profile_key_suggests_the_nearest_valid_one(run_cli: Run, tmp_path: Path) -> None:
    path = tmp_path / "board.npu-profile.json"
    path.write_text(json.dumps({"name": "board", "description": "d", "source": "s", "evidence": "illustrative",
                                "ops": {"Relu": {"constraints": [], "nots": "x"}}, "limts": {}}))
    run = run_cli("validate", path)
    assert run.code == 2
    assert run.err.splitlines() == [
        f"npu-gate: error: {path}: (root): Additional properties are not allowed ('limts' was unexpected); "
        "did you mean 'limits' or 'splits' or 'eliminates'?",
        f"npu-gate: error: {path}: ops.Relu: Additional properties are not allowed ('nots' was unexpected); "
        "did you mean 'note'?",
    ]
