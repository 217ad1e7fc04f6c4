"""Speed work must not change results: importances in parallel are the same bits, the fused
NT-Xent is the same loss, and the benchmark's projection adds up what a run does."""

import os
import sys
from pathlib import Path

import numpy as np
import pytest
import scripts
import torch

from tcclib.data import sources
from tcclib.data.preprocess import prepare
from tcclib.method.config import Config
from tcclib.method.correlation import importance_matrix

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get(sources.DATA_DIR_ENV) or ROOT.parent / "shared/datasets/openml-cc18")


def test_parallel_importances_are_the_same_bits_at_the_published_settings(bc_small):
    cfg = Config()  # 100 trees, depth 10, eta 0.1, subsample 0.7, colsample 0.8, hist
    sp = prepare(bc_small, [614579]).splits[0]
    one = importance_matrix(sp, cfg, n_jobs=1)  # one fit at a time on every core (the old way)
    for jobs in (2, 3):  # concurrent single-threaded fits
        np.testing.assert_array_equal(importance_matrix(sp, cfg, n_jobs=jobs), one)
    assert one.shape == (12, 12) and np.allclose(one.sum(1), 1.0)


@pytest.mark.skipif(not (DATA / "37.arff").exists(), reason=f"no ARFF folder at {DATA} (set {sources.DATA_DIR_ENV})")
def test_default_importances_reproduce_the_committed_paper_matrix():
    # outputs/paper/diabetes/importance.npz: the first seed's matrix of the real paper run (float32)
    ds = sources.load_dataset("diabetes", data_dir=DATA)
    cfg = Config()
    sp = prepare(ds, cfg.seeds[:1], cfg.test_fraction, cfg.labeled_fraction).splits[0]
    with np.load(ROOT / "outputs/paper/diabetes/importance.npz") as z:
        ref = z[f"seed_{sp.seed}"]
    W = importance_matrix(sp, cfg)  # the default: concurrent fits
    np.testing.assert_array_equal(W.astype(np.float32), ref)


@pytest.mark.parametrize("temperature", [1.0, 0.5])
def test_fused_nt_xent_is_the_reference_loss_and_gradient(temperature):
    from tcclib.method.losses import _NTXent, nt_xent_pairs, nt_xent_pairs_reference

    z = torch.randn(2, 6, 5, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: _NTXent.apply(x, temperature), (z,))
    g = torch.Generator().manual_seed(0)
    z = torch.randn(3, 64, 16, generator=g, requires_grad=True)
    w = torch.rand(3, generator=g)  # members weighted differently: each one's gradient is its own
    reference = nt_xent_pairs_reference(z, temperature)
    loss = lambda x: nt_xent_pairs(x, temperature)  # noqa: E731  (the form under test, on any members)
    _assert_reference_loss_and_gradient(loss, reference, z, w, (1e-6, 1e-6), (1e-5, 1e-7))


def _assert_reference_loss_and_gradient(loss, reference, z, w, loss_tolerance, gradient_tolerance):
    """``loss(z)`` equals ``reference`` (computed from ``z``), and so does its gradient under the
    members' weights ``w``; member 1's loss and gradient depend on member 1 alone.  Returns the
    gradient.  Tolerances: (rtol, atol)."""
    (g_ref,) = torch.autograd.grad(reference, z, w)
    new = loss(z)
    (g_new,) = torch.autograd.grad(new, z, w)
    torch.testing.assert_close(new, reference, rtol=loss_tolerance[0], atol=loss_tolerance[1])
    rtol, atol = gradient_tolerance
    torch.testing.assert_close(g_new, g_ref, rtol=rtol, atol=atol)
    (g1,) = torch.autograd.grad(loss(z[1:2]), z, w[1:2])
    torch.testing.assert_close(g1[1], g_new[1], rtol=rtol, atol=atol)
    return g_new


def test_fused_nt_xent_survives_a_tiny_temperature():
    from tcclib.method.losses import nt_xent_pairs, nt_xent_pairs_reference

    z = torch.randn(2, 20, 8, generator=torch.Generator().manual_seed(1))
    # at tau = 1e-3 some partners' softmax probabilities underflow to 0: the exact form takes over
    torch.testing.assert_close(nt_xent_pairs(z, 1e-3), nt_xent_pairs_reference(z, 1e-3), rtol=1e-5, atol=1e-3)
    assert torch.isfinite(nt_xent_pairs(z, 1e-3)).all()


