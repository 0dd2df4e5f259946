"""``numerics.samples_file``: real inputs in a ``.npz``, one array per contract input, sample k
in row k (the layout of an evidence bundle's ``inputs.npz``).

The file is read and checked when the contract is loaded in full (``load_contract``), so a bad
file stops ``check a b c`` before any model runs; the rows it holds are kept on the contract
for the rewrite stage, which never reads the file again. numpy is imported here only when a
file is read: the load a result-cache lookup does never reads it (a hit imports no numpy).

The file comes from the pull request, and it is read while the contract is validated, before
``--timeout`` starts: nothing is decompressed before it is known to be worth reading. Each
member's ``.npy`` header is read first (a few hundred bytes) and its dtype and shape checked
against the contract's input; the size the zip declares for the member must be the one that
header describes, possible for its compression (deflate expands at most ``MAX_DEFLATE_RATIO``
times) and, over all arrays, at most ``MAX_SAMPLES_BYTES``. Only then is the data read, in
chunks, never past the declared size (a 4 MB zip bomb is refused in milliseconds).
"""

from __future__ import annotations

import contextlib
import io
import math
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from npu_gate.errors import ContractError, GateError, one_line
from npu_gate.files import UnreadableFile, open_regular

if TYPE_CHECKING:
    import numpy as np

    from npu_gate.contract.spec import InputSpec

ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a zip with members, an empty zip
NPY_MAGIC = b"\x93NUMPY"
# The arrays a samples file may hold, in bytes once read (all of them together): far more than
# a calibration set needs (500 images of 3x224x224 float32 are 300 MB), far less than a bomb.
MAX_SAMPLES_BYTES = 1 << 30
# deflate's largest expansion is 1032:1 (RFC 1951: a 258-byte match in at most 2 bits); a zip
# that declares more is lying about its member's size. The slack covers a tiny member's block
# headers.
MAX_DEFLATE_RATIO = 1032
_RATIO_SLACK = 1024
_HEADER_BYTES = 65536  # the most of a member read for its .npy header (numpy's own limit is 10,000)


@dataclass(frozen=True)
class NpyMember:
    """One zip member of an .npz, known from the zip's directory and its .npy header, nothing
    decompressed past that header."""

    info: zipfile.ZipInfo
    dtype: Any  # numpy.dtype
    shape: tuple[int, ...]
    fortran_order: bool
    header_size: int  # bytes of the .npy magic and header, before the data

    @property
    def data_size(self) -> int:
        return math.prod(self.shape) * int(self.dtype.itemsize)


def read_samples(path: Path, inputs: list[InputSpec], key: str = "numerics.samples_file",
                 contract: bool = True) -> list[dict[str, np.ndarray]]:
    """The rows of a bundle-layout .npz (one array per input, sample k in row k), checked against
    the contract's inputs: every problem is one line naming the file and the array. ``contract``
    False: the inputs are the model's own (``probe --quantize``), named so in the problems."""
    import numpy as np

    where = f"{path}: {key}"
    with open_npz(path, where) as zf:
        infos = {i.name: info for i in inputs if (info := npz_member(zf, i.name)) is not None}
        missing = [i.name for i in inputs if i.name not in infos]
        problems = [f"{where}: no array for input(s) {', '.join(missing)}"] if missing else []
        members: dict[str, NpyMember] = {}
        for index, spec in enumerate(inputs):
            if spec.name not in infos:
                continue
            label = f"inputs[{index}]" if contract else f"model input {spec.name}"
            try:
                member = read_header(zf, infos[spec.name], f"{where}: array {spec.name}")
            except GateError as exc:
                problems += exc.problems
                continue
            found = _header_problems(f"{where}: array {spec.name}", member, spec, label)
            problems += found
            if not found:
                members[spec.name] = member
        if problems:
            raise ContractError(*problems)
        try:
            check_total(members.values(), where)
            arrays = {name: read_member(zf, member, f"{where}: array {name}") for name, member in members.items()}
        except GateError as exc:
            raise ContractError(*exc.problems) from None
    for spec in inputs:
        problems += _value_problems(f"{where}: array {spec.name}", arrays[spec.name], spec)
    if problems:
        raise ContractError(*problems)
    counts = {i.name: arrays[i.name].shape[0] for i in inputs}
    if len(set(counts.values())) != 1 or 0 in counts.values():
        found_counts = ", ".join(f"{name} {n}" for name, n in counts.items())
        raise ContractError(f"{where}: arrays must share a non-empty first axis (samples); found {found_counts}")
    n = counts[inputs[0].name]
    return [{i.name: np.ascontiguousarray(arrays[i.name][k], dtype=i.dtype) for i in inputs} for k in range(n)]


