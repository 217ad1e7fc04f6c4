"""Write the notebooks in ``notebooks/`` from the cell texts below (run after editing them).

The notebooks stay thin: narrative, a ``parameters`` cell, calls into ``tcclib``.  Cells whose
output nbval must reproduce start with ``# NBVAL_CHECK_OUTPUT`` (the tests run nbval in lax
mode: every other output is ignored).
"""

from pathlib import Path

import nbformat as nbf

REPO = "tcc-project/tcc"
ROOT = Path(__file__).resolve().parents[1]


def badges(nb_name: str) -> str:
    return (f"[![Binder](https://mybinder.org/badge_logo.svg)](https://mybinder.org/v2/gh/{REPO}/HEAD?labpath=notebooks%2F{nb_name})"
            f" [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
            f"(https://colab.research.google.com/github/{REPO}/blob/main/notebooks/{nb_name})")


SETUP = """\
# Setup: on Colab (or any kernel without tcclib) install the package from the repository.
import importlib.util, subprocess, sys
if importlib.util.find_spec("tcclib") is None:
    subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", "git+https://github.com/%s"])
import matplotlib
%%matplotlib inline
""" % REPO


def md(s):
    return nbf.v4.new_markdown_cell(s.strip())


def code(s, tags=None):
    c = nbf.v4.new_code_cell(s.strip())
    if tags:
        c.metadata["tags"] = tags
    return c


def params(s):
    return code(s, ["parameters"])


PER_DATASET_PARAMS = """\
dataset = "breast_cancer"   # a name or OpenML id from tcclib.datasets.list_datasets()
set_name = "demo"           # the parameter set this run belongs to
output_dir = None           # where results go (None: outputs/<set_name>/<dataset>)
data_dir = None             # folder of <did>.arff files (None: $TCC_DATA_DIR, else OpenML online)
config = {}                 # tcclib.config.Config fields; empty: the published settings
cache_dir = None            # cache of XGBoost importance matrices
"""

RESOLVE = """\
from pathlib import Path
from tcclib.config import Config
from tcclib.datasets import load_dataset
cfg = Config.from_dict(config)
out = Path(output_dir) if output_dir else Path("..") / "outputs" / set_name / str(dataset)
out.mkdir(parents=True, exist_ok=True)
ds = load_dataset(dataset, data_dir=data_dir)
"""

NB = {}

NB["01_data_prep.ipynb"] = [
    md("""
# 01 · Data preparation

{badges}

The paper evaluates on 30 OpenML-CC18 classification datasets (plus scikit-learn's `breast_cancer`
for its Figures 1-2). Each seed gets its own **stratified 80/20 train/test split**; **30 % of the
training rows are labeled**, the rest are unlabeled (the semi-supervised setting). Columns that are
all missing or constant on the training split are dropped, missing values are filled with the
training mode (categorical) or mean (numeric), numeric columns are z-scored and the target is
label-encoded. Corruption later works on these raw values; one-hot encoding happens after it.
""".replace("{badges}", badges("01_data_prep.ipynb"))),
    code(SETUP),
    params(PER_DATASET_PARAMS),
    code(RESOLVE),
    md("## The table"),
    code("""
# NBVAL_CHECK_OUTPUT
from tcclib.datasets import summary
print(summary(ds).to_string())
"""),
    code("ds.X.head()"),
    md("## Class balance"),
    code("""
from tcclib import plots
ax = plots.class_balance(ds.y, f"{ds.name}: class balance ({len(ds.y)} rows)")
"""),
    md("## Split and labeled subset, first seed\n\nThe training rows are used unlabeled for contrastive pretraining; "
       "only the labeled ones train the classification head (and the pseudo-labelling head)."),
    code("""
# NBVAL_CHECK_OUTPUT
from tcclib.preprocess import prepare
prep = prepare(ds, cfg.seeds[:1], cfg.test_fraction, cfg.labeled_fraction)
sp = prep.splits[0]
print(f"seed {sp.seed}: {len(sp.y_train)} training rows ({int(sp.labeled.sum())} labeled), {len(sp.y_test)} test rows")
print(f"features kept: {sp.n_features} of {len(prep.feature_names)}; encoded width after one-hot: {int(sp.widths.sum())}")
print("classes:", prep.classes)
"""),
]

