"""Reading the files a user names, and writing the gate's outputs, without surprises.

A path given on the command line or named by a contract or profile may be anything: a folder,
``/dev/zero`` (read until memory runs out), a FIFO (``open`` blocks until a writer comes), a
300 MB "profile". ``open_regular`` opens it without blocking and refuses what is not a regular
file, checked on the open file itself (no window between a check and the open);
``read_regular`` also bounds its size. Problems are one ``UnreadableFile`` line naming the file,
which each reader turns into its own error (ContractError, ModelError, ...).

``write_atomic`` replaces an output as a whole: the new bytes go to a temporary file in the same
folder, renamed over the old one only once complete, so a failed write (disk full) leaves the
old file as it was and never a truncated one.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path
from typing import BinaryIO

# Contracts, profiles and calibration records are files a person (or `profile calibrate`)
# writes: the largest built-in one is about 125 KB. Past this the file is refused before it
# is parsed (a 300 MB profile took 33 s and 945 MB to parse).
MAX_DOCUMENT_BYTES = 8 * 1024 * 1024


class UnreadableFile(ValueError):
    """A named file that cannot be read as one: one line naming it and why."""


def open_regular(path: Path, label: str, missing: str = "file not found") -> BinaryIO:
    """``path`` opened for reading in binary; UnreadableFile when it is missing (``missing``: the
    words for that), not a regular file (a folder, a device, a FIFO: opened without blocking,
    then refused) or unreadable."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise UnreadableFile(f"{label}: {missing}") from None
    except IsADirectoryError:
        raise UnreadableFile(f"{label}: not a regular file") from None
    except OSError as exc:
        raise UnreadableFile(f"{label}: cannot read: {exc.strerror}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnreadableFile(f"{label}: not a regular file")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def read_regular(path: Path, label: str, limit: int | None = None, what: str = "a file", *,
                 missing: str = "file not found") -> bytes:
    """The bytes of the regular file at ``path`` (``open_regular``); with ``limit``, a file of
    more bytes is refused before it is read, naming the limit (``what``: the kind of file, "a
    contract or profile file")."""
    with open_regular(path, label, missing) as f:
        size = os.fstat(f.fileno()).st_size
        if limit is not None and size > limit:
            raise UnreadableFile(too_large(label, size, limit, what))
        try:
            data = f.read() if limit is None else f.read(limit + 1)
        except OSError as exc:
            raise UnreadableFile(f"{label}: cannot read: {exc.strerror}") from None
    if limit is not None and len(data) > limit:  # the file grew while being read
        raise UnreadableFile(too_large(label, len(data), limit, what))
    return data


def read_regular_text(path: Path, label: str, limit: int | None = None, what: str = "a file", *,
                      missing: str = "file not found") -> str:
    """``read_regular`` decoded as UTF-8 (invalid UTF-8: one line)."""
    data = read_regular(path, label, limit, what, missing=missing)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnreadableFile(f"{label}: cannot read: {exc}") from None


def too_large(label: str, size: int, limit: int, what: str) -> str:
    return f"{label}: {size:,} bytes, over the limit of {limit:,} bytes for {what}"


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` as a whole: a temporary file in the same folder, flushed, then
    renamed over ``path`` (OSError on failure, with the temporary file removed and ``path`` as it
    was). A symlink keeps pointing where it did: the file it names is the one replaced. What is
    not a regular file (``/dev/stdout``, a FIFO a reader waits on) is written in place, as a
    stream. The new file gets the permissions a plain write would give it (the umask's), or the
    old file's when it replaces one."""
    target = Path(os.path.realpath(path))
    try:
        mode: int | None = os.stat(target).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        with open(target, "wb") as f:
            f.write(data)
        return
    fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(temp, stat.S_IMODE(mode) if mode is not None else _new_file_mode())
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def _new_file_mode() -> int:
    umask = os.umask(0o022)  # read it (and put it back): os has no getter
    os.umask(umask)
    return 0o666 & ~umask
