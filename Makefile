# Two commands do everything on a fresh machine (see README.md):
#   make demo   install, then run the main job (params/demo.yaml: breast_cancer, no network) -> runs/demo/
#   make test   install, then the library tests (pytest) and the rendered notebooks (nbval)
# Also: make lab (JupyterLab on the notebooks), make smoke, make paper, make screen PLUGIN=rule.py, make rerender SET=demo, make bench.
PY ?= python3
# The OpenML-CC18 ARFF copies live outside the project; point elsewhere with TCC_DATA_DIR=...
export TCC_DATA_DIR ?= $(abspath $(CURDIR)/../shared/datasets/openml-cc18)
export MPLBACKEND ?= Agg
STAMP := .cache/install.stamp
# `python -m MODULE ARGS` with jsonschema's IRI grammar deferred (tcclib/util/iri_grammar.py): a
# process that reads or writes a notebook imports nbformat, and so jsonschema, whose import builds
# that grammar (2 s) for checks no notebook schema makes; `$(DEFERRED) jupytext ...` over the 9
# notebooks took 0.95-1.26 s against 3.1-3.2 s for `python -m jupytext ...` (2026-11-30, idle)
DEFERRED = $(PY) -c "import runpy, sys; from tcclib.util import iri_grammar; iri_grammar.defer(); \
	sys.argv[:] = sys.argv[1:]; runpy.run_module(sys.argv[0], run_name='__main__', alter_sys=True)"
NBVAL_DIR := .cache/nbval

.PHONY: install demo smoke paper screen screen-render lab lint test test-lib test-notebooks bench notebooks rerender own wheel slurm-test test-minimums test-newest

$(STAMP): pyproject.toml jupyter-config/ipython_kernel_config.py
	# torch first, pinned: 2.13.0 is the CPU wheel on this disk (a bare "torch" pulls a CUDA build)
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e ".[dev]"
	# the kernels' settings (a wheel installs them as data-files; an editable install does not)
	$(PY) tools/install_kernel_config.py
	mkdir -p $(dir $(STAMP)) && touch $(STAMP)

install: $(STAMP)

demo: install
	$(PY) -m tcclib params/demo.yaml $(ARGS)

smoke: install
	$(PY) -m tcclib params/smoke.yaml $(ARGS)

paper: install
	$(PY) -m tcclib params/paper.yaml $(ARGS)

# JupyterLab on the repository, opened at notebooks/ (runs write to runs/, never to the committed
# outputs/, which the file browser reaches one folder up). jupyter-config/ adds this repository's
# Lab defaults: a notebooks/*.py source opens as a notebook (jupytext), one entry per notebook (the
# paired .ipynb it writes on save is git-ignored and left out of the listing), widget state is saved
# with a notebook, the start page is notebooks/; the kernels get CurveZMQ keys (encrypted TCP); the
# committed renders under outputs/ open read-only. It writes the paired .ipynb first (make notebooks),
# so that a later make notebooks changes nothing Lab compares (no "File Changed": docs/notebooks.md)
LAB_ENV := JUPYTER_CONFIG_PATH=$(abspath jupyter-config)$(if $(JUPYTER_CONFIG_PATH),:$(JUPYTER_CONFIG_PATH))
# as root (a container), Jupyter refuses to start without --allow-root
LAB_ROOT := $(if $(filter 0,$(shell id -u 2>/dev/null)),--allow-root)
lab: install notebooks
	$(LAB_ENV) $(PY) -m jupyter lab $(LAB_ROOT) $(ARGS)

# re-execute the committed renders of a set from the current notebook sources, reusing the stored
# results (nothing retrains when data and settings are unchanged): make rerender SET=smoke
rerender: install
	$(PY) -m tcclib params/$(SET).yaml --outputs outputs --force all $(ARGS)

# notebook 08 (your own table) on the example table, as the committed reference render
own: install
	$(PY) -m tcclib.running.own --out outputs/own/08_your_table.ipynb -p output_dir outputs/own/example_table $(ARGS)

# ruff (lint and format, configured in pyproject.toml) before any test
lint: install
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

# TEST_WORKERS pytest-xdist processes side by side (0 runs in this process), a test file to a worker
# (its module fixtures set up once), the longest files first (tests/conftest.py). Three on this 2-core
# machine, two sharing a core: a fifth of the cores' time went idle with one worker per core (the
# process tests wait on kernels, workers and signals); pytest took 10 min 25 s instead of 12 min
# 18-36 s, the same tests passing (2026-12-02, docs/tests.md);
# --durations prints the slowest tests of each run (docs/tests.md keeps the table); without nbval's
# plugin (test-notebooks' own), so that tests/conftest.py defers jsonschema's IRI grammar in time
TEST_WORKERS ?= 3
test-lib: install
	$(PY) -m pytest -q -p no:nbval -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=30 tests

