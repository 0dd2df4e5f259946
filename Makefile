# Two commands for a fresh machine: `make demo` and `make test`; `make check` is the fast loop.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
OUT ?= out/demo

.PHONY: demo check test lint venv clean

$(BIN)/npu-gate: pyproject.toml requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	$(BIN)/python -m pip install --quiet -e '.[torch,test]'
	@touch $@

venv: $(BIN)/npu-gate

# Gate the bundled lesson net. It is meant to FAIL (Clip falls back to CPU): exit 1 is expected.
# Bundle runs (--out) never use the result cache: the demo always runs the whole gate.
demo: venv
	$(BIN)/npu-gate check examples/seed-hardswish --out $(OUT); \
	code=$$?; echo "exit code $$code; evidence bundle in $(OUT): report.md, result.json, conversion.log, minimal/"; \
	test $$code -le 1

# The fast loop (~2 min on 2 cores): lint, layers, and the tests that need neither torch, a
# compiler nor the `slow` mark, in parallel. An unmarked test over 3 s of CPU fails (tests/conftest.py).
check: venv
	$(BIN)/ruff check npu_gate tests bench examples
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -q -n auto -m 'not torch and not slow and not rknn and not qnn and not ethos_u'

# Everything `make check` does, plus mypy (strict, tests included), vulture (dead code, [tool.vulture] in
# pyproject.toml) and the whole default suite (torch and slow included).
test: venv
	$(BIN)/ruff check npu_gate tests bench examples
	$(BIN)/mypy npu_gate bench tests
	$(BIN)/vulture
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -q -n auto

clean:
	rm -rf $(VENV) out .pytest_cache .ruff_cache