@pytest.mark.parametrize(("views", "rows", "temperature"), [(4, 9, 0.1), (3, 1, 0.5), (2, 5, 1.0)])
def test_shared_nt_xent_of_subsets_is_the_pairs_loss_and_gradient(views, rows, temperature, monkeypatch):
    """SubTab's contrast from one [V b, V b] product equals NT-Xent pair by pair (every pair of
    views, averaged), loss and gradient, each member's its own; one row per view included."""
    from tcclib.method import losses
    from tcclib.method.losses import _NTXentSubsets, nt_xent_subsets, nt_xent_subsets_reference

    z = torch.randn(2, views, rows, 4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: _NTXentSubsets.apply(x, temperature), (z,))
    g = torch.Generator().manual_seed(0)
    z = torch.randn(3, views, rows, 16, dtype=torch.float64, generator=g, requires_grad=True)
    w = torch.rand(3, generator=g, dtype=torch.float64)  # members weighted differently
    loss = lambda x: nt_xent_subsets(x, temperature)  # noqa: E731  (the form under test, on any members)
    reference = nt_xent_subsets_reference(z, temperature)
    g_new = _assert_reference_loss_and_gradient(loss, reference, z, w, (1e-12, 1e-12), (1e-10, 1e-12))
    monkeypatch.setattr(losses, "CHUNK_BYTES", 1)  # (one member at a time, as a large batch goes)
    assert losses._member_chunks(3, views * rows) == [(0, 1), (1, 2), (2, 3)]
    (g_one,) = torch.autograd.grad(nt_xent_subsets(z, temperature), z, w)
    torch.testing.assert_close(g_one, g_new, rtol=1e-10, atol=1e-12)


def test_shared_nt_xent_of_subsets_at_a_tiny_temperature_goes_pair_by_pair():
    from tcclib.method.losses import SUBSETS_SHIFT_LIMIT, nt_xent_subsets, nt_xent_subsets_reference

    z = torch.randn(2, 4, 10, 8, generator=torch.Generator().manual_seed(1))
    assert 2 / 1e-3 > SUBSETS_SHIFT_LIMIT  # (exp(S - 1/tau) would underflow: each pair's own softmax)
    torch.testing.assert_close(nt_xent_subsets(z, 1e-3), nt_xent_subsets_reference(z, 1e-3), rtol=1e-5, atol=1e-3)
    with pytest.raises(ValueError, match="at least 2 views, got \\[2, 1, 10, 8\\]"):
        nt_xent_subsets(z[:, :1], 0.1)


def test_benchmark_projection_adds_every_part_of_a_run():
    bench = _bench_module("bench_epoch")
    # measured: two committed datasets re-rendered from their stored results in one kernel
    measured = bench.notebook_overhead(names=("balance-scale", "diabetes"))
    overhead = measured["per_dataset"]
    assert overhead > 0 and len(measured["seconds"]) == 2, measured  # (its size: the benchmark's figure)
    r = dict(data_s=1.0, xgb_seed_s=20.0, s_per_epoch=2.0, heads_s=5.0, baselines_s=3.0, checkpoint_s=0.5)
    p = bench.projection(r, 8, overhead)
    assert p["importances"] == 160.0 and p["pretraining"] == 1000.0  # 8 seeds, 500 epochs
    # a checkpoint on a multiple of 10 epochs, a minute apart at least: at 2 s per epoch every 30 epochs
    assert p["checkpoints"] == 0.5 * 16  # (epochs 30, 60, ..., 480; none after the last)
    assert p["total"] == pytest.approx(1.0 + 160.0 + 1000.0 + 8.0 + 5.0 + 3.0 + overhead)
    assert bench.checkpoint_count(10.0) == 49 and bench.checkpoint_count(6.0) == 49  # slow: every 10
    # fast: a minute apart (every 20, 60 and 600 epochs)
    assert [bench.checkpoint_count(s) for s in (5.9, 1.0, 0.1)] == [24, 8, 0]
    short = bench.projection(r, 8, 0.0, epochs=30)
    assert short["pretraining"] == 60.0 and short["checkpoints"] == 0.0
    import yaml

    paper = yaml.safe_load((ROOT / "params" / "paper.yaml").read_text())
    # the benchmark projects issue 20's 7-method set: the paper set less the exact published rule
    assert [*bench.PAPER_SET_METHODS, "class_most_published_exact"] == paper["config"]["methods"]


