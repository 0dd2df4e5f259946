"""A fake compiler: exercises the plug-in interface, the child process and the mapping in tests.

It runs ``drivers/fake_driver.py`` with npu_gate's own Python (no venv needed), hands it the
graph in the request (so the child imports nothing heavy and starts fast) and reads back
``ROW id op target node`` lines. Not a model of any real NPU.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from npu_gate.probe.base import ChildRun, Compiler, CompilerOutput
from npu_gate.result.probe import OpRow
from npu_gate.result.types import CPU, NPU

_ROW = re.compile(r"^ROW (\d+) (\S+) (NPU|CPU) (.+)$")
_DISABLE = re.compile(r"disable_rules=\['([^']+)'\]")


class FakeCompiler(Compiler):
    name = "fake"
    product = "fake-compiler"
    driver = "fake_driver.py"
    default_target = "fake1"
    timeout_s = 30.0
    batch = True

    def setup_steps(self, *, torch: bool) -> list[list[str]]:
        return []

    def python(self, venv: Path) -> Path:
        return Path(sys.executable)

    def request(self, model: Path, target: str, inputs: dict[str, list[int]],
                options: dict[str, Any]) -> dict[str, Any]:
        import onnx

        graph = onnx.load(str(model), load_external_data=False).graph
        nodes = [{"name": n.name, "op_type": n.op_type, "inputs": list(n.input), "outputs": list(n.output)}
                 for n in graph.node]
        return {**super().request(model, target, inputs, options), "graph": nodes}

    def parse(self, run: ChildRun, work: Path) -> CompilerOutput:
        out = CompilerOutput(version=run.response.get("version"), error=run.response.get("error"))
        for line in run.log:
            if m := _ROW.match(line):
                out.rows.append(OpRow(id=int(m.group(1)), op_type=m.group(2),
                                      target=NPU if m.group(3) == "NPU" else CPU, full_name=m.group(4)))
            elif m := _DISABLE.search(line):
                out.retry_rule = m.group(1)
        graph = run.response.get("graph")
        if graph is not None:
            out.final_graph = graph
            out.final_consumers = {n: [c for c, ps in graph.items() if n in ps] for n in graph}
        return out

    def retry_options(self, output: CompilerOutput, options: dict[str, Any]) -> dict[str, Any] | None:
        if output.retry_rule is None:
            return None
        return {**options, "disable_rules": [output.retry_rule]}
