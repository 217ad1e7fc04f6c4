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
# # 09 · Your rule: from a new corruption rule to a verdict over the paper's 30 datasets
#
# [![Binder](https://mybinder.org/badge_logo.svg)](https://mybinder.org/v2/gh/tcc-project/tcc/HEAD?labpath=notebooks%2F09_your_rule.py) [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/tcc-project/tcc/blob/main/outputs/screen/09_your_rule.ipynb)
#
# Write a corruption rule in the cell below (it is written to a plugin file, so that every
# process that trains it, the sweep's kernels and Dask workers too, loads the same code), run the
# notebook, and read the verdict: your method ranked among `class`, `random`, `no_pretrain`,
# `logreg`, `self_training` and `xgboost` over the paper's 30 datasets at 100 pretraining epochs x
# the paper's 8 seeds. Only your method trains: the others' results are the committed store
# `outputs/head_variants/100ep/frozen`, and your method trains with each dataset's stored settings
# (same seeds, splits and settings). Its results are stored under `out_dir`: run the notebook again
# with the rule unchanged and nothing trains; edit the rule and only its members train again (the
# rule's code is part of their content key).
#
# ```
# make notebooks    # once after cloning: the .ipynb files papermill reads (git-ignored)
# papermill notebooks/09_your_rule.ipynb runs/09_mine.ipynb -p plugin path/to/rule.py
# python -m tcclib params/screen.yaml --plugin path/to/rule.py      # the same screen, from a shell
# ```
#
# A rule is a `tcclib.method.rules.HowRule` (which row gives each replaced value: `donors`) or
# `WhereRule` (which features are replaced: `mask`) and one `registry.register_method` call
# ([Adding a method](../docs/methods.md#adding-a-method) says what a rule may read and must return;
# a wrong dtype, shape or row range stops at the first draw with a message naming the rule).
# A method's third part, its **objective** (what the encoder learns from the views: NT-Xent,
# VIME's, an autoencoder's, SubTab's, or your own), is screened the same way from its plugin:
# `-p plugin examples/barlow_objective.py` screens Barlow Twins
# ([the objective's contract](../docs/rules.md#the-objectives-contract)); `-p methods "[vime, dae]"`
# screens built-in methods that are not stored in the reference.
# The example is the `nearby` rule of `examples/nearby_rule.py`: each replaced value comes from a
# row whose value of that feature ranks close to the anchor's own. Its screen from a fresh clone
# took the time given in the README (next to the two commands). The screen needs the repository
# (the stored built-ins under `outputs/`): on Colab, read the committed render; run it in a clone
# (or on Binder).
#
# **What it costs.** The full screen (30 datasets x 8 seeds x 100 epochs) takes about 22 min on 2
# cores (one worker process per core). For a quick look, set `datasets` to a few small ones, e.g.
# `datasets = ["kc2", "wdbc"]` (or `-p datasets "[kc2, wdbc]"`): a few minutes. One bar shows the
# datasets done, the members trained, the time so far and an estimate of the rest. **Kernel >
# Interrupt** (or Ctrl-C in a shell) stops it within seconds: the workers end, every finished
# dataset is kept, and running the cell again trains only what is missing.

# %%
# Setup. Without tcclib in this kernel (Colab), install the package alone, pinned to its release.
import importlib.util
import subprocess
import sys

if importlib.util.find_spec("tcclib") is None:
    subprocess.check_call([sys.executable, "-m", "pip", "install", "-q",
                           "https://github.com/tcc-project/tcc/releases/download/v0.2.0/tcclib-0.2.0-py3-none-any.whl"])
import tcclib  # (before matplotlib: a checkout keeps matplotlib's cache in its .cache/)

# %matplotlib inline

