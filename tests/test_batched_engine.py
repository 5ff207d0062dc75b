"""The study engine equals the study models trained one at a time."""

import copy
import os

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats

from calibtut.experiments.regression_study import run_study_task
from calibtut.models import fit_study, fit_study_batched, fit_study_engine, make_study_model
from calibtut.regularizers.calibration_penalties import StudyLoss


def _data(seed, n=256):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = X[:, 0] + 0.5 * rng.normal(size=n)
    return X, y


SETTINGS = dict(epochs=8, patience=3, batch_size=64)
# each base with its regularizers; SQR with few levels so that the paper form stays small
CASES = [
    ("mix-nll", ("pce-kde", "pce-sort", "qr")),
    ("mix-crps", ("pce-kde", "qr")),
    ("sqr", ("pce-kde", "trunc")),
    ("sqr-affine", ("pce-kde", "trunc")),
]


def _pairs(name, regularizers, n_hidden, seeds):
    """Vanilla models at two seeds and one regularized model per regularizer at the first."""
    options = {"n_levels": 8} if "sqr" in name else {}
    specs = [("none", 0.0, s) for s in seeds] + [(r, 0.5, seeds[0]) for r in regularizers]
    pairs = [make_study_model(name, 3, regularizer=r, lam=lam, seed=i, n_hidden=n_hidden, **options)
             for i, (r, lam, _) in enumerate(specs)]
    return pairs, [s for *_, s in specs], [r for r, *_ in specs]


@pytest.mark.parametrize("n_hidden", [1, 3])
@pytest.mark.parametrize(("name", "regularizers"), CASES)
def test_engine_equals_one_at_a_time(name, regularizers, n_hidden):
    X, y = _data(0)
    val = _data(1, 64)
    pairs, seeds, regs = _pairs(name, regularizers, n_hidden, (10, 11))
    alone = [copy.deepcopy(m) for m, _ in pairs]
    hist_alone = [fit_study(m, X, y, loss=loss, val=val, seed=s, **SETTINGS)
                  for m, (_, loss), s in zip(alone, pairs, seeds)]
    hist_engine = fit_study_engine([m for m, _ in pairs], X, y, losses=[loss for _, loss in pairs], val=val,
                                   seeds=seeds, check_every=2, **SETTINGS)
    for reg, a, (b, _), ha, hb in zip(regs, alone, pairs, hist_alone, hist_engine):
        if reg == "none":
            # the same draws and the same arithmetic: the same epochs, the weights bit for bit;
            # a loss value may differ in its last bit (a mean reduced over the model axis)
            assert (ha.best_epoch, ha.stopped_early, ha.lr) == (hb.best_epoch, hb.stopped_early, hb.lr)
            np.testing.assert_allclose(ha.val_loss, hb.val_loss, rtol=1e-6)
            np.testing.assert_allclose(ha.train_loss, hb.train_loss, rtol=1e-6)
            # (the affine SQR's level embedding, a product with one input column, sums its gradient
            # over the levels in another order batched: equal to float32 rounding)
            atol = 1e-6 if name == "sqr-affine" else 0.0
            for pa, pb in zip(a.state_dict().values(), b.state_dict().values()):
                torch.testing.assert_close(pa, pb, rtol=0.0, atol=atol)
        else:
            # a penalty mapped over the model axis rounds its gradient differently; the first
            # epochs agree closely (QR's NeuralSort at temperature 1e-3 amplifies rounding: not compared)
            if reg != "qr":
                np.testing.assert_allclose(ha.val_loss[:2], hb.val_loss[:2], rtol=1e-4)


def test_qr_models_agree_in_distribution_over_seeds():
    # QR at lam = 1 over 20 seeds: the engine's final validation NLLs and those of the
    # models trained alone come from one law (two-sample Kolmogorov-Smirnov, 1 % level);
    # the same test tells the vanilla models from the QR ones
    X, y = _data(0, 192)
    val = _data(1, 64)
    seeds = list(range(20))
    settings = dict(epochs=4, patience=10, batch_size=64)

    def build(regularizer, lam):
        return [make_study_model("mix-nll", 3, regularizer=regularizer, lam=lam, seed=s, n_hidden=1) for s in seeds]

    pairs = build("qr", 5.0)
    engine = fit_study_engine([m for m, _ in pairs], X, y, losses=[loss for _, loss in pairs], val=val,
                              seeds=seeds, **settings)
    alone = [fit_study(m, X, y, loss=loss, val=val, seed=s, **settings)
             for (m, loss), s in zip(build("qr", 5.0), seeds)]
    vanilla_pairs = build("none", 0.0)
    vanilla = fit_study_engine([m for m, _ in vanilla_pairs], X, y, losses=[loss for _, loss in vanilla_pairs],
                               val=val, seeds=seeds, **settings)
    last = [[h.val_loss[-1] for h in hists] for hists in (engine, alone, vanilla)]
    assert stats.ks_2samp(last[0], last[1]).pvalue > 0.01
    assert stats.ks_2samp(last[0], last[2]).pvalue < 0.01


def _subnormal_survives():
    return bool(torch.tensor(1e-30) * torch.tensor(1e-10) > 0)  # 1e-40 is subnormal in float32


