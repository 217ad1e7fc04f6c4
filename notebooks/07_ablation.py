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
# # 07 · Beyond the paper: labeled fraction and corruption rate
#
# [![Binder](https://mybinder.org/badge_logo.svg)](https://mybinder.org/v2/gh/tcc-project/tcc/HEAD?labpath=notebooks%2F07_ablation.py) [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/tcc-project/tcc/blob/main/outputs/ablation/breast_cancer/07_ablation.ipynb)
#
# The paper fixes 30 % labeled rows and a corruption rate of 0.4. Here each is varied on its own
# (the other at the published value) for `random`, `class` and `oracle`, with every seed, on the
# same splits, and `no_pretrain` (the same encoder left untrained) as the reference pretraining has
# to beat. Does class-conditioning help more when labels are scarce (worse pseudo-labels) or
# when more of the row is corrupted? Every member stored by an earlier run with the same data and
# settings is reused (`reuse`): a method added to the grid trains that method only.

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
# The grid: each value varied alone, the other setting at its base value
labeled_fractions: list = [0.05, 0.1, 0.3, 0.5]  # labeled fractions tried
corruption_rates: list = [0.2, 0.4, 0.6]  # corruption rates tried
ablation_methods: list = ['no_pretrain', 'random', 'class', 'oracle']  # methods compared
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

run_ = nbparams.per_dataset(globals(), ablation=True)  # checks the parameters (a misspelled one stops here)
cfg, ds, out = run_.cfg, run_.ds, run_.out

# %%
from tcclib.running.ablation import run_grid

grid = run_grid(ds, cfg, labeled_fractions, corruption_rates, ablation_methods, cache_dir=run_.cache_dir,
                store_dir=out, reuse=run_.reuse)

# %% [markdown]
# ## Mean test accuracy per setting
#
# Each sweep's table (mean test accuracy over the seeds, in percent), then what it says: `class`'s
# gain over `random` at each value, paired by seed (the same split and labeled rows),
# `oracle`'s over `class`, the room left to better pseudo-labels, and `random`'s over
# `no_pretrain`, what the pretraining itself adds.

# %%
# NBVAL_CHECK_OUTPUT
from IPython.display import display

from tcclib.paper import words
from tcclib.util.markdown import Markdown

published = {"labeled_fraction": cfg.labeled_fraction, "corruption_rate": cfg.corruption_rate}
for varied in ("labeled_fraction", "corruption_rate"):
    display(words.sweep_table(grid, varied, ablation_methods))
    display(Markdown(words.sweep_sentence(grid, varied, ds.name, published[varied])))

# %%
from tcclib.paper import plots

fig = plots.ablation_figure(grid, ds.name, cfg.epochs)  # mean and 95 % interval over the seeds; no_pretrain where run
_ = plots.savefig(fig, out / "ablation")
