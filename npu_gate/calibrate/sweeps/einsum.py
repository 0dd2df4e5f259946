"""Einsum (issue 22): the equations PyTorch models pass to torch.einsum, and the hypothesis of the
forms onnxruntime-qnn's Einsum builder takes."""

from __future__ import annotations

from typing import Any

import onnx

from npu_gate.calibrate.sweeps.builders import Family, Point, f32, model, node

# (id, equation, operand shapes, indices of the operands that are initializers (weights)): the
# equations PyTorch models pass to torch.einsum, as the exporter writes them (it keeps the string,
# spaces included). Sources: attention (scores and weighted values, 3-D and 4-D, lucidrains' spaced
# form), matmuls, SAM's decomposed relative positions (segment_anything image_encoder), MaskFormer's
# mask head, LoFTR's linear attention, ST-GCN's graph convolution, RoPE's outer product, CLIP-style
# logits, and the forms the QNN EP's source names (transpose-all).
EINSUM_POINTS: list[tuple[str, str, list[list[int]], tuple[int, ...]]] = [
    ("attention-scores", "bhqd,bhkd->bhqk", [[1, 2, 8, 16], [1, 2, 8, 16]], ()),
    ("attention-values", "bhqk,bhkd->bhqd", [[1, 2, 8, 8], [1, 2, 8, 16]], ()),
    ("attention-scores-spaced", "b h i d, b h j d -> b h i j", [[1, 2, 8, 16], [1, 2, 8, 16]], ()),
    ("attention-scores-3d", "nqd,nkd->nqk", [[2, 8, 16], [2, 8, 16]], ()),
    ("matmul", "ij,jk->ik", [[8, 16], [16, 4]], ()),
    ("matmul-batched", "bij,bjk->bik", [[2, 8, 16], [2, 16, 4]], ()),
    ("linear-weight", "bnc,ck->bnk", [[1, 8, 16], [16, 4]], (1,)),
    ("logits-transposed", "nc,mc->nm", [[4, 16], [6, 16]], ()),
    ("ellipsis-matmul", "...ij,...jk->...ik", [[2, 2, 8, 16], [2, 2, 16, 4]], ()),
    ("transpose", "ij->ji", [[8, 16]], ()),
    ("reduce-rows", "ij->i", [[8, 16]], ()),
    ("outer-rope", "i,j->ij", [[8], [4]], ()),
    ("dot-rows", "bi,bi->b", [[2, 16], [2, 16]], ()),
    ("uppercase-letters", "bchw,bcHw->bhH", [[1, 4, 8, 8], [1, 4, 6, 8]], ()),
    ("sam-rel-h", "bhwc,hkc->bhwk", [[1, 4, 4, 16], [4, 4, 16]], (1,)),
    ("sam-rel-w", "bhwc,wkc->bhwk", [[1, 4, 4, 16], [4, 4, 16]], (1,)),
    ("maskformer-masks", "bqc,bchw->bqhw", [[1, 10, 16], [1, 16, 8, 8]], ()),
    ("loftr-kv", "nshd,nshv->nhdv", [[1, 8, 2, 16], [1, 8, 2, 16]], ()),
    ("loftr-z", "nlhd,nhd->nlh", [[1, 8, 2, 16], [1, 2, 16]], ()),
    ("loftr-three-inputs", "nlhd,nhdv,nlh->nlhv", [[1, 8, 2, 16], [1, 2, 16, 16], [1, 8, 2]], ()),
    ("stgcn-graph", "nkctv,kvw->nctw", [[1, 3, 4, 8, 5], [3, 5, 5]], (1,)),
    ("transpose-all", "bchq,bkhc->bkhq", [[1, 4, 2, 8], [1, 6, 2, 4]], ()),
]


def einsum_point(pid: str, equation: str, shapes: list[list[int]], weights: tuple[int, ...] = ()) -> Point:
    """One Einsum of ``equation`` over graph inputs x, x1, ... (the operands in ``weights`` are
    initializers w1, w2, ... instead), the node named ``einsum``."""
    names = ["x" if i == 0 else (f"w{i}" if i in weights else f"x{i}") for i in range(len(shapes))]

    def build() -> onnx.ModelProto:
        inputs = {n: ("float32", s) for n, s in zip(names, shapes, strict=True) if not n.startswith("w")}
        inits = {n: f32(*s, seed=i) for i, (n, s) in enumerate(zip(names, shapes, strict=True)) if n.startswith("w")}
        return model([node("Einsum", names, equation=equation)], inputs, inits)
    return Point(f"einsum-{pid}", build)