NB["02_correlation.ipynb"] = [
    md("""
# 02 · Feature correlations: where to corrupt

{badges}

For every feature an XGBoost model (100 trees, depth 10, eta 0.1, subsample 0.7, colsample 0.8)
predicts it from the other features; its normalised gain importances form one row of the
importance matrix `W[i, j]` ("how much feature j helps to predict feature i"). The paper's
*feature correlation value range* is the mean over features of the range of that row.

Algorithm 4 then picks the features to corrupt one after another: the first uniformly, each next
one with probability `softmax(±s_j / 0.25)`, where `s_j` is the candidate's smallest importance
towards the features already chosen (min-max normalised): `+` for **most**, `-` for **least**
correlated. The authors' code flipped the shared matrix in place, so their "most correlated" run
really used the least-correlated ranking; `tcclib` offers both (`class_most`, `class_most_published`).
""".replace("{badges}", badges("02_correlation.ipynb"))),
    code(SETUP),
    params(PER_DATASET_PARAMS),
    code(RESOLVE),
    code("""
from tcclib.preprocess import prepare
from tcclib.correlation import importance_matrices, correlation_range
prep = prepare(ds, cfg.seeds, cfg.test_fraction, cfg.labeled_fraction)
W = importance_matrices(ds.name, prep.splits, cfg, cache_dir=cache_dir, progress=True)
"""),
    md("## Importance matrix (first seed)"),
    code("""
from tcclib import plots
ax = plots.importance_heatmap(W[0], prep.feature_names, f"{ds.name}: XGBoost importance matrix, seed {cfg.seeds[0]}")
"""),
    md("## Feature correlation value range\n\nOne value per seed, and next to it the paper's (Table 4) where it has this dataset."),
    code("""
# NBVAL_CHECK_OUTPUT
import numpy as np
from tcclib.tables import paper_corr_range
ranges = [correlation_range(W[i], sp.active) for i, sp in enumerate(prep.splits)]
paper = paper_corr_range()
paper_value = paper.loc[paper.dataset == ds.name, "corr_range"]
print(f"correlation value range: mean {np.mean(ranges):.2f} over {len(ranges)} seeds (min {min(ranges):.2f}, max {max(ranges):.2f})")
print("paper:", f"{paper_value.iloc[0]:.2f}" if len(paper_value) else "not in the paper's tables")
"""),
    md("## Sampled masks\n\nTwenty rows' corruption masks (black = corrupted) from each sampler, same rows. "
       "With *most*, a row's corrupted features tend to predict each other; with *least* they do not."),
    code("""
import torch
from tcclib import corruption as C
sp = prep.splits[0]
M = len(sp.active)
k = torch.tensor([cfg.corrupted_count(sp.n_features)])
act = torch.as_tensor(sp.active).unsqueeze(0)
g = torch.Generator().manual_seed(0)
Wt = torch.as_tensor(W[:1], dtype=torch.float32)
draw = lambda t: torch.rand(1, 20, M, generator=g)
panels = {
    "random (uniform)": C.uniform_mask(torch.rand(1, 20, M, generator=g), act, k)[0],
    "most correlated": C.correlation_mask(Wt, act, k, torch.tensor([1.0]), draw, cfg.corr_temperature)[0],
    "least correlated": C.correlation_mask(Wt, act, k, torch.tensor([-1.0]), draw, cfg.corr_temperature)[0],
}
fig = plots.masks(panels, f"{ds.name}: {int(k)} of {sp.n_features} features corrupted per row")
"""),
]

