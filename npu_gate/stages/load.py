"""The load stage: the ONNX file given (``inspect``, an ONNX contract), read without its external
weights (the analysis needs only their dims)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from onnx import ModelProto

from npu_gate.contract.parts import InputSpec
from npu_gate.graph import facts as graph_facts
from npu_gate.graph.model_file import copy_model, load_onnx
from npu_gate.stages import analyse
from npu_gate.stages.run import Run, Stage


@dataclass
class Load(Stage):
    """``run.source`` loaded: ``run.model`` and ``run.model_path``. A contract's inputs the model
    does not have, or whose shapes it contradicts, are a contract error before any analysis.
    ``shapes``: static input shapes that replace the model's (``inspect``/a probe's ``--inputs``),
    with the model's own dtypes: the run's inputs, as a contract's are."""

    shapes: dict[str, list[int]] | None = None
    name = "load"
    limited = False  # the first stage: the deadline starts with it

    def applies(self, run: Run) -> bool:
        return run.source is not None

    def run(self, run: Run) -> None:
        assert run.source is not None
        start = time.perf_counter()
        model, sha256 = load_onnx(run.source, weights=False)
        run.timings["load_s"] = time.perf_counter() - start
        if run.contract is not None:
            analyse.check_contract_inputs(model, run.contract.inputs, str(run.contract.path))
        if self.shapes:
            run.settings.inputs = given_shapes(model, self.shapes)
        run.result.model["sha256"] = sha256
        if run.keep is not None:
            run.keep.model_path = copy_model(run.source, run.keep.folder)
        run.model, run.model_path = model, run.source


def given_shapes(model: ModelProto, shapes: dict[str, list[int]]) -> list[InputSpec]:
    """Input specs for the given shapes, with the model's own dtypes (only the shapes are asked for)."""
    dtypes = {v.name: graph_facts.tensor_info_from_type(v.name, v.type).dtype for v in model.graph.input}
    return [InputSpec(name, list(shape), dtypes.get(name) or "float32", None, (0.0, 1.0))
            for name, shape in shapes.items()]