def einsum_points() -> list[Point]:
    return [einsum_point(*row) for row in EINSUM_POINTS]


# The hypothesis: the forms onnxruntime-qnn's Einsum builder takes (einsum_op_builder.cc: two operands,
# lowercase letters, spaces ignored, each term and the result at least 2 letters), as regular
# expressions over the equation without spaces. A backreference is a letter the form ties to an
# earlier one; the EP compares letters by position only.
EINSUM_FORMS: dict[str, str] = {
    "matmul": r"([a-z]*)([a-z])([a-z]),\1\3([a-z])->\1\2\4",  # ...mk,...kn->...mn (same batch letters)
    "matmul-transposed-b": r"([a-z]*)([a-z])([a-z]),\1([a-z])\3->\1\2\4",  # ...mk,...nk->...mn
    "broadcast-transposed-b": r"([a-z])([a-z])([a-z])([a-z]),\2([a-z])\4->\1\2\3\5",  # bhwc,hkc->bhwk
    "transpose-all": r"([a-z])([a-z])[a-z]([a-z]),\1([a-z])[a-z]\2->\1\4[a-z]\3",  # bchq,bkhc->bkhq
    "reducesum-mul-broadcast": r"([a-z])([a-z])([a-z])([a-z]),\3([a-z])\4->\1\2\3\5",  # bhwc,wkc->bhwk
}
EINSUM_FIX = ("write the contraction as torch.matmul (q @ k.transpose(-2, -1)) or as an einsum of one of the "
              "matmul forms (two operands, the same batch letters in the same places, e.g. bhqd,bhkd->bhqk)")
EINSUM_HYPOTHESIS: list[dict[str, Any]] = [
    {"id": "einsum-equation-forms", "attribute": "equation", "matches": list(EINSUM_FORMS.values()),
     "message": "onnxruntime-qnn's Einsum builder takes two-operand equations of lowercase letters in five forms: "
                "matmul ...mk,...kn->...mn, with B transposed ...mk,...nk->...mn, broadcast bhwc,hkc->bhwk, "
                "transpose-all bchq,bkhc->bkhq and bhwc,wkc->bhwk (spaces ignored); the sweep measured 22 equations "
                "of PyTorch models, not every rank of the matmul forms",
     "fix": EINSUM_FIX},
]
# quantized (the qdq sweep): the reducesum form is refused with 8-bit input ("... for quantized inputs"),
# and no Einsum of two activations was built with 16-bit ones ("Failed to add node")
EINSUM_QDQ_HYPOTHESIS: list[dict[str, Any]] = [
    *EINSUM_HYPOTHESIS,
    {"id": "einsum-equation-forms-8-bit", "when": {"input": 0, "dtype": ["uint8", "int8"]}, "attribute": "equation",
     "matches": [v for k, v in EINSUM_FORMS.items() if k != "reducesum-mul-broadcast"],
     "message": "with 8-bit input the EP refuses the bhwc,wkc->bhwk form (\"Einsum unsupported equation: ... for "
                "quantized inputs\"); int8 activations were not measured, uint8 were",
     "fix": EINSUM_FIX},
    {"id": "einsum-not-16-bit", "input": 0, "dtype": ["float32", "float16", "uint8", "int8"],
     "message": "every Einsum of the sweep with uint16 activations went to CPU (\"Failed to add node\"), the "
                "matmul forms too",
     "fix": "quantize with 8-bit activations (--quantize int8) or keep the Einsum float"},
]


def einsum_family() -> Family:
    return Family("einsum-equations", "Einsum", einsum_points(), EINSUM_HYPOTHESIS,
                  note="the equations PyTorch models pass to torch.einsum: attention, matmuls, SAM, MaskFormer, "
                       "LoFTR, ST-GCN, RoPE, ellipsis, one-operand transposes and reductions")
