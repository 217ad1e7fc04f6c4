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
# # 06 · Reproduction report: our run next to the paper
#
# [![Binder](https://mybinder.org/badge_logo.svg)](https://mybinder.org/v2/gh/tcc-project/tcc/HEAD?labpath=notebooks%2F06_report.py) [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/tcc-project/tcc/blob/main/outputs/paper/06_report.ipynb)
#
# Does the paper's claim hold? For every finished dataset of the set: our mean ± standard error
# next to the published one (Tables 2-5, shipped with `tcclib`), the difference, and whether the
# paper's mean lies in our 95 % interval; the paper's claims checked on our win matrices; the
# baselines a practitioner would try first (XGBoost, logistic regression, self-training) on the
# same labeled rows and test split; the feature correlation value ranges. The same report is
# written as markdown to the set's `report.md`. The full reproduction's is the committed render
# `outputs/paper/06_report.ipynb` (and `outputs/paper/report.md`).

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
# ## At a glance: our averages against the paper's
#
# For each of the paper's methods, our mean over the datasets this set shares with the paper next
# to the published one, their difference with a 95 % interval over those datasets, and in how many
# of them the paper's mean falls inside our interval or Welch's test finds a difference. The
# verdict on the average: *equivalent* when the interval lies within the margin (±1 point of
# accuracy, ±0.01 AUROC), *differs* when it leaves out zero, else *consistent*.

# %%
from tcclib.paper import report
from tcclib.util.markdown import Markdown

glance = report.glance_lines(results, heading=False)
Markdown("\n".join(glance) if glance else "None of this set's datasets is one of the paper's 30: nothing to compare.")

# %% [markdown]
# ## In plain words
#
# Which of the paper's claims our run supports, how close our tables come to the published ones,
# and whether the pretraining beats the baselines. Every figure below is computed from the results
# on disk; with fewer than 30 finished datasets the statements are about those datasets only.

# %%
# NBVAL_CHECK_OUTPUT
from IPython.display import display

from tcclib.paper import tables

Markdown("\n".join(report.plain_summary(results, set_dir)))

# %% [markdown]
# ## The paper's claims on our run

# %%
# NBVAL_CHECK_OUTPUT
for metric in ("accuracy", "auroc"):
    c = report.claims(results, metric) if len(results) else None
    if c is not None and len(c):
        display(Markdown(f"### {metric}", tables.to_markdown(c, index=False)))

# %% [markdown]
# ## Ours against the paper, cell by cell
#
# Every cell of the paper's Tables 2-5 that this set shares with it, one panel per method, its
# datasets sorted: our mean minus the paper's with our 95 % interval, the paper's ± se around
# zero, coloured by the verdict of the per-cell tests below (equivalent within the margin by
# TOST, different by Welch's test, or neither). Saved as `figures/paper_vs_ours_accuracy` and
# `figures/paper_vs_ours_auroc` (PNG and PDF).

# %%
from IPython.display import Image

from tcclib.paper import plots

cell_figures = [p for p in plots.write_paper_vs_ours(results, fig_dir, set_dir.name) if p.suffix == ".png"]
for p in cell_figures:
    display(Image(filename=str(p)))
Markdown(plots.paper_vs_ours_words(results))

# %% [markdown]
# ## Win matrices: ours (with baselines) and the paper's

# %%
methods = tables.method_groups(results)["how"]  # ours with the baselines; the paper's on the same datasets
fig, note = plots.figure3(results, "accuracy", methods=methods, title="accuracy, row beats column: significant "
                          "wins / decided datasets")  # no matrix below 3 datasets
if fig is not None:
    _ = plots.savefig(fig, fig_dir / "report_win_matrices")
Markdown(note)

# %% [markdown]
# ## Correlation value ranges

# %%
import matplotlib.pyplot as plt

cr = report.corr_range_table(set_dir)
if len(cr):
    ax = cr.plot.scatter(x="paper", y="ours", figsize=(5, 5), title="feature correlation value range")
    lim = [0, max(cr.paper.max(), cr.ours.max()) * 1.05]
    ax.plot(lim, lim, "k--", lw=0.8)
    ax.set(xlabel="paper (Table 4)", ylabel="ours (mean over seeds)")
    plt.show()  # (the figure, then what it shows)
Markdown("\n".join(report.corr_range_lines(cr)) if len(cr) else "No correlation ranges stored.")

# %% [markdown]
# ## Ranks over datasets: critical-difference diagrams
#
# Every method and baseline ranked on each finished dataset by its mean over seeds (1 = best),
# averaged over the datasets (Friedman's test, Nemenyi's post-hoc test). A bar joins the methods
# whose average ranks differ by less than the critical difference CD: those are not shown to differ.
# The diagrams are `figures/cd_accuracy` and `figures/cd_auroc` (PNG and PDF); `report.md` (linked
# below) gives the ranks and tests in numbers.

# %%
cd_figures = [p for p in report.write_rank_figures(set_dir, results) if p.suffix == ".png"]
for p in cd_figures:
    display(Image(filename=str(p)))
if not cd_figures:
    print("no critical-difference diagram: it needs at least 3 methods and 2 finished datasets")
Markdown("\n".join(report.ranks_lines(results)))

# %% [markdown]
# ## The full report: `report.md`
#
# Everything above and more (per-dataset tables next to the paper's, the cells that differ, the
# rank tests in numbers, the authors' mode, the deviations from the paper) is written to the set's
# `report.md`, which GitHub renders; its sections:

# %%
text = report.build_report(set_dir, figures=False)  # the diagrams were written just above
store.write_text(text, set_dir / "report.md")
Markdown(report.report_link(text, set_dir / "report.md"))
