"""The real compilers a target can be asked through (``--compiler``, ``target.probe.compiler``).

Names only, mapped to the class implementing each in ``npu_gate.probe`` (imported when a
probe runs): the contract validates names without loading any compiler code. ``fake`` is a
stand-in compiler for tests of the plug-in machinery: it works by name, but ``KNOWN`` (what
messages offer users) leaves it out.
"""

from __future__ import annotations

COMPILERS = {
    "rknn": "npu_gate.probe.rknn:RknnCompiler",
    "qnn": "npu_gate.probe.qnn:QnnCompiler",
    "ethos-u": "npu_gate.probe.ethos_u:EthosUCompiler",
    "fake": "npu_gate.probe.fake:FakeCompiler",
}

KNOWN = sorted(name for name in COMPILERS if name != "fake")