def test_flushing_denormals_changes_only_tiny_values_and_is_switched_off_after():
    # QR's NeuralSort at tau = 1e-3 makes subnormal weights; flushed to zero, the models follow
    # the exact run closely over the first epochs, and the setting is torch's default again after
    X, y = _data(0)
    val = _data(1, 64)
    runs = []
    for flush in (False, True):
        pairs, seeds, _ = _pairs("mix-nll", ("qr",), 1, (10, 11))
        runs.append(fit_study_engine([m for m, _ in pairs], X, y, losses=[loss for _, loss in pairs], val=val,
                                     seeds=seeds, flush_denormal=flush, **SETTINGS))
        assert _subnormal_survives()
    for exact, flushed in zip(*runs):
        np.testing.assert_allclose(exact.val_loss[:2], flushed.val_loss[:2], rtol=1e-4)


def test_stacked_adam_is_per_model_adam():
    # Adam is elementwise: one optimizer over a stacked tensor updates each slice as its own would
    g = torch.Generator().manual_seed(0)
    w = torch.randn(3, 4, 5, generator=g)
    grads = torch.randn(4, 3, 4, 5, generator=g)
    stacked = w.clone().requires_grad_(True)
    alone = [w[i].clone().requires_grad_(True) for i in range(3)]
    opt = torch.optim.Adam([stacked], lr=1e-2)
    opts = [torch.optim.Adam([p], lr=1e-2) for p in alone]
    for step in grads:
        stacked.grad = step.clone()
        opt.step()
        for i, (p, o) in enumerate(zip(alone, opts)):
            p.grad = step[i].clone()
            o.step()
    assert all(torch.equal(stacked.detach()[i], alone[i].detach()) for i in range(3))


def test_a_diverging_model_stops_and_keeps_its_initial_weights():
    # targets of 1e20 overflow the NLL in float32: the first step leaves NaN weights
    X, y = _data(0)
    pairs = [make_study_model("mix-nll", 3, seed=i) for i in range(2)]
    initial = [copy.deepcopy(m.state_dict()) for m, _ in pairs]
    hists = fit_study_engine([m for m, _ in pairs], X, np.full_like(y, 1e20), losses=[l for _, l in pairs],
                             val=_data(1, 64), seeds=[0, 1], epochs=4, batch_size=64)
    assert all(h.diverged and h.stopped_early and h.val_loss == [] and h.lr == [1e-2] for h in hists)
    for (model, _), state in zip(pairs, initial):
        assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), state.values()))


def test_what_does_not_batch_is_refused():
    X, y = np.zeros((8, 2)), np.zeros(8)
    model = make_study_model("mix-nll", 2, seed=0)[0]
    soft = StudyLoss("mixture", "nll", "pce-sort", lam=1.0, sort="soft")
    with pytest.raises(ValueError, match="soft PCE-Sort"):
        fit_study_engine([model], X, y, losses=[soft], val=(X, y), seeds=[0])
    sqr = [make_study_model("sqr", 2, seed=0)[0] for _ in range(2)]
    with pytest.raises(ValueError, match="fixed SQR levels"):
        fit_study_engine(sqr[:1], X, y, losses=[StudyLoss("sqr", levels=[0.5])], val=(X, y), seeds=[0])
    with pytest.raises(ValueError, match="n_levels"):
        fit_study_engine(sqr, X, y, losses=[StudyLoss("sqr", n_levels=4), StudyLoss("sqr")], val=(X, y),
                         seeds=[0, 0])
    with pytest.raises(ValueError, match="check_every"):
        fit_study_engine([model], X, y, losses=[StudyLoss("mixture")], val=(X, y), seeds=[0], check_every=0)
    with pytest.raises(TypeError, match="flush_denormal"):
        fit_study_engine([model], X, y, losses=[StudyLoss("mixture")], val=(X, y), seeds=[0], flush_denormal=1)


def test_old_batched_path_takes_one_hidden_layer_affine_sqr():
    # the dropout of a one-hidden-layer affine SQR multiplies the inputs (no Linear before it)
    X, y = _data(0, 64)
    pairs = [make_study_model("sqr-affine", 3, n_hidden=1, seed=0, n_levels=4) for _ in range(2)]
    hists = fit_study_batched([m for m, _ in pairs], X, y, losses=[l for _, l in pairs], val=(X, y),
                              seeds=[0, 1], epochs=2)
    assert [len(h.val_loss) for h in hists] == [2, 2]


@pytest.mark.skipif(not os.environ.get("CALIBTUT_DATA_MIRROR"), reason="needs the offline data mirror")
def test_study_task_on_the_engine_gives_the_vanilla_rows_of_the_models_trained_alone():
    # the vanilla model (80 % and the post-hoc base on 65 %) is bit for bit the model trained
    # alone, so its rows, post-hoc maps included, are equal; the regularized rows are there too
    args = dict(lambdas="1", regularizers="pce-kde", epochs=3)
    engine = run_study_task("Yacht", 0, "mix-nll", **args)  # the engine is the default trainer
    alone = run_study_task("Yacht", 0, "mix-nll", trainer="alone", **args)
    assert engine["method"].tolist() == alone["method"].tolist()
    vanilla = engine["regularizer"] == "none"
    pd.testing.assert_frame_equal(engine[vanilla], alone[vanilla])
    with pytest.raises(ValueError, match="trainer must be one of"):
        run_study_task("Yacht", 0, "mix-nll", trainer="batched", **args)
