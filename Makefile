# Two commands do everything on a fresh machine (see README.md):
#   make demo   install, then run the main job (params/demo.yaml: breast_cancer, no network)
#   make test   install, then the library tests (pytest) and the rendered notebooks (nbval)
PY ?= python3
# The OpenML-CC18 ARFF copies live outside the project; point elsewhere with TCC_DATA_DIR=...
export TCC_DATA_DIR ?= $(abspath $(CURDIR)/../shared/datasets/openml-cc18)
export MPLBACKEND ?= Agg
STAMP := .cache/install.stamp

.PHONY: install demo smoke paper test test-lib test-notebooks bench notebooks

$(STAMP): pyproject.toml
	# torch first, pinned: 2.13.0 is the CPU wheel on this disk (a bare "torch" pulls a CUDA build)
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e ".[dev]"
	$(PY) -m ipykernel install --user --name python3 >/dev/null
	mkdir -p $(dir $(STAMP)) && touch $(STAMP)

install: $(STAMP)

demo: install
	$(PY) -m tcclib.sweep params/demo.yaml $(ARGS)

smoke: install
	$(PY) -m tcclib.sweep params/smoke.yaml $(ARGS)

paper: install
	$(PY) -m tcclib.sweep params/paper.yaml $(ARGS)

test-lib: install
	$(PY) -m pytest -q tests

test-notebooks: install
	$(PY) -m pytest -q -p no:cacheprovider --nbval-lax --nbval-current-env \
	    --nbval-sanitize-with tests/nbval_sanitize.cfg outputs/smoke outputs/demo

test: test-lib test-notebooks

bench: install
	$(PY) bench/bench_epoch.py $(ARGS)

notebooks:
	$(PY) tools/make_notebooks.py
