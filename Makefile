# Every target creates .venv and installs what it needs by itself.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo run check test bench fuzz crashtest screenshots translations clean

# setup.py builds the one C module (core/rules/_fastpath.c) in place; a change to it builds it again.
$(STAMP): pyproject.toml setup.py core/rules/_fastpath.c
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	$(BIN)/python -m compileall -q -j 0 core console
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/ussd-console demo

run: $(STAMP)
	$(BIN)/ussd-console

# compileall: the suite starts the command line hundreds of times, and where PYTHONDONTWRITEBYTECODE
# is set (as on this project's machines) each start compiled every module from source again: a
# third of a command's CPU. Python reads the cached files whatever that variable says.
# pytest keeps its own copies of the test modules and of its plugins' (Hypothesis, syrupy, xdist),
# asserts rewritten; it reads them whatever that variable says but writes them only where it is
# unset, so every worker rewrote all ~200 again on every run: 6.5 of the 10.5 CPU seconds a worker
# spent collecting. NO_PYC_WRITES clears it for pytest and what the tests start (empty is unset).
NO_PYC_WRITES := PYTHONDONTWRITEBYTECODE=
# The in-process tier, for the edit-test loop: every test that starts no process, tmux, Chromium
# or PostgreSQL server (the `process` marker, set in tests/conftest.py). `make test` runs all.
check: $(STAMP)
	$(BIN)/python -m compileall -q -j 0 core console tests tools
	$(NO_PYC_WRITES) $(BIN)/python -m pytest -n auto -m "not process"

test: $(STAMP)
	./scripts/ensure-postgres
	./scripts/ensure-age
	./scripts/ensure-chromium
	./scripts/ensure-poppler
	$(BIN)/python -m compileall -q -j 0 core console tests tools
	$(NO_PYC_WRITES) $(BIN)/python -m pytest -n auto

fuzz: $(STAMP)
	HYPOTHESIS_PROFILE=fuzz $(NO_PYC_WRITES) $(BIN)/python -m pytest tests/test_fuzz.py tests/test_properties.py tests/test_fuzz_inbox.py

# SIGKILL a real `ussd-console watch` 200 times over a 50,000-frame inbox; compare with a clean run.
crashtest: $(STAMP)
	$(BIN)/python -m tests.crash_harness --kills 200 --frames 50000

screenshots: $(STAMP)
	$(BIN)/python -m tools.screenshots
	./scripts/ensure-chromium
	$(BIN)/python -m tools.browser_shot
	$(BIN)/python -m tools.report_shot

bench: $(STAMP)
	$(BIN)/python -m tests.bench

# Every marked word of core/ and console/ (babel.cfg) into each shipped catalog: new ones added
# empty, changed ones marked fuzzy for the translator, gone ones dropped; a catalog with nothing
# new is left untouched (docs/translating.md). No built .mo is made or kept.
translations: $(STAMP)
	$(BIN)/python -m tools.translations

clean:
	rm -rf $(VENV) build *.egg-info
