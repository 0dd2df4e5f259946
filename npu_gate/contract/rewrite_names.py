"""Names of the rewrite catalog, importable without onnx.

Contract validation (and so a result-cache hit) needs the names only; the catalog itself
(npu_gate/rewrites/) does graph surgery with onnx. A test keeps the two in step.
"""

from __future__ import annotations

REWRITE_NAMES = (
    "decompose-hardswish",
    "fuse-hardswish",
    "decompose-hardsigmoid",
    "gelu-tanh",
    "decompose-layernorm",
    "pad-reflect-to-slice-concat",
)