# %% tags=["parameters"]
# Parameters: `papermill NOTEBOOK OUT -p NAME VALUE`; `papermill --help-notebook NOTEBOOK` lists them.
plugin: str = ""  # a plugin file (.py, relative to the repository root) or module to screen instead of the rule below (empty: that rule)
methods: list = []  # the new methods to train (empty: every method the plugin registers)
datasets: list = []  # only these datasets (empty: all of the reference, the paper's 30; a quick look: [kc2, wdbc])
reference: str = "outputs/head_variants/100ep/frozen"  # the stored built-ins (relative to the repository root)
compare: list = []  # what the new method is ranked among (empty: class, random, no_pretrain, logreg, self_training, xgboost)
out_dir: str = "runs/screen"  # where the new method's results and the verdict go (relative to the repository root)
data_dir: str = ""  # folder of <did>.arff copies (empty: $TCC_DATA_DIR, else ../shared/datasets/openml-cc18 if there, else OpenML online)
workers: int = 0  # datasets trained at once, each in a worker process (0: one per core)
progress: bool = True  # the overall progress bar

# %%
import os

from tcclib.running import nbparams
from tcclib.util import paths

nbparams.check_injected(
    globals(), ["plugin", "methods", "datasets", "reference", "compare", "out_dir", "data_dir", "workers", "progress"]
)
methods, datasets, compare = nbparams.as_list(methods), nbparams.as_list(datasets), nbparams.as_list(compare)
out = nbparams.run_folder(out_dir, "out_dir")  # a render's Run All writes to runs/screen, not outputs/
out.mkdir(parents=True, exist_ok=True)
rule_path = out / "my_rule.py"
# for the cell below: relative to the kernel's folder (no machine path); with a plugin given, nowhere
rule_file = os.devnull if plugin else os.path.relpath(rule_path)

# %% [markdown]
# ## Your rule
#
# This cell writes the rule to `<out_dir>/my_rule.py` (edit it and run the notebook again). With
# the `plugin` parameter set, that plugin is screened instead (and this cell writes nothing).
# **The cell is that file**, run on its own wherever the rule trains: a helper or a constant
# defined in another cell of this notebook is not in it (a `NameError` naming it says so): define
# it in this cell, or import it here.

# %%
# %%writefile {rule_file}
"""A corruption rule in one file: each replaced value is a nearby value of the same column.

SCARF replaces a corrupted value by the value of a random row of the whole column, so a view may
jump from the smallest value of a feature to the largest.  This rule keeps the jump small: the
donor of feature j is a random row among the ``width`` share of rows whose value of j ranks
closest to the anchor's own (by rank in the column, so it works the same on any scale and on
category codes).  No labels, no importance matrices: a view stays close to its anchor feature
by feature.

Load it the documented way (any process: the sweep's kernels and Dask workers too)::

    python -m tcclib params/screen.yaml --plugin examples/nearby_rule.py   # the 30-dataset verdict
    python -m tcclib params/demo.yaml --plugin examples/nearby_rule.py     # (with methods: [..., nearby])
    tcclib.load_plugins("examples/nearby_rule.py")                         # Python, a notebook cell

and the method ``nearby`` is valid in ``Config.methods`` and ``TCCClassifier(method="nearby")``.
Its members' content key holds this file's code (a hash of the rule's source), so an edit
retrains them, and only them.
"""

import torch

from tcclib.method import registry, rules


class NearbyValue(rules.HowRule):
    """Donors drawn uniformly among the rows whose value of the feature ranks within
    ``width / 2`` of the anchor's (a share of the rows, at least one row on each side)."""

    needs = rules.NOTHING

    def __init__(self, width: float = 0.1, name: str = "nearby"):
        if not 0 < width <= 1:
            raise ValueError(f"width: the share of rows to draw from must be in (0, 1], got {width!r}")
        self.width, self.name = width, name

    def key_params(self) -> dict:
        return {"width": self.width}

    def prepare(self, members: rules.Members):
        """Each member's rows sorted by each feature (``order``) and each row's place in that order (``rank``)."""
        order = members.raw.argsort(dim=1, stable=True)  # [k, N, M]: row at each sorted place
        rank = order.argsort(dim=1)  # [k, N, M]: each row's place
        return order, rank

    def donors(self, members: rules.Members, state, u: torch.Tensor) -> torch.Tensor:
        order, rank = state
        n_rows = order.shape[1]
        half = max(1, round(self.width * n_rows / 2))
        offset = (u * (2 * half + 1)).long().clamp_max(2 * half) - half  # -half .. +half
        place = (rank + offset).clamp(0, n_rows - 1)
        return order.gather(1, place)