# nbval re-executes copies of the committed smoke, own and demo renders (under .cache/, with
# TCC_ROOT pointing there; the committed files stay untouched), as their re-render (TCC_RENDER: the
# copies write in their own outputs/ folders, not runs/). smoke and own retrain (TCC_REUSE=0),
# so that the drift check compares real runs; demo re-renders from its stored results, since
# make demo trains the same set and compares it with the same committed reference.
# Two lanes side by side, each on a copy of its own ($(NBVAL_DIR)/a, /b: nothing one writes is read
# by the other): a: smoke's 04-06 (first: they read the committed copies of 01-03's results), then
# its datasets but SMOKE_BESIDE; b: own, demo, then smoke's SMOKE_BESIDE, so that the two end
# nearer together (smoke alone took 162 s, own then demo 114 s; now 122-140 s and 140-153 s: docs/tests.md)
SMOKE_BESIDE ?= balance-scale
# pytest with jsonschema's IRI grammar deferred (DEFERRED, above): nbval's plugin imports
# nbformat, and so builds the grammar, before any conftest could defer it: 4.1-5.2 s to collect
# own's notebook, against 1.4-1.5 s deferred (2026-11-29, idle), in each of the lanes' 4 processes
PYTEST_DEFERRED = $(DEFERRED) pytest
NBVAL_IN = TCC_ROOT=$(abspath $(NBVAL_DIR)/$(1)) TCC_RENDER=1 $(PYTEST_DEFERRED) -q -p no:cacheprovider --nbval-lax \
	--durations=10 --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg --rootdir $(NBVAL_DIR)/$(1)
NBVAL_HALF = OMP_NUM_THREADS=$(HALF_CORES) MKL_NUM_THREADS=$(HALF_CORES) OPENBLAS_NUM_THREADS=$(HALF_CORES)
# (tcclib's thread budget for 2 jobs, as the sweep sizes its kernels: a share of the cores this
# process may use, or the user's OMP_NUM_THREADS)
HALF_CORES = $(shell $(PY) -c "from tcclib.util import threads; print(threads.budget(2).threads)")
test-notebooks: install
	test -d outputs/smoke/$(SMOKE_BESIDE) || { echo "SMOKE_BESIDE: outputs/smoke/$(SMOKE_BESIDE) is no folder: name one of smoke's datasets" >&2; exit 2; }
	rm -rf $(NBVAL_DIR) && mkdir -p $(NBVAL_DIR)/a/outputs $(NBVAL_DIR)/b/outputs
	cp -r outputs/smoke $(NBVAL_DIR)/a/outputs/
	cp -r outputs/smoke outputs/demo outputs/own $(NBVAL_DIR)/b/outputs/
	find $(NBVAL_DIR) -name .ipynb_checkpoints -prune -exec rm -rf {} +  # Lab's copies of opened renders
	# each lane's kernels get half the cores' threads: without the halves, each kernel's torch and
	# XGBoost start a thread per core and the two oversubscribe the machine, 6 min instead of 2 on
	# 2 cores (docs/tests.md). Lane b runs behind lane a and prints after it
	(TCC_REUSE=0 $(NBVAL_HALF) $(call NBVAL_IN,b) $(NBVAL_DIR)/b/outputs/own \
	    && $(NBVAL_HALF) $(call NBVAL_IN,b) $(NBVAL_DIR)/b/outputs/demo \
	    && TCC_REUSE=0 $(NBVAL_HALF) $(call NBVAL_IN,b) $(NBVAL_DIR)/b/outputs/smoke/$(SMOKE_BESIDE)) \
	    > $(NBVAL_DIR)/b.log 2>&1 & behind=$$!; \
	TCC_REUSE=0 $(NBVAL_HALF) $(call NBVAL_IN,a) --ignore=$(NBVAL_DIR)/a/outputs/smoke/$(SMOKE_BESIDE) \
	    $(NBVAL_DIR)/a/outputs/smoke; smoke=$$?; \
	wait $$behind; rest=$$?; cat $(NBVAL_DIR)/b.log; test $$smoke = 0 -a $$rest = 0
	rm -rf $(NBVAL_DIR)

test: lint test-lib test-notebooks

