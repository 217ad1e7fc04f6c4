"""End-to-end training: ensemble equivalence, determinism, learning, clear errors."""

import numpy as np
import pandas as pd
import pytest
import torch

from tcclib.artifacts.importances import importance_matrices
from tcclib.data.preprocess import prepare
from tcclib.data.sources import DatasetError, from_frame
from tcclib.method import pretraining, training
from tcclib.method.config import Config
from tcclib.method.correlation import correlation_range
from tcclib.running.train import run_dataset, run_prepared


def _small_cfg(**kw):
    base = dict(
        seeds=(11, 22),
        epochs=3,
        head_epochs=5,
        pseudo_every=2,
        batch_size=128,
        progress=False,
        xgb_trees=10,
        xgb_depth=3,
    )
    base.update(kw)
    return Config(**base)


def test_ensemble_matches_members_trained_alone(bc_small):
    methods = ("no_pretrain", "random", "class", "oracle", "class_most", "class_most_published")
    cfg = _small_cfg(methods=methods)
    prep = prepare(bc_small, cfg.seeds)
    imp = importance_matrices("bc12", prep.splits, cfg)
    together = run_prepared(prep, cfg, imp)
    for si, seed in enumerate(cfg.seeds):
        for m in methods:
            alone_cfg = cfg.replace(seeds=[seed], methods=[m])
            alone_prep = prepare(bc_small, alone_cfg.seeds)
            alone = run_prepared(alone_prep, alone_cfg, imp[si : si + 1])
            t = together.results.query("seed == @seed and method == @m").iloc[0]
            a = alone.results.iloc[0]
            assert a.accuracy == pytest.approx(t.accuracy, abs=1e-9), (seed, m)
            assert a.auroc == pytest.approx(t.auroc, abs=1e-6), (seed, m)
            ht = together.history.query("seed == @seed and method == @m").loss.to_numpy()
            np.testing.assert_allclose(alone.history.loss.to_numpy(), ht, rtol=1e-5, atol=1e-6)
            pt = together.pseudo.query("seed == @seed and method == @m").pseudo_accuracy.to_numpy(float)
            np.testing.assert_allclose(alone.pseudo.pseudo_accuracy.to_numpy(float), pt)


def test_same_seed_gives_identical_results_on_cpu(bc_small):
    cfg = _small_cfg(methods=("random", "class", "class_least"))
    r1 = run_dataset(bc_small, cfg)
    r2 = run_dataset(bc_small, cfg)
    pd.testing.assert_frame_equal(r1.results, r2.results)
    pd.testing.assert_frame_equal(r1.history, r2.history)
    r3 = run_dataset(bc_small, cfg.replace(seeds=[12, 22]))
    assert not r3.history.loss.equals(r1.history.loss)


def test_all_methods_of_a_seed_start_from_the_same_encoder(bc_small):
    # with zero pretraining epochs every method is "no_pretrain": identical results per seed
    cfg = _small_cfg(epochs=0, methods=("no_pretrain", "random", "class"), keep_embeddings=True)
    e = run_dataset(bc_small, cfg).embeddings
    np.testing.assert_array_equal(e["no_pretrain"]["train"], e["random"]["train"])
    np.testing.assert_array_equal(e["no_pretrain"]["test"], e["class"]["test"])
    # and pretraining moves them
    e2 = run_dataset(bc_small, cfg.replace(epochs=2)).embeddings
    assert not np.allclose(e2["no_pretrain"]["train"], e2["random"]["train"])


def test_short_breast_cancer_run_beats_chance(bc):
    cfg = Config(
        seeds=(614579, 336466),
        methods=("no_pretrain", "random", "class", "oracle"),
        epochs=20,
        head_epochs=50,
        progress=False,
    )
    r = run_dataset(bc, cfg)
    majority = bc.y.value_counts(normalize=True).max()  # 0.63
    assert len(r.results) == 8
    assert (r.results.accuracy > majority + 0.2).all(), r.results
    assert (r.results.auroc > 0.95).all()
    h = r.history.groupby("epoch").loss.mean()
    assert h.iloc[-1] < h.iloc[0]  # contrastive loss goes down
    assert (r.pseudo.pseudo_accuracy > 0.85).all()


def test_correlation_range_and_importances_are_sane(bc_small):
    cfg = _small_cfg()
    prep = prepare(bc_small, [5])
    W = importance_matrices("bc12", prep.splits, cfg)[0]
    assert W.shape == (12, 12)
    np.testing.assert_allclose(W.sum(1), 1.0, atol=1e-6)
    assert np.all(np.diag(W) == 0)
    # radius, perimeter and area (columns 0, 2, 3) predict each other
    assert W[0, [2, 3]].sum() > 0.5
    r = correlation_range(W)
    assert 0 < r <= 1


