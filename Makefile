# The README's two set-up commands for a fresh machine: `make demo` and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: install demo test lint typecheck unit live-under-load stranger docs bench clean

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
	$(VENV)/bin/ruff check toolkit tests bench tools docs/tools
	$(VENV)/bin/ruff format --check toolkit tests bench tools docs/tools
	$(PY) tools/strip_notebooks.py --check

typecheck: install
	$(VENV)/bin/mypy

# every test but the live ones, which `live-under-load` runs (`make test` runs both), on
# WORKERS pytest-xdist processes (auto: one per core; WORKERS=0 runs them in this process)
WORKERS ?= auto
unit: install
	$(VENV)/bin/pytest -q -m "not live" -n $(WORKERS)

# field conditions: the live tests (marker `live`: streams, recorder, views, notebooks
# 02-05, real browsers; tests/conftest.py LIVE) with LOAD CPU-bound processes (one per
# core of a 2-core machine) that the session fixture `cpu_load` starts and stops
LOAD ?= 2
live-under-load: install
	TOOLKIT_TEST_LOAD=$(LOAD) $(VENV)/bin/pytest -q -m live

# a service the client has never seen: for each of $(PROFILE), the simulator serves
# profiles/<name>.toml, `toolkit doctor --write-profile` learns it from scratch with only
# the connection variables, and the network tests (marker `network`) run with the profile
# it wrote on the client side and no hand edit (tools/stranger_ci.py; results in
# out/<name>-doctor.*; WORKERS pytest-xdist processes). `make stranger PROFILE=alt` runs one.
PROFILE ?= stranger alt
stranger: install
	@for p in $(PROFILE); do $(PY) tools/stranger_ci.py --profile $$p -- -n $(WORKERS) || exit 1; done

# the documentation site into out/site (offline; a warning is an error). It renders the
# notebooks executed by `unit` and `live-under-load` (out/notebooks/) and runs any that
# are missing or stale.
# Run from out/ so the notebook plugin's cache (.cache/) lands there too.
docs: install
	mkdir -p out
	cd out && NO_MKDOCS_2_WARNING=1 $(abspath $(VENV))/bin/mkdocs build --strict --quiet -f ../mkdocs.yml

test: lint typecheck unit live-under-load stranger docs

bench: install
	$(PY) bench/run_all.py

clean:
	rm -rf $(VENV) out .pytest_cache .mypy_cache .ruff_cache
