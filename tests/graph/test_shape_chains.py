"""Shape-computation chains and folding under the contract, on hand-built graphs."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from npu_gate.result.types import SCHEMA_VERSION
from tests.helpers import model_zoo
from tests.helpers.common import RunCli, SaveModel, WriteContract, validate_result

_F = TensorProto.FLOAT
_I = TensorProto.INT64


def _i64(name: str, values: list[int]) -> TensorProto:
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name=name)


def _model(
    nodes: list[onnx.NodeProto],
    inputs: list[onnx.ValueInfoProto],
    outputs: list[onnx.ValueInfoProto],
    inits: list[TensorProto] | None = None,
    opset: int = 17,
) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=inits or [])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def resize_to_input_size() -> onnx.ModelProto:
    """F.interpolate(y, size=x.shape[-2:]): Shape → Slice → Concat → Resize(roi '', scales '')."""
    nodes = [
        helper.make_node("Shape", ["x"], ["x_shape"], name="shape_x"),
        helper.make_node("Slice", ["x_shape", "s_start", "s_end"], ["hw"], name="slice_hw"),
        helper.make_node("Concat", ["nc", "hw"], ["sizes"], name="concat_sizes", axis=0),
        helper.make_node("Resize", ["y", "", "", "sizes"], ["z"], name="resize0", mode="nearest"),
        helper.make_node("Add", ["z", "x"], ["out"], name="add0"),
    ]
    return _model(
        nodes,
        [
            helper.make_tensor_value_info("x", _F, [1, 3, "H", "W"]),
            helper.make_tensor_value_info("y", _F, [1, 3, 4, 4]),
        ],
        [helper.make_tensor_value_info("out", _F, [1, 3, "H", "W"])],
        [_i64("s_start", [2]), _i64("s_end", [4]), _i64("nc", [1, 3])],
    )


def shape_with_start() -> onnx.ModelProto:
    """Shape(x, start=1) only reads the static dims of x [N, 4, 2, 2]: it folds."""
    nodes = [
        helper.make_node("Shape", ["x"], ["tail"], name="shape_tail", start=1),
        helper.make_node("ReduceProd", ["tail"], ["features"], name="prod0", keepdims=1),
        helper.make_node(
            "Concat", ["minus_one", "features"], ["new_shape"], name="concat0", axis=0
        ),
        helper.make_node("Reshape", ["x", "new_shape"], ["y"], name="reshape0"),
    ]
    return _model(
        nodes,
        [helper.make_tensor_value_info("x", _F, ["N", 4, 2, 2])],
        [helper.make_tensor_value_info("y", _F, ["N", 16])],
        [_i64("minus_one", [-1])],
    )


def data_dependent_expand() -> onnx.ModelProto:
    """Expand to the shape of NonZero's output: the dim is data-dependent, never foldable."""
    nodes = [
        helper.make_node("NonZero", ["x"], ["nz"], name="nonzero0"),
        helper.make_node("Shape", ["nz"], ["nz_shape"], name="shape_nz"),
        helper.make_node("Expand", ["one", "nz_shape"], ["y"], name="expand0"),
    ]
    return _model(
        nodes,
        [helper.make_tensor_value_info("x", _F, [2, 3])],
        [helper.make_tensor_value_info("y", _F, [2, "nnz"])],
        [numpy_helper.from_array(np.array([1.0], dtype=np.float32), name="one")],
    )


def loop_with_chain(carried: list[Any]) -> onnx.ModelProto:
    """Loop body flattening its carried value with Shape → Gather → Unsqueeze → Concat → Reshape."""
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond"),
            helper.make_node("Shape", ["v_in"], ["v_shape"], name="body_shape"),
            helper.make_node(
                "Gather", ["v_shape", "zero"], ["v_batch"], name="body_gather", axis=0
            ),
            helper.make_node(
                "Unsqueeze", ["v_batch", "axes0"], ["v_batch1"], name="body_unsqueeze"
            ),
            helper.make_node(
                "Concat", ["v_batch1", "minus_one"], ["v_new"], name="body_concat", axis=0
            ),
            helper.make_node("Reshape", ["v_in", "v_new"], ["v_flat"], name="body_reshape"),
            helper.make_node("Reshape", ["v_flat", "v_shape"], ["v_out"], name="body_back"),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", _I, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_in", _F, carried),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_out", _F, carried),
        ],
    )
    nodes = [helper.make_node("Loop", ["M", "keep", "x"], ["y"], name="loop0", body=body)]
    model = _model(
        nodes,
        [helper.make_tensor_value_info("x", _F, carried)],
        [helper.make_tensor_value_info("y", _F, carried)],
        [
            numpy_helper.from_array(np.array(2, dtype=np.int64), "M"),
            numpy_helper.from_array(np.array(True), "keep"),
            numpy_helper.from_array(np.array(0, dtype=np.int64), "zero"),
            _i64("axes0", [0]),
            _i64("minus_one", [-1]),
        ],
    )
    return model


