# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     notebook_metadata_filter: -jupytext.text_representation.jupytext_version,-jupytext.text_representation.format_version
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 03 · Contrastive pretraining and evaluation of every method
#
# [![Binder](https://mybinder.org/badge_logo.svg)](https://mybinder.org/v2/gh/tcc-project/tcc/HEAD?labpath=notebooks%2F03_pretraining.py) [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/tcc-project/tcc/blob/main/outputs/demo/breast_cancer/03_pretraining.ipynb)
#
# All seeds × methods of the dataset train together as one batched ensemble (numerically the same
# as training each alone). Methods:
#
# | method | how to corrupt | where |
# | --- | --- | --- |
# | `no_pretrain` | — (random frozen encoder) | — |
# | `random` | value from the whole column (SCARF) | uniform |
# | `class` | value from rows of the anchor's pseudo-class, refreshed at epochs 0, 10, 20, ... | uniform |
# | `oracle` | value from rows of the anchor's true class | uniform |
# | `class_least` / `class_most` | pseudo-class | least / most correlated (Algorithm 4) |
# | `class_most_published` | pseudo-class | the authors' flipped "most" (= least ranking) |
#
# These learn NT-Xent between an anchor and its view. A set may also name the tabular
# self-supervised family, each with another objective ([docs/methods.md](../docs/methods.md#objectives-what-the-encoder-learns)):
# `vime` (mask estimation and feature reconstruction, 30 % of the features), `dae` (a denoising
# autoencoder, swap noise on 15 %), `subtab` (feature subsets: reconstruction, contrast and
# distance); their `_class` variants draw the replaced values from the anchor's pseudo-class, as
# `class` does.
#
# After pretraining the encoder is frozen and a fresh 2-layer head is trained 100 epochs on the
# labeled rows; test accuracy and AUROC are reported per seed.
#
# Results stored in the output folder by an earlier run are reused member by member where the data
# and every setting that determines them match (`reuse`; see `tcclib.artifacts.keys`): a re-render trains
# nothing, a changed setting trains only the members it changes.
#
# **What a first run computes, and how long it takes.** Before pretraining, the correlation-guided
# methods (`class_least`, `class_most`, `class_most_published`) need XGBoost feature importances:
# one model per feature and seed, so 240 models for `breast_cancer` (30 features × 8 seeds). From a
# fresh clone on an idle 2-core CPU they took 1 min 29 s (as notebook 02's first run), and
# pretraining and evaluation with the defaults (100 epochs) 1 min 45 s (docs/notebooks.md has every
# notebook's time). The matrices are cached under `runs/.cache/` (the sweep's `make demo` caches the
# same ones), so every later run of any notebook on this dataset takes them from there: run `make
# demo` first, or expect the first run to take the longest. The lines after the run say where the
# time went; a re-render that trains nothing says so, with the record of the training that produced
# the stored results (`timings.json` in the results folder).

# %%
# Setup. Without tcclib in this kernel (Colab), install the package alone, pinned to its release.
import importlib.util
import subprocess
import sys

if importlib.util.find_spec("tcclib") is None:
    subprocess.check_call([sys.executable, "-m", "pip", "install", "-q",
                           "https://github.com/tcc-project/tcc/releases/download/v0.2.0/tcclib-0.2.0-py3-none-any.whl"])
import tcclib  # noqa: F401  (before matplotlib: a checkout keeps matplotlib's cache in its .cache/)

# %matplotlib inline