NB["03_pretraining.ipynb"] = [
    md("""
# 03 · Contrastive pretraining and evaluation of every method

{badges}

All seeds × methods of the dataset train together as one batched ensemble (numerically the same
as training each alone). Methods:

| method | how to corrupt | where |
| --- | --- | --- |
| `no_pretrain` | — (random frozen encoder) | — |
| `random` | value from the whole column (SCARF) | uniform |
| `class` | value from rows of the anchor's pseudo-class, refreshed every 10 epochs | uniform |
| `oracle` | value from rows of the anchor's true class | uniform |
| `class_least` / `class_most` | pseudo-class | least / most correlated (Algorithm 4) |
| `class_most_published` | pseudo-class | the authors' flipped "most" (= least ranking) |

After pretraining the encoder is frozen and a fresh 2-layer head is trained 100 epochs on the
labeled rows; test accuracy and AUROC are reported per seed.
""".replace("{badges}", badges("03_pretraining.ipynb"))),
    code(SETUP),
    params(PER_DATASET_PARAMS),
    code(RESOLVE),
    code("""
from tcclib import store
from tcclib.train import run_dataset
stored = store.load_results(out)  # what this notebook saved last time here (None on a first run)
run = run_dataset(ds, cfg, cache_dir=cache_dir)
store.save_run(run, out)
print("timings (s):", {k: round(v, 1) for k, v in run.timings.items()})
"""),
    md("## Results per method (mean over seeds)"),
    code("""
summary = run.results.groupby("method", sort=False)[["accuracy", "auroc"]].agg(["mean", "std"])
print(summary.round(3).to_string())
"""),
    md("""
## Reproduction check

Re-running this notebook (as `make test` does, through nbval) compares the fresh results with the
ones it saved here before. On the same machine they are identical. Another CPU rounds floats
differently (AVX2 and AVX-512 kernels differ), training drifts a little, and the means move by a
few thousandths, so the checked line below allows `store.REPRO_TOL`.
"""),
    code("""
cmp = store.compare_means(stored, run.results) if stored is not None else None
if cmp is None:
    print("no stored results here: a first run")
else:
    print(f"identical to the stored results: {bool((cmp['diff'].abs() < 1e-5).all() and cmp.same_seeds.all())}; "
          f"largest change of a mean: {cmp['diff'].abs().max():.4f}")
"""),
    code("""
# NBVAL_CHECK_OUTPUT
print(store.drift_line(cmp))
"""),
    code("""
from tcclib import plots
import matplotlib.pyplot as plt
fig, axes = plt.subplots(1, 2, figsize=(13, 4))
plots.results_bars(run.results, "accuracy", f"{ds.name}: test accuracy", ax=axes[0])
plots.results_bars(run.results, "auroc", f"{ds.name}: test AUROC", ax=axes[1])
fig.tight_layout()
"""),
    md("## Contrastive learning curves and pseudo-label quality"),
    code("""
fig, axes = plt.subplots(1, 2, figsize=(13, 4))
if len(run.history):
    plots.learning_curves(run.history, f"{ds.name}: contrastive loss", ax=axes[0])
plots.pseudo_accuracy(run.pseudo, f"{ds.name}: pseudo-labels", ax=axes[1])
fig.tight_layout()
_ = plots.savefig(fig, out / "learning_curves")
"""),
]

AGG_PARAMS = """\
set_name = "demo"         # the parameter set
set_dir = None            # outputs/<set_name> (None: ../outputs/<set_name>)
figure_dataset = "breast_cancer"
"""

AGG_RESOLVE = """\
from pathlib import Path
from tcclib import store
set_dir = Path(set_dir) if set_dir else Path("..") / "outputs" / set_name
res_dir, fig_dir = set_dir / "results", set_dir / "figures"
results = store.gather(set_dir, "results")
print(store.status(set_dir).to_string(index=False))
"""