def _inspect(
    run_cli: Callable[..., Any],
    save_model: Callable[..., Path],
    model: onnx.ModelProto,
    tmp_path: Path,
) -> tuple[int, dict[str, Any]]:
    path = save_model(model)
    return _run(run_cli, "inspect", path, tmp_path)


def _check(
    run_cli: Callable[..., Any],
    save_model: Callable[..., Path],
    write_contract: Callable[..., Path],
    model: onnx.ModelProto,
    inputs: list[dict[str, Any]],
    tmp_path: Path,
) -> tuple[int, dict[str, Any]]:
    save_model(model)
    contract = write_contract(
        {"model": {"onnx": "model.onnx"}, "inputs": inputs, "target": {"profile": "demo"}}
    )
    return _run(run_cli, "check", contract, tmp_path)


def _run(run_cli: Callable[..., Any], command: str, path: Path, tmp_path: Path) -> tuple[int, dict[str, Any]]:
    """``command`` on ``path`` with --json: its exit code and its valid result, which has no
    onnx-checker finding and said nothing on stderr."""
    out = tmp_path / "result.json"
    run = run_cli(command, path, "--json", out, "-q")
    assert run.err == ""
    doc = json.loads(out.read_text())
    validate_result(doc)
    assert [f["message"] for f in doc["findings"] if f["rule"] == "onnx-checker"] == []
    return run.code, doc


def _rules(doc: dict[str, Any]) -> list[tuple[str, str | None]]:
    return [(f["rule"], f.get("node")) for f in doc["findings"]]


def _placements(doc: dict[str, Any]) -> dict[str, str]:
    return {n["name"]: n["placement"] for n in doc["nodes"]}


def test_chain_stays_without_contract(run_cli: RunCli, save_model: SaveModel, tmp_path: Path) -> None:
    code, doc = _inspect(run_cli, save_model, model_zoo.dynamic_reshape_chain(), tmp_path)
    assert code == 1
    assert doc["shape_chains"] == [
        {
            "graph": "",
            "consumer": "reshape0",
            "consumer_op": "Reshape",
            "slots": ["shape"],
            "nodes": ["shape0", "const_idx", "gather0", "unsqueeze0", "concat0"],
            "sources": ["x"],
            "status": "stays",
            "blocking": [
                {"node": "shape0", "tensor": "x", "dim": 0, "value": "N", "origin": ["x[0]"]}
            ],
            "fixed_by_contract": [],
            "static_value": False,
        }
    ]
    finding = next(f for f in doc["findings"] if f["rule"] == "shape-computation")
    assert finding["node"] == "reshape0"
    assert finding["severity"] == "error"
    assert finding["message"] == (
        "shape computation for reshape0 (Reshape shape) stays in the graph: shape0 reads x[0] = N "
        "(a symbolic input dim); nodes: shape0, const_idx, gather0, unsqueeze0, concat0"
    )
    dynamic = next(f for f in doc["findings"] if f["rule"] == "dynamic-input")
    assert dynamic["message"] == (
        "input x has dynamic shape [N, 4, 2, 2] in the model; fixing x[0] "
        "would fold 1 shape chain (reshape0: 5 nodes)"
    )
    s = doc["summary"]
    assert (s["node_count"], s["nodes_after_folding"], s["folded_nodes"]) == (6, 5, 1)
    assert (s["shape_chains"], s["shape_chains_staying"]) == (1, 1)
    assert doc["schema_version"] == SCHEMA_VERSION


def test_chain_folds_under_contract_and_keeps_names(
    run_cli: RunCli, save_model: SaveModel, write_contract: WriteContract, tmp_path: Path
) -> None:
    code, doc = _check(
        run_cli,
        save_model,
        write_contract,
        model_zoo.dynamic_reshape_chain(),
        [{"name": "x", "shape": [2, 4, 2, 2], "dtype": "float32"}],
        tmp_path,
    )
    assert code == 1  # Reshape is not in the demo profile, and the model keeps N
    [chain] = doc["shape_chains"]
    assert (chain["status"], chain["blocking"], chain["fixed_by_contract"]) == (
        "folds",
        [],
        ["x[0]"],
    )
    # Every node keeps the model's own name; the chain is folded, not CPU fallback.
    assert _placements(doc) == {
        "shape0": "folded",
        "const_idx": "folded",
        "gather0": "folded",
        "unsqueeze0": "folded",
        "concat0": "folded",
        "reshape0": "cpu",
    }
    assert _rules(doc) == [("dynamic-input", None), ("unsupported-op", "reshape0")]
    assert doc["findings"][0]["message"] == (
        "input x has dynamic shape [N, 4, 2, 2] in the model; the contract fixes [2, 4, 2, 2]: "
        "export with static shapes or fix the dim in the model (x[0] = 2); fixing it folds "
        "1 shape chain (reshape0: 5 nodes)"
    )
    reshape = next(n for n in doc["nodes"] if n["name"] == "reshape0")
    assert reshape["outputs"][0]["shape"] == [2, 16]
    s = doc["summary"]
    assert (s["node_count"], s["nodes_after_folding"], s["shape_chains_staying"]) == (6, 1, 0)
    assert doc["partitions"] == [{"id": 0, "device": "cpu", "nodes": ["reshape0"]}]


