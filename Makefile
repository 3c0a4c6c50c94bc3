# The two commands of the README. Both set up a virtual environment in .venv on first use.
#   make demo   compile an example schedule into CUDA (no GPU needed): out/inception3.cu, out/inception3.h
#   make test   lint, type-check and run the tests (GPU tests skip without a GPU)

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint gpu-test clean

$(BIN)/gemmc: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e ".[test]"
	touch $@

demo: $(BIN)/gemmc
	$(BIN)/gemmc compile examples/inception3.gs -o out/
	$(BIN)/gemmc inspect examples/inception3.gs

lint: $(BIN)/gemmc
	$(BIN)/ruff check gemmc tests bench
	$(BIN)/mypy

test: lint
	$(BIN)/python -m pytest -q

# On the GPU machine (see docs/GPU.md): the kernels themselves.
gpu-test:
	$(PYTHON) -m pytest -m gpu -q

clean:
	rm -rf $(VENV) out build