# %% tags=["parameters"] jupyter={"source_hidden": true}
# Parameters: `papermill NOTEBOOK OUT -p NAME VALUE`; `papermill --help-notebook NOTEBOOK` lists them.
dataset: str = "breast_cancer"  # a name or OpenML id (the paper's: tcclib.data.sources.list_datasets(); any other OpenML id), or a table PATH:TARGET
set_name: str = "lab"  # name of this run: results go to runs/<set_name>/<dataset> unless output_dir is set
output_dir: str = ""  # results folder; a relative path lies under the repository root
data_dir: str = ""  # folder of <did>.arff copies (empty: $TCC_DATA_DIR, else ../shared/datasets/openml-cc18 if there, else OpenML online)
cache_dir: str = ""  # importance cache and pretraining checkpoints (empty: .cache beside the set)
reuse: bool = True  # take stored results whose data and settings match instead of retraining
write_marker: bool = True  # mark the dataset finished (_DONE.json) for notebook 04; the sweep passes False and marks it last
# Settings of tcclib.method.config.Config (generated from its declarations by `make notebooks`; docs/parameters.md): the published values, except epochs 100, keep_embeddings True
seeds: list = [614579, 336466, 974761, 450967, 743562, 843198, 502837, 328984]  # the paper's 8 seeds: one split, labeled subset and initialisation each
methods: list = ['no_pretrain', 'random', 'class', 'oracle', 'class_least', 'class_most']  # pretraining methods: the paper's six; all: tcclib.method.registry.method_names()
baselines: list = []  # also run baselines (same labeled rows and test split): tcclib.method.registry.baseline_names()
epochs: int = 100  # contrastive epochs (paper: 500; the notebooks' 100 keeps an interactive run to minutes)
batch_size: int = 256  # rows per step (paper: 256)
lr: float = 0.001  # Adam learning rate (paper: 1e-3)
head_epochs: int = 100  # epochs of the classification head on the labeled rows (paper: 100)
pseudo_every: int = 10  # pseudo-labels refreshed every N epochs, from epoch 0 (paper: 10)
corruption_rate: float = 0.4  # share p of the features corrupted per row, ceil(p*M) (paper: 0.4)
labeled_fraction: float = 0.3  # share of the training rows that keep their label (paper: 0.3)
test_fraction: float = 0.2  # share of the rows held out for testing, stratified (paper: 0.2)
temperature: float = 1.0  # NT-Xent temperature (paper: 1.0)
corr_temperature: float = 0.25  # softmax temperature of the correlation sampler (paper: 0.25)
corr_normalization: str = 'sum'  # sum or minmax: how candidates' min-importances are normalised
hidden_dim: int = 256  # width of every encoder and head layer (paper: 256)
encoder_depth: int = 4  # linear layers of the encoder (paper: 4)
head_depth: int = 2  # linear layers of the projection and classification heads (paper: 2)
head: str = 'frozen'  # the classifier on the labeled rows: frozen (the paper), finetune, concat or probe (opt-in; docs/estimator.md)
encoder_lr: float = 0.0001  # the encoder's learning rate under head: finetune
bias_init: float = 0.01  # initial value of every bias (paper: 0.01)
device: str = 'cpu'  # cpu or cuda[:N]
matmul_precision: str = 'highest'  # highest (exact float32), high or medium (torch's bf16/TF32 inside matmuls), or bf16 (opt-in)
compile: str = 'auto'  # auto (the step as a CUDA graph on a GPU, eager on the CPU), off, cuda_graph or torch_compile
draws: str = 'auto'  # where pretraining's random numbers come from: auto (counter on a GPU, generator on the CPU), generator (each member's torch generator: every committed result) or counter (counter draws, every member's at once; tcclib/method/draws.py)
xgb_trees: int = 100  # XGBoost trees per importance model (paper: 100)
xgb_depth: int = 10  # XGBoost tree depth (paper: 10)
xgb_eta: float = 0.1  # XGBoost learning rate (paper: 0.1)
xgb_subsample: float = 0.7  # XGBoost row subsample (paper: 0.7)
xgb_colsample: float = 0.8  # XGBoost column subsample per tree (paper: 0.8)
xgb_max_bin: int = 256  # XGBoost histogram bins of the importance models (256: XGBoost's default, as published; fewer: faster, opt-in)
keep_embeddings: bool = True  # save the first seed's embeddings for the PCA figure
progress: bool = True  # progress bars
fidelity: str = 'ours'  # ours, or authors: the authors' published code where we differ (sets the switches below)
labeled_split: str = 'auto'  # auto (as fidelity), stratified (ours) or random (authors): the labeled subset
corr_rule: str = 'auto'  # auto, direct (ours: Algorithm 4 as written) or authors (their rank reversal for least)
xgb_categorical: str = 'auto'  # auto, codes (ours) or native (authors: enable_categorical) for importances
xgb_seed: str = 'auto'  # auto, split (ours: the split's seed) or xgboost_default (authors: seed 0)
zero_importance: str = 'auto'  # auto, uniform (ours) or keep (authors): a model with no gain
pseudo_schedule: str = 'auto'  # auto, period (ours: epochs 0, 10, ...) or authors (0, 9, 19, ...)
encoder_init: str = 'auto'  # auto, shared (ours: one encoder per seed) or per_method (authors)