@contextlib.contextmanager
def open_npz(path: Path, where: str) -> Iterator[zipfile.ZipFile]:
    """The .npz at ``path`` as an open zip (its directory read, no member decompressed); one
    ContractError line for a file that is missing, not a regular file, an .npy or not a zip."""
    try:
        file = open_regular(path, where, missing="cannot read: No such file or directory")
    except UnreadableFile as exc:
        raise ContractError(str(exc)) from None
    with file:
        magic = file.read(len(NPY_MAGIC))
        if magic.startswith(NPY_MAGIC):
            raise ContractError(f"{where}: cannot read: a .npy file holds one array; expected an .npz "
                                "with one array per input (numpy.savez(file, name=rows, ...))")
        if not magic.startswith(ZIP_MAGIC):
            raise ContractError(f"{where}: cannot read: not an .npz file (numpy.savez writes one: "
                                "a zip of one .npy array per input)")
        try:
            file.seek(0)
            zf = zipfile.ZipFile(file)
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
            raise ContractError(f"{where}: cannot read: {exc}") from None
        with zf:
            yield zf


def npz_member(zf: zipfile.ZipFile, name: str) -> zipfile.ZipInfo | None:
    """The member numpy's ``np.load(path)[name]`` reads: ``name`` itself, else ``name.npy``."""
    for candidate in (name, f"{name}.npy"):
        try:
            return zf.getinfo(candidate)
        except KeyError:
            continue
    return None


def npz_names(zf: zipfile.ZipFile) -> list[str]:
    """The array names of an .npz, as ``np.load(path).files`` lists them."""
    return [n.removesuffix(".npy") for n in zf.namelist()]


def read_header(zf: zipfile.ZipFile, info: zipfile.ZipInfo, where: str) -> NpyMember:
    """The member's dtype and shape from its .npy header, after checking what the zip declares
    about it: a compression numpy writes (stored or deflate), a declared size that compression
    can reach from the compressed bytes, and (once the header is read) exactly the size the header
    describes. Nothing past the header is decompressed. GateError lines name ``where``."""
    import numpy as np

    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise GateError(f"{where}: compressed with zip method {info.compress_type}; numpy.savez and "
                        "savez_compressed write stored or deflated members only")
    if info.flag_bits & 0x1:
        raise GateError(f"{where}: an encrypted zip member")
    stored = info.compress_type == zipfile.ZIP_STORED
    if (stored and info.file_size != info.compress_size) or \
            info.file_size > info.compress_size * MAX_DEFLATE_RATIO + _RATIO_SLACK:
        raise GateError(f"{where}: the zip declares {info.file_size:,} bytes from {info.compress_size:,} "
                        f"{'stored' if stored else 'compressed'} bytes, more than "
                        f"{'storing' if stored else 'deflate'} can give (refusing a zip bomb)")
    try:
        with zf.open(info) as f:
            head = f.read(min(info.file_size, _HEADER_BYTES))
        stream = io.BytesIO(head)
        if not head.startswith(NPY_MAGIC):
            raise GateError(f"{where}: not a .npy array")
        version = np.lib.format.read_magic(stream)
        if version == (1, 0):
            shape, fortran_order, dtype = np.lib.format.read_array_header_1_0(stream)
        elif version == (2, 0):
            shape, fortran_order, dtype = np.lib.format.read_array_header_2_0(stream)
        else:
            raise GateError(f"{where}: a .npy header of version {version[0]}.{version[1]}; numpy.savez writes "
                            "1.0 or 2.0 for arrays of numbers")
    except GateError:
        raise
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, NotImplementedError, RuntimeError) as exc:
        raise GateError(f"{where}: cannot read its .npy header: {one_line(exc)}") from None
    if dtype.hasobject:
        raise GateError(f"{where}: an object array (pickled Python objects are refused)")
    if any(d < 0 for d in shape):
        raise GateError(f"{where}: shape {list(shape)} in its .npy header has a negative dimension")
    member = NpyMember(info, dtype, tuple(shape), bool(fortran_order), stream.tell())
    if info.file_size != member.header_size + member.data_size:
        raise GateError(f"{where}: the zip declares {info.file_size:,} bytes, its .npy header describes "
                        f"{member.header_size + member.data_size:,} (shape {list(shape)}, {dtype}): "
                        "not a file numpy.savez wrote")
    return member


