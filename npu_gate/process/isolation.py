"""What a child process that runs code npu_gate does not trust gets: the model worker (the
contract's own code) and the compiler drivers (a compiler venv's Python).

``child_environment`` is the one environment both start with: the parent's, without the CI's
token, the workflow-file variables, the runner's ``ACTIONS_*`` variables and anything whose name
looks like a secret. ``hide_environment`` makes the gate's own process non-dumpable before such a
child starts, so a child of the same user cannot read the gate's ``/proc/<pid>/environ`` (the
variables the gate started with, token included). A process further up (the shell that started
the gate) is out of reach of both: only a child that runs as another user cannot read it, and
``child_user`` says whether the gate can arrange that.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

# The job token under its usual names, and the files a step writes to change later steps.
HIDDEN = ("GITHUB_TOKEN", "GH_TOKEN", "NPU_GATE_GITHUB_TOKEN", "INPUT_GITHUB-TOKEN", "GITHUB_ENV",
          "GITHUB_PATH", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_STATE")
HIDDEN_PREFIXES = ("ACTIONS_",)  # the runner's own: ACTIONS_RUNTIME_TOKEN, ACTIONS_ID_TOKEN_REQUEST_*
# A name with one of these words (between _ or - or at the ends) looks like a secret: HF_TOKEN,
# AWS_SECRET_ACCESS_KEY, NPM_AUTH_TOKEN, DOCKER_PASSWORD, SSH_AUTH_SOCK. TOKENIZERS_PARALLELISM is kept.
SECRET_WORDS = re.compile(r"(?:^|[_-])(?:TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIALS?|AUTH|APIKEY|"
                          r"API[_-]KEY|PRIVATE[_-]KEY|ACCESS[_-]KEY)(?:[_-]|$)", re.IGNORECASE)
NOBODY = 65534  # the unprivileged user a child runs as when the gate runs as root
CHILD_USER_VARIABLE = "NPU_GATE_CHILD_USER"  # "off": children run as the gate's own user, even as root
_PR_SET_DUMPABLE = 4
_RECORDERS: list[list[str]] = []  # the open ``recorded_notes`` blocks, innermost last


def hidden(name: str) -> bool:
    """True for a variable no untrusted child sees."""
    return name in HIDDEN or name.startswith(HIDDEN_PREFIXES) or SECRET_WORDS.search(name) is not None


def child_environment(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The parent's environment (or ``env``) without the token, workflow-file and secret-looking variables."""
    source = os.environ if env is None else env
    return {k: v for k, v in source.items() if not hidden(k)}


def hide_environment() -> None:
    """Make this process non-dumpable (Linux): its /proc files, ``environ`` among them, then belong
    to root, so a child of the same user cannot read the variables this process started with.
    Elsewhere, or when the call fails, nothing changes (``child_user`` reports what stays readable)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass


@dataclass(frozen=True)
class ChildUser:
    """Who an untrusted child runs as: ``uid`` None is the gate's own user; ``note`` is the one
    line saying what that leaves readable (None when the child runs as another user)."""

    uid: int | None
    gid: int | None
    note: str | None

    def popen_args(self) -> dict[str, Any]:
        """Keyword arguments for ``subprocess.Popen``: the user, its group and no other groups."""
        if self.uid is None:
            return {}
        return {"user": self.uid, "group": self.gid, "extra_groups": []}

    def hand_over(self, *folders: os.PathLike[str] | str) -> None:
        """Give the child's user the folders it writes in (its work folders), and the way to them
        through the gate's temporary folders (``open_way``)."""
        if self.uid is None:
            return
        for folder in folders:
            os.chown(folder, self.uid, self.gid if self.gid is not None else -1)
            open_way(os.path.dirname(os.path.realpath(folder)))


