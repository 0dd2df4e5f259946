"""Pad: which axes are padded, and the mode."""

from __future__ import annotations

from npu_gate.calibrate.sweeps.builders import Family, Point, X, between, i64


def _pad(axes_name: str, pads: list[int], mode: str = "constant") -> Point:
    return between(f"pad-{axes_name}-{mode}", "Pad", X, {"pads": i64(*pads)}, ["pads"], mode=mode)


def pad_family() -> Family:
    return Family("pad-axes", "Pad", [
        _pad("hw", [0, 0, 1, 1, 0, 0, 1, 1]), _pad("w", [0, 0, 0, 2, 0, 0, 0, 2]),
        _pad("c", [0, 2, 0, 0, 0, 2, 0, 0]), _pad("ch", [0, 1, 1, 0, 0, 1, 1, 0]),
        _pad("hw", [0, 0, 1, 1, 0, 0, 1, 1], "reflect"), _pad("hw", [0, 0, 1, 1, 0, 0, 1, 1], "edge")],
        [{"id": "pad-not-c-and-h", "input": 1, "value": {"padded_axes": True, "not_in": [[1, 2]]},
          "fix": "pad H and W only (F.pad(x, (l, r, t, b))); pad channels in a separate step"}],
        note="pads (input 1's values) over H and W, W, C, C and H; constant, reflect and edge. Only padding "
             "exactly C and H is claimed CPU: the only combination measured there")
