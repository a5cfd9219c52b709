# Every target creates .venv and installs what it needs by itself.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo run test bench fuzz crashtest screenshots clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/ussd-console demo

run: $(STAMP)
	$(BIN)/ussd-console

test: $(STAMP)
	./scripts/ensure-postgres
	./scripts/ensure-age
	./scripts/ensure-chromium
	$(BIN)/python -m pytest -n auto

fuzz: $(STAMP)
	HYPOTHESIS_PROFILE=fuzz $(BIN)/python -m pytest tests/test_fuzz.py tests/test_properties.py tests/test_fuzz_inbox.py

# SIGKILL a real `ussd-console watch` 200 times over a 50,000-frame inbox; compare with a clean run.
crashtest: $(STAMP)
	$(BIN)/python -m tests.crash_harness --kills 200 --frames 50000

screenshots: $(STAMP)
	$(BIN)/python -m tools.screenshots
	./scripts/ensure-chromium
	$(BIN)/python -m tools.browser_shot

bench: $(STAMP)
	$(BIN)/python -m tests.bench

clean:
	rm -rf $(VENV) build *.egg-info