def reclaim(user: ChildUser, folder: os.PathLike[str] | str) -> None:
    """Take a folder handed to the child's user back before the gate reads it, once the child is
    done with it: everything in it the gate's again, and every link, hard link or special file
    the child made removed, so no read of the gate's follows one to a file the child could not read.
    Each folder is taken back before it is listed, so nothing can be added to it meanwhile."""
    if user.uid is None:
        return
    import stat

    path = os.fspath(folder)
    os.lchown(path, os.geteuid(), os.getegid())
    os.chmod(path, 0o755)
    for entry in os.scandir(path):
        info = entry.stat(follow_symlinks=False)
        if stat.S_ISDIR(info.st_mode):
            reclaim(user, entry.path)
        elif stat.S_ISREG(info.st_mode) and info.st_nlink == 1:
            os.lchown(entry.path, os.geteuid(), os.getegid())
        else:
            os.unlink(entry.path)


def open_way(folder: os.PathLike[str] | str) -> None:
    """Let other users pass through ``folder`` and the folders above it (execute permission, not
    listing) while they are this process's own folders in the temporary folder: the gate creates
    its temporary folders for their owner only. Anything else keeps its permissions."""
    import stat
    import tempfile

    top = os.path.realpath(tempfile.gettempdir())
    path = os.path.realpath(folder)
    while path.startswith(top + os.sep):
        info = os.stat(path)
        if info.st_mode & stat.S_IXOTH:
            return
        if info.st_uid != os.geteuid():
            return
        os.chmod(path, stat.S_IMODE(info.st_mode) | stat.S_IXOTH)
        path = os.path.dirname(path)


def child_user(readable: list[str], writable: list[str] | None = None,
               env: Mapping[str, str] | None = None) -> ChildUser:
    """Whether an untrusted child runs as another, unprivileged user (uid 65534): when the gate runs
    as root (in a container; on a GitHub runner: started with ``sudo``), every path in ``readable``
    (what the child reads: its Python, its import folders, the model) can be read by other users and
    every folder in ``writable`` (where it writes) can be handed to it; ``NPU_GATE_CHILD_USER=off``
    turns it off. Otherwise the child runs as the gate's user, and the note says so in one line."""
    user = _child_user(readable, writable or [], os.environ if env is None else env)
    for notes in _RECORDERS:
        if user.note is not None and user.note not in notes:
            notes.append(user.note)
    return user


@contextlib.contextmanager
def recorded_notes() -> Iterator[list[str]]:
    """The notes of the children started in the block (each once): untrusted code that ran as the
    gate's own user, and why; for the Action's job log and report."""
    notes: list[str] = []
    _RECORDERS.append(notes)
    try:
        yield notes
    finally:
        _RECORDERS.remove(notes)


def _child_user(readable: list[str], writable: list[str], source: Mapping[str, str]) -> ChildUser:
    same = "untrusted code (the model's, the compiler driver's) runs as the gate's own user"
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return ChildUser(None, None, f"{same} (uid {os.getuid()}): it can read what that user can, the "
                                     "environment of the processes above the gate's included (the gate "
                                     "run as root gives it a user of its own)")
    if source.get(CHILD_USER_VARIABLE, "").strip().lower() == "off":
        return ChildUser(None, None, f"{same} (root): {CHILD_USER_VARIABLE}=off")
    user = ChildUser(NOBODY, NOBODY, None)
    user.hand_over(*writable)
    for path in readable:
        if not readable_by_others(path):
            return ChildUser(None, None, f"{same} (root): {path} cannot be read by other users")
    for path in writable:  # its own now: the folders above it need only be passable
        if not readable_by_others(os.path.dirname(os.path.realpath(path)), read=False):
            return ChildUser(None, None, f"{same} (root): {path} cannot be reached by other users")
    return user


def readable_by_others(path: str, read: bool = True) -> bool:
    """Every folder on the way to ``path`` (and ``path``, a folder) can be entered, and ``path`` read
    (``read``), by any user: the permission bits for others. A path that is not there does not stop a child."""
    import stat

    parts = os.path.realpath(path).split(os.sep)
    for i in range(2, len(parts) + 1):
        try:
            mode = os.stat(os.sep.join(parts[:i])).st_mode
        except OSError:
            return True  # not there: the child's own error says so, as it would for the gate
        if stat.S_ISDIR(mode) and not mode & stat.S_IXOTH:
            return False
        if read and i == len(parts) and not mode & stat.S_IROTH:
            return False
    return True