def test_importance_models_go_to_the_gpu_only_with_the_run():
    from tcclib.method.correlation import _xgb_params, xgb_device

    assert xgb_device(Config()) == "cpu" and xgb_device(Config(device="cuda")) == "cuda"
    assert "device" not in _xgb_params(Config(), 1, 1, "cpu")  # the published CPU settings, unchanged
    p = _xgb_params(Config(), 1, 1, "cuda")
    assert p["device"] == "cuda" and p["tree_method"] == "hist" and p["n_jobs"] == 1


@pytest.mark.skipif(torch.cuda.is_available(), reason="the fallback is for a machine whose XGBoost has no GPU")
def test_importances_asked_for_on_a_gpu_fall_back_to_the_cores_with_one_notice(bc_small, capsys):
    import warnings

    from tcclib.method import correlation

    cfg = Config(xgb_trees=5, xgb_depth=3)
    sp = prepare(bc_small, [614579]).splits[0]
    cpu = importance_matrix(sp, cfg)
    capsys.readouterr()
    correlation._told.clear()
    correlation._cuda_problem.cache_clear()  # the real probe: a tiny XGBoost fit on "cuda"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no XGBoost warning per model
        on_gpu = importance_matrix(sp, cfg.replace(device="cuda"))
        again = importance_matrix(sp, cfg.replace(device="cuda"))
    np.testing.assert_array_equal(on_gpu, cpu)  # the CPU's fits, the same bits
    np.testing.assert_array_equal(again, cpu)
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and out[0].startswith("importances: XGBoost on the CPU cores instead of cuda: "), out
    assert correlation.usable_device("cpu") == "cpu" and correlation.usable_device("cuda") == "cpu"


def test_importances_fitted_on_a_gpu_are_keyed_apart_from_the_cpus(bc_small, monkeypatch):
    """GPU trees round otherwise: a GPU's importances never reuse (nor are reused by) the CPU's
    store or cache; where XGBoost falls back to the cores they are the CPU's, under its key."""
    from tcclib.artifacts import importances
    from tcclib.artifacts import keys as content_keys

    sp = prepare(bc_small, [614579]).splits[0]
    cfg = Config(xgb_trees=5, xgb_depth=3)
    cpu = content_keys.importance_key(sp, cfg), importances._cache_digest(sp, cfg)
    # (where the fits run, as correlation.usable_device finds it; patched in the keys' module: a patch
    # in tcclib's training code would change the code identity every key holds)
    monkeypatch.setattr(content_keys, "usable_device", lambda device: "cpu")  # (the fallback)
    assert (content_keys.importance_key(sp, cfg.replace(device="cuda")), importances._cache_digest(sp, cfg)) == cpu
    monkeypatch.setattr(content_keys, "usable_device", lambda device: device)  # (XGBoost fits on the GPU)
    on_gpu = (
        content_keys.importance_key(sp, cfg.replace(device="cuda")),
        importances._cache_digest(sp, cfg.replace(device="cuda")),
    )
    assert on_gpu[0] != cpu[0] and on_gpu[1] != cpu[1]


def test_datasets_side_by_side_on_one_gpu_get_a_share_of_the_host_cores_each():
    from tcclib.util import threads

    gpu = threads.plan(4, "cuda", n_cores=16, environ={})
    assert gpu.on_gpu and gpu.budget.jobs == 4 and gpu.budget.threads == 4
    assert threads.env(gpu.budget)["OMP_NUM_THREADS"] == "4"  # what each dataset's kernel inherits
    assert gpu.line() == (
        "threads: 4 workers x 4 threads (16 cores); GPU: 4 datasets side by side on cuda "
        "(each job's 4 host threads for its data, importance fits and baselines)"
    )
    assert threads.plan(3, "cpu", n_cores=16, environ={}).line() == "threads: 3 workers x 5 threads (16 cores)"
    one = threads.plan(1, "cuda:1", n_cores=2, environ={})
    assert one.line().endswith(
        "GPU: 1 dataset at a time on cuda:1 (each job's 2 host threads for its data, importance fits and baselines)"
    )
    # more datasets than cores: one thread each; --threads and OMP_NUM_THREADS win as on the CPU
    assert threads.plan(8, "cuda", n_cores=4, environ={}).budget.threads == 1
    assert threads.plan(2, "cuda", threads=3, n_cores=16, environ={}).budget.threads == 3
    assert threads.plan(2, "cuda", n_cores=16, environ={"OMP_NUM_THREADS": "6"}).budget.threads == 6


