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
# # 04 · Evaluation: the paper's Tables 2-5 and win matrices
#
# [![Binder](https://mybinder.org/badge_logo.svg)](https://mybinder.org/v2/gh/tcc-project/tcc/HEAD?labpath=notebooks%2F04_evaluation.py) [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/tcc-project/tcc/blob/main/outputs/demo/04_evaluation.ipynb)
#
# Every finished dataset of the set is gathered into one tidy table. Tables 2-5 show mean ± standard
# error over seeds (the paper's definition: `std(ddof=0) / sqrt(n)`), accuracy in percent. The win
# matrices count, over datasets, the significant wins of the row method over the column method
# (one-sided Welch t-test, p < 0.05) divided by the significant wins plus losses. Baselines, where
# the set ran them, join the how-to-corrupt tables.

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
# ## Tables 2-5
#
# Ours next to the paper's for every method it reports (the baselines and our separately scored
# methods have ours only), mean ± standard error over seeds; the best of each row in bold, ours
# among ours and the paper's among the paper's. The same tables are `results/table_*.md` and, as
# LaTeX, `results/table_*.tex`.

# %%
# NBVAL_CHECK_OUTPUT
from IPython.display import display

from tcclib.paper import tables
from tcclib.util.markdown import Markdown

for block in tables.write_set_tables(set_dir, results):
    display(Markdown(block))

# %% [markdown]
# ## Win matrices (Welch t-test, p < 0.05)

# %%
from tcclib.paper import plots

groups = tables.method_groups(results)
for metric in ("accuracy", "auroc"):
    panels = []
    for kind, methods in groups.items():
        if len(methods) >= 2:
            frac, wins, decided = tables.win_matrix(results, metric, methods)
            store.write_csv(frac.reset_index(), res_dir / f"win_matrix_{metric}_{kind}.csv")
            panels.append((frac, wins, decided, f"{kind} to corrupt"))
    too_few = plots.too_few_for_win_matrix(results)  # no matrix below 3 datasets
    if panels and not too_few:
        fig = plots.win_matrices(panels, f"{metric}: row beats column (significant wins / decided datasets)")
        _ = plots.savefig(fig, fig_dir / f"win_matrices_{metric}")
if too_few:
    display(Markdown(too_few))

# %% [markdown]
# The paper's claims on these matrices, tested over the datasets (a one-sided sign test of the
# significant wins; notebook 06 and `report.md` give the tables):

# %%
from tcclib.paper import report

Markdown("\n".join(report.claims_lines(results)))

# %% [markdown]
# ## Next to the paper
#
# Our mean and the paper's for every dataset of this set that the paper reports; *inside* says
# whether the paper's mean lies in our 95 % interval, *differ* whether Welch's test finds a
# difference (p < 0.05), *equivalent* whether a TOST shows the two within ±1 point of accuracy or
# ±0.01 AUROC. First the verdict, then the counts per method.

# %%
# NBVAL_CHECK_OUTPUT
Markdown("\n".join(report.agreement_lines(results)))

# %%
# NBVAL_CHECK_OUTPUT
for block in tables.write_paper_comparisons(results, res_dir):
    display(Markdown(block))
