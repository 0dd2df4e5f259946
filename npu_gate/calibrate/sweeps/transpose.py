"""Transpose: one dim of 8192 or 8200 on each axis."""

from __future__ import annotations

from npu_gate.calibrate.sweeps.builders import Family, Point, between, dims


def _transpose(shape: list[int], perm: list[int]) -> Point:
    return between(f"transpose-{dims(shape)}-perm{''.join(map(str, perm))}", "Transpose", shape, perm=perm)


def transpose_family() -> Family:
    points = []
    for axis in range(4):
        for d in (8192, 8200):
            shape = [1, 2, 2, 4]
            shape[axis] = d
            points.append(_transpose(shape, [0, 1, 3, 2] if axis in (2, 3) else [1, 0, 2, 3]))
    points += [_transpose([1, 2, 2, 1024], [0, 1, 3, 2]), _transpose([1, 2, 2, 2048], [0, 1, 3, 2]),
               _transpose([1, 8192, 2, 4], [0, 2, 1, 3]), _transpose([1, 2, 8192, 4], [0, 2, 1, 3]),
               _transpose([1, 16, 32, 32], [0, 2, 3, 1])]
    return Family("transpose-dims-around-8192", "Transpose", points,
                  [{"id": f"transpose-dim{a}-max-8192", "input": 0, "dim": {"axis": a, "max": 8192}}
                   for a in range(4)],
                  note="one dim of 8192 or 8200 on each axis (others small), a last dim of 1024 and 2048, two "
                       "perms: the hypothesis 'any dim above 8192 runs on CPU' (rknn.md §4)")
