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
# # 08 · Your own table
#
# [![Binder](https://mybinder.org/badge_logo.svg)](https://mybinder.org/v2/gh/tcc-project/tcc/HEAD?labpath=notebooks%2F08_your_table.py) [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/tcc-project/tcc/blob/main/outputs/own/08_your_table.ipynb)
#
# Class-conditioned contrastive pretraining on a table of yours, with `tcclib.TCCClassifier`, a
# scikit-learn estimator: `fit(X, y)` with `-1` for the unlabeled rows, then `predict`,
# `predict_proba` and `transform` (the encoder's embeddings) on new rows, and `joblib.dump` to keep
# the model with its preprocessing.
#
# Give the notebook a CSV, TSV, Parquet or ARFF file and its class column (`path`, `target`). It
# splits the rows as the benchmark does (a stratified test split, then a labeled fraction of the
# training rows; the rest are unlabeled), fits the estimator with each method on the training rows
# and the baselines (XGBoost, logistic regression, self-training) on the same labeled rows, and
# scores everything on the test rows. Without a `path` it uses an example table made by
# `tcclib.running.own.synthetic_table`: 2,000 rows, numeric and text columns, missing values, 3 classes.
#
# ```
# make notebooks    # once after cloning: the .ipynb files papermill reads (git-ignored)
# papermill notebooks/08_your_table.ipynb runs/08_mine.ipynb -p path my_table.csv -p target label
# ```
#
# With the defaults (5 methods, 3 baselines, 50 epochs) on the example table, Run All took 43 s in
# JupyterLab from a fresh clone on an idle 2-core CPU (8 min 25 s on one shared with other work);
# fewer `methods` or `epochs` make it shorter. A method may name its head after a `+`:
# `random+probe` is `TCCClassifier("random", head="probe")`, the pretrained setting to try on tables
# like the paper's 30 (`-p methods "[random, random+probe]"`); on tables like practitioners bring
# (thousands of rows, categorical columns, missing values) it was level with logistic regression
# on accuracy, up to a hundredth of AUROC ahead, at 15-140x the fit time (docs/estimator.md).

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
path: str = ""  # your table: .csv, .tsv, .parquet or .arff (empty: the example table); relative to the repository root
target: str = "target"  # the class column of the table
output_dir: str = ""  # where the figures and the fitted model go (empty: runs/own/<table name>)
seed: int = 0  # split, labeled subset and every model's random_state
methods: list = ['no_pretrain', 'random', 'class', 'class_least', 'class_most']  # TCCClassifier methods (tcclib.method.estimator.estimator_methods())
baselines: list = ['xgboost', 'logreg', 'self_training']  # baselines on the same labeled rows (tcclib.method.registry.baseline_names())
labeled_fraction: float = 0.3  # share of the training rows that keep their label (paper: 0.3)
test_fraction: float = 0.2  # share of the rows held out for testing (paper: 0.2)
epochs: int = 50  # contrastive epochs (paper: 500; with 50 Run All took 43 s on an idle 2-core CPU)
head_epochs: int = 100  # epochs of the classification head on the labeled rows (paper: 100)
corruption_rate: float = 0.4  # share of the features corrupted per row (paper: 0.4)
device: str = 'cpu'  # cpu or cuda[:N]
progress: bool = True  # progress bars

# %%
from tcclib.data.sources import load_dataset
from tcclib.running import nbparams, own
from tcclib.util import paths

nbparams.check_injected(globals(), ["path", "target", "output_dir", "seed", "methods", "baselines",
                                    "labeled_fraction", "test_fraction", "epochs", "head_epochs",
                                    "corruption_rate", "device", "progress"])
methods, baselines = nbparams.as_list(methods), nbparams.as_list(baselines)
table = paths.resolve(path) if path else own.example_table()
ds = load_dataset(f"{table}:{target}")
out = nbparams.run_folder(output_dir or paths.runs_root() / "own" / ds.name, "output_dir")  # a render's Run All: runs/
out.mkdir(parents=True, exist_ok=True)
from tcclib.data.sources import summary

summary(ds).to_frame("").T

# %% [markdown]
# ## Every method and baseline on the same split
#
# Each `TCCClassifier` is fitted on the training rows with the unlabeled ones marked `-1`; its
# encoder pretrains on all of them, its head on the labeled ones. Below the progress bars: what the
# split says in words, with how large a difference one split can tell, and every method's accuracy
# (percent of the test rows), AUROC and fit time (wall seconds); `results.csv` keeps them.