NB["04_evaluation.ipynb"] = [
    md("""
# 04 · Evaluation: the paper's Tables 2-5 and win matrices

{badges}

Every finished dataset of the set is gathered into one tidy table. Tables 2-5 show mean ± standard
error over seeds (the paper's definition: `std(ddof=0) / sqrt(n)`), accuracy in percent. The win
matrices count, over datasets, the significant wins of the row method over the column method
(one-sided Welch t-test, p < 0.05) divided by the significant wins plus losses.
""".replace("{badges}", badges("04_evaluation.ipynb"))),
    code(SETUP),
    params(AGG_PARAMS),
    code(AGG_RESOLVE),
    code("""
import pandas as pd
from tcclib import tables
from tcclib.store import write_csv, write_text
write_csv(results, res_dir / "results.csv")
for what in ("history", "pseudo", "corr_range"):
    df = store.gather(set_dir, what)
    if len(df):
        write_csv(df, res_dir / f"{what}.csv")
# baselines (if the set ran them) join the how-to-corrupt tables and win matrices
HOW = [m for m in ["no_pretrain", "random", "class", "oracle", "xgboost", "logreg", "self_training"]
       if m in set(results.method)]
WHERE = [m for m in ["class", "class_least", "class_most", "class_most_published"] if m in set(results.method)]
"""),
    md("## Tables 2-5"),
    code("""
# NBVAL_CHECK_OUTPUT
for metric in ("accuracy", "auroc"):
    for kind, methods in (("how", HOW), ("where", WHERE)):
        if len(methods) < 2:
            continue
        t = tables.paper_style_table(results, metric, methods)
        write_text(tables.to_markdown(t), res_dir / f"table_{metric}_{kind}.md")
        write_csv(tables.summarize(results, metric, methods), res_dir / f"summary_{metric}_{kind}.csv")
        print(f"\\n### {metric}, {kind} to corrupt\\n")
        print(tables.to_markdown(t))
"""),
    md("## Win matrices (Welch t-test, p < 0.05)"),
    code("""
import matplotlib.pyplot as plt
from tcclib.plots import savefig
for metric in ("accuracy", "auroc"):
    fig, axes = plt.subplots(1, 2, figsize=(13, 5))
    for ax, (kind, methods) in zip(axes, (("how", HOW), ("where", WHERE))):
        if len(methods) < 2:
            ax.set_visible(False)
            continue
        frac, wins, decided = tables.win_matrix(results, metric, methods)
        write_csv(frac.reset_index(), res_dir / f"win_matrix_{metric}_{kind}.csv")
        tables.plot_win_matrix(frac, wins, decided, ax=ax, title=f"{metric}: {kind} to corrupt")
    fig.tight_layout()
    _ = savefig(fig, fig_dir / f"win_matrices_{metric}")
"""),
    md("## Next to the paper\n\nOur mean and the paper's for every dataset of this set that the paper reports; "
       "*inside* says whether the paper's mean lies in our 95 % interval."),
    code("""
# NBVAL_CHECK_OUTPUT
for metric in ("accuracy", "auroc"):
    for kind in ("how", "where"):
        cmp = tables.compare_with_paper(results, metric, kind)
        if len(cmp):
            write_csv(cmp, res_dir / f"paper_comparison_{metric}_{kind}.csv")
            print(f"\\n### {metric}, {kind}: agreement with the paper\\n")
            print(tables.to_markdown(tables.agreement_summary(cmp)))
"""),
]