def test_importance_cache_round_trip(bc_small, tmp_path):
    cfg = _small_cfg()
    prep = prepare(bc_small, [5])
    a = importance_matrices("bc12", prep.splits, cfg, cache_dir=tmp_path)
    assert len(list(tmp_path.glob("*.npz"))) == 1  # the matrix with its key and checksum
    b = importance_matrices("bc12", prep.splits, cfg, cache_dir=tmp_path)
    np.testing.assert_array_equal(a, b)


def test_one_class_table_is_a_clear_error():
    X = pd.DataFrame({"a": np.arange(10.0), "b": np.arange(10.0)})
    with pytest.raises(DatasetError, match="one class"):
        from_frame(X, pd.Series(["x"] * 10))


def test_one_feature_table_cannot_be_corrupted_with_one_left_intact():
    X = pd.DataFrame({"a": np.random.RandomState(0).randn(40)})
    y = pd.Series(np.where(X.a > 0, "p", "n"))
    from tcclib.method.config import ConfigError

    with pytest.raises(ConfigError, match="intact"):
        run_dataset(from_frame(X, y), _small_cfg(methods=("random",)))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")
def test_cuda_matches_cpu_closely(bc_small):
    cfg = _small_cfg(methods=("random", "class"))
    cpu = run_dataset(bc_small, cfg).history.loss.to_numpy()
    gpu = run_dataset(bc_small, cfg.replace(device="cuda")).history.loss.to_numpy()
    np.testing.assert_allclose(cpu, gpu, rtol=1e-2)


def test_baselines_use_the_same_rows_and_beat_chance(bc):
    cfg = Config(
        seeds=(1, 2),
        methods=("no_pretrain",),
        epochs=0,
        head_epochs=5,
        progress=False,
        baselines=("xgboost", "logreg", "self_training"),
        xgb_trees=20,
    )
    r = run_dataset(bc, cfg).results
    assert set(r.method) == {"no_pretrain", "xgboost", "logreg", "self_training"}
    assert (r.groupby("seed").n_labeled.nunique() == 1).all() and (r.groupby("seed").n_test.nunique() == 1).all()
    base = r[r.method != "no_pretrain"]
    assert (base.accuracy > 0.85).all() and (base.auroc > 0.9).all()
    from tcclib.method.config import ConfigError

    with pytest.raises(ConfigError, match="baselines"):
        Config(baselines=("svm",))


def test_ablation_grid_varies_one_setting_at_a_time(bc_small):
    from tcclib.running.ablation import run_grid

    cfg = _small_cfg(seeds=(3,), epochs=1)
    g = run_grid(
        bc_small,
        cfg,
        labeled_fractions=(0.1, 0.5),
        corruption_rates=(0.2,),
        methods=("random", "oracle"),
        progress=False,
    )
    assert len(g) == 3 * 2
    lf = g[g.varied == "labeled_fraction"]
    assert sorted(lf.labeled_fraction.unique()) == [0.1, 0.5] and set(lf.corruption_rate) == {0.4}
    assert set(g[g.varied == "corruption_rate"].labeled_fraction) == {0.3}
    n_lab = lf.groupby("labeled_fraction").n_labeled.first()
    assert n_lab[0.5] > 4 * n_lab[0.1]


def test_an_ablation_grid_reuses_its_stored_members_and_trains_a_method_added(bc_small, tmp_path):
    import json

    from tcclib.artifacts.keys import KEYS_FILE
    from tcclib.running.ablation import grid_key, run_grid

    cfg = _small_cfg(seeds=(3, 4), epochs=1)
    grid = {"labeled_fractions": (0.1, 0.5), "corruption_rates": (0.2,), "progress": False}
    first = run_grid(bc_small, cfg, methods=("random",), store_dir=tmp_path, **grid)
    assert first.attrs["trained_members"] == 3 * 2
    # a grid stored before its keys were kept per point (its key alone) is still taken
    key = grid_key(bc_small, cfg, grid["labeled_fractions"], grid["corruption_rates"], ("random",))
    (tmp_path / KEYS_FILE).write_text(json.dumps({"version": 1, "grid": key}))
    both = run_grid(bc_small, cfg, methods=("no_pretrain", "random"), store_dir=tmp_path, **grid)
    assert both.attrs["trained_members"] == 3 * 2, "only no_pretrain trains"
    pd.testing.assert_frame_equal(both[both.method == "random"].reset_index(drop=True), first, check_dtype=False)
    fresh = run_grid(bc_small, cfg, methods=("no_pretrain", "random"), **grid)
    pd.testing.assert_frame_equal(both, fresh, check_dtype=False)
    again = run_grid(bc_small, cfg, methods=("no_pretrain", "random"), store_dir=tmp_path, **grid)
    assert again.attrs["trained_members"] == 0
    edited = run_grid(bc_small, cfg.replace(head_epochs=2), methods=("random",), store_dir=tmp_path, **grid)
    assert edited.attrs["trained_members"] == 3 * 2, "a setting every member reads retrains them all"


