"""Tests of the Gaussian models and the training loop."""

import numpy as np
import pytest
import torch

from calibtut.models import (
    DeepEnsemble,
    GaussianMLP,
    MCDropoutGaussian,
    feature_range_eps,
    fgsm_perturb,
    fit,
    fit_ensemble,
    predict,
)
from calibtut.regularizers import QuantileRegularizedLoss


def _data(n=96, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = X @ np.arange(1, d + 1) + (0.5 + 0.5 * np.abs(X[:, 0])) * rng.normal(size=n)
    return X, y


def _state_equal(a, b):
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def test_mlp_shapes_std_floor_and_seeded_init():
    model = GaussianMLP(3, hidden=(8, 4), min_std=0.2, seed=1)
    mean, std = model(torch.randn(10, 3))
    assert mean.shape == std.shape == (10,)
    assert bool((std >= 0.2).all())
    assert _state_equal(model, GaussianMLP(3, hidden=(8, 4), min_std=0.2, seed=1))
    assert not _state_equal(model, GaussianMLP(3, hidden=(8, 4), min_std=0.2, seed=2))


def test_seeded_init_leaves_global_rng_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    GaussianMLP(3, hidden=(8,), seed=5)
    torch.testing.assert_close(torch.rand(3), expected)


def test_dropout_modes():
    x = torch.randn(6, 2)
    model = MCDropoutGaussian(2, hidden=(16, 16), n_samples=32, seed=0)
    model.train()
    torch.manual_seed(0)
    a = model(x)[0]
    b = model(x)[0]
    assert not torch.equal(a, b)  # one stochastic pass per call in training mode
    model.eval()
    m1, s1 = model(x)
    m2, s2 = model(x)
    assert torch.equal(m1, m2) and torch.equal(s1, s2)  # seeded prediction-time masks


def test_dropout_predictive_moments():
    x = torch.randn(5, 2)
    mix = MCDropoutGaussian(2, hidden=(16,), n_samples=40, seed=0).eval()
    auth = MCDropoutGaussian(2, hidden=(16,), n_samples=40, predictive_std="authors", seed=0).eval()
    means, stds = mix.sample_passes(x, generator=torch.Generator().manual_seed(mix.mc_seed))
    mean, std = mix(x)
    torch.testing.assert_close(mean, means.mean(0))
    torch.testing.assert_close(std**2, (stds**2).mean(0) + means.var(0, unbiased=False))
    _, std_auth = auth(x)
    torch.testing.assert_close(std_auth**2, stds.mean(0) ** 2 + means.var(0, unbiased=False))
    assert bool((std_auth <= std + 1e-7).all())  # Jensen: mean(sigma)^2 <= mean(sigma^2)


def test_dropout_without_dropout_is_the_mlp():
    x = torch.randn(4, 2)
    model = MCDropoutGaussian(2, hidden=(8,), p=0.0, n_samples=3, seed=0).eval()
    plain = GaussianMLP(2, hidden=(8,), min_std=0.1, std_scale=0.9, seed=0)
    mean, std = model(x)
    m0, s0 = plain(x)
    torch.testing.assert_close(mean, m0)
    torch.testing.assert_close(std, s0)


def test_paper_defaults_of_dropout_model():
    model = MCDropoutGaussian(4)
    assert [layer.out_features for layer in model.hidden_layers] == [128, 128]
    assert (model.p, model.n_samples, model.min_std, model.std_scale) == (0.5, 64, 0.1, 0.9)


def test_ensemble_mixture_moments():
    ens = DeepEnsemble(2, n_members=3, hidden=(8,), seed=0)
    x = torch.randn(7, 2)
    means, stds = ens.member_outputs(x)
    mean, std = ens(x)
    torch.testing.assert_close(mean, means.mean(0))
    torch.testing.assert_close(std**2, (stds**2).mean(0) + means.var(0, unbiased=False))
    assert not torch.equal(means[0], means[1])  # members start from different weights


def test_fit_is_deterministic_given_seed():
    X, y = _data()
    runs = []
    for _ in range(2):
        model = MCDropoutGaussian(2, hidden=(16,), n_samples=4, seed=0)
        hist = fit(model, X, y, loss=QuantileRegularizedLoss(lam=1.0), epochs=3, batch_size=32, seed=7, progress=False)
        runs.append((model, hist))
    assert _state_equal(runs[0][0], runs[1][0])
    assert runs[0][1].train_loss == runs[1][1].train_loss
    other = MCDropoutGaussian(2, hidden=(16,), n_samples=4, seed=0)
    fit(other, X, y, epochs=3, batch_size=32, seed=8, progress=False)
    assert not _state_equal(runs[0][0], other)


def test_fit_leaves_global_rng_alone():
    X, y = _data()
    torch.manual_seed(0)
    expected = torch.rand(2)
    torch.manual_seed(0)
    fit(GaussianMLP(2, hidden=(8,), seed=0), X, y, epochs=1, batch_size=32, seed=1, progress=False)
    torch.testing.assert_close(torch.rand(2), expected)


def test_fit_learns_and_restores_best_weights():
    X, y = _data(n=160)
    Xv, yv = _data(n=64, seed=1)
    model = GaussianMLP(2, hidden=(16,), seed=0)
    loss = QuantileRegularizedLoss(lam=0.0)
    with torch.no_grad():
        before = float(loss(model(torch.as_tensor(Xv, dtype=torch.float32)), torch.as_tensor(yv, dtype=torch.float32)))
    hist = fit(model, X, y, epochs=40, batch_size=32, lr=1e-2, val=(Xv, yv), seed=0, progress=False)
    assert hist.best_epoch == int(np.argmin(hist.val_loss))
    assert hist.best_loss == min(hist.val_loss) < before
    with torch.no_grad():
        after = float(loss(model(torch.as_tensor(Xv, dtype=torch.float32)), torch.as_tensor(yv, dtype=torch.float32)))
    assert after == pytest.approx(hist.best_loss, rel=1e-5)


def test_val_samples_validates_with_fewer_mc_passes():
    X, y = _data(n=96)
    Xv, yv = _data(n=40, seed=1)

    def run(n_samples, val_samples):
        model = MCDropoutGaussian(2, hidden=(16,), n_samples=n_samples, seed=0)
        hist = fit(model, X, y, epochs=6, batch_size=32, val=(Xv, yv), val_samples=val_samples, seed=0, progress=False)
        return model, hist

    # 8-pass model validated with 2 passes == 2-pass model validated as is (training passes do not depend on
    # n_samples, and the prediction masks come from their own seeded generator); n_samples is restored.
    cheap, hist_cheap = run(8, 2)
    small, hist_small = run(2, None)
    assert cheap.n_samples == 8
    assert hist_cheap.val_loss == hist_small.val_loss and hist_cheap.train_loss == hist_small.train_loss
    assert _state_equal(cheap, small)
    # val_samples equal to the model's n_samples changes nothing.
    same, hist_same = run(8, 8)
    default, hist_default = run(8, None)
    assert hist_same.val_loss == hist_default.val_loss and _state_equal(same, default)
    assert hist_default.val_loss != hist_cheap.val_loss


def test_predict_returns_numpy_in_batches():
    X, _ = _data(n=50)
    model = MCDropoutGaussian(2, hidden=(8,), n_samples=4, seed=0)
    mean, std = predict(model, X, batch_size=50)
    assert mean.shape == std.shape == (50,) and mean.dtype == np.float64
    with torch.no_grad():
        ref_mean, ref_std = model.eval()(torch.as_tensor(X, dtype=torch.float32))
    np.testing.assert_allclose(mean, ref_mean.numpy(), rtol=1e-6)
    np.testing.assert_allclose(std, ref_std.numpy(), rtol=1e-6)
    m2, _ = predict(GaussianMLP(2, hidden=(8,), seed=0), X, batch_size=7)
    m3, _ = predict(GaussianMLP(2, hidden=(8,), seed=0), X, batch_size=50)
    np.testing.assert_allclose(m2, m3, atol=1e-6)  # float32 blocked matmul differs by rounding only


def test_patience_stops_when_nothing_improves():
    X, y = _data()
    hist = fit(GaussianMLP(2, hidden=(8,), seed=0), X, y, epochs=50, lr=0.0, patience=3, val=(X, y), progress=False)
    assert hist.stopped_early and len(hist.val_loss) == 4 and hist.best_epoch == 0


def test_qr_training_runs_with_fixed_spacing_and_drop_last():
    X, y = _data(n=100)
    model = GaussianMLP(2, hidden=(8,), seed=0)
    loss = QuantileRegularizedLoss(lam=1.0, spacing=5)
    hist = fit(model, X, y, loss=loss, epochs=2, batch_size=32, drop_last=True, seed=0, progress=False)
    assert np.isfinite(hist.train_loss).all()
    with pytest.raises(ValueError, match=r"spacing \(5\) must be smaller"):
        fit(GaussianMLP(2, hidden=(8,), seed=0), X[:37], y[:37], loss=loss, epochs=1, batch_size=32, progress=False)


def test_sgd_with_step_lr_follows_the_schedule_and_batches_are_used():
    # paper 004's schedules: SGD with momentum, the rate halved every lr_step epochs
    X, y = _data(n=64)
    hist = fit(GaussianMLP(2, hidden=(4,), seed=0), X, y, epochs=5, batch_size=32, lr=0.01, optimizer="sgd",
               momentum=0.9, lr_step=2, lr_gamma=0.5, seed=0, progress=False)
    assert hist.lr == pytest.approx([0.01, 0.01, 0.005, 0.005, 0.0025])
    assert fit(GaussianMLP(2, hidden=(4,), seed=0), X, y, epochs=2, seed=0, progress=False).lr == [0.01, 0.01]
    # a batches callable replaces the shuffled batches: three batches of 10 rows an epoch, seen by the loss
    sizes = []

    def loss(out, t):
        sizes.append(len(t))
        return torch.mean((out[0] - t) ** 2)

    fit(GaussianMLP(2, hidden=(4,), seed=0), X, y, loss=loss, epochs=2, batch_size=32, seed=0, progress=False,
        batches=lambda g: [torch.randperm(64, generator=g)[:10] for _ in range(3)])
    assert sizes == [10] * 6


@pytest.mark.parametrize(("change", "error", "match"), [
    ({"optimizer": "rmsprop"}, ValueError, "optimizer"),
    ({"optimizer": ["sgd"]}, ValueError, "optimizer"),
    ({"momentum": 0.9}, ValueError, "momentum=0.9 needs optimizer='sgd'"),
    ({"optimizer": "sgd", "momentum": 1.0}, ValueError, "momentum"),
    ({"lr_step": 0}, ValueError, "lr_step"),
    ({"lr_step": 1.5}, TypeError, "lr_step"),
    ({"lr_gamma": 0.0}, ValueError, "lr_gamma"),
    ({"batches": [[0]]}, TypeError, "batches must be callable"),
    ({"batches": lambda g: [], "drop_last": True}, ValueError, "drop_last"),
])
def test_fit_refuses_bad_schedules(change, error, match):
    with pytest.raises(error, match=match):
        fit(GaussianMLP(1, hidden=(2,)), [[0.0]], [0.0], progress=False, **change)


def test_fgsm_step_is_bounded_and_increases_loss():
    X, y = _data()
    x, t = torch.as_tensor(X, dtype=torch.float32), torch.as_tensor(y, dtype=torch.float32)
    model = GaussianMLP(2, hidden=(8,), seed=0)
    loss = QuantileRegularizedLoss(lam=0.0)
    eps = feature_range_eps(x, 0.01)
    torch.testing.assert_close(eps, 0.01 * (x.max(0).values - x.min(0).values))
    x_adv = fgsm_perturb(model, loss, x, t, eps)
    assert bool(((x_adv - x).abs() <= eps + 1e-6).all())
    with torch.no_grad():
        assert float(loss(model(x_adv), t)) > float(loss(model(x), t))
    assert all(p.grad is None for p in model.parameters())


def test_fit_ensemble_adversarial_deterministic():
    X, y = _data(n=64)
    ensembles = []
    for _ in range(2):
        ens = DeepEnsemble(2, n_members=2, hidden=(8,), seed=0)
        hists = fit_ensemble(ens, X, y, adversarial_eps=0.01, epochs=2, batch_size=32, seed=3, progress=False)
        ensembles.append(ens)
    assert len(hists) == 2 and not ens.training
    assert _state_equal(*ensembles)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: fit("model", [[0.0]], [0.0], progress=False), TypeError, "model must be"),
        (lambda: fit(GaussianMLP(1, hidden=(2,)), [0.0, 1.0], [0.0, 1.0], progress=False), ValueError, "X must have 2"),
        (lambda: fit(GaussianMLP(1, hidden=(2,)), [[0.0]], [0.0, 1.0], progress=False), ValueError, "same length"),
        (lambda: fit(GaussianMLP(1, hidden=(2,)), [[0.0]], [0.0], device="tpu"), ValueError, "device"),
        (lambda: fit(GaussianMLP(1, hidden=(2,)), [[0.0]], [0.0], epochs=0), ValueError, "epochs"),
        (lambda: fit(GaussianMLP(1, hidden=(2,)), [[0.0]], [0.0], val=([[0.0]],)), TypeError, "val must be"),
        (lambda: fit(GaussianMLP(1, hidden=(2,)), [[0.0]], [np.nan]), ValueError, "y contains NaN"),
        (lambda: fit(GaussianMLP(1, hidden=(2,)), [[0.0]], [0.0], lr=-1.0), ValueError, "lr"),
        (lambda: fit(GaussianMLP(1, hidden=(2,)), [[0.0]], [0.0], val_samples=2), TypeError, "val_samples needs"),
        (lambda: fit(MCDropoutGaussian(1, hidden=(2,)), [[0.0]], [0.0], val_samples=0), ValueError, "val_samples"),
        (lambda: GaussianMLP(0), ValueError, "in_features"),
        (lambda: GaussianMLP(2, min_std=-1.0), ValueError, "min_std"),
        (lambda: MCDropoutGaussian(2, p=1.0), ValueError, "p must be"),
        (lambda: MCDropoutGaussian(2, predictive_std="max"), ValueError, "predictive_std"),
        (lambda: DeepEnsemble(2, n_members=0), ValueError, "n_members"),
        (lambda: fit_ensemble(GaussianMLP(2), [[0.0, 0.0]], [0.0]), TypeError, "DeepEnsemble"),
    ],
)
def test_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA present")
def test_cuda_request_without_cuda_is_a_clear_error():
    with pytest.raises(ValueError, match="CUDA is not available"):
        fit(GaussianMLP(1, hidden=(2,)), [[0.0]], [0.0], device="cuda", progress=False)