NB["05_figures.ipynb"] = [
    md("""
# 05 · The paper's figures

{badges}

* **Figure 1**: contrastive learning curves on `breast_cancer` (training loss per epoch per method).
* **Figure 2**: 3-D PCA of the encoder's embeddings of the training and test rows, coloured by class.
* **Figure 3**: win matrices over all datasets of the set.

Each is saved as PNG and PDF in `outputs/<set>/figures/`.
""".replace("{badges}", badges("05_figures.ipynb"))),
    code(SETUP),
    params(AGG_PARAMS),
    code(AGG_RESOLVE),
    md("## Figure 1: contrastive learning curves"),
    code("""
import pandas as pd
import matplotlib.pyplot as plt
from tcclib import plots, tables
fd = set_dir / figure_dataset
history = pd.read_csv(fd / "history.csv") if (fd / "history.csv").exists() else pd.DataFrame()
if len(history):
    fig, ax = plt.subplots(figsize=(8, 4.5))
    plots.learning_curves(history, f"Figure 1 · {figure_dataset}: contrastive learning curves", ax=ax)
    _ = plots.savefig(fig, fig_dir / "figure1_learning_curves")
else:
    print(f"no history for {figure_dataset} in this set")
"""),
    md("## Figure 2: PCA of the embeddings"),
    code("""
from tcclib.store import load_embeddings
emb_file = fd / "embeddings.npz"
classes = None
if (fd / "classes.json").exists():
    import json
    classes = json.loads((fd / "classes.json").read_text())
if emb_file.exists():
    emb = load_embeddings(emb_file)
    methods = [m for m in ["no_pretrain", "random", "class", "oracle"] if m in emb]
    for part in ("train", "test"):
        fig = plots.pca_3d(emb, methods, part, f"Figure 2 · {figure_dataset}: 3-D PCA of {part} embeddings (first seed)",
                           class_names=classes)
        _ = plots.savefig(fig, fig_dir / f"figure2_pca_{part}")
else:
    print(f"no embeddings saved for {figure_dataset} (set keep_embeddings in the parameter file)")
"""),
    md("## Figure 3: win matrices (accuracy)"),
    code("""
HOW = [m for m in ["no_pretrain", "random", "class", "oracle"] if m in set(results.method)]
if len(HOW) >= 2 and results.dataset.nunique() >= 1:
    fig, axes = plt.subplots(1, 2, figsize=(13, 5))
    frac, wins, decided = tables.win_matrix(results, "accuracy", HOW)
    tables.plot_win_matrix(frac, wins, decided, ax=axes[0], title=f"ours ({results.dataset.nunique()} datasets)")
    pf, pw, pdd = tables.paper_win_matrix("accuracy", "how")
    tables.plot_win_matrix(pf, pw, pdd, ax=axes[1], title="paper (30 datasets, from its Table 2)")
    fig.suptitle("Figure 3 · row beats column: significant wins / decided datasets")
    fig.tight_layout()
    _ = plots.savefig(fig, fig_dir / "figure3_win_matrix")
"""),
]

NB["06_report.ipynb"] = [
    md("""
# 06 · Reproduction report: our run next to the paper

{badges}

Does the paper's claim hold? For every finished dataset of the set: our mean ± standard error
next to the published one (Tables 2-5, shipped with `tcclib`), the difference, and whether the
paper's mean lies in our 95 % interval; the paper's claims checked on our win matrices; the
baselines a practitioner would try first (XGBoost, logistic regression, self-training) on the
same labeled rows and test split; the feature correlation value ranges. The same report is
written as markdown to `outputs/<set>/report.md`.
""".replace("{badges}", badges("06_report.ipynb"))),
    code(SETUP),
    params(AGG_PARAMS.replace('"demo"', '"paper"')),
    code(AGG_RESOLVE),
    md("""
## In plain words

Which of the paper's claims our run supports, how close our tables come to the published ones,
and whether the pretraining beats the baselines. Every figure below is computed from the results
on disk; with fewer than 30 finished datasets the statements are about those datasets only.
"""),
    code("""
# NBVAL_CHECK_OUTPUT
from tcclib import report, tables
print("\\n".join(report.plain_summary(results, set_dir)))
"""),
    md("## The paper's claims on our run"),
    code("""
# NBVAL_CHECK_OUTPUT
for metric in ("accuracy", "auroc"):
    c = report.claims(results, metric) if len(results) else None
    if c is not None and len(c):
        print(f"\\n### {metric}\\n")
        print(tables.to_markdown(c, index=False))
"""),
    md("## Win matrices: ours (with baselines) and the paper's"),
    code("""
import matplotlib.pyplot as plt
from tcclib.plots import savefig
methods = [m for m in ["no_pretrain", "random", "class", "oracle", "xgboost", "logreg", "self_training"]
           if m in set(results.method)]
if len(methods) >= 2:
    fig, axes = plt.subplots(1, 2, figsize=(15, 6))
    tables.plot_win_matrix(*tables.win_matrix(results, "accuracy", methods), ax=axes[0],
                           title=f"ours ({results.dataset.nunique()} datasets)")
    tables.plot_win_matrix(*tables.paper_win_matrix("accuracy", "how"), ax=axes[1], title="paper (Figure 3)")
    fig.tight_layout()
    _ = savefig(fig, fig_dir / "report_win_matrices")
"""),
    md("## Correlation value ranges"),
    code("""
cr = report.corr_range_table(set_dir)
if len(cr):
    ax = cr.plot.scatter(x="paper", y="ours", figsize=(5, 5), title="feature correlation value range")
    lim = [0, max(cr.paper.max(), cr.ours.max()) * 1.05]
    ax.plot(lim, lim, "k--", lw=0.8)
    ax.set(xlabel="paper (Table 4)", ylabel="ours (mean over seeds)")
"""),
    md("## The full report (also in `report.md`)"),
    code("""
from IPython.display import Markdown
from tcclib.store import write_text
text = report.build_report(set_dir)
write_text(text, set_dir / "report.md")
Markdown(text)
"""),
]

