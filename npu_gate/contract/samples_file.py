"""``numerics.samples_file``: real inputs in a ``.npz``, one array per contract input, sample k
in row k (the layout of an evidence bundle's ``inputs.npz``).

The file is read and checked when the contract is loaded in full (``load_contract``), so a bad
file stops ``check a b c`` before any model runs; the rows it holds are kept on the contract
for the rewrite stage, which never reads the file again. numpy is imported here only when a
file is read: the load a result-cache lookup does never reads it (a hit imports no numpy).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from npu_gate.errors import ContractError

if TYPE_CHECKING:
    import numpy as np

    from npu_gate.contract.spec import InputSpec

ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a zip with members, an empty zip
NPY_MAGIC = b"\x93NUMPY"


def read_samples(path: Path, inputs: list[InputSpec], key: str = "numerics.samples_file",
                 contract: bool = True) -> list[dict[str, np.ndarray]]:
    """The rows of a bundle-layout .npz (one array per input, sample k in row k), checked against
    the contract's inputs: every problem is one line naming the file and the array. ``contract``
    False: the inputs are the model's own (``probe --quantize``), named so in the problems."""
    import numpy as np

    where = f"{path}: {key}"
    try:
        with open(path, "rb") as f:
            magic = f.read(len(NPY_MAGIC))
    except OSError as exc:
        raise ContractError(f"{where}: cannot read: {exc.strerror}") from None
    if magic.startswith(NPY_MAGIC):
        raise ContractError(f"{where}: cannot read: a .npy file holds one array; expected an .npz "
                            "with one array per input (numpy.savez(file, name=rows, ...))")
    if not magic.startswith(ZIP_MAGIC):
        raise ContractError(f"{where}: cannot read: not an .npz file (numpy.savez writes one: "
                            "a zip of one .npy array per input)")
    try:
        with np.load(path, allow_pickle=False) as npz:
            names = set(npz.files)
            arrays = {i.name: npz[i.name] for i in inputs if i.name in names}
    except Exception as exc:  # a broken zip, an object array (pickles are refused)
        raise ContractError(f"{where}: cannot read: {exc}") from None
    missing = [i.name for i in inputs if i.name not in arrays]
    problems = [f"{where}: no array for input(s) {', '.join(missing)}"] if missing else []
    for index, spec in enumerate(inputs):
        if spec.name in arrays:
            problems += _array_problems(f"{where}: array {spec.name}", arrays[spec.name], spec,
                                        f"inputs[{index}]" if contract else f"model input {spec.name}")
    if problems:
        raise ContractError(*problems)
    counts = {i.name: arrays[i.name].shape[0] for i in inputs}
    if len(set(counts.values())) != 1 or 0 in counts.values():
        found = ", ".join(f"{name} {n}" for name, n in counts.items())
        raise ContractError(f"{where}: arrays must share a non-empty first axis (samples); found {found}")
    n = counts[inputs[0].name]
    return [{i.name: np.ascontiguousarray(arrays[i.name][k], dtype=i.dtype) for i in inputs} for k in range(n)]


def _array_problems(where: str, array: Any, spec: InputSpec, label: str) -> list[str]:
    """What keeps ``array`` from being samples of ``spec`` (``label``: contract ``inputs[i]``, or a
    model input)."""
    import numpy as np

    if not isinstance(array, np.ndarray):  # a zip member that is not a .npy file: numpy gives its bytes
        return [f"{where}: not a .npy array"]
    problems = []
    if not np.can_cast(array.dtype, spec.dtype, casting="same_kind"):
        owner = f"the contract's {spec.dtype} ({label}.dtype)" if label.startswith("inputs[") else \
            f"the {label}'s {spec.dtype}"
        problems.append(f"{where}: dtype {array.dtype} cannot be cast to {owner}")
    elif np.issubdtype(np.dtype(spec.dtype), np.floating):
        # NaN or infinity (also a float64 value beyond float16's range) would make every
        # comparison on that sample meaningless: refuse them rather than report "error 0".
        with np.errstate(over="ignore"):
            values = array.astype(spec.dtype, copy=False)
        bad = int(np.count_nonzero(~np.isfinite(values)))
        if bad:
            nan = int(np.count_nonzero(np.isnan(values)))
            problems.append(f"{where}: {bad} of {values.size} values are not finite as {spec.dtype} "
                            f"({nan} NaN, {bad - nan} infinite); samples must be finite")
    shape, expected = list(array.shape), list(spec.shape)
    contract_shape = f"contract {label}.shape {expected}" if label.startswith("inputs[") else \
        f"{label} shape {expected}"
    stacked = "[" + ", ".join(["N", *map(str, expected)]) + "]"  # N samples, sample k in row k
    if len(shape) == len(expected) + 1 and shape[1:] != expected:
        problems.append(f"{where}: per-sample shape {shape[1:]}, {contract_shape} (sample k in row k)")
    elif shape == expected:
        problems.append(f"{where}: shape {shape} has no sample axis: expected {stacked} (sample k in row k)")
    elif len(shape) != len(expected) + 1:
        problems.append(f"{where}: shape {shape}, expected {stacked} ({contract_shape}, sample k in row k)")
    return problems