def test_captured_step_switch_falls_back_to_eager_on_the_cpu_bit_for_bit(bc_small):
    # compile: cuda_graph asks for a CUDA graph of the step; on the CPU it runs the eager step
    cfg = _small_cfg(epochs=3, batch_size=96, methods=("random", "class", "class_least"))  # ends in a partial batch
    prep = prepare(bc_small, cfg.seeds)
    imp = importance_matrices("bc12", prep.splits, cfg)
    eager = run_prepared(prep, cfg.replace(compile="off"), imp)
    fallback = run_prepared(prep, cfg.replace(compile="cuda_graph"), imp)
    pd.testing.assert_frame_equal(fallback.results, eager.results)
    pd.testing.assert_frame_equal(fallback.history, eager.history)
    pd.testing.assert_frame_equal(fallback.pseudo, eager.pseudo)
    members = training.set_up(prep, cfg.replace(compile="cuda_graph"), imp, "bc12")
    pt = members.pretraining
    assert pt.mode == "eager" and pt.step == pt.eager_step


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_captured_step_on_cuda_matches_the_eager_step(bc_small):
    # batch 96 on 455 rows: 4 full batches (warm-up, capture, replays) and a partial one (eager)
    cfg = _small_cfg(epochs=4, batch_size=96, methods=("random", "class", "class_least"), device="cuda")
    prep = prepare(bc_small, cfg.seeds)
    imp = importance_matrices("bc12", prep.splits, cfg)
    runs = {}
    for mode in ("off", "cuda_graph"):
        pt = training.set_up(prep, cfg.replace(compile=mode), imp, "bc12").pretraining
        runs[mode] = [pt.run_epoch() for _ in range(cfg.epochs)]
        if mode == "cuda_graph":
            assert isinstance(pt.step, pretraining.CapturedStep) and pt.step.graph is not None
    np.testing.assert_allclose(runs["cuda_graph"], runs["off"], rtol=1e-4)
    # and a whole run (auto: captured on the GPU) stays within the CUDA-vs-CPU tolerance
    cpu = run_dataset(bc_small, cfg.replace(device="cpu")).history.loss.to_numpy()
    gpu = run_dataset(bc_small, cfg).history.loss.to_numpy()
    np.testing.assert_allclose(cpu, gpu, rtol=1e-2)


class _Stop(Exception):
    pass


def test_interrupted_pretraining_resumes_from_its_checkpoint_bit_for_bit(bc_small, tmp_path):
    cfg = _small_cfg(epochs=7, pseudo_every=2, methods=("no_pretrain", "random", "class", "class_least"))
    prep = prepare(bc_small, cfg.seeds)
    imp = importance_matrices("bc12", prep.splits, cfg)
    whole = run_prepared(prep, cfg, imp)

    def crash_at_5(epoch):
        if epoch == 5:
            raise _Stop

    with pytest.raises(_Stop):
        run_prepared(prep, cfg, imp, checkpoint_dir=tmp_path, checkpoint_every=2, on_epoch=crash_at_5)
    (ck,) = tmp_path.glob("bc12-*.pt")
    assert torch.load(ck, weights_only=False)["epoch"] == 4  # the last checkpoint before the crash
    seen = []
    resumed = run_prepared(prep, cfg, imp, checkpoint_dir=tmp_path, checkpoint_every=2, on_epoch=seen.append)
    assert seen == [5, 6, 7]  # only the missing epochs ran
    assert resumed.timings["resumed_at_epoch"] == 4
    pd.testing.assert_frame_equal(resumed.results, whole.results)
    pd.testing.assert_frame_equal(resumed.history, whole.history)
    pd.testing.assert_frame_equal(resumed.pseudo, whole.pseudo)
    assert not list(tmp_path.glob("*.pt"))  # a finished run leaves no checkpoint