NB["07_ablation.ipynb"] = [
    md("""
# 07 · Beyond the paper: labeled fraction and corruption rate

{badges}

The paper fixes 30 % labeled rows and a corruption rate of 0.4. Here each is varied on its own
(the other at the published value) for `random`, `class` and `oracle`, with every seed, on the
same splits. Does class-conditioning help more when labels are scarce (worse pseudo-labels) or
when more of the row is corrupted?
""".replace("{badges}", badges("07_ablation.ipynb"))),
    code(SETUP),
    params(PER_DATASET_PARAMS + """\
labeled_fractions = [0.05, 0.1, 0.3, 0.5]
corruption_rates = [0.2, 0.4, 0.6]
ablation_methods = ["random", "class", "oracle"]
"""),
    code(RESOLVE),
    code("""
from tcclib.ablation import run_grid
from tcclib.store import write_csv
grid = run_grid(ds, cfg, labeled_fractions, corruption_rates, ablation_methods, cache_dir=cache_dir)
write_csv(grid, out / "results.csv")
"""),
    md("## Mean test accuracy per setting"),
    code("""
# NBVAL_CHECK_OUTPUT
for varied in ("labeled_fraction", "corruption_rate"):
    t = grid[grid.varied == varied].pivot_table(index=varied, columns="method", values="accuracy", aggfunc="mean")
    print(t[[m for m in ablation_methods if m in t.columns]].round(3).to_string(), "\\n")
"""),
    code("""
import matplotlib.pyplot as plt
from tcclib import plots
fig, axes = plt.subplots(2, 2, figsize=(12, 8))
for col, varied in enumerate(("labeled_fraction", "corruption_rate")):
    for row, metric in enumerate(("accuracy", "auroc")):
        plots.ablation(grid, varied, metric, f"{ds.name}: {metric} vs {varied.replace('_', ' ')}", ax=axes[row, col])
fig.tight_layout()
_ = plots.savefig(fig, out / "ablation")
"""),
]


def main():
    out = ROOT / "notebooks"
    out.mkdir(exist_ok=True)
    for name, cells in NB.items():
        nb = nbf.v4.new_notebook()
        nb.cells = cells
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nb.metadata["language_info"] = {"name": "python"}
        for i, c in enumerate(nb.cells):
            c["id"] = f"{name[:2]}-{i:02d}"
        nbf.write(nb, out / name)
        print("wrote", out / name)


if __name__ == "__main__":
    main()
