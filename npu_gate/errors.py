"""Errors that stop a run before a verdict exists (exit code 2).

A problem in the user's input is reported as one line per problem, naming what is
wrong and where (file, JSON path, node). Findings about the model are not errors:
they are part of the result.
"""

from __future__ import annotations

EXIT_PASS = 0
EXIT_FAIL = 1
EXIT_ERROR = 2


class GateError(Exception):
    """The gate could not run. Carries one or more one-line problems."""

    def __init__(self, *problems: str, details: list[str] | None = None) -> None:
        super().__init__("\n".join(problems))
        self.problems: list[str] = list(problems)
        # What explains the problems beyond one line (a traceback, what user code printed):
        # written to `check --log`, never to the terminal.
        self.details: list[str] = list(details or [])


class ContractError(GateError):
    """The contract (npu-gate.json) is invalid or names something that does not exist."""


class ProfileError(GateError):
    """A target profile is invalid or unknown."""


class RecordError(GateError):
    """A calibration record (``profile calibrate --from-record``) is invalid or does not fit its sweep."""


class ModelError(GateError):
    """A model file cannot be read as ONNX, or its factory cannot be imported."""


def one_line(exc: BaseException) -> str:
    """An exception in one line: its type, then the first line of its message if it has one
    (``ValueError: bad axis``; ``KeyError`` alone for an empty message)."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