def test_checkpoints_wait_their_least_interval(bc_small, tmp_path, monkeypatch):
    from tcclib.running.checkpointing import CHECKPOINT_SECONDS, checkpoint_interval

    cfg = _small_cfg(epochs=4, methods=("random",))
    prep = prepare(bc_small, cfg.seeds)

    def crash_at_3(epoch):
        if epoch == 3:
            raise _Stop

    # due every epoch, but an hour apart at least: none written in three epochs
    every = dict(checkpoint_dir=tmp_path, checkpoint_every=1, on_epoch=crash_at_3)
    with pytest.raises(_Stop):
        run_prepared(prep, cfg, checkpoint_seconds=3600, **every)
    assert not list(tmp_path.glob("*.pt"))
    # with no least interval, the checkpoint of epoch 3 is there
    with pytest.raises(_Stop):
        run_prepared(prep, cfg, checkpoint_seconds=0, **every)
    (ck,) = tmp_path.glob("*.pt")
    assert torch.load(ck, weights_only=False)["epoch"] == 3
    with pytest.raises(ValueError, match="checkpoint_seconds must be a number of seconds >= 0"):
        run_prepared(prep, cfg, checkpoint_dir=tmp_path, checkpoint_seconds=-1)
    # run_dataset's interval: its argument, else the environment, else a minute
    monkeypatch.delenv("TCC_CHECKPOINT_SECONDS", raising=False)
    assert checkpoint_interval() == CHECKPOINT_SECONDS == 60.0
    monkeypatch.setenv("TCC_CHECKPOINT_SECONDS", " 2.5 ")
    assert checkpoint_interval() == 2.5 and checkpoint_interval(0) == 0.0
    monkeypatch.setenv("TCC_CHECKPOINT_SECONDS", "later")
    with pytest.raises(ValueError, match=r"\$TCC_CHECKPOINT_SECONDS must be .* got 'later'"):
        run_dataset(bc_small, cfg)


def test_checkpoint_of_other_settings_is_not_resumed(bc_small, tmp_path):
    cfg = _small_cfg(epochs=4, methods=("random",))
    prep = prepare(bc_small, cfg.seeds)

    def crash_at_2(epoch):
        if epoch == 2:
            raise _Stop

    with pytest.raises(_Stop):
        run_prepared(prep, cfg, checkpoint_dir=tmp_path, checkpoint_every=1, on_epoch=crash_at_2)
    seen = []
    other = cfg.replace(lr=2e-3)
    run_prepared(prep, other, checkpoint_dir=tmp_path, on_epoch=seen.append)
    assert seen == [1, 2, 3, 4]  # started over: the checkpoint belongs to lr=1e-3
    assert len(list(tmp_path.glob("*.pt"))) == 1  # and the other run's checkpoint is left alone
    # the same settings resume it; the progress flag does not change what is computed
    seen.clear()
    run_prepared(prep, cfg.replace(progress=True), checkpoint_dir=tmp_path, on_epoch=seen.append)
    assert seen == [3, 4]  # the checkpoint of epoch 2 was written before the crash
    with pytest.raises(ValueError, match="checkpoint_every"):
        run_prepared(prep, cfg, checkpoint_dir=tmp_path, checkpoint_every=0)


def test_our_adam_steps_as_torch_s_fused_adam_bit_for_bit_and_reads_its_state():
    """model.Adam against torch.optim.Adam(fused=True): two groups with their own learning rates,
    a parameter left without a gradient on some steps (no update, no count), stacked shapes; then a
    state torch saved, loaded into ours, continues as torch continues."""
    from tcclib.method.model import Adam

    gen = torch.Generator().manual_seed(3)
    shapes = [(4, 12, 16), (4, 1, 16), (4, 16, 2), (4, 1, 2)]
    theirs = [torch.randn(s, generator=gen).requires_grad_() for s in shapes]
    ours = [p.detach().clone().requires_grad_() for p in theirs]
    torch_opt = torch.optim.Adam([{"params": theirs[:2], "lr": 1e-3}, {"params": theirs[2:], "lr": 1e-4}], fused=True)
    our_opt = Adam([(ours[:2], 1e-3), (ours[2:], 1e-4)])

    def steps(n: int, skip: int | None = None) -> None:
        for step in range(n):
            grads = [torch.randn(s, generator=gen) for s in shapes]
            for params, opt in ((theirs, torch_opt), (ours, our_opt)):
                opt.zero_grad(set_to_none=True)
                for i, (p, g) in enumerate(zip(params, grads)):
                    if not (step % 2 and i == skip):
                        p.grad = g.clone()
                opt.step()

    steps(6, skip=1)
    assert all(torch.equal(a, b) for a, b in zip(theirs, ours))
    assert our_opt.state[ours[1]]["step"].item() == torch_opt.state[theirs[1]]["step"].item() == 3
    fresh = [p.detach().clone().requires_grad_() for p in theirs]
    ours[:] = fresh
    our_opt = Adam([(fresh[:2], 0.5), (fresh[2:], 0.5)])
    our_opt.load_state_dict(torch_opt.state_dict())
    assert [lr for _, lr in our_opt.groups] == [1e-3, 1e-4]
    steps(3)
    assert all(torch.equal(a, b) for a, b in zip(theirs, ours))
    again = Adam([(ours[:2], 0.0), (ours[2:], 0.0)])
    again.load_state_dict(our_opt.state_dict())
    assert again.state_dict()["param_groups"] == [{"lr": 1e-3, "params": [0, 1]}, {"lr": 1e-4, "params": [2, 3]}]
    with pytest.raises(ValueError, match="other parameter groups"):
        Adam([(ours, 1e-3)]).load_state_dict(our_opt.state_dict())
