"""Corruption, encoding, loss and model: the parts of the method that must be exactly right."""

import math

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.preprocessing import OneHotEncoder

from tcclib.data.encoding import TensorTable
from tcclib.data.preprocess import prepare
from tcclib.data.sources import from_frame
from tcclib.method import rules
from tcclib.method.config import Config, ConfigError
from tcclib.method.losses import nt_xent


def _gen(seed):
    g = torch.Generator()
    g.manual_seed(seed)
    return g


# ------------------------------------------------------------------ how to corrupt
def test_class_conditioned_donors_share_the_anchor_class():
    g = _gen(0)
    K, N, M, Cn = 3, 200, 7, 4
    labels = torch.randint(0, Cn, (K, N), generator=g)
    donors = rules.draw_donors(labels, Cn, torch.rand(K, N, M, generator=g))
    donor_labels = labels.gather(1, donors.view(K, -1)).view(K, N, M)
    assert torch.equal(donor_labels, labels.unsqueeze(-1).expand(K, N, M))
    # and they are spread over the class, not one fixed row
    assert len(torch.unique(donors[0][labels[0] == 0])) > 10


def test_class_conditioned_views_take_values_from_same_class_rows():
    g = _gen(1)
    K, N, M, Cn = 2, 120, 5, 3
    raw = torch.randn(K, N, M, generator=g)  # distinct values: a value identifies its row
    labels = torch.randint(0, Cn, (K, N), generator=g)
    mask = rules.uniform_mask(
        torch.rand(K, N, M, generator=g), torch.ones(K, M, dtype=torch.bool), torch.tensor([2, 2])
    )
    view = rules.corrupt(raw, mask, rules.draw_donors(labels, Cn, torch.rand(K, N, M, generator=g)))
    for k in range(K):
        for i, j in mask[k].nonzero().tolist():
            src = (raw[k, :, j] == view[k, i, j]).nonzero().squeeze(1)
            assert len(src) == 1 and labels[k, src[0]] == labels[k, i]
    assert torch.equal(view[~mask], raw[~mask])


def test_conventional_donors_cover_the_whole_column():
    g = _gen(2)
    labels = torch.zeros(1, 300, dtype=torch.int64)
    donors = rules.draw_donors(labels, 1, torch.rand(1, 300, 4, generator=g))
    assert donors.min() >= 0 and donors.max() < 300
    assert len(torch.unique(donors)) > 250


