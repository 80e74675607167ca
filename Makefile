# simweb — one command to set up and run the demo, one to run the tests.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
export PREFECT_SERVER_ANALYTICS_ENABLED := false
export PREFECT_HOME ?= $(CURDIR)/.prefect
export DO_NOT_TRACK := 1

.PHONY: venv system-deps demo test test-slow test-all bench clean

$(BIN)/simweb: pyproject.toml constraints.txt setup.py simcore/_scan.c simcore/_dart.c simcore/_walk.c simcore/_gather.c simcore/_porter.c simcore/_rerank.c
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -c constraints.txt -e ".[dev]"
	touch $@

venv: $(BIN)/simweb

# Debian's chromium for the browser test of the HTTP page (installed when run as root; the
# test is skipped, saying why, where it is missing).
system-deps:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing chromium (apt-get) for the browser test"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "note: 'sudo apt-get install chromium' enables the browser test"; fi; }

demo: venv
	$(BIN)/simweb demo $(DEMO_ARGS)

test: venv system-deps
	$(BIN)/python -m pytest $(PYTEST_ARGS)

test-slow: venv system-deps
	$(BIN)/python -m pytest -m slow $(PYTEST_ARGS)

test-all: venv system-deps
	$(BIN)/python -m pytest -m "" $(PYTEST_ARGS)

bench: venv
	$(BIN)/python -m benchmarks $(BENCH_ARGS)

# Everything the install, the tests and the demo write into the tree: the venv, the compiled
# extensions, setuptools' build/ and egg-info, the Prefect home, pytest's and hypothesis' caches,
# __pycache__ folders and the demo's out/demo (the downloaded packages in ~/.cache/simweb stay).
clean:
	rm -rf $(VENV) .prefect .pytest_cache .hypothesis build *.egg-info simcore/*.so out/demo
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
	rmdir out 2>/dev/null || true
