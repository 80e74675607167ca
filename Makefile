# simweb — one command to set up and run the demo, one to run the tests.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
export PREFECT_SERVER_ANALYTICS_ENABLED := false
export PREFECT_HOME ?= $(CURDIR)/.prefect
export DO_NOT_TRACK := 1

.PHONY: venv demo test test-slow test-all bench clean

$(BIN)/simweb: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -c constraints.txt -e ".[dev]"
	touch $@

venv: $(BIN)/simweb

demo: venv
	$(BIN)/simweb demo $(DEMO_ARGS)

test: venv
	$(BIN)/python -m pytest $(PYTEST_ARGS)

test-slow: venv
	$(BIN)/python -m pytest -m slow $(PYTEST_ARGS)

test-all: venv
	$(BIN)/python -m pytest -m "" $(PYTEST_ARGS)

bench: venv
	$(BIN)/python -m benchmarks $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .prefect .pytest_cache build *.egg-info