registry.register_method("nearby", NearbyValue(width=0.1), "uniform", label="nearby value (10 % of ranks)")

# %% [markdown]
# ## Its contract, checked
#
# The plugin is loaded here (an edited file is run again and replaces what it registered). Before
# the long run, `tcclib.check_rule` trains each new method's rule (and its objective, when it is
# your own) for a few epochs on a small table,
# through a real pseudo-label refresh, and lists every breach of the rule contract in one error
# ([docs/rules.md](../docs/rules.md)): wrong dtypes or shapes, donors out of range at any call, a
# `prepare()` that reads pseudo-labels, draws that are not reproducible or depend on the other
# members. A few seconds; a rule that keeps the contract says so in a line.

# %%
from tcclib.method import plugins
from tcclib.running import screen

origin = "notebook 09" if plugin else plugins.RULE_CELL  # (so that its errors can name the rule cell)
loaded = plugins.load(plugin or str(rule_path), origin, base=paths.project_root())
methods = methods or screen.new_methods([loaded.module])
for method in methods:
    print(tcclib.check_rule(method))

# %% [markdown]
# ## The screen
#
# Every dataset of the reference trains the new method(s), the longest first, each saved as soon
# as it is done (an interrupted run resumes; a dataset done with the rule as it is now is skipped).
# A line per dataset says how long it took and how many members trained.

# %%
job = screen.Screen(methods=tuple(methods), reference=paths.resolve(reference), datasets=tuple(datasets) or None,
                    compared=tuple(compare) or screen.COMPARED, out=out, data_dir=data_dir or None,
                    workers=workers or None, progress=progress)
results = screen.run(job)

# %% [markdown]
# ## The verdict
#
# Average ranks over the datasets' means (1 = best), then a paired Wilcoxon test over the
# datasets' means against each compared method, Friedman + Nemenyi with the critical-difference
# diagram, and per dataset the wins and losses by Welch's t-test over the seeds.

# %%
from IPython.display import Markdown

from tcclib.paper import verdict

compared = list(job.compared)
page = verdict.write(results, list(job.methods), compared, out)
Markdown("\n\n".join(verdict.sentences(results, list(job.methods), compared)))

# %%
Markdown(verdict.shown(verdict.summary(results, list(job.methods), compared)))

# %%
fig = verdict.rank_figure(results, list(job.methods), compared)

# %%
import matplotlib.pyplot as plt

adjusted = verdict.holm_over_page(results, list(job.methods), compared)  # p (Holm): over every test of the page
for metric in verdict.METRICS:
    fig, rank_test = verdict.cd_figure(results, list(job.methods), compared, metric)
    display(fig)  # noqa: F821  (beside its table, not after both)
    plt.close(fig)
    display(Markdown(f"**{metric}**: paired Wilcoxon over the datasets' means; *p (Holm)* over the page's "  # noqa: F821
                     f"{len(adjusted)} tests\n\n"
                     + verdict.shown(verdict.paired(results, list(job.methods), compared, metric, adjusted), metric)))

# %%
import matplotlib.pyplot as plt

for method in job.methods:
    display(Markdown(f"**{method}, per dataset**: Welch's t-test over the seeds, accuracy, p < {verdict.ALPHA}"))  # noqa: F821
    display(Markdown(verdict.shown(verdict.wins(results, method, compared), "accuracy", index=True)))  # noqa: F821
    if "class" in compared:
        display(Markdown(verdict.two_counts(results, method, "class") + " The figure:"))  # noqa: F821
        fig = verdict.difference_figure(results, method, "class")
        display(fig)  # noqa: F821
        plt.close(fig)

# %% [markdown]
# The same page, with the figures as files, is `<out_dir>/verdict.md`; the combined results
# (new and compared, every dataset and seed) are `<out_dir>/results.csv`.