# %%
cmp = own.compare(ds, methods, baselines, seed=seed, test_fraction=test_fraction,
                  labeled_fraction=labeled_fraction, verbose=progress, epochs=epochs,
                  head_epochs=head_epochs, corruption_rate=corruption_rate, device=device)
cmp.results.to_csv(out / "results.csv", index=False)

# %%
from tcclib.paper import words
from tcclib.util.markdown import Markdown

Markdown(words.one_split(cmp.results))

# %%
from tcclib.paper import plots

fig = plots.results_figure(cmp.results, f"{ds.name} (seed {seed})")  # a row per method and baseline
_ = plots.savefig(fig, out / "results")  # PNG and PDF

# %% [markdown]
# ## The embeddings
#
# The frozen encoder's embeddings of the test rows (`clf.transform`), reduced to three principal
# components, coloured by the true class: the random initial encoder (`no_pretrain`) next to the
# pretrained ones.

# %%
shown = [m for m in ("no_pretrain", "random", "class") if m in cmp.models] or list(cmp.models)[:3]
emb = {m: dict(test=cmp.models[m].transform(ds.X.iloc[cmp.test_index]), y_test=cmp.y_test) for m in shown}
fig = plots.pca_3d(emb, shown, "test", f"{ds.name}: test-row embeddings", class_names=cmp.classes)
_ = plots.savefig(fig, out / "embeddings")  # PNG and PDF

# %% [markdown]
# ## Keep the model
#
# The fitted estimator pickles with its preprocessing (column names, imputation values, category
# levels): loaded again, it gives the same probabilities. New rows may come with columns in another
# order, missing values or categories never seen in training.

# %%
import joblib
import numpy as np

best = cmp.results[cmp.results.method.isin(list(cmp.models))].sort_values("accuracy", ascending=False).method.iloc[0]
joblib.dump(cmp.models[best], out / "model.joblib")
loaded = joblib.load(out / "model.joblib")
X_new = ds.X.iloc[cmp.test_index[:5]]
print(f"saved the {best} model to {paths.relative_to_root(out / 'model.joblib')}")

# %%
# NBVAL_CHECK_OUTPUT
same = np.array_equal(loaded.predict_proba(X_new), cmp.models[best].predict_proba(X_new))
print(f"reloaded model, same probabilities: {same}")

# %%
loaded.predict(X_new[X_new.columns[::-1]])  # columns in any order

# %% [markdown]
# ## Does pretraining pay? What the benchmark says
#
# One table is one draw. Over the paper's 30 datasets x 8 seeds (`outputs/head_variants/`, made
# by `tools/head_variants.py`), the paper's frozen encoder and the three opt-in heads
# (`TCCClassifier(head="finetune")`: the encoder trains with the head; `head="concat"`: the head
# reads the embedding and the features; `head="probe"`: a logistic regression on both, tuned by
# cross-validation on the labeled rows) against `no_pretrain` under each head and the baselines on
# the same labeled rows (`logreg_cv`: logistic regression tuned the probe's way): the average ranks
# (1 = best) and how the best pretrained variant fared against logistic regression, untuned and
# tuned. Variants still being measured are compared apart, on the datasets they have reached
# (marked partial). Where logistic regression ranks ahead, it is the better choice; where a
# pretrained variant ranks first and beats the tuned logistic regression (on the paper's 30:
# `random+probe`, by small margins), add it to `methods` above and keep whichever wins on your
# split. On twelve tables like practitioners bring, outside the 30, `random+probe` was level with
# logistic regression on accuracy and at most a hundredth ahead on AUROC (not significant
# after Holm's correction), level with `no_pretrain+probe`, at 15-140x the fit time: there,
# logistic regression is the place to start (docs/estimator.md says when to choose which).

# %%
from IPython.display import Markdown, display

from tcclib.paper import heads

stored = heads.load(paths.reference_root() / "head_variants")
if stored is None:
    print("no stored comparison here: outputs/head_variants/results.csv comes with a checkout of the repository")
else:
    display(Markdown("\n".join([heads.coverage(stored), ""] + heads.plain_answer(stored))))
    _ = heads.rank_figure(stored)
