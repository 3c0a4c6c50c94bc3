# The two commands of the README. Both set up a virtual environment in .venv on first use.
#   make demo   compile an example schedule into CUDA (no GPU needed): out/inception3.cu, out/inception3.h
#   make test   lint, type-check and run the tests (GPU tests skip without a GPU), one worker per core
#   make wheel  build the wheel and run `gemmc compile` from it in a fresh virtual environment

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint wheel gpu-test clean

$(BIN)/gemmc: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e .
	touch $@

# The linters and test tools: `make test` adds them, also to a .venv made by the README's `pip install -e .`.
DEV := $(VENV)/.dev-installed
$(DEV): $(BIN)/gemmc
	$(BIN)/pip install -q -e ".[test]"
	touch $@

demo: $(BIN)/gemmc
	$(BIN)/gemmc compile examples/inception3.gs -o out/
	$(BIN)/gemmc inspect examples/inception3.gs

lint: $(DEV)
	$(BIN)/ruff check gemmc tests bench
	$(BIN)/mypy

test: lint
	$(BIN)/python -m pytest -q -n auto

# The wheel as a user gets it: installed alone into a new environment and run outside the repository, so that
# nothing but the wheel can be imported.
WHEEL_TMP := build/wheel-check
wheel: $(BIN)/gemmc
	rm -rf $(WHEEL_TMP)
	$(BIN)/pip wheel -q --no-deps . -w $(WHEEL_TMP)/dist
	$(PYTHON) -m venv $(WHEEL_TMP)/venv
	$(WHEEL_TMP)/venv/bin/pip install -q $(WHEEL_TMP)/dist/gemmc-*.whl
	cd $(WHEEL_TMP) && venv/bin/gemmc compile $(CURDIR)/examples/inception3.gs -o out/ && test -s out/inception3.cu \
	  && venv/bin/python -c "import gemmc, sys; sys.exit(not gemmc.__file__.startswith('$(CURDIR)/$(WHEEL_TMP)/venv/'))" \
	  && venv/bin/gemmc bench irregular --help >/dev/null \
	  && venv/bin/python -c "from gemmc.bench import harness; assert 'venv' in str(harness.example('inception3.gs'))"

# On the GPU machine (see docs/GPU.md): the kernels themselves.
gpu-test:
	$(PYTHON) -m pytest -m gpu -q

clean:
	rm -rf $(VENV) out build