def _bench_module(name):
    return scripts.load(f"bench/{name}.py")


@pytest.mark.parametrize("methods", [("random", "class_least"), ("vime", "vime_class"), ("dae",), ("subtab",)])
def test_profiler_counts_an_epochs_matrix_products_as_torch_does(bc_small, methods):
    from torch.utils.flop_counter import FlopCounterMode

    prof = _bench_module("profile_epoch")
    # two batches of unequal size (150 training rows, batch 64 -> 64, 64, 22), a correlation
    # member and a pseudo-label one, a narrow network
    small = sources.from_frame(bc_small.X.iloc[:188], bc_small.y.iloc[:188], name="bc12_188")
    cfg = Config(
        seeds=(614579,),
        methods=methods,
        hidden_dim=16,
        batch_size=64,
        head_epochs=2,
        epochs=1,
        progress=False,
    )
    pt, tab = prof.build(small, cfg)
    assert len(pt.batches) == 3 and pt.batches[-1][1] - pt.batches[-1][0] < 64
    with FlopCounterMode(display=False) as fc:
        pt.contrastive_epoch(0)
    assert prof.epoch_flops(pt, tab, cfg) == fc.get_total_flops()  # (under each objective: its products)
    if methods[0] != "random":
        return
    # the benchmark's ceiling times exactly these products (no refresh here: no pseudo member)
    ceiling = prof.ceiling_seconds(pt.Kp, pt.N, pt.lab_rows.shape[1], 0, tab.width, tab.n_classes, cfg)
    assert ceiling["gflop"] * 1e9 == pytest.approx(fc.get_total_flops(), rel=1e-12)
    assert 0 < ceiling["contrastive"] == ceiling["total"]


def test_bf16_nt_xent_is_close_to_float32_and_returns_a_bf16_gradient():
    from tcclib.method.losses import nt_xent_pairs, nt_xent_pairs_reference

    g = torch.Generator().manual_seed(3)
    z = torch.randn(3, 128, 32, generator=g)
    zb = z.bfloat16().requires_grad_()
    zf = zb.detach().float().requires_grad_()  # the same values, in float32
    lb, lf = nt_xent_pairs(zb, 0.5), nt_xent_pairs_reference(zf, 0.5)
    assert lb.dtype == torch.float32
    torch.testing.assert_close(lb, lf.detach(), rtol=2e-2, atol=2e-2)
    (gb,) = torch.autograd.grad(lb.sum(), zb)
    (gf,) = torch.autograd.grad(lf.sum(), zf)
    assert gb.dtype == torch.bfloat16
    cos = torch.nn.functional.cosine_similarity(gb.float().flatten(), gf.flatten(), dim=0)
    assert cos > 0.99, cos


def test_bf16_runs_its_products_in_bfloat16_and_learns_as_float32_does(bc):
    """matmul_precision bf16 (opt-in): the networks' products run in bfloat16 (counted by dtype),
    the run stays deterministic and lands near the exact float32 run; the default is untouched."""
    from tcclib.method import model, training
    from tcclib.running.train import run_dataset

    # one seed, 4 epochs: a CPU without native bfloat16 (AVX2) emulates its products; a bf16 run
    # took 9 s on a 2-core EPYC, 18 s with two seeds (3.4 s a pretraining epoch)
    cfg = Config(seeds=(336466,), methods=("no_pretrain", "random", "class"), epochs=4, head_epochs=30, progress=False)
    seen = set()
    real = torch.baddbmm

    def spy(*a, **kw):
        seen.add(a[1].dtype)
        return real(*a, **kw)

    torch.baddbmm = spy
    try:
        bf = run_dataset(bc, cfg.replace(matmul_precision="bf16"))
    finally:
        torch.baddbmm = real
    assert torch.bfloat16 in seen
    exact = run_dataset(bc, cfg)
    again = run_dataset(bc, cfg.replace(matmul_precision="bf16"))
    pd_equal = bf.results[["accuracy", "auroc"]].equals(again.results[["accuracy", "auroc"]])
    assert pd_equal and bf.history.loss.equals(again.history.loss)  # deterministic
    assert not bf.history.loss.equals(exact.history.loss)  # really another precision
    np.testing.assert_allclose(bf.history.loss, exact.history.loss, rtol=0.02)
    assert (bf.results.accuracy > 0.9).all() and (bf.results.auroc > 0.95).all()
    assert abs(bf.results.accuracy.mean() - exact.results.accuracy.mean()) < 0.02
    assert training.float32_precision(cfg.replace(matmul_precision="bf16")) == "highest"
    before = torch.get_float32_matmul_precision()
    with pytest.raises(RuntimeError, match="inside"):
        with training.matmul_precision(cfg.replace(matmul_precision="medium")):
            assert torch.get_float32_matmul_precision() == "medium"
            raise RuntimeError("inside")
    assert torch.get_float32_matmul_precision() == before  # given back, also on an error
    with model.autocast(cfg, "cpu"):  # the default: no autocast at all
        assert not torch.is_autocast_enabled("cpu")


