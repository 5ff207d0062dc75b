"""Tests of the base models of paper 002: mixture density network and the two SQR forms."""

import numpy as np
import pytest
import scoringrules
import torch
from scipy import stats

from calibtut.metrics import crps_mixture, nll_mixture
from calibtut.metrics import pit_mixture as pit_mixture_numpy
from calibtut.metrics.torch import pit_mixture
from calibtut.models import (
    EVAL_LEVELS,
    MixtureMLP,
    SQRNet,
    fit,
    fit_study,
    fit_study_batched,
    make_study_model,
    predict_mixture,
    predict_quantiles,
)
from calibtut.regularizers import StudyLoss


def _hetero(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 2))
    y = X[:, 0] + (0.2 + 0.5 * np.abs(X[:, 1])) * rng.normal(size=n)
    return X, y


def test_mixture_architecture_matches_the_study():
    model = MixtureMLP(5, seed=0)
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == [(5, 128), (128, 128), (128, 128), (128, 9)]
    dropouts = [m for m in model.modules() if isinstance(m, torch.nn.Dropout)]
    assert len(dropouts) == 1 and dropouts[0].p == 0.2
    # sigma = softplus(rho) + 0.01: a hugely negative rho gives the floor 0.01
    with torch.no_grad():
        model.head.bias[3:6] = -1e4
    _, _, stds = model.eval()(torch.zeros(2, 5))
    assert torch.allclose(stds, torch.full_like(stds, 0.01))


def test_mixture_is_deterministic_and_dropout_only_in_training():
    x = torch.randn(16, 3, generator=torch.Generator().manual_seed(0))
    a, b = MixtureMLP(3, seed=1), MixtureMLP(3, seed=1)
    assert all(torch.equal(u, v) for u, v in zip(a.eval()(x), b.eval()(x)))
    a.train()
    torch.manual_seed(0)
    w1 = a(x)[1]
    torch.manual_seed(1)
    w2 = a(x)[1]
    assert not torch.equal(w1, w2)


def test_mixture_cdf_matches_numpy_pit_and_scipy():
    rng = np.random.default_rng(0)
    w = rng.dirichlet(np.ones(3), size=50)
    m, s, y = rng.normal(size=(50, 3)), rng.uniform(0.1, 2, size=(50, 3)), rng.normal(size=50)
    got = pit_mixture(*(torch.as_tensor(a) for a in (y, w, m, s))).numpy()
    np.testing.assert_allclose(got, pit_mixture_numpy(y, w, m, s), atol=1e-12)
    np.testing.assert_allclose(got, (w * stats.norm.cdf(y[:, None], m, s)).sum(1), atol=1e-12)


def test_mixture_losses_match_scoringrules():
    model = MixtureMLP(2, seed=0).double().eval()
    X, y = _hetero(40, 0)
    with torch.no_grad():
        out = model(torch.as_tensor(X))
    yt = torch.as_tensor(y)
    w, m, s = (t.detach().numpy() for t in out)
    nll = float(StudyLoss("mixture", "nll")(out, yt))
    crps = float(StudyLoss("mixture", "crps")(out, yt))
    assert nll == pytest.approx(np.mean(scoringrules.logs_mixnorm(y, m, s, w)), rel=1e-10)
    assert crps == pytest.approx(np.mean(scoringrules.crps_mixnorm(y, m, s, w)), rel=1e-8)
    assert nll == pytest.approx(nll_mixture(y, w, m, s), rel=1e-10)
    assert crps == pytest.approx(crps_mixture(y, w, m, s), rel=1e-10)


@pytest.mark.parametrize("score", ["nll", "crps"])
def test_mixture_training_learns_heteroscedastic_scale(score):
    X, y = _hetero(600, 1)
    Xv, yv = _hetero(300, 2)
    model = MixtureMLP(2, hidden=(32, 32), seed=0)
    hist = fit(model, X, y, loss=StudyLoss("mixture", score), epochs=60, batch_size=128, lr=1e-2,
               patience=30, val=(Xv, yv), seed=0, progress=False)
    assert hist.best_epoch >= 5
    w, m, s = predict_mixture(model, Xv)
    pit = pit_mixture_numpy(yv, w, m, s)
    # calibrated enough that a KS test against uniform does not reject strongly
    assert stats.kstest(pit, "uniform").pvalue > 1e-3
    # the spread follows |x_2|
    spread = np.sqrt((w * (s**2 + m**2)).sum(1) - (w * m).sum(1) ** 2)
    assert stats.spearmanr(np.abs(Xv[:, 1]), spread).statistic > 0.5