def test_shape_start_reads_only_static_dims(run_cli: RunCli, save_model: SaveModel, tmp_path: Path) -> None:
    _, doc = _inspect(run_cli, save_model, shape_with_start(), tmp_path)
    [chain] = doc["shape_chains"]
    assert chain["status"] == "folds"
    assert chain["nodes"] == ["shape_tail", "prod0", "concat0"]
    assert chain["fixed_by_contract"] == []
    assert _placements(doc)["shape_tail"] == "folded"
    assert "shape-computation" not in [r for r, _ in _rules(doc)]


def test_resize_sizes_chain_and_empty_optional_inputs(
    run_cli: RunCli, save_model: SaveModel, write_contract: WriteContract, tmp_path: Path
) -> None:
    model = resize_to_input_size()
    _, doc = _inspect(run_cli, save_model, model, tmp_path)
    [chain] = doc["shape_chains"]
    assert (chain["consumer"], chain["slots"], chain["status"]) == ("resize0", ["sizes"], "stays")
    assert [(b["dim"], b["value"]) for b in chain["blocking"]] == [(2, "H"), (3, "W")]
    assert chain["nodes"] == ["shape_x", "slice_hw", "concat_sizes"]
    # Empty optional inputs ('' roi and scales) are absent: never named as dynamic tensors.
    resize = next(n for n in doc["nodes"] if n["name"] == "resize0")
    assert [t["name"] for t in resize["inputs"]] == ["y", "", "", "sizes"]
    assert not any("''" in f["message"] or " , " in f["message"] for f in doc["findings"])

    _, doc = _check(
        run_cli,
        save_model,
        write_contract,
        model,
        [
            {"name": "x", "shape": [1, 3, 8, 8], "dtype": "float32"},
            {"name": "y", "shape": [1, 3, 4, 4], "dtype": "float32"},
        ],
        tmp_path,
    )
    [chain] = doc["shape_chains"]
    assert (chain["status"], chain["fixed_by_contract"]) == ("folds", ["x[2]", "x[3]"])
    assert next(n for n in doc["nodes"] if n["name"] == "resize0")["outputs"][0]["shape"] == [
        1,
        3,
        8,
        8,
    ]
    # The absent roi and scales ('') are neither dynamic nor boundary tensors.
    assert _rules(doc) == [("dynamic-input", None), ("unsupported-op", "resize0")]
    assert _placements(doc) == {
        "shape_x": "folded",
        "slice_hw": "folded",
        "concat_sizes": "folded",
        "resize0": "cpu",
        "add0": "npu",
    }
    assert doc["boundaries"] == [{"tensor": "z", "bytes": 768, "from": 0, "to": 1}]


def test_data_dependent_chain_stays_and_says_so(run_cli: RunCli, save_model: SaveModel, tmp_path: Path) -> None:
    _, doc = _inspect(run_cli, save_model, data_dependent_expand(), tmp_path)
    [chain] = doc["shape_chains"]
    assert chain["status"] == "stays"
    assert chain["nodes"] == ["shape_nz"]
    assert chain["sources"] == ["nz"]
    [b] = chain["blocking"]
    assert (b["tensor"], b["dim"], b["origin"]) == ("nz", 1, [])
    finding = next(f for f in doc["findings"] if f["rule"] == "shape-computation")
    assert "not an input dim (data-dependent or unknown to shape inference)" in finding["message"]


def test_chain_inside_loop_body(run_cli: RunCli, save_model: SaveModel, tmp_path: Path) -> None:
    _, doc = _inspect(run_cli, save_model, loop_with_chain([2, 3, 4]), tmp_path)
    chains = {c["consumer"]: c for c in doc["shape_chains"]}
    assert set(chains) == {"body_reshape", "body_back"}
    flat = chains["body_reshape"]
    assert flat["graph"] == "loop0/body"
    assert flat["nodes"] == ["body_shape", "body_gather", "body_unsqueeze", "body_concat"]
    assert (flat["status"], chains["body_back"]["status"]) == ("folds", "folds")

    _, doc = _inspect(run_cli, save_model, loop_with_chain(["B", 3, 4]), tmp_path)
    chains = {c["consumer"]: c for c in doc["shape_chains"]}
    assert chains["body_reshape"]["status"] == "stays"
    assert chains["body_reshape"]["blocking"] == [
        {"node": "body_shape", "tensor": "v_in", "dim": 0, "value": "B", "origin": ["x[0]"]}
    ]
    found = [f["message"] for f in doc["findings"] if f["rule"] == "shape-computation"]
    assert found[0].startswith(
        "shape computation for body_reshape (Reshape shape) in loop0/body stays"
    )


