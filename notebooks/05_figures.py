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
# # 05 · The paper's figures
#
# [![Binder](https://mybinder.org/badge_logo.svg)](https://mybinder.org/v2/gh/tcc-project/tcc/HEAD?labpath=notebooks%2F05_figures.py) [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/tcc-project/tcc/blob/main/outputs/demo/05_figures.ipynb)
#
# * **Figure 1**: contrastive learning curves on `figure_dataset` (training loss per epoch per method).
# * **Figure 2**: 3-D PCA of the encoder's embeddings of the training and test rows, coloured by class.
# * **Figure 3**: win matrices over all datasets of the set.
#
# Each is saved as PNG and PDF in the set's `figures/` folder.

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

# %% tags=["parameters"]
# Parameters: `papermill NOTEBOOK OUT -p NAME VALUE`; `papermill --help-notebook NOTEBOOK` lists them.
set_name: str = "lab"  # the set: its datasets are the finished folders of set_dir
set_dir: str = ""  # the set's folder; a relative path lies under the repository root (empty: runs/<set_name>)
figure_dataset: str = "breast_cancer"  # the dataset of the learning-curve and embedding figures

# %%
from tcclib.artifacts import store
from tcclib.running import nbparams

set_dir, results = nbparams.aggregate(globals())  # checks the parameters; stops if nothing finished
res_dir, fig_dir = set_dir / "results", set_dir / "figures"
print(store.status_line(set_dir))

# %% [markdown]
# ## Figure 1: contrastive learning curves

# %%
import json

import matplotlib.pyplot as plt
import pandas as pd

from tcclib.artifacts import keys as content_keys
from tcclib.method import registry
from tcclib.paper import plots

fd = set_dir / figure_dataset
history = pd.read_csv(fd / "history.csv") if (fd / "history.csv").exists() else pd.DataFrame()
if len(history):
    fig, ax = plt.subplots(figsize=(8, 4.5))
    plots.learning_curves(history, f"Figure 1 · {figure_dataset}: contrastive learning curves", ax=ax)
    _ = plots.savefig(fig, fig_dir / "figure1_learning_curves")
else:
    print(f"no history for {figure_dataset} in this set")

# %%
from IPython.display import display

from tcclib.paper import words
from tcclib.util.markdown import Markdown

# the paper's Figures 1-2 use breast_cancer: whether this set's figure dataset is it, then what the curves show
Markdown(plots.figure_dataset_words(figure_dataset), words.learning_curves_sentence(history, figure_dataset))

# %% [markdown]
# ## Figure 2: PCA of the embeddings

# %%
emb_dataset, why = plots.embedding_dataset(set_dir, figure_dataset)  # figure_dataset, where its embeddings were kept
if emb_dataset is not None:
    ed = set_dir / emb_dataset
    emb = content_keys.load_embeddings(ed / "embeddings.npz")
    classes = json.loads((ed / "classes.json").read_text()) if (ed / "classes.json").exists() else None
    methods = registry.with_group("how", present=emb)  # the how-to-corrupt methods (tcclib.method.registry)
    display(Markdown(why, words.embeddings_sentence(emb, registry.with_group("how"), emb_dataset)))  # the panels
    separation = plots.separability(emb, methods)  # the claim measured: silhouette and a linear probe per panel
    for part in ("train", "test"):
        fig = plots.pca_3d(emb, methods, part, f"Figure 2 · {emb_dataset}: 3-D PCA of {part} embeddings (first seed)",
                           class_names=classes, separation=separation)
        _ = plots.savefig(fig, fig_dir / f"figure2_pca_{part}")
else:
    display(Markdown(why))

# %%
if emb_dataset is not None:  # the claim measured on the panels: per method and part, silhouette and probe accuracy (%)
    display(separation.round(3))
    display(Markdown(plots.separability_words(separation)))

# %% [markdown]
# ## Figure 3: win matrices (accuracy)

# %%
fig, note = plots.figure3(results, "accuracy")  # no matrix below 3 datasets; the paper's on the same datasets
if fig is not None:
    _ = plots.savefig(fig, fig_dir / "figure3_win_matrix")

# %%
Markdown(note, words.win_matrix_sentence(results, "accuracy"))
