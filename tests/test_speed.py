"""Speed work must not change results: importances in parallel are the same bits, the fused
NT-Xent is the same loss, and the benchmark's projection adds up what a run does."""

import os
from pathlib import Path

import numpy as np
import pytest
import torch

from tcclib import datasets as D
from tcclib.config import Config
from tcclib.correlation import importance_matrix
from tcclib.preprocess import prepare

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get(D.DATA_DIR_ENV) or ROOT.parent / "shared/datasets/openml-cc18")


def test_parallel_importances_are_the_same_bits_at_the_published_settings(bc_small):
    cfg = Config()  # 100 trees, depth 10, eta 0.1, subsample 0.7, colsample 0.8, hist
    sp = prepare(bc_small, [614579]).splits[0]
    one = importance_matrix(sp, cfg, n_jobs=1)  # one fit at a time on every core (the old way)
    for jobs in (2, 3):  # concurrent single-threaded fits
        np.testing.assert_array_equal(importance_matrix(sp, cfg, n_jobs=jobs), one)
    assert one.shape == (12, 12) and np.allclose(one.sum(1), 1.0)


@pytest.mark.skipif(not (DATA / "37.arff").exists(),
                    reason=f"no ARFF folder at {DATA} (set {D.DATA_DIR_ENV})")
def test_default_importances_reproduce_the_committed_paper_matrix():
    # outputs/paper/diabetes/importance.npz: the first seed's matrix of the real paper run (float32)
    ds = D.load_dataset("diabetes", data_dir=DATA)
    cfg = Config()
    sp = prepare(ds, cfg.seeds[:1], cfg.test_fraction, cfg.labeled_fraction).splits[0]
    with np.load(ROOT / "outputs/paper/diabetes/importance.npz") as z:
        ref = z[f"seed_{sp.seed}"]
    W = importance_matrix(sp, cfg)  # the default: concurrent fits
    np.testing.assert_array_equal(W.astype(np.float32), ref)


@pytest.mark.parametrize("temperature", [1.0, 0.5])
def test_fused_nt_xent_is_the_reference_loss_and_gradient(temperature):
    from tcclib.losses import _NTXent, nt_xent_pairs, nt_xent_pairs_reference

    z = torch.randn(2, 6, 5, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: _NTXent.apply(x, temperature), (z,))
    g = torch.Generator().manual_seed(0)
    z = torch.randn(3, 64, 16, generator=g, requires_grad=True)
    w = torch.rand(3, generator=g)  # members weighted differently: each one's gradient is its own
    ref = nt_xent_pairs_reference(z, temperature)
    (g_ref,) = torch.autograd.grad(ref, z, w)
    new = nt_xent_pairs(z, temperature)
    (g_new,) = torch.autograd.grad(new, z, w)
    torch.testing.assert_close(new, ref, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(g_new, g_ref, rtol=1e-5, atol=1e-7)
    # member k's loss and gradient depend on member k alone
    (g1,) = torch.autograd.grad(nt_xent_pairs(z[1:2], temperature), z, w[1:2])
    torch.testing.assert_close(g1[1], g_new[1], rtol=1e-5, atol=1e-7)


def test_fused_nt_xent_survives_a_tiny_temperature():
    from tcclib.losses import nt_xent_pairs, nt_xent_pairs_reference

    z = torch.randn(2, 20, 8, generator=torch.Generator().manual_seed(1))
    # at tau = 1e-3 some partners' softmax probabilities underflow to 0: the exact form takes over
    torch.testing.assert_close(nt_xent_pairs(z, 1e-3), nt_xent_pairs_reference(z, 1e-3), rtol=1e-5, atol=1e-3)
    assert torch.isfinite(nt_xent_pairs(z, 1e-3)).all()


def test_benchmark_projection_adds_every_part_of_a_run():
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_epoch", ROOT / "bench" / "bench_epoch.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    # from the committed paper run: renders and small importance models, tens of seconds
    overhead = bench.notebook_overhead()
    assert 10 < overhead < 120, overhead
    r = dict(data_s=1.0, xgb_seed_s=20.0, s_per_epoch=2.0, heads_s=5.0, baselines_s=3.0)
    p = bench.projection(r, 8, overhead)
    assert p["importances"] == 160.0 and p["pretraining"] == 1000.0  # 8 seeds, 500 epochs
    assert p["total"] == pytest.approx(1.0 + 160.0 + 1000.0 + 5.0 + 3.0 + overhead)
    assert bench.projection(r, 8, 0.0, epochs=30)["pretraining"] == 60.0
    import yaml

    paper = yaml.safe_load((ROOT / "params" / "paper.yaml").read_text())
    assert list(bench.PAPER_SET_METHODS) == paper["config"]["methods"]


def test_importance_models_go_to_the_gpu_only_with_the_run():
    from tcclib.correlation import _xgb_params, xgb_device

    assert xgb_device(Config()) == "cpu" and xgb_device(Config(device="cuda")) == "cuda"
    assert "device" not in _xgb_params(Config(), 1, 1, "cpu")  # the published CPU settings, unchanged
    p = _xgb_params(Config(), 1, 1, "cuda")
    assert p["device"] == "cuda" and p["tree_method"] == "hist" and p["n_jobs"] == 1
