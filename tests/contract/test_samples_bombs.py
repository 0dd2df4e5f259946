"""Samples files (``.npz``) from a pull request are read while the contract is validated,
before ``--timeout`` starts (issue 43, item 7): a zip bomb must be refused from the zip's
directory and the members' ``.npy`` headers, before anything is decompressed."""

from __future__ import annotations

import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from npu_gate.contract.samples_file import MAX_SAMPLES_BYTES, read_samples
from npu_gate.contract.spec import InputSpec
from npu_gate.errors import ContractError
from tests.helpers.common import REPO, RunCli
from tests.helpers.hook_fixtures import write_onnx_contract

SPEC = [InputSpec("x", [1, 4], "float32", None, (0.0, 1.0))]
MB = 1 << 20


def _npy_header(shape: tuple[int, ...], descr: str = "<f4") -> bytes:
    """A version 1.0 .npy magic and header, as numpy.save writes it."""
    text = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape!r}, }}"
    text += " " * ((64 - (10 + len(text) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text.encode("latin1")


def _zeros_stream(header: bytes, megabytes: int) -> bytes:
    """Raw deflate of ``header`` and then ``megabytes`` MiB of zeros, made in milliseconds: one
    full-flushed block of 1 MiB of zeros, repeated (each block stands alone after a full flush)."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = c.compress(header) + c.flush(zlib.Z_FULL_FLUSH)
    block = c.compress(bytes(MB)) + c.flush(zlib.Z_FULL_FLUSH)
    return head + block * megabytes + c.flush()


def _zip(path: Path, members: list[tuple[str, int, bytes, int, int]]) -> None:
    """A zip written by hand, so that it may lie: (name, method, stored bytes, declared size, crc)."""
    local, central = b"", b""
    for name, method, data, size, crc in members:
        raw = name.encode()
        offset = len(local)
        local += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, method, 0, 0x21, crc, len(data), size,
                             len(raw), 0) + raw + data
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, method, 0, 0x21, crc, len(data),
                               size, len(raw), 0, 0, 0, 0, 0, offset) + raw
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(central), len(local), 0)
    path.write_bytes(local + central + end)


def _bomb(path: Path, shape: tuple[int, ...], megabytes: int, declared: int | None = None) -> int:
    """A deflated member x.npy: a header of ``shape`` and ``megabytes`` MiB of zeros (about 1 KB
    compressed per MiB); its declared size the true one unless ``declared``. Returns the file size."""
    header = _npy_header(shape)
    stream = _zeros_stream(header, megabytes)
    size = len(header) + megabytes * MB
    _zip(path, [("x.npy", 8, stream, size if declared is None else declared, 0)])  # the CRC is never reached
    return path.stat().st_size


def _problem(path: Path) -> str:
    with pytest.raises(ContractError) as caught:
        read_samples(path, SPEC)
    assert len(caught.value.problems) == 1
    return caught.value.problems[0]


WHERE = "numerics.samples_file: array x"


def test_a_bomb_whose_header_shape_is_not_the_input_s_is_refused_from_the_header(tmp_path: Path) -> None:
    """The issue's file: 4 MB holding 4 GB of zeros behind a header whose shape the contract's
    input refutes. It used to be decompressed whole (40 s, 5.3 GB) before the shape was checked."""
    path = tmp_path / "bomb.npz"
    size = _bomb(path, (1000, 1024, 1024), 4000)
    assert 3 * MB < size < 5 * MB
    assert _problem(path) == (f"{path}: {WHERE}: per-sample shape [1024, 1024], contract inputs[0].shape [1, 4] "
                              "(sample k in row k)")


def test_a_bomb_of_the_right_shape_is_refused_for_its_declared_size(tmp_path: Path) -> None:
    """Rows of the right per-sample shape, 4 GB of them: over the bound, refused unread."""
    path = tmp_path / "bomb.npz"
    _bomb(path, (250 * MB, 1, 4), 4000)
    assert _problem(path) == (f"{path}: numerics.samples_file: the arrays hold 4,194,304,000 bytes, more than the "
                              f"{MAX_SAMPLES_BYTES:,} a samples file may hold (as their .npy headers declare; "
                              "nothing was decompressed)")


def test_a_member_that_declares_less_than_its_header_describes_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "lies.npz"
    header = _npy_header((250 * MB, 1, 4))
    first = header + bytes(1000 - len(header))  # what the zip says the member holds, its CRC right
    _zip(path, [("x.npy", 8, _zeros_stream(header, 4), 1000, zlib.crc32(first))])
    assert _problem(path) == (f"{path}: {WHERE}: the zip declares 1,000 bytes, its .npy header describes "
                              f"{len(header) + 4000 * MB:,} (shape [262144000, 1, 4], float32): not a file "
                              "numpy.savez wrote")


def test_a_declared_size_deflate_cannot_reach_is_refused_before_decompressing(tmp_path: Path) -> None:
    path = tmp_path / "ratio.npz"
    header = _npy_header((2, 1, 4))
    _zip(path, [("x.npy", 8, zlib.compress(header)[2:-4], 10 * MB, 0)])
    stored = tmp_path / "stored.npz"
    _zip(stored, [("x.npy", 0, header, len(header) + 32, 0)])
    other = tmp_path / "bzip2.npz"
    _zip(other, [("x.npy", 12, header, len(header), 0)])
    compressed = len(zlib.compress(header)[2:-4])
    assert _problem(path) == (f"{path}: {WHERE}: the zip declares 10,485,760 bytes from {compressed} compressed "
                              "bytes, more than deflate can give (refusing a zip bomb)")
    assert _problem(stored) == (f"{stored}: {WHERE}: the zip declares {len(header) + 32} bytes from {len(header)} "
                                "stored bytes, more than storing can give (refusing a zip bomb)")
    assert _problem(other) == (f"{other}: {WHERE}: compressed with zip method 12; numpy.savez and "
                               "savez_compressed write stored or deflated members only")


def test_object_arrays_and_bad_headers_are_one_line(tmp_path: Path) -> None:
    path = tmp_path / "objects.npz"
    np.savez(path, x=np.array([[[None] * 4]] * 2, dtype=object))
    assert _problem(path) == f"{path}: {WHERE}: an object array (pickled Python objects are refused)"
    garbled = tmp_path / "garbled.npz"
    junk = b"\x93NUMPY\x01\x00\x10\x00{'descr': 5}   \n"
    _zip(garbled, [("x.npy", 0, junk, len(junk), zlib.crc32(junk))])
    assert _problem(garbled).startswith(f"{garbled}: {WHERE}: cannot read its .npy header: ValueError: ")


def test_good_files_still_read_stored_and_compressed(tmp_path: Path) -> None:
    rows = np.arange(8, dtype=np.float64).reshape(2, 1, 4)
    for save in (np.savez, np.savez_compressed):
        path = tmp_path / f"{save.__name__}.npz"
        save(path, x=rows, unused=np.zeros(3))
        got = read_samples(path, SPEC)
        assert [r["x"].tolist() for r in got] == [[[0, 1, 2, 3]], [[4, 5, 6, 7]]]
        assert got[0]["x"].dtype == np.float32
    fortran = tmp_path / "fortran.npz"
    np.savez(fortran, x=np.asfortranarray(rows))
    assert [r["x"].tolist() for r in read_samples(fortran, SPEC)] == [[[0, 1, 2, 3]], [[4, 5, 6, 7]]]


def test_a_corrupt_member_is_one_line(tmp_path: Path) -> None:
    """A deflated member whose CRC is wrong: its data is read (past the header) and the zip's check fails."""
    path = tmp_path / "crc.npz"
    header = _npy_header((10000, 1, 4))
    data = header + bytes(160000)
    _zip(path, [("x.npy", 8, zlib.compress(data)[2:-4], len(data), zlib.crc32(data) ^ 1)])
    assert _problem(path) == f"{path}: {WHERE}: cannot read: BadZipFile: Bad CRC-32 for file 'x.npy'"


_MEASURE = """
import resource, sys, time
from pathlib import Path
from npu_gate.contract.samples_file import read_samples
from npu_gate.contract.spec import InputSpec
from npu_gate.errors import ContractError
spec = [InputSpec("x", [1, 4], "float32", None, (0.0, 1.0))]
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.process_time()
try:
    read_samples(Path(sys.argv[1]), spec)
    print("read")
except ContractError as exc:
    print(time.process_time() - start, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
"""


@pytest.mark.parametrize("shape", [(1000, 1024, 1024), (250 * MB, 1, 4)], ids=["wrong-shape", "right-shape"])
def test_a_4_mb_bomb_costs_under_1_s_and_100_mb(tmp_path: Path, shape: tuple[int, ...]) -> None:
    """Measured in a fresh process: CPU seconds (time.process_time) and the growth of the peak
    resident size (getrusage's ru_maxrss, KiB on Linux) across the read, numpy already imported."""
    path = tmp_path / "bomb.npz"
    _bomb(path, shape, 4000)
    out = subprocess.run([sys.executable, "-c", _MEASURE, str(path)], capture_output=True, text=True,
                         cwd=REPO, timeout=60, check=True).stdout.split()
    seconds, kib = float(out[0]), int(out[1])
    assert seconds < 1.0
    assert kib < 100 * 1024


def test_check_refuses_the_bomb_in_one_line(tmp_path: Path, run_cli: RunCli) -> None:
    contract = write_onnx_contract(tmp_path / "c", numerics={"samples_file": "real.npz"})
    _bomb(contract.parent / "real.npz", (1000, 1024, 1024), 4000)
    run = run_cli("check", contract, "--no-cache", "--cache-dir", tmp_path / "cache")
    assert (run.code, run.out) == (2, "")
    assert run.err == (f"npu-gate: error: {contract.parent / 'real.npz'}: {WHERE}: per-sample shape "
                       "[1024, 1024], contract inputs[0].shape [1, 4] (sample k in row k)\n")


def test_reduce_inputs_and_the_model_worker_s_arrays_are_read_bounded(tmp_path: Path, run_cli: RunCli) -> None:
    """`reduce --inputs` and the arrays the model code's process writes back (reference outputs)
    are read the same way: a bomb is one line, unread."""
    import shlex

    from npu_gate.model.worker import WorkerFailed, load_arrays
    from tests.helpers import model_zoo

    bomb = tmp_path / "bomb.npz"
    _bomb(bomb, (250 * MB, 1, 4), 4000)
    model = tmp_path / "m.onnx"
    model.write_bytes(model_zoo.conv_relu().SerializeToString())
    check = shlex.join([sys.executable, "-c", "import sys; sys.exit(1)", "{model}", "{inputs}"])
    run = run_cli("reduce", model, "--check", check, "--inputs", bomb, "-q", "--out", tmp_path / "r.onnx")
    assert (run.code, run.err) == (2, f"npu-gate: error: {bomb}: --inputs: the arrays hold 4,194,304,000 bytes, "
                                      f"more than the {MAX_SAMPLES_BYTES:,} a samples file may hold (as their .npy "
                                      "headers declare; nothing was decompressed)\n")
    with pytest.raises(WorkerFailed) as caught:
        load_arrays(bomb)
    assert str(caught.value) == ("the model code's process wrote unreadable arrays (arrays: the arrays hold "
                                 "4,194,304,000 bytes, more than the 2,147,483,648 one answer may hold (as their "
                                 ".npy headers declare; nothing was decompressed))")