def test_a_chain_that_folds_in_a_loop_body_is_placed_folded(run_cli: RunCli, save_model: SaveModel,
                                                            tmp_path: Path) -> None:
    """The body's Shape of a static tensor folds for placement as it does for the chain: its
    nodes used to be CPU fallback (`op Shape not in profile demo`) under a chain that folds."""
    _, doc = _inspect(run_cli, save_model, loop_with_chain([2, 3, 4]), tmp_path)
    placed = {n["name"]: (n["placement"], n["reasons"]) for n in doc["nodes"]}
    chain = next(c for c in doc["shape_chains"] if c["consumer"] == "body_reshape")
    assert chain["status"] == "folds"
    assert {name: placed[f"loop0/body/{name}"] for name in chain["nodes"]} == {
        name: ("folded", []) for name in chain["nodes"]
    }
    assert not [f for f in doc["findings"] if f.get("node", "").startswith("loop0/body/body_shape")]


def test_allow_dynamic_shapes_makes_it_a_warning(
    run_cli: RunCli, save_model: SaveModel, write_contract: WriteContract, tmp_path: Path
) -> None:
    save_model(model_zoo.dynamic_reshape_chain())
    contract = write_contract(
        {
            "model": {"onnx": "model.onnx"},
            "inputs": [{"name": "x", "shape": [2, 4, 2, 2], "dtype": "float32"}],
            "target": {"profile": "demo"},
            "gates": {"allow_dynamic_shapes": True},
        }
    )
    from npu_gate.contract.spec import load_contract
    from npu_gate.pipeline import check_contract

    result = check_contract(load_contract(contract))
    assert [f.severity for f in result.findings if f.rule == "dynamic-input"] == ["warning"]


def test_markdown_section(run_cli: RunCli, save_model: SaveModel, tmp_path: Path) -> None:
    path = save_model(model_zoo.dynamic_reshape_chain())
    md = tmp_path / "r.md"
    assert run_cli("inspect", path, "--markdown", md, "-q").code == 1
    text = md.read_text()
    assert "| Nodes after folding | 5" in text.replace("  ", " ").replace("  ", " ")
    assert (
        "### Shape computation\n\n1 chain(s) compute a shape input from a runtime shape; 1 stay"
        in text
    )
    assert ("<code>x&#91;0&#93;</code> = N from input <code>x&#91;0&#93;</code>") in text


def test_symbolic_inference_fills_what_onnx_leaves_unknown(run_cli: RunCli, save_model: SaveModel,
                                                           tmp_path: Path) -> None:
    _, doc = _inspect(run_cli, save_model, resize_to_input_size(), tmp_path)
    # ONNX writes unk__ dims for the Resize output; onnxruntime's symbolic inference knows H, W.
    assert doc["stages"]["symbolic_shapes"] == {"status": "ok", "unknown": 1, "resolved": 1}
    shapes = {n["name"]: n["outputs"][0]["shape"] for n in doc["nodes"]}
    assert shapes["resize0"] == [1, 3, "H", "W"]
    assert shapes["add0"] == [1, 3, "H", "W"]
    assert doc["dynamic_dims"] == [
        {
            "input": "x",
            "dim": 2,
            "symbol": "H",
            "contract": None,
            "chains_folded_by_fixing": ["resize0"],
        },
        {
            "input": "x",
            "dim": 3,
            "symbol": "W",
            "contract": None,
            "chains_folded_by_fixing": ["resize0"],
        },
    ]