def test_affine_sqr_is_affine_in_the_level_and_paper_sqr_is_not():
    x = torch.randn(6, 3, generator=torch.Generator().manual_seed(0))
    levels = torch.linspace(0.05, 0.95, 19)
    affine = SQRNet(3, form="affine", seed=0).eval().quantiles(x, levels)
    slopes = affine.diff(dim=1) / 0.05
    assert torch.allclose(slopes, slopes[0, 0].expand_as(slopes), atol=1e-4)
    paper = SQRNet(3, form="paper", seed=0).eval().quantiles(x, levels)
    second = paper.diff(n=2, dim=1).abs().max()
    assert second > 1e-6
    # the authors' architecture: a linear body output (no ReLU) plus a 1 -> 128 level embedding
    net = SQRNet(3, form="affine", seed=0)
    assert isinstance(net.body[-1], torch.nn.Linear) and net.level_embedding.in_features == 1


@pytest.mark.parametrize("form", ["paper", "affine"])
def test_sqr_quantile_rows_are_computed_per_level(form):
    net = SQRNet(2, form=form, hidden=(8, 8), seed=0).eval()
    x = torch.randn(4, 2, generator=torch.Generator().manual_seed(1))
    levels = torch.tensor([0.1, 0.5, 0.9])
    q = net.quantiles(x, levels)
    for j, a in enumerate(levels):
        np.testing.assert_allclose(q[:, j].detach(), net.quantiles(x, a[None])[:, 0].detach(), atol=1e-6)


@pytest.mark.parametrize("form", ["paper", "affine"])
def test_sqr_training_covers_the_levels(form):
    X, y = _hetero(800, 3)
    Xt, yt = _hetero(2000, 4)
    model = SQRNet(2, form=form, hidden=(32, 32, 32), seed=0)
    fit(model, X, y, loss=StudyLoss("sqr", n_levels=16), epochs=40, batch_size=256, seed=0, progress=False)
    q = predict_quantiles(model, Xt)
    assert q.shape == (2000, 19)
    freq = (yt[:, None] <= q).mean(0)
    assert np.max(np.abs(freq - EVAL_LEVELS)) < 0.12


def test_sqr_loss_is_mean_pinball_at_fixed_levels():
    net = SQRNet(2, hidden=(8,), seed=0).double().eval()
    X, y = _hetero(30, 5)
    lv = np.array([0.2, 0.5, 0.8])
    with torch.no_grad():
        got = float(StudyLoss("sqr", levels=lv)(net(torch.as_tensor(X)), torch.as_tensor(y)))
    q = predict_quantiles(net, X, lv)
    want = np.mean(np.maximum(lv * (y[:, None] - q), (lv - 1) * (y[:, None] - q)))
    assert got == pytest.approx(want, rel=1e-6)


def test_clear_errors():
    with pytest.raises(ValueError, match="form"):
        SQRNet(2, form="nonlinear")
    with pytest.raises(ValueError, match="dropout"):
        MixtureMLP(2, dropout=1.0)
    with pytest.raises(ValueError, match="strictly increasing"):
        predict_quantiles(SQRNet(2, seed=0), np.zeros((2, 2)), [0.5, 0.2])
    with pytest.raises(TypeError, match="SQRNet"):
        predict_quantiles(MixtureMLP(2), np.zeros((2, 2)))


@pytest.mark.parametrize("name", ["mix-nll", "mix-crps", "sqr", "sqr-affine"])
def test_study_models_by_name_train_deterministically(name):
    X, y = _hetero(200, 6)
    Xv, yv = _hetero(60, 7)
    results = []
    for _ in range(2):
        options = {"n_levels": 8} if "sqr" in name else {}
        model, loss = make_study_model(name, 2, seed=3, **options)
        hist = fit_study(model, X, y, loss=loss, val=(Xv, yv), seed=5, epochs=4)
        results.append((hist.val_loss, [p.detach().clone() for p in model.parameters()]))
    assert results[0][0] == results[1][0]
    assert all(torch.equal(a, b) for a, b in zip(results[0][1], results[1][1]))