# %%
from tcclib.running import nbparams

run_ = nbparams.per_dataset(globals())  # checks the parameters (a misspelled one stops here)
cfg, ds, out = run_.cfg, run_.ds, run_.out

# %%
from tcclib.artifacts import store
from tcclib.running.train import run_dataset

stored, stored_from = store.results_to_compare(out, set_name, ds.name, cfg)  # None on a first run
run = run_dataset(ds, cfg, cache_dir=run_.cache_dir, store_dir=out, reuse=run_.reuse)
store.save_run(run, out, write_marker=run_.write_marker)
print(store.time_record(run, out))  # what trained now and how long; a re-render: the stored training's record

# %% [markdown]
# ## Results per method, next to the paper's
#
# Our mean over the seeds for every method and baseline, next to the paper's row for this dataset
# (Tables 2-5) where it has one; the first lines say it in words.

# %%
from tcclib.paper import words
from tcclib.util.markdown import Markdown

Markdown(words.dataset_result(run.results, cfg))

# %% [markdown]
# ## Reproduction check
#
# What this run's results were compared with: on a re-render that trained nothing (every member
# reused), nothing; after a training, the results stored here before (a re-execution, as `make
# test` does through nbval with reuse off) or else the committed reference run of the same set and
# dataset when its settings are the same. On the same machine they are identical. Another CPU
# rounds floats differently (AVX2 and AVX-512 kernels differ), training drifts a little, and the
# means move by a few thousandths, so the checked line below allows `store.REPRO_TOL`.

# %%
cmp = store.compare_means(stored, run.results) if stored is not None else None
trained, reused = run.timings["trained_members"], run.timings["reused_members"]
Markdown(store.reproduction_text(cmp, stored_from, trained, reused))

# %%
# NBVAL_CHECK_OUTPUT
print(store.drift_line(cmp, retrained=trained > 0))

# %%
import matplotlib.pyplot as plt

from tcclib.paper import plots

# each method's seeds, our mean and 95 % interval, and the paper's mean ± se where it reports the dataset
fig = plots.results_figure(run.results, ds.name)

# %% [markdown]
# ## Learning curves and pseudo-label quality
#
# One panel per objective the methods learn (NT-Xent's contrastive loss; the family's
# reconstruction and mask losses are on other scales), then the pseudo-labels' accuracy.

# %%
parts = plots.loss_parts(run.history)  # (what, y label, rows) per objective
fig, axes = plt.subplots(1, max(len(parts), 1) + 1, figsize=(6.5 * (max(len(parts), 1) + 1), 4))
for ax, (what, ylabel, part) in zip(axes, parts):
    plots.learning_curves(part, f"{ds.name}: {what}", ax=ax, ylabel=ylabel)
plots.pseudo_accuracy(run.pseudo, f"{ds.name}: pseudo-labels", ax=axes[-1])
fig.tight_layout()
_ = plots.savefig(fig, out / "learning_curves")