def test_known_graph_never_imports_onnxruntime(save_model: SaveModel) -> None:
    import subprocess
    import sys

    path = save_model(model_zoo.dynamic_reshape_chain())
    code = (
        "import sys; from pathlib import Path; from npu_gate.pipeline import inspect_model; "
        "from npu_gate.profile.spec import load_profile; "
        f"r = inspect_model(Path({str(path)!r}), load_profile('demo')); "
        "print(r.summary['shape_chains'], 'symbolic_shapes' in r.stages, "
        "'onnxruntime' in sys.modules, 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["1", "False", "False", "False"]


def test_dynamic_dims_traced(run_cli: RunCli, save_model: SaveModel, write_contract: WriteContract,
                             tmp_path: Path) -> None:
    _, doc = _inspect(run_cli, save_model, model_zoo.symbolic_dims(), tmp_path)
    assert [(d["input"], d["dim"], d["symbol"]) for d in doc["dynamic_dims"]] == [
        ("x", 0, "batch"),
        ("x", 2, "2*floor(h/2)"),
        ("x", 3, None),
    ]
    _, doc = _check(
        run_cli,
        save_model,
        write_contract,
        model_zoo.dynamic_reshape_chain(),
        [{"name": "x", "shape": [2, 4, 2, 2], "dtype": "float32"}],
        tmp_path,
    )
    assert doc["dynamic_dims"] == [
        {
            "input": "x",
            "dim": 0,
            "symbol": "N",
            "contract": 2,
            "chains_folded_by_fixing": ["reshape0"],
        }
    ]
    assert "symbolic_shapes" not in doc["stages"]


def resize_sizes_from_two_shapes() -> onnx.ModelProto:
    """sizes = Concat(Shape(z)[0:2], Shape(x)[2], Shape(x)[3]), x [N, 3, 8, 8], z [N, 3, 4, 4].

    Both Shape nodes read a tensor with dynamic N, but only Shape(z)'s N reaches sizes.
    """
    nodes = [
        helper.make_node("Relu", ["x"], ["z0"], name="relu0"),
        helper.make_node(
            "MaxPool", ["z0"], ["z"], name="pool0", kernel_shape=[2, 2], strides=[2, 2]
        ),
        helper.make_node("Shape", ["z"], ["z_shape"], name="shape_z"),
        helper.make_node("Slice", ["z_shape", "zero1", "two1"], ["nc"], name="slice_nc"),
        helper.make_node("Shape", ["x"], ["x_shape"], name="shape_x"),
        helper.make_node("Gather", ["x_shape", "two"], ["h"], name="gather_h", axis=0),
        helper.make_node("Gather", ["x_shape", "three"], ["w"], name="gather_w", axis=0),
        helper.make_node("Unsqueeze", ["h", "axes0"], ["h1"], name="unsq_h"),
        helper.make_node("Unsqueeze", ["w", "axes0"], ["w1"], name="unsq_w"),
        helper.make_node("Concat", ["nc", "h1", "w1"], ["sizes"], name="concat_sizes", axis=0),
        helper.make_node("Resize", ["z", "", "", "sizes"], ["y"], name="resize0"),
    ]
    return _model(
        nodes,
        [helper.make_tensor_value_info("x", _F, ["N", 3, 8, 8])],
        [helper.make_tensor_value_info("y", _F, ["N", 3, 8, 8])],
        [
            _i64("zero1", [0]),
            _i64("two1", [2]),
            _i64("axes0", [0]),
            numpy_helper.from_array(np.array(2, dtype=np.int64), "two"),
            numpy_helper.from_array(np.array(3, dtype=np.int64), "three"),
        ],
    )


def test_blocking_dims_are_the_ones_that_reach_the_consumer(run_cli: RunCli, save_model: SaveModel,
                                                            tmp_path: Path) -> None:
    _, doc = _inspect(run_cli, save_model, resize_sizes_from_two_shapes(), tmp_path)
    [chain] = doc["shape_chains"]
    assert chain["status"] == "stays"
    assert chain["static_value"] is False
    assert chain["blocking"] == [
        {"node": "shape_z", "tensor": "z", "dim": 0, "value": "N", "origin": ["x[0]"]}
    ]


def test_partially_static_chain_says_so(run_cli: RunCli, save_model: SaveModel, tmp_path: Path) -> None:
    model = resize_sizes_from_two_shapes()
    # Take batch and channels from constants: only Shape(x)[2], [3] (static) reach sizes.
    model.graph.node[3].input[0] = "const_nc"
    model.graph.initializer.append(_i64("const_nc", [1, 3, 4, 4]))
    _, doc = _inspect(run_cli, save_model, model, tmp_path)
    [chain] = doc["shape_chains"]
    assert (chain["consumer"], chain["status"], chain["static_value"]) == ("resize0", "stays", True)
    assert chain["nodes"] == [
        "slice_nc",
        "shape_x",
        "gather_h",
        "gather_w",
        "unsq_h",
        "unsq_w",
        "concat_sizes",
    ]
    assert [(b["node"], b["dim"]) for b in chain["blocking"]] == [("shape_x", 0)]
    finding = next(f for f in doc["findings"] if f["rule"] == "shape-computation")
    assert (
        "(only static dims reach the consumer; folding it needs a folder that evaluates "
        "partially known shapes)"
    ) in finding["message"]


def test_shape_values_evaluator() -> None:
    from npu_gate.graph import facts as graph_facts
    from npu_gate.graph import shape_values

    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape0"),
        helper.make_node("Slice", ["s", "two1", "four1"], ["hw"], name="slice0"),
        helper.make_node("Cast", ["hw"], ["hwf"], name="cast0", to=_F),
        helper.make_node("Div", ["hwf", "quarter"], ["scaled"], name="div0"),
        helper.make_node("Gather", ["s", "zero"], ["n"], name="gather0", axis=0),
        helper.make_node("Mul", ["n", "hw"], ["nhw"], name="mul0"),
        helper.make_node("ReduceProd", ["s"], ["numel"], name="prod0", keepdims=0),
    ]
    model = _model(
        nodes,
        [helper.make_tensor_value_info("x", _F, ["N", 3, 8, 6])],
        [helper.make_tensor_value_info(n, _F, None) for n in ("scaled", "nhw", "numel")],
        [
            _i64("two1", [2]),
            _i64("four1", [4]),
            numpy_helper.from_array(np.array([4.0, 2.0], dtype=np.float32), "quarter"),
            numpy_helper.from_array(np.array(0, dtype=np.int64), "zero"),
        ],
    )
    inferred, _, _ = graph_facts.infer_shapes(model)
    facts = graph_facts.collect(inferred, [], None)
    ev = shape_values.Evaluator(
        facts.nodes,
        graph_facts.producers(facts.nodes),
        facts.tensors,
        shape_values.initializer_values(inferred.graph),
    )
    n = frozenset({(0, "x", 0, "N")})
    assert ev.value("hw") == (1, [8, 6])
    assert ev.value("scaled") == (1, [2.0, 3.0])
    assert ev.value("n") == (0, [n])
    assert ev.value("nhw") == (1, [n, n])
    assert ev.value("numel") == (0, [n])
    assert shape_values.dependencies([ev.value("scaled")]) == []
    assert shape_values.dependencies([ev.value("nhw"), None]) is None