def test_study_model_errors():
    with pytest.raises(ValueError, match="name must be one of"):
        make_study_model("mix", 2)
    with pytest.raises(ValueError, match="applies to"):
        make_study_model("sqr", 2, regularizer="qr", lam=1.0)
    with pytest.raises(ValueError, match="lam must be"):
        make_study_model("mix-nll", 2, regularizer="pce-kde", lam=-1.0)


def test_fit_study_restores_the_best_checkpoint_after_patience():
    X, y = _hetero(600, 8)
    Xv, yv = _hetero(200, 9)
    model, loss = make_study_model("mix-nll", 2, seed=0)
    hist = fit_study(model, X, y, loss=loss, val=(Xv, yv), seed=0, epochs=400, patience=3, batch_size=256)
    assert hist.stopped_early and len(hist.val_loss) == hist.best_epoch + 4
    assert min(hist.val_loss) == hist.best_loss
    xv, yv_t = torch.as_tensor(Xv, dtype=torch.float32), torch.as_tensor(yv, dtype=torch.float32)
    with torch.no_grad():
        restored = float(loss(model.eval()(xv), yv_t))
    assert restored == pytest.approx(hist.best_loss, rel=1e-5)


def test_fit_study_early_stops_on_the_validation_base_loss_alone():
    # The authors' EarlyStopping and ModelCheckpoint monitor val/base_loss (reading notes,
    # Section 1.2). With QR at lambda = 1 on this data the regularized objective is lowest
    # at another epoch than the base NLL, so the old rule (base + lambda * R) restores
    # a different checkpoint, with a worse base loss.
    X, y = _hetero(300, 8)
    Xv, yv = _hetero(100, 9)
    settings = dict(val=(Xv, yv), seed=0, epochs=20, patience=20, batch_size=128)

    def trained(**kwargs):
        model, loss = make_study_model("mix-nll", 2, regularizer="qr", lam=1.0, seed=0)
        model.double()
        return model, loss, fit_study(model, X, y, loss=loss, **settings, **kwargs)

    model, loss, hist = trained()
    penalized_model, _, penalized_hist = trained(val_loss=loss)
    xv, yv_t = torch.as_tensor(Xv), torch.as_tensor(yv)
    with torch.no_grad():
        base = [float(loss.base_loss()(m(xv), yv_t)) for m in (model, penalized_model)]
        full = [float(loss(m(xv), yv_t)) for m in (model, penalized_model)]
    assert hist.best_epoch != penalized_hist.best_epoch
    assert base[0] == pytest.approx(hist.best_loss, rel=1e-9) and hist.best_loss == min(hist.val_loss)
    assert base[0] < base[1] and full[1] < full[0]
    # the batched path follows the same rule
    twin, twin_loss = make_study_model("mix-nll", 2, regularizer="qr", lam=1.0, seed=0)
    [twin_hist] = fit_study_batched([twin.double()], X, y, losses=[twin_loss], seeds=[0], **{
        k: v for k, v in settings.items() if k != "seed"})
    assert twin_hist.best_epoch == hist.best_epoch
    # NeuralSort at tau = 1e-3 amplifies the rounding of batched products: the two
    # trajectories agree closely for the first ten epochs and drift apart slowly after
    np.testing.assert_allclose(twin_hist.val_loss[:10], hist.val_loss[:10], rtol=1e-6)


def test_study_loss_base_loss_drops_only_the_regularizer():
    loss = StudyLoss("sqr", "crps", "trunc", lam=5.0, n_levels=8, levels=[0.25, 0.5, 0.75])
    base = loss.base_loss()
    assert (base.model, base.score, base.regularizer, base.lam, base.n_levels) == ("sqr", "crps", "none", 0.0, 8)
    assert torch.equal(base.levels, loss.levels)
    q, y = torch.zeros(4, 3), torch.tensor([-1.0, 0.2, 0.4, 2.0])
    assert float(base.quantile_loss(q, y, loss.levels)) < float(loss.quantile_loss(q, y, loss.levels))
