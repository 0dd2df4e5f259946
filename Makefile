# Two commands for a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
OUT ?= out/demo

.PHONY: demo test lint venv clean

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

test: venv
	$(BIN)/ruff check npu_gate tests bench examples
	$(BIN)/mypy npu_gate
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) out .pytest_cache .ruff_cache
