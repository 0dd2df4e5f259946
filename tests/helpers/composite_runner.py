"""Run a composite action's steps the way the runner does, without GitHub or Docker.

Enough of GitHub's semantics for our action.yml: input defaults, `${{ }}` expressions with
`inputs.*`, `steps.<id>.outputs.*`, `github.token`, `==`/`!=`/`&&`/`||`/`!`, parentheses and
the status functions; an implicit `success() &&` on `if:`; a fresh GITHUB_OUTPUT per step;
`bash --noprofile --norc -eo pipefail`. `uses:` steps are not supported (ours has none).
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

_TOKEN = re.compile(r"\s*(?:('(?:[^']|'')*')|(&&|\|\||==|!=|!|\(|\))|([A-Za-z_][\w.\-]*\(\))"
                    r"|([A-Za-z_][\w.\-]*))")
_STATUS = ("success()", "failure()", "always()", "cancelled()")


@dataclass
class StepRun:
    id: str | None
    name: str
    ran: bool
    code: int = 0
    stdout: str = ""
    stderr: str = ""
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class ActionRun:
    steps: list[StepRun]
    outputs: dict[str, str]
    failed: bool

    def step(self, name_or_id: str) -> StepRun:
        return next(s for s in self.steps if name_or_id in (s.id, s.name))


def parse_outputs(text: str) -> dict[str, str]:
    values: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        head = lines[i]
        if "<<" in head and "=" not in head.split("<<")[0]:
            key, delimiter = head.split("<<", 1)
            end = lines.index(delimiter, i + 1)
            values[key] = "\n".join(lines[i + 1:end])
            i = end + 1
        elif "=" in head:
            key, value = head.split("=", 1)
            values[key] = value
            i += 1
        else:
            i += 1
    return values


class _Expr:
    def __init__(self, text: str, context: dict[str, Any]) -> None:
        self.tokens = self._tokenize(text)
        self.i = 0
        self.context = context

    @staticmethod
    def _tokenize(text: str) -> list[tuple[str, str]]:
        tokens, pos = [], 0
        while pos < len(text.rstrip()):
            m = _TOKEN.match(text, pos)
            if not m:
                raise ValueError(f"cannot parse expression at {text[pos:]!r}")
            string, op, call, name = m.groups()
            if string is not None:
                tokens.append(("str", string[1:-1].replace("''", "'")))
            elif op is not None:
                tokens.append(("op", op))
            elif call is not None:
                tokens.append(("call", call))
            else:
                tokens.append(("name", name))
            pos = m.end()
        return tokens

    def _peek(self) -> tuple[str, str] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def _take(self) -> tuple[str, str]:
        self.i += 1
        return self.tokens[self.i - 1]

    def value(self) -> Any:
        result = self._or()
        assert self._peek() is None, f"trailing tokens in {self.tokens}"
        return result

    def _or(self) -> Any:
        left = self._and()
        while self._peek() == ("op", "||"):
            self._take()
            right = self._and()
            left = left if _truthy(left) else right
        return left

    def _and(self) -> Any:
        left = self._cmp()
        while self._peek() == ("op", "&&"):
            self._take()
            right = self._cmp()
            left = right if _truthy(left) else left
        return left

    def _cmp(self) -> Any:
        left = self._unary()
        while self._peek() in (("op", "=="), ("op", "!=")):
            op = self._take()[1]
            right = self._unary()
            same = str(left).lower() == str(right).lower()  # GitHub compares strings ignoring case
            left = same if op == "==" else not same
        return left

    def _unary(self) -> Any:
        kind, text = self._take()
        if (kind, text) == ("op", "!"):
            return not _truthy(self._unary())
        if (kind, text) == ("op", "("):
            inner = self._or()
            assert self._take() == ("op", ")")
            return inner
        if kind == "str":
            return text
        if kind == "call":
            failed = self.context["job_failed"]
            return {"success()": not failed, "failure()": failed, "always()": True,
                    "cancelled()": False}[text]
        value: Any = self.context
        for part in text.split("."):
            value = value.get(part, "") if isinstance(value, dict) else ""
        return value


def _truthy(value: Any) -> bool:
    return bool(value) and value != "false" if isinstance(value, str) else bool(value)


def evaluate(text: str, context: dict[str, Any]) -> Any:
    return _Expr(text, context).value()


def interpolate(text: str, context: dict[str, Any]) -> str:
    return re.sub(r"\$\{\{(.*?)\}\}", lambda m: str(evaluate(m.group(1), context)), str(text))


def run_action(action_dir: Path, with_: dict[str, str], env: dict[str, str],
               token: str = "", workdir: Path | None = None) -> ActionRun:
    spec = yaml.safe_load((action_dir / "action.yml").read_text(encoding="utf-8"))
    context: dict[str, Any] = {"github": {"token": token, "action_path": str(action_dir)},
                               "steps": {}, "job_failed": False}
    inputs = {}
    for name, meta in spec.get("inputs", {}).items():
        default = str(meta.get("default", ""))
        inputs[name] = with_.get(name, interpolate(default, context))
    unknown = set(with_) - set(inputs)
    assert not unknown, f"unknown inputs {unknown}"
    context["inputs"] = inputs
    runs: list[StepRun] = []
    tmp = Path(env["RUNNER_TEMP"])
    for n, step in enumerate(spec["runs"]["steps"]):
        condition = str(step.get("if", "success()")).strip()
        condition = condition.removeprefix("${{").removesuffix("}}")
        if not any(s in condition for s in _STATUS):
            condition = f"success() && ({condition})"
        run = StepRun(step.get("id"), step.get("name", ""), _truthy(evaluate(condition, context)))
        runs.append(run)
        if not run.ran:
            continue
        output = tmp / f"output-{n}"
        output.write_text("")
        run.env = {k: interpolate(v, context) for k, v in (step.get("env") or {}).items()}
        full = {**env, **run.env, "GITHUB_OUTPUT": str(output),
                "GITHUB_ACTION_PATH": str(action_dir)}
        assert step["shell"] == "bash"
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c",
                               step["run"]], env=full, cwd=workdir, capture_output=True,
                              text=True, check=False)
        run.code, run.stdout, run.stderr = proc.returncode, proc.stdout, proc.stderr
        if run.id:
            context["steps"][run.id] = {"outputs": parse_outputs(output.read_text()),
                                        "outcome": "success" if proc.returncode == 0 else "failure"}
        if proc.returncode:
            context["job_failed"] = True
    outputs = {k: interpolate(v["value"], context) for k, v in spec.get("outputs", {}).items()}
    return ActionRun(runs, outputs, bool(context["job_failed"]))


def base_env(tmp: Path, **extra: str) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "SYSTEMROOT")}
    (tmp / "runner-temp").mkdir(exist_ok=True)
    return {**keep, "RUNNER_TEMP": str(tmp / "runner-temp"), **extra}