def test_bf16_estimator_fits_and_predicts(bc):
    from tcclib.method.estimator import TCCClassifier

    X, y = bc.X.iloc[:300], bc.y.iloc[:300].to_numpy().copy()
    y[::3] = -1
    clf = TCCClassifier("random", epochs=3, head_epochs=10, matmul_precision="bf16", random_state=0).fit(X, y)
    p = clf.predict_proba(bc.X.iloc[300:])
    assert p.dtype == np.float64 and np.allclose(p.sum(1), 1.0)
    assert clf.transform(bc.X.iloc[300:310]).dtype == np.float32
    assert clf.score(bc.X.iloc[300:], bc.y.iloc[300:]) > 0.8


def test_benchmark_report_reprints_the_committed_measurements(capsys):
    import json

    bench = _bench_module("bench_epoch")
    res = ROOT / "bench" / "results" / "2026-11-25-epyc-avx512"
    rows = json.loads((res / "all.json").read_text())
    md = bench.markdown(rows)
    assert len(rows) == 30 and "= **10.07 h**" in md and "| mfeat-fourier | 1600 | 76 |" in md
    checks = bench.markdown(json.loads((res / "check.json").read_text()))
    assert "| balance-scale | 9.4 | 9.6 | +2.0 % |" in checks and "| MiceProtein |" in checks
    bench.main(["--report", str(res / "check.json")])
    assert "projection error" in capsys.readouterr().out
    with pytest.raises(SystemExit):  # --measured needs --check, and the datasets measured there
        bench.main(["--measured", str(res / "all.json")])
    # a --family file: each objective's line, as the run printed it
    bench.main(["--report", str(ROOT / "bench" / "results" / "2026-11-29-family" / "two-threads.json")])
    family = capsys.readouterr().out
    assert "| credit-g | `vime` | vime | 7.9 | 0.034 (9) | x1.88 (x1.92) |" in family
    assert family.count("| mfeat-fourier |") == 8


def test_fewer_xgboost_bins_are_opt_in_and_key_only_what_they_change(bc_small):
    from tcclib.artifacts import keys as content_keys
    from tcclib.artifacts.importances import _cache_key
    from tcclib.method.config import METHODS, XGB_MAX_BIN, ConfigError
    from tcclib.method.correlation import _xgb_params
    from tcclib.method.estimator import TCCClassifier
    from tcclib.method.inputs import prepare_config

    cfg = Config(seeds=(614579,), methods=list(METHODS))
    assert cfg.xgb_max_bin == XGB_MAX_BIN == 256 and _xgb_params(cfg, 1)["max_bin"] == 256
    fast = cfg.replace(xgb_max_bin=16)
    assert _xgb_params(fast, 1)["max_bin"] == 16
    prep = prepare_config(bc_small, cfg)
    sp = prep.splits[0]
    W, F = importance_matrix(sp, cfg), importance_matrix(sp, fast)
    assert np.allclose(F.sum(1), 1.0) and not np.array_equal(W, F)  # a coarser histogram, other trees
    np.testing.assert_array_equal(importance_matrix(sp, fast), F)  # deterministic
    # keys: the correlation members and the importances change, nothing else; the default adds nothing
    base, k = content_keys.run_keys(prep, cfg), content_keys.run_keys(prep, fast)
    corr = {m for m, s in METHODS.items() if s.needs_importance}
    assert {t.split("/")[1] for t in k.members if k.members[t] != base.members[t]} == corr
    assert k.importance != base.importance and k.baselines == base.baselines
    assert content_keys.run_keys(prep, cfg.replace(xgb_max_bin=256)).members == base.members
    assert _cache_key("m", sp, fast) != _cache_key("m", sp, cfg)
    with pytest.raises(ConfigError, match="xgb_max_bin: must be >= 2"):
        cfg.replace(xgb_max_bin=1)
    assert TCCClassifier(xgb_max_bin=64).config().xgb_max_bin == 64