def torchscript_pad(torch_pads: list[int], out_shape: list[int]) -> onnx.ModelProto:
    """F.pad(x, torch_pads, mode="reflect") as torchscript exports it: the ONNX pads come out of
    ConstantOfShape, Concat, a 2-D Reshape, a reversing Slice, Transpose, Reshape and Cast."""
    n = len(torch_pads)
    nodes = [
        helper.make_node("ConstantOfShape", ["zeros_len"], ["zeros"], name="zeros0",
                         value=numpy_helper.from_array(np.array([0], dtype=np.int64))),
        helper.make_node("Concat", ["torch_pads", "zeros"], ["all"], name="concat0", axis=0),
        helper.make_node("Reshape", ["all", "pairs"], ["rows"], name="reshape0"),
        helper.make_node("Slice", ["rows", "minus1", "very_negative", "axis0", "minus1"], ["rev"], name="slice0"),
        helper.make_node("Transpose", ["rev"], ["cols"], name="transpose0", perm=[1, 0]),
        helper.make_node("Reshape", ["cols", "minus1"], ["flat"], name="reshape1"),
        helper.make_node("Cast", ["flat"], ["pads"], name="cast0", to=_I),
        helper.make_node("Pad", ["x", "pads"], ["y"], name="pad0", mode="reflect"),
    ]
    inits = [_i64("zeros_len", [8 - n]), _i64("torch_pads", torch_pads), _i64("pairs", [-1, 2]),
             _i64("minus1", [-1]), _i64("very_negative", [-(2**63)]), _i64("axis0", [0])]
    return _model(nodes, [helper.make_tensor_value_info("x", _F, [1, 4, 8, 8])],
                  [helper.make_tensor_value_info("y", _F, out_shape)], inits)


def test_value_constraints_read_what_folding_computes(tmp_path: Path) -> None:
    # The pads chain folds, but shape arithmetic does not read 2-D tensors: the value test once
    # said "value not known" and put every torchscript F.pad on the CPU under rknn-rk3588.
    from npu_gate.pipeline import inspect_model
    from npu_gate.profile.spec import load_profile

    profile = load_profile("rknn-rk3588")
    placements = {}
    for label, torch_pads, out_shape in (("hw", [1, 2, 1, 2], [1, 4, 11, 11]),
                                         ("ch", [0, 0, 1, 1, 1, 1], [1, 6, 10, 8])):
        path = tmp_path / f"{label}.onnx"
        path.write_bytes(torchscript_pad(torch_pads, out_shape).SerializeToString())
        result = inspect_model(path, profile)
        placements[label] = [(n.name, n.placement) for n in result.nodes if n.placement != "folded"]
        if label == "ch":
            [finding] = result.findings
            assert (finding.rule, finding.node, finding.actual) == (
                "op-constraint", "pad0", [1, 2])  # C and H padded: a value read, not "not known"
        else:
            assert result.findings == []
    assert placements == {"hw": [("pad0", "npu")], "ch": [("pad0", "cpu")]}