def check_total(members: Any, where: str, limit: int = MAX_SAMPLES_BYTES, what: str = "a samples file") -> None:
    """GateError when the arrays to be read hold more than ``limit`` bytes together, refused
    before any of them is decompressed (``what`` may hold that much)."""
    total = sum(m.data_size for m in members)
    if total > limit:
        raise GateError(f"{where}: the arrays hold {total:,} bytes, more than the {limit:,} {what} "
                        "may hold (as their .npy headers declare; nothing was decompressed)")


def read_member(zf: zipfile.ZipFile, member: NpyMember, where: str) -> np.ndarray:
    """The array of a member ``read_header`` checked: read in chunks, never past its declared
    size (the zip's CRC checked at its end)."""
    import numpy as np

    try:
        with zf.open(member.info) as f:
            return np.lib.format.read_array(f, allow_pickle=False)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, RuntimeError) as exc:
        raise GateError(f"{where}: cannot read: {one_line(exc)}") from None


def read_arrays(zf: zipfile.ZipFile, where: str, limit: int = MAX_SAMPLES_BYTES,
                what: str = "a samples file") -> dict[str, np.ndarray]:
    """Every array of an open .npz by name (as ``np.load(path)`` names them), each member's
    header and declared size checked (``read_header``) and their total (``check_total``) before
    any data is decompressed. GateError lines name ``where``."""
    members = {}
    for name in npz_names(zf):
        info = npz_member(zf, name)
        if info is not None:
            members[name] = read_header(zf, info, f"{where}: array {name}")
    check_total(members.values(), where, limit, what)
    return {name: read_member(zf, m, f"{where}: array {name}") for name, m in members.items()}


def _header_problems(where: str, member: NpyMember, spec: InputSpec, label: str) -> list[str]:
    """What keeps the array a member's header describes from being samples of ``spec`` (``label``:
    contract ``inputs[i]``, or a model input)."""
    import numpy as np

    problems = []
    if not np.can_cast(member.dtype, spec.dtype, casting="same_kind"):
        owner = f"the contract's {spec.dtype} ({label}.dtype)" if label.startswith("inputs[") else \
            f"the {label}'s {spec.dtype}"
        problems.append(f"{where}: dtype {member.dtype} cannot be cast to {owner}")
    shape, expected = list(member.shape), list(spec.shape)
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


def _value_problems(where: str, array: np.ndarray, spec: InputSpec) -> list[str]:
    """NaN or infinity (also a float64 value beyond float16's range) would make every comparison
    on that sample meaningless: refuse them rather than report "error 0"."""
    import numpy as np

    if not np.issubdtype(np.dtype(spec.dtype), np.floating):
        return []
    with np.errstate(over="ignore"):
        values = array.astype(spec.dtype, copy=False)
    bad = int(np.count_nonzero(~np.isfinite(values)))
    if not bad:
        return []
    nan = int(np.count_nonzero(np.isnan(values)))
    return [f"{where}: {bad} of {values.size} values are not finite as {spec.dtype} "
            f"({nan} NaN, {bad - nan} infinite); samples must be finite"]