@pytest.mark.parametrize("N", [1, 2, 3, 7, 300, 1600, 4097, 65537])
def test_the_whole_column_s_shortcut_draws_the_same_donors(N):
    """``column_donors`` is ``draw_donors`` with every label 0 (what ``random``, VIME, the autoencoder
    and SubTab draw), on uniform draws and at their edges: 0, the largest float32 below 1, and the
    draws that land on a multiple of ``1 / N``."""
    g = _gen(4)
    edges = torch.tensor([0.0, 1.0 - 2.0**-24, 0.5, 1.0 / 3.0] + [i / N for i in range(min(N, 50))])
    u = torch.cat([torch.rand(2, N * 5, generator=g), edges.expand(2, -1)], 1).reshape(2, -1, 1)
    u = torch.cat([u, u.flip(1)], 2)  # [2, R, 2]
    u = u[:, : (u.shape[1] // N) * N].reshape(2, N, -1)  # rows N: the donors lie in 0 .. N-1
    expected = rules.draw_donors(torch.zeros(2, N, dtype=torch.int64), 1, u)
    assert torch.equal(rules.column_donors(u), expected)
    assert torch.equal(rules.SameLabel("column").donors(None, None, u), expected)


# ------------------------------------------------------------------ where to corrupt
@pytest.mark.parametrize("M,p", [(30, 0.4), (7, 0.4), (9, 0.2), (5, 0.6)])
def test_exactly_ceil_pM_features_per_row(M, p):
    cfg = Config(corruption_rate=p)
    k = cfg.corrupted_count(M)
    assert k == math.ceil(p * M)
    g = _gen(3)
    act = torch.ones(2, M, dtype=torch.bool)
    kk = torch.tensor([k, k])
    m1 = rules.uniform_mask(torch.rand(2, 500, M, generator=g), act, kk)
    assert (m1.sum(-1) == k).all()
    W = torch.rand(2, M, M, generator=g)
    m2 = rules.correlation_mask(W, act, kk, torch.tensor([1.0, -1.0]), lambda t: torch.rand(2, 500, M, generator=g))
    assert (m2.sum(-1) == k).all()


def test_inactive_features_are_never_chosen_and_k_is_per_member():
    g = _gen(4)
    act = torch.ones(2, 10, dtype=torch.bool)
    act[1, 7:] = False
    k = torch.tensor([4, 3])
    m = rules.uniform_mask(torch.rand(2, 300, 10, generator=g), act, k)
    assert (m.sum(-1) == k.view(2, 1)).all() and not m[1, :, 7:].any()
    W = torch.rand(2, 10, 10, generator=g)
    m = rules.correlation_mask(W, act, k, torch.ones(2), lambda t: torch.rand(2, 300, 10, generator=g))
    assert (m.sum(-1) == k.view(2, 1)).all() and not m[1, :, 7:].any()


def _textbook_uniform_mask(scores, active, k):
    s = scores.masked_fill(~active.unsqueeze(1), 2.0)
    return s.argsort(dim=-1).argsort(dim=-1) < k.view(-1, 1, 1)


def _textbook_correlation_mask(importance, active, k, sign, draw, temperature, normalization):
    """Algorithm 4 written plainly (gather, out-of-place steps, a mask for every member at every
    step): what the faster :func:`rules.correlation_mask` must give bit for bit."""

    def noise(u):
        return -torch.log(-torch.log(u.clamp(torch.finfo(u.dtype).tiny, 1.0 - 1e-7)))

    K, M, _ = importance.shape
    act = active.unsqueeze(1)
    pick = noise(draw(0)).masked_fill(~act, float("-inf")).argmax(-1)
    N = pick.shape[1]
    chosen = torch.zeros(K, N, M, dtype=torch.bool).scatter_(-1, pick.unsqueeze(-1), True)
    minimp = importance.gather(1, pick.unsqueeze(-1).expand(K, N, M))
    for t in range(1, int(k.max())):
        cand = act & ~chosen
        if normalization == "minmax":
            lo = minimp.masked_fill(~cand, float("inf")).amin(-1, keepdim=True)
            hi = minimp.masked_fill(~cand, float("-inf")).amax(-1, keepdim=True)
            s = (minimp - lo) / (hi - lo).clamp_min(1e-12)
        else:
            s = minimp / (minimp * cand).sum(-1, keepdim=True).clamp_min(1e-12)
        logits = (sign.view(K, 1, 1) * s / temperature).masked_fill(~cand, float("-inf"))
        pick = (logits + noise(draw(t))).argmax(-1)
        take = (t < k).view(K, 1, 1)
        chosen |= torch.zeros_like(chosen).scatter_(-1, pick.unsqueeze(-1), True) & take
        row = importance.gather(1, pick.unsqueeze(-1).expand(K, N, M))
        minimp = torch.where(take, torch.minimum(minimp, row), minimp)
    return chosen


@pytest.mark.parametrize("normalization", ["sum", "minmax"])
@pytest.mark.parametrize("ks", [(5, 5, 5), (5, 3, 1)])
def test_the_fast_samplers_give_the_textbook_masks_bit_for_bit(normalization, ks):
    g = _gen(11)
    K, N, M = 3, 400, 13
    act = torch.ones(K, M, dtype=torch.bool)
    act[2, 9:] = False
    k = torch.tensor(ks)
    # scores on a coarse grid: many ties, which both must break the same way
    scores = torch.randint(0, 6, (K, N, M), generator=g).float() / 6
    assert torch.equal(rules.uniform_mask(scores, act, k), _textbook_uniform_mask(scores, act, k))
    W = torch.rand(K, M, M, generator=g)
    W[0] = W[0].round(decimals=1)  # tied importances too
    uniforms = torch.rand(max(ks), K, N, M, generator=g)
    before = uniforms.clone()
    sign = torch.tensor([1.0, -1.0, 1.0])
    fast = rules.correlation_mask(W, act, k, sign, uniforms, 0.25, normalization)
    plain = _textbook_correlation_mask(W, act, k, sign, lambda t: uniforms[t], 0.25, normalization)
    assert torch.equal(fast, plain)
    assert torch.equal(uniforms, before)  # the caller's draws are not overwritten


def test_take_rows_is_gather_along_rows():
    g = _gen(12)
    x = torch.randn(4, 50, 7, generator=g)
    idx = torch.randint(0, 50, (4, 30), generator=g)
    assert torch.equal(rules.take_rows(x, idx), x.gather(1, idx.unsqueeze(-1).expand(-1, -1, 7)))


def _block_importance(M=12):
    # features 0..5 predict each other strongly, 6..11 weakly, across blocks almost nothing
    W = torch.full((M, M), 0.002)
    W[:6, :6] = 0.3
    W[6:, 6:] = 0.05
    W.fill_diagonal_(0)
    return W / W.sum(1, keepdim=True)


def _same_block_rate(mask):
    a = mask[..., :6].sum(-1)
    b = mask[..., 6:].sum(-1)
    return ((a == 0) | (b == 0)).float().mean().item()


def test_correlation_sampler_prefers_high_or_low_importance():
    g = _gen(5)
    M, N, k = 12, 4000, 4
    W = _block_importance(M).expand(3, M, M)
    act = torch.ones(3, M, dtype=torch.bool)
    # member 0: most, 1: least, 2: uniform for reference
    uni = rules.uniform_mask(torch.rand(1, N, M, generator=g), act[:1], torch.tensor([k]))
    rnd = _same_block_rate(uni[0])
    for norm, strength in (("minmax", 0.3), ("sum", 0.05)):
        corr = rules.correlation_mask(
            W[:2],
            act[:2],
            torch.tensor([k, k]),
            torch.tensor([1.0, -1.0]),
            lambda t: torch.rand(2, N, M, generator=g),
            normalization=norm,
        )
        most, least = _same_block_rate(corr[0]), _same_block_rate(corr[1])
        assert least < rnd - 0.02, norm  # least-correlated spreads across blocks
        assert most > rnd + strength, norm  # most-correlated keeps to one correlated block
    assert (
        most
        < 0.9
        < _same_block_rate(
            rules.correlation_mask(
                W[:1],
                act[:1],
                torch.tensor([k]),
                torch.tensor([1.0]),
                lambda t: torch.rand(1, N, M, generator=g),
                normalization="minmax",
            )[0]
        )
    )


def test_published_flip_uses_least_ranking():
    from tcclib.method.config import METHODS

    assert METHODS["class_most_published"].ranking == "least"
    assert METHODS["class_most"].ranking == "most"
    assert METHODS["class_least"].ranking == "least"


# ------------------------------------------------------------------ loss
def _nt_xent_reference(za, zv, tau):
    z = torch.cat([za, zv]).double()
    n2 = z.shape[0]
    n = n2 // 2
    total = 0.0
    for i in range(n2):
        partner = (i + n) % n2
        s = lambda a, b: float(z[a] @ z[b] / (z[a].norm() * z[b].norm()))  # noqa: E731
        num = math.exp(s(i, partner) / tau)
        den = sum(math.exp(s(i, j) / tau) for j in range(n2) if j != i)
        total += -math.log(num / den)
    return total / n2


@pytest.mark.parametrize("tau", [1.0, 0.5])
def test_nt_xent_matches_the_paper_formula(tau):
    g = _gen(6)
    za, zv = torch.randn(2, 9, 16, generator=g)
    ref = _nt_xent_reference(za, zv, tau)
    assert nt_xent(za, zv, tau).item() == pytest.approx(ref, rel=1e-5)
    batched = nt_xent(torch.stack([za, zv]), torch.stack([zv, za]), tau)
    assert batched[0].item() == pytest.approx(ref, rel=1e-5)
    assert batched[1].item() == pytest.approx(_nt_xent_reference(zv, za, tau), rel=1e-5)


def test_nt_xent_sync_free_form_gives_the_same_values_as_the_branch():
    # the GPU's (and torch.compile's) form of the partner loss: both forms picked element-wise,
    # no host read; the CPU's reads one flag.  Same values, with and without an underflow.
    from tcclib.method.losses import _partner_loss

    g = _gen(8)
    for scale in (1.0, 1e4):  # 1e4: some partners' probabilities underflow to 0
        S = torch.randn(3, 8, 8, generator=g) * scale
        S.diagonal(dim1=1, dim2=2).fill_(float("-inf"))
        idx = torch.arange(8)
        partner = torch.where(idx < 4, idx + 4, idx - 4)
        ppos = torch.softmax(S, -1)[:, idx, partner]
        branch = _partner_loss(S, ppos, idx, partner)
        sync_free = _partner_loss(S, ppos, idx, partner, sync_free=True)
        assert torch.equal(branch, sync_free), scale
        assert torch.isfinite(sync_free).all()
    assert (ppos == 0).any()  # the underflow case was exercised


def test_step_mode_captures_only_on_a_gpu_and_keys_stay_at_the_default():
    from tcclib.artifacts import keys

    assert Config().compile == "auto" and Config().step_mode() == "eager"
    assert Config(compile="cuda_graph").step_mode() == "eager"  # the CPU fallback
    assert Config(device="cuda").step_mode() == "cuda_graph"
    assert Config(device="cuda", compile="off").step_mode() == "eager"
    assert Config(compile="torch_compile").step_mode() == "torch_compile"
    with pytest.raises(ConfigError, match="compile"):
        Config(compile="graph")
    X, y = _mixed_frame()
    sp = prepare(from_frame(X, y, name="mixed"), [1]).splits[0]
    plain = keys.member_key(sp, "random", Config(compile="off"))
    assert keys.member_key(sp, "random", Config()) == plain
    assert keys.member_key(sp, "random", Config(compile="cuda_graph")) == plain
    assert keys.member_key(sp, "random", Config(compile="torch_compile")) != plain
    assert keys.member_key(sp, "no_pretrain", Config(compile="torch_compile")) == keys.member_key(
        sp, "no_pretrain", Config()
    )


# ------------------------------------------------------------------ encoding
def _mixed_frame(n=300, seed=0):
    rs = np.random.RandomState(seed)
    X = pd.DataFrame(
        {
            "num": rs.randn(n),
            "tri": pd.Categorical(rs.choice(["a", "b", "c"], n), categories=["a", "b", "c", "d"]),
            "bin": pd.Categorical(rs.choice(["no", "yes"], n)),
            "const": np.ones(n),
            "num2": rs.randn(n),
        }
    )
    X.loc[rs.rand(n) < 0.1, "num2"] = np.nan
    X.loc[rs.rand(n) < 0.1, "tri"] = np.nan
    y = pd.Series(pd.Categorical(np.where(X["num"] > 0, "pos", "neg")))
    return X, y


def test_preprocessing_follows_the_published_recipe():
    X, y = _mixed_frame()
    prep = prepare(from_frame(X, y, name="mixed"), [7], labeled_fraction=0.3)
    sp = prep.splits[0]
    assert sp.raw_train.shape[0] == 240 and sp.raw_test.shape[0] == 60
    assert sp.labeled.sum() == 72
    assert list(sp.active) == [True, True, True, False, True]  # constant column dropped
    assert np.isfinite(sp.raw_train).all() and np.isfinite(sp.raw_test).all()
    assert abs(sp.raw_train[:, 0].mean()) < 1e-5 and abs(sp.raw_train[:, 0].std() - 1) < 1e-4
    assert abs(sp.raw_train[:, 4].mean()) < 1e-5  # mean-filled then z-scored
    assert set(np.unique(sp.raw_train[:, 1])) <= {0, 1, 2}  # 'd' never seen: 3 levels
    # stratified split keeps the class balance
    assert abs(sp.y_train.mean() - sp.y_test.mean()) < 0.05


def test_torch_one_hot_matches_scikit_learn_after_preprocessing():
    X, y = _mixed_frame()
    prep = prepare(from_frame(X, y), [3, 4])
    tab = TensorTable.from_prepared(prep)
    for si, sp in enumerate(prep.splits):
        cols = np.flatnonzero(sp.active)
        enc = tab.encode(tab.raw_test[si : si + 1], torch.tensor([si]))[0].numpy()
        parts = []
        for j in cols:
            if sp.is_cat[j]:
                sub = OneHotEncoder(drop="if_binary", handle_unknown="ignore", sparse_output=False)
                sub.fit(sp.raw_train[:, [j]])
                parts.append(sub.transform(sp.raw_test[:, [j]]))
            else:
                parts.append(sp.raw_test[:, [j]])
        ref = np.hstack(parts)
        assert ref.shape[1] == int(tab.widths[si])
        np.testing.assert_allclose(enc[:, : ref.shape[1]], ref, atol=1e-6)
        assert not enc[:, ref.shape[1] :].any()


# ------------------------------------------------------------------ settings
@pytest.mark.parametrize(
    "kw,word",
    [
        (dict(corruption_rate=0.0), "corruption_rate"),
        (dict(corruption_rate=1.5), "corruption_rate"),
        (dict(labeled_fraction=-0.1), "labeled_fraction"),
        (dict(epochs=-1), "epochs"),
        (dict(epochs=2.5), "epochs"),
        (dict(methods=("clas",)), "class"),
        (dict(seeds=(1, 1)), "duplicates"),
        (dict(batch_size=0), "batch_size"),
        (dict(lr="fast"), "lr"),
    ],
)
def test_bad_settings_are_clear_errors(kw, word):
    with pytest.raises(ConfigError, match=word):
        Config(**kw)


def test_unknown_setting_suggests_the_right_name():
    with pytest.raises(ConfigError, match="corruption_rate"):
        Config.from_dict({"corruption_rat": 0.3})


def test_corruption_that_leaves_no_feature_intact_is_refused():
    with pytest.raises(ConfigError, match="intact"):
        Config(corruption_rate=1.0).corrupted_count(5)
    with pytest.raises(ConfigError, match="intact"):
        Config(corruption_rate=0.4).corrupted_count(1)


def test_sum_normalisation_is_milder_than_minmax():
    g = _gen(8)
    M, N, k = 12, 4000, 4
    W = _block_importance(M).expand(1, M, M)
    act = torch.ones(1, M, dtype=torch.bool)
    rate = {}
    for norm in ("minmax", "sum"):
        m = rules.correlation_mask(
            W,
            act,
            torch.tensor([k]),
            torch.tensor([1.0]),
            lambda t: torch.rand(1, N, M, generator=g),
            normalization=norm,
        )
        assert (m.sum(-1) == k).all()
        rate[norm] = _same_block_rate(m[0])
    uni = _same_block_rate(rules.uniform_mask(torch.rand(1, N, M, generator=g), act, torch.tensor([k]))[0])
    assert uni + 0.05 < rate["sum"] < rate["minmax"] - 0.05
    with pytest.raises(ValueError, match="normalization"):
        rules.correlation_mask(
            W, act, torch.tensor([k]), torch.tensor([1.0]), lambda t: torch.rand(1, N, M), normalization="l2"
        )