# the Slurm example of docs/scale-out.md on a one-node Slurm that tests/test_slurm.py starts in a
# temporary folder and stops (about 4 min); installs Slurm and munge first where missing (as root:
# apt-get). make test runs the same test where Slurm is installed and skips it where not
slurm-test: export PATH := $(PATH):/usr/sbin:/sbin
slurm-test: install
	@if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then \
	    if [ "$$(id -u)" != 0 ]; then echo "Slurm or munge is missing: as root, apt-get install slurm-wlm munge" >&2; exit 1; fi; \
	    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm munge; \
	fi
	slurmctld -V
	$(PY) -m pytest -q -rs -s tests/test_slurm.py

# a new corruption rule against the built-ins over the paper's 30 datasets (only the rule trains;
# the others' results are the committed outputs/head_variants/100ep/frozen): the verdict is runs/screen/verdict.md;
# about 22 min on 2 cores; ONLY="kc2 wdbc" screens those datasets alone; Ctrl-C stops it, the same command resumes
PLUGIN ?= examples/nearby_rule.py
screen: install
	$(PY) -m tcclib params/screen.yaml --plugin $(PLUGIN) $(if $(METHOD),--methods $(METHOD)) $(if $(ONLY),--only $(ONLY)) $(ARGS)

# notebook 09 on the screen stored in outputs/screen/ (nothing retrains), as the committed reference render
screen-render: install
	$(PY) -c "from tcclib.running import screen; print(screen.render_notebook('outputs/screen'))"

bench: install
	$(PY) bench/bench_epoch.py $(ARGS)

# first the files generated from the settings' declarations (Config's fields): docs/parameters.md and
# the settings' lines of the parameter cells of notebooks 01, 02, 03 and 07 (tests/test_settings.py
# fails when they are stale); then the paired notebooks/*.ipynb (git-ignored) from their .py sources,
# keeping the outputs they hold;
# JupyterLab writes them itself when it saves a notebook, papermill reads them. --quiet: jupytext
# would say "Writing ..." three times and "Notebook is not trusted" once per notebook whose outputs
# this machine's notary has not signed (only their display in Lab depends on it); errors still show
notebooks:
	$(PY) -m tcclib.running.reference
	$(DEFERRED) jupytext --quiet --to ipynb --update notebooks/*.py

# the wheel the notebooks' Colab cell installs (attach it to the GitHub release of its version); it
# carries the built-in sets, the notebook sources and the sets' reference numbers (setup.py), so that
# `python -m tcclib demo` runs outside a checkout
wheel:
	$(PY) -m pip wheel --no-deps -w dist .

# The step before a release (docs/tests.md, "At the lowest and the newest versions"): the declared
# lower bounds, checked in a virtualenv of their own (.cache/versions/minimums/venv): torch 2.13.0 (the
# CPU wheel here; torch's own lower bound, 2.4, is a multi-GB CUDA build on PyPI: checked by hand),
# then the project with every other dependency at constraints/minimums.txt; the smoke set
# (.cache/versions/minimums/runs: it must AGREE with the committed reference) and the suite's fast
# part (-m "not slow"). `make test-newest` does the same at the newest releases. About 20 min each
# on 2 idle cores; not part of make test (its budget is 15 min)
VERSIONS_DIR = .cache/versions/$(1)
test-minimums:
	$(call test_versions,minimums,-c constraints/minimums.txt)
test-newest:
	$(call test_versions,newest,)
define test_versions
	rm -rf $(VERSIONS_DIR) && mkdir -p $(VERSIONS_DIR) && $(PY) -m venv $(VERSIONS_DIR)/venv
	$(VERSIONS_DIR)/venv/bin/python -m pip install -q torch==2.13.0
	$(VERSIONS_DIR)/venv/bin/python -m pip install -q $(2) -e ".[dev]"
	$(VERSIONS_DIR)/venv/bin/python -m pip list --format=freeze > $(VERSIONS_DIR)/versions.txt
	$(VERSIONS_DIR)/venv/bin/python -m tcclib params/smoke.yaml --outputs $(VERSIONS_DIR)/runs > $(VERSIONS_DIR)/smoke.log 2>&1; \
	    status=$$?; cat $(VERSIONS_DIR)/smoke.log; test $$status = 0
	test "$$(grep -c 'AGREES with the committed reference' $(VERSIONS_DIR)/smoke.log)" = 3
	! grep -E "Warning|frozen modules" $(VERSIONS_DIR)/smoke.log
	PYDEVD_DISABLE_FILE_VALIDATION=1 $(VERSIONS_DIR)/venv/bin/python -m pytest -q -p no:cacheprovider \
	    -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=30 -m "not slow" tests
endef
