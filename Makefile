# The README's two set-up commands for a fresh machine: `make demo` and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: install demo test lint typecheck unit bench clean

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q -U pip
	$(PY) -m pip install -q -e '.[dev]'
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $(STAMP)

install: $(STAMP)

demo: install
	$(VENV)/bin/toolkit demo --out out/demo

lint: install
	$(VENV)/bin/ruff check toolkit tests bench tools
	$(VENV)/bin/ruff format --check toolkit tests bench tools
	$(PY) tools/strip_notebooks.py --check

typecheck: install
	$(VENV)/bin/mypy

unit: install
	$(VENV)/bin/pytest -q

test: lint typecheck unit

bench: install
	$(PY) bench/run_all.py

clean:
	rm -rf $(VENV) out .pytest_cache .mypy_cache .ruff_cache
