# Every target creates .venv and installs what it needs by itself.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo run test bench fuzz screenshots clean

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
	$(BIN)/python -m pytest

fuzz: $(STAMP)
	HYPOTHESIS_PROFILE=fuzz $(BIN)/python -m pytest tests/test_fuzz.py tests/test_properties.py

screenshots: $(STAMP)
	$(BIN)/python -m console.screenshots

bench: $(STAMP)
	$(BIN)/python -m tests.bench

clean:
	rm -rf $(VENV) build *.egg-info
