"""Batched training of study models equals training them one at a time."""

import copy

import numpy as np
import pytest
import torch

from calibtut.models import fit_study, make_study_model
from calibtut.models.batched import fit_study_batched


def _data(seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(300, 3))
    y = X[:, 0] + 0.5 * rng.normal(size=300)
    return X, y


CASES = [
    ("mix-nll", "pce-kde", (0.0, 0.2, 5.0)),
    ("mix-crps", "pce-sort", (0.0, 1.0)),
    ("sqr", "trunc", (0.0, 0.2, 5.0)),
    ("sqr-affine", "pce-kde", (0.0, 0.2)),
]


@pytest.mark.parametrize(("name", "regularizer", "lams"), CASES)
def test_batched_equals_one_at_a_time(name, regularizer, lams):
    X, y = _data(0)
    Xv, yv = _data(1)
    options = {"n_levels": 8} if "sqr" in name else {}
    settings = dict(epochs=15, patience=4, batch_size=128)
    alone, hist_alone = [], []
    for i, lam in enumerate(lams):
        model, loss = make_study_model(name, 3, regularizer=regularizer, lam=lam, seed=i, **options)
        model.double()
        hist_alone.append(fit_study(model, X, y, loss=loss, val=(Xv, yv), seed=10 + i, **settings))
        alone.append(model)
    pairs = [
        make_study_model(name, 3, regularizer=regularizer, lam=lam, seed=i, **options) for i, lam in enumerate(lams)
    ]
    together = [m.double() for m, _ in pairs]
    seeds = [10 + i for i in range(len(lams))]
    hist_together = fit_study_batched(
        together, X, y, losses=[loss for _, loss in pairs], val=(Xv, yv), seeds=seeds, **settings
    )
    for a, b, ha, hb in zip(alone, together, hist_alone, hist_together):
        assert (ha.best_epoch, ha.stopped_early) == (hb.best_epoch, hb.stopped_early)
        np.testing.assert_allclose(ha.val_loss, hb.val_loss, rtol=1e-9)
        np.testing.assert_allclose(ha.train_loss, hb.train_loss, rtol=1e-9)
        for pa, pb in zip(a.state_dict().values(), b.state_dict().values()):
            np.testing.assert_allclose(pa.numpy(), pb.numpy(), rtol=1e-8, atol=1e-10)
    # the models stopped at different epochs, so the stack shrank along the way
    assert len({len(h.val_loss) for h in hist_together}) > 1 or name == "sqr-affine"


def test_batched_errors():
    m1, l1 = make_study_model("mix-nll", 2, seed=0)
    m2, l2 = make_study_model("sqr", 2, seed=0)
    X, y = np.zeros((8, 2)), np.zeros(8)
    with pytest.raises(TypeError, match="one class"):
        fit_study_batched([m1, m2], X, y, losses=[l1, l2], val=(X, y), seeds=[0, 0])
    with pytest.raises(TypeError, match="one per model"):
        fit_study_batched([m1], X, y, losses=[l1, l1], val=(X, y), seeds=[0])
    m3 = make_study_model("mix-nll", 2, seed=0)[0]
    m3.head = torch.nn.Linear(128, 12)
    with pytest.raises(ValueError, match="architecture"):
        fit_study_batched([m1, m3], X, y, losses=[l1, l1], val=(X, y), seeds=[0, 0])
    with pytest.raises(ValueError, match="does not fit"):
        fit_study_batched([m2], X, y, losses=[l1], val=(X, y), seeds=[0])


def test_a_diverging_model_stops_alone_and_keeps_its_best_weights():
    # targets of 1e20 overflow the NLL in float32: the first step leaves NaN weights
    X, y = _data(0)
    Xv, yv = _data(1)
    y_huge = np.full_like(y, 1e20)
    settings = dict(val=(Xv, yv), epochs=6, patience=10, batch_size=128)
    pairs = [make_study_model("mix-nll", 3, seed=i) for i in range(2)]
    initial = [copy.deepcopy(m.state_dict()) for m, _ in pairs]
    hist_alone = fit_study(pairs[0][0], X, y_huge, loss=pairs[0][1], seed=0, **settings)
    assert hist_alone.diverged and hist_alone.stopped_early and hist_alone.val_loss == []
    assert all(torch.equal(a, b) for a, b in zip(pairs[0][0].state_dict().values(), initial[0].values()))
    # batched, as alone: every model of the stack diverges at its first step and is
    # restored to its initial weights
    fresh = [make_study_model("mix-nll", 3, seed=i) for i in range(2)]
    models = [m for m, _ in fresh]
    hists = fit_study_batched(models, X, y_huge, losses=[l for _, l in fresh], seeds=[0, 1], **settings)
    assert all(h.diverged and h.stopped_early and h.val_loss == [] for h in hists)
    for model, state in zip(models, initial):
        assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), state.values()))
    # finite targets: nothing diverges
    hists = fit_study_batched(models, X, y, losses=[l for _, l in fresh], seeds=[0, 1], **settings)
    assert not any(h.diverged for h in hists)