def test_xgb_bins_benchmark_compares_rows_and_runs(capsys):
    xb = _bench_module("xgb_bins")
    R = np.array([[0.0, 0.6, 0.3, 0.1], [0.5, 0.0, 0.2, 0.3]])  # rows of features 0 and 1
    same = xb.compare(R, R, [0, 1])
    assert same["tv"] == 0 and same["spearman"] == pytest.approx(1) and same["same_top"] == 1
    W = np.array([[0.0, 0.1, 0.3, 0.6], [0.5, 0.0, 0.2, 0.3]])  # feature 0's row reversed
    c = xb.compare(W, R, [0, 1])
    assert c["tv"] == pytest.approx(0.25) and c["spearman"] == pytest.approx(0) and c["same_top"] == 0.5
    xb.main(["--datasets", "breast_cancer", "--models", "2", "--bins", "16"])
    out = capsys.readouterr().out
    assert "breast_cancer: 455 training rows, 30 features, 2 models" in out and "xgb_max_bin  16:" in out


ALLOCATION = """
import ctypes, ctypes.util, sys
from tcclib.util.threads import use_allocator
applied = sorted(use_allocator()) if sys.argv[1] == "apply" else []
FIELDS = "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost"
class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in FIELDS.split()]
libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
libc.mallinfo2.restype, libc.malloc.restype, libc.malloc.argtypes = MallInfo2, ctypes.c_void_p, [ctypes.c_size_t]
mapped = libc.mallinfo2().hblkhd
block = libc.malloc(24 << 20)  # an activation of a hidden layer of the 48-member stack
print(applied, libc.mallinfo2().hblkhd - mapped)
"""


def _glibc_with_mallinfo2() -> bool:
    import ctypes
    import ctypes.util

    try:
        return hasattr(ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6"), "mallinfo2")
    except OSError:
        return False


@pytest.mark.skipif(not _glibc_with_mallinfo2(), reason="glibc's allocator (2.33 or later, for mallinfo2)")
def test_a_job_gets_the_allocator_settings_and_its_freed_tensors_stay_in_the_heap(monkeypatch):
    """What does not vary from run to run: the settings reach a job started as the sweep starts
    one (in its environment from the start), or a running process that applies them; glibc then
    takes a 24 MiB tensor from the heap, where its defaults map fresh pages for it (faulted in and
    zeroed again after every free).  How many page faults that saves varies with the machine's
    state: ``bench/allocator_faults.py`` measures it (docs/performance.md)."""
    import ast
    import subprocess

    from tcclib.util import threads

    for name in (*threads.ALLOCATOR_ENV, threads.ALLOCATOR_SWITCH):  # (a developer's own settings aside)
        monkeypatch.delenv(name, raising=False)

    def allocate(mode: str, **env) -> tuple[list[str], int]:
        """``(the settings use_allocator applied, bytes of the 24 MiB block in fresh mmap pages)``
        in a process started with ``env`` added to this one's."""
        done = subprocess.run(
            [sys.executable, "-c", ALLOCATION, mode],
            env={**os.environ, **env, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            check=True,
        )
        applied, mapped = done.stdout.rsplit("]", 1)
        return ast.literal_eval(applied + "]"), int(mapped)

    job = threads.job_env(1)  # what the sweep's kernels, worker processes and Dask workers start with
    assert {k: job[k] for k in threads.ALLOCATOR_ENV} == threads.ALLOCATOR_ENV and job["OMP_NUM_THREADS"] == "1"
    assert allocate("apply", **job) == ([], 0)  # set from the start: nothing left to apply, from the heap
    assert allocate("apply") == (sorted(threads.ALLOCATOR_ENV), 0)  # a running process applies every one
    applied, mapped = allocate("apply", TCC_ALLOCATOR="system")
    assert applied == [] and mapped >= 24 << 20  # glibc's defaults: fresh pages
    assert threads.allocator_env({"MALLOC_TOP_PAD_": "1"}) == {
        k: v for k, v in threads.ALLOCATOR_ENV.items() if k != "MALLOC_TOP_PAD_"
    }
    assert threads.allocator_env({"TCC_ALLOCATOR": "System"}) == {}