def test_symbolic_inference_unavailable_keeps_onnx_shapes(
    run_cli: RunCli, save_model: SaveModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from npu_gate.graph import symbolic

    monkeypatch.delitem(sys.modules, symbolic._ORT_MODULE, raising=False)  # loaded by an earlier test
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # find_spec answers None: not installed
    code, doc = _inspect(run_cli, save_model, resize_to_input_size(), tmp_path)
    assert code == 1
    assert doc["stages"]["symbolic_shapes"] == {
        "status": "failed",
        "reason": "ModuleNotFoundError: onnxruntime is not installed",
        "unknown": 1,
        "resolved": 0,
    }
    resize = next(n for n in doc["nodes"] if n["name"] == "resize0")
    assert resize["outputs"][0]["shape"] == [1, 3, "unk__0", "unk__1"]  # ONNX's own
    assert symbolic._ORT_MODULE not in sys.modules  # a failed load is not cached


def test_symbolic_inference_without_the_tools_file_fails_naming_it(
    run_cli: RunCli, save_model: SaveModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.machinery
    import importlib.util
    import sys

    from npu_gate.graph import symbolic

    fake = tmp_path / "site" / "onnxruntime"
    fake.mkdir(parents=True)
    spec = importlib.machinery.ModuleSpec("onnxruntime", None, is_package=True)
    spec.submodule_search_locations = [str(fake)]
    monkeypatch.delitem(sys.modules, symbolic._ORT_MODULE, raising=False)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: spec if name == "onnxruntime" else None)
    _, doc = _inspect(run_cli, save_model, resize_to_input_size(), tmp_path)
    tools_file = fake / "tools" / "symbolic_shape_infer.py"
    assert doc["stages"]["symbolic_shapes"]["reason"] == f"ModuleNotFoundError: onnxruntime has no {tools_file}"


@pytest.mark.slow
def test_symbolic_inference_imports_neither_torch_nor_onnxruntime(save_model: SaveModel) -> None:
    # onnxruntime/tools/__init__.py imports torch whenever it is installed; inspect never imports torch.
    import subprocess
    import sys

    path = save_model(resize_to_input_size())
    code = (
        "import json, sys; from npu_gate.cli import main; "
        f"rc = main(['inspect', {str(path)!r}, '-q', '--json', {str(path.with_suffix('.json'))!r}]); "
        "print(rc, sorted(m for m in ('torch', 'onnxruntime', 'onnxruntime.tools') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "1 []"
    doc = json.loads(path.with_suffix(".json").read_text())
    assert doc["stages"]["symbolic_shapes"] == {"status": "ok", "unknown": 1, "resolved": 1}
    shapes = {n["name"]: n["outputs"][0]["shape"] for n in doc["nodes"]}
    assert shapes["resize0"] == [1, 3, "H", "W"]


def resize_then_custom_op() -> onnx.ModelProto:
    """resize_to_input_size, then an op onnxruntime's symbolic inference does not know."""
    model = resize_to_input_size()
    graph = model.graph
    graph.node.append(helper.make_node("Mystery", ["out"], ["m"], name="mystery0", domain="com.example"))
    del graph.output[:]
    graph.output.append(helper.make_tensor_value_info("m", _F, None))
    model.opset_import.append(helper.make_opsetid("com.example", 1))
    return model


def test_symbolic_inference_stopping_early_writes_nothing_and_keeps_its_shapes(
    run_cli: RunCli, save_model: SaveModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # onnxruntime saves its partial model as sym_shape_infer_temp.onnx in the current folder
    # (the user's repository) when it stops early; npu-gate runs it in a scratch folder.
    cwd = tmp_path / "repo"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    path = save_model(resize_then_custom_op())
    out = tmp_path / "result.json"
    run_cli("inspect", path, "--json", out, "-q")
    assert sorted(p.name for p in cwd.iterdir()) == []
    assert Path.cwd() == cwd
    doc = json.loads(out.read_text())
    validate_result(doc)
    assert doc["stages"]["symbolic_shapes"] == {
        "status": "ok",
        "reason": "stopped early: Exception: Incomplete symbolic shape inference",
        "unknown": 3,
        "resolved": 2,
    }
    shapes = {n["name"]: n["outputs"][0]["shape"] for n in doc["nodes"]}
    assert shapes["resize0"] == [1, 3, "H", "W"]  # from the partial result
    assert shapes["add0"] == [1, 3, "H", "W"]
    assert shapes["mystery0"] is None


def test_symbolic_inference_that_learns_nothing_fails(run_cli: RunCli, save_model: SaveModel, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    model = _model(
        [helper.make_node("Mystery", ["x"], ["m"], name="mystery0", domain="com.example")],
        [helper.make_tensor_value_info("x", _F, ["N", 3])],
        [helper.make_tensor_value_info("m", _F, None)],
    )
    model.opset_import.append(helper.make_opsetid("com.example", 1))
    path = save_model(model)
    out = tmp_path / "result.json"
    run_cli("inspect", path, "--json", out, "-q")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([path.name, "result.json"])
    doc = json.loads(out.read_text())
    assert doc["stages"]["symbolic_shapes"] == {
        "status": "failed",
        "reason": "stopped early: Exception: Incomplete symbolic shape inference",
        "unknown": 1,
        "resolved": 0,
    }


def reshape_through_mod() -> onnx.ModelProto:
    """A static Reshape whose shape goes through Mod, as in the index arithmetic of a
    torchscript-exported attention block: ONNX's data propagation stops at the Mod."""
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu0"),
        helper.make_node("Mod", ["five", "four"], ["one"], name="mod0"),
        helper.make_node("Shape", ["r"], ["r_shape"], name="shape0"),
        helper.make_node("Slice", ["r_shape", "zero", "one"], ["lead"], name="slice0"),
        helper.make_node("Concat", ["lead", "minus_one"], ["target"], name="concat0", axis=0),
        helper.make_node("Reshape", ["r", "target"], ["y"], name="reshape0"),
        helper.make_node("Relu", ["y"], ["out"], name="relu1"),
    ]
    return _model(
        nodes,
        [helper.make_tensor_value_info("x", _F, [2, 3, 4])],
        [helper.make_tensor_value_info("out", _F, [None, None])],
        [_i64("five", [5]), _i64("four", [4]), _i64("zero", [0]), _i64("minus_one", [-1])],
    )


def test_shapes_onnx_cannot_propagate_come_from_the_folded_graph(run_cli: RunCli, save_model: SaveModel,
                                                                 tmp_path: Path) -> None:
    # Every static nn.MultiheadAttention exported with torchscript used to fail the gate with
    # dynamic-shape errors: its Reshape's shape folds, but ONNX left the output unknown.
    code, doc = _inspect(run_cli, save_model, reshape_through_mod(), tmp_path)
    assert code == 1  # profile demo has no Relu or Reshape; no dynamic-shape finding
    # unknown: the Slice and Concat outputs (folded: never reach a compiler), reshape0, relu1
    assert doc["stages"]["folded_shapes"] == {"status": "ok", "unknown": 4, "resolved": 2}
    # what is left unknown is folded: onnxruntime's symbolic inference (and sympy) is not loaded
    assert "symbolic_shapes" not in doc["stages"]
    shapes = {n["name"]: n["outputs"][0]["shape"] for n in doc["nodes"]}
    assert (shapes["reshape0"], shapes["relu1"]) == ([2, 12], [2, 12])
    assert [f["rule"] for f in doc["findings"]] == ["unsupported-op"] * 3
    assert [n["placement"] for n in doc["nodes"]] == ["cpu", "folded", "folded", "folded", "folded", "cpu", "cpu"]


def test_the_bundle_folds_shape_of_a_runtime_tensor(run_cli: RunCli, save_model: SaveModel, tmp_path: Path) -> None:
    """folded.onnx: Shape of a computed tensor with a static shape is replaced by its value
    (the reference evaluator never has that tensor), so the whole chain folds."""
    path = save_model(reshape_through_mod())
    assert run_cli("inspect", path, "--out", tmp_path / "bundle", "-q").code == 1
    log = (tmp_path / "bundle" / "conversion.log").read_text()
    assert "folding: 4 folded nodes replaced by 1 initializers" in log
    folded = onnx.load(str(tmp_path / "bundle" / "folded.onnx"))
    assert [n.op_type for n in folded.graph.node] == ["Relu", "Reshape", "Relu"]
    target = next(t for t in folded.graph.initializer if t.name == "target")
    assert numpy_helper.to_array(target).tolist() == [2, -1]


def test_only_shape_like_folding_is_evaluated_again(tmp_path: Path) -> None:
    """Weight arithmetic that folds (here W * 2, 4096 elements) is not evaluated to re-infer shapes."""
    from npu_gate.graph import shape_values
    from npu_gate.pipeline import Artifacts, inspect_model
    from npu_gate.profile.spec import load_profile

    model = reshape_through_mod()
    graph = model.graph
    graph.initializer.extend([numpy_helper.from_array(np.ones((64, 64), np.float32), name="w"),
                              numpy_helper.from_array(np.array(2, np.float32), name="two")])
    graph.node.insert(0, helper.make_node("Mul", ["w", "two"], ["w2"], name="scale_w"))
    graph.node.append(helper.make_node("Add", ["z", "w2"], ["z2"], name="add_w"))
    graph.input.append(helper.make_tensor_value_info("z", _F, [64, 64]))
    graph.output.append(helper.make_tensor_value_info("z2", _F, [64, 64]))
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    art = Artifacts(tmp_path)
    result = inspect_model(path, load_profile("demo"), keep=art)
    assert art.facts is not None
    names = {i: n.name for i, n in enumerate(art.facts.nodes)}
    assert sorted(names[i] for i in art.folded) == ["concat0", "mod0", "scale_w", "shape0", "slice0"]
    shape_like = shape_values.shape_like_folding(art.facts.nodes, art.facts.tensors, art.folded)
    assert sorted(names[i] for i in shape_like) == [
        "concat0", "mod0", "shape0", "slice0"]
    assert result.stages["folded_shapes"]["status"] == "ok"
