"""Tests of the quantile-regularization loss."""

import math

import numpy as np
import pytest
import torch
from scipy import stats

from calibtut.regularizers import QuantileRegularizedLoss, pit_negentropy, qr_loss, spacing_entropy


def _gen(seed):
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize("spacing", ["sqrt", 8])
def test_hard_and_small_tau_match_numpy_estimator(spacing):
    pit = torch.rand(200, generator=_gen(0), dtype=torch.float64)
    want = -spacing_entropy(pit.numpy(), spacing)
    assert float(pit_negentropy(pit, spacing, sort="hard", eps=0.0)) == pytest.approx(want, rel=1e-12)
    # The smallest gap between these 200 PITs is ~1e-5, 100 x tau: NeuralSort sorts exactly.
    assert np.diff(np.sort(pit.numpy())).min() > 5e-6
    assert float(pit_negentropy(pit, spacing, tau=1e-7, eps=0.0)) == pytest.approx(want, rel=1e-8)
    # The default eps = 1e-5 moves the estimate by about eps * (n + 1) / k per term: negligible.
    assert float(pit_negentropy(pit, spacing, sort="hard")) == pytest.approx(want, abs=5e-3)


def test_estimates_kl_to_uniform():
    # PIT ~ Beta(2, 2): KL(PIT || U) = -H(Beta(2, 2)) = 0.125; the estimator's bias is < 0.03 at n = 2000.
    pit = torch.as_tensor(stats.beta(2, 2).rvs(2000, random_state=np.random.default_rng(1)))
    kl = -float(stats.beta(2, 2).entropy())
    assert abs(float(pit_negentropy(pit, sort="hard")) - kl) < 0.03
    uniform = torch.rand(2000, generator=_gen(1), dtype=torch.float64)
    assert abs(float(pit_negentropy(uniform, sort="hard"))) < 0.03


def _gaussian_pits(pred_std, n=512, seed=0):
    g = _gen(seed)
    y = torch.randn(n, generator=g, dtype=torch.float64)
    log_std = torch.tensor(math.log(pred_std), dtype=torch.float64, requires_grad=True)
    pit = torch.distributions.Normal(torch.zeros(n, dtype=torch.float64), log_std.exp()).cdf(y)
    return log_std, pit


@pytest.mark.parametrize(("pred_std", "sign"), [(0.3, -1.0), (3.0, 1.0)])
def test_gradient_pushes_towards_calibration(pred_std, sign):
    # y ~ N(0, 1). Over-confident (std 0.3): the regularizer decreases when std grows (negative
    # gradient in log std); under-confident (std 3): it decreases when std shrinks.
    log_std, pit = _gaussian_pits(pred_std)
    pit_negentropy(pit).backward()
    assert sign * float(log_std.grad) > 0


def test_calibrated_prediction_is_near_minimum():
    values = {}
    for s in (0.5, 1.0, 2.0):
        _, pit = _gaussian_pits(s, n=1024, seed=3)
        values[s] = float(pit_negentropy(pit.detach(), sort="hard"))
    assert values[1.0] < values[0.5] and values[1.0] < values[2.0]


def test_saturated_pits_stay_finite_with_default_eps():
    # 20 PITs at exactly 1.0 (float32 CDF far in the tail) tie over a spacing of k = 7.
    pit = torch.cat([torch.rand(30, generator=_gen(6)), torch.ones(20)]).requires_grad_(True)
    assert float(pit_negentropy(pit.detach(), eps=0.0)) == math.inf
    value = pit_negentropy(pit)
    value.backward()
    assert math.isfinite(float(value.detach())) and bool(torch.isfinite(pit.grad).all())


def test_qr_loss_composition_and_callable():
    g = _gen(2)
    mean, std = torch.randn(100, generator=g), torch.rand(100, generator=g) + 0.5
    y = torch.randn(100, generator=g)
    dist = torch.distributions.Normal(mean, std)
    nll = -dist.log_prob(y).mean()
    pit = dist.cdf(y)
    expected = nll + 2.0 * pit_negentropy(pit, 10)
    torch.testing.assert_close(qr_loss(nll, pit, lam=2.0, spacing=10), expected)
    torch.testing.assert_close(qr_loss(nll, dist.cdf, y, lam=2.0, spacing=10), expected)
    torch.testing.assert_close(qr_loss(nll, pit, lam=0.0), nll)


def test_loss_class_defaults_to_gaussian_nll():
    g = _gen(4)
    mean, std, y = torch.randn(64, generator=g), torch.rand(64, generator=g) + 0.5, torch.randn(64, generator=g)
    nll = -stats.norm.logpdf(y.numpy(), mean.numpy(), std.numpy()).mean()
    assert float(QuantileRegularizedLoss(lam=0.0)((mean, std), y)) == pytest.approx(nll, rel=1e-5)
    loss = QuantileRegularizedLoss(lam=1.5, spacing=8, sort="hard")
    pit = torch.as_tensor(stats.norm.cdf(y.numpy(), mean.numpy(), std.numpy()), dtype=torch.float32)
    want = nll + 1.5 * float(pit_negentropy(pit, 8, sort="hard"))
    assert float(loss((mean, std), y)) == pytest.approx(want, rel=1e-4)
    assert "lam=1.5" in repr(loss)


def test_loss_class_takes_custom_cdf():
    # A Laplace model: the loss works with any model that provides a CDF.
    def nll(out, y):
        return -torch.distributions.Laplace(*out).log_prob(y).mean()

    def cdf(out, y):
        return torch.distributions.Laplace(*out).cdf(y)

    loc = torch.zeros(50, requires_grad=True)
    y = torch.randn(50, generator=_gen(5))
    value = QuantileRegularizedLoss(lam=1.0, nll=nll, cdf=cdf)((loc, torch.ones(50)), y)
    value.backward()
    assert torch.isfinite(loc.grad).all()


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: pit_negentropy(torch.tensor([0.1, 1.2, 0.5])), ValueError, r"pit must lie in \[0, 1\]"),
        (lambda: pit_negentropy(torch.tensor([0.1, -0.2, 0.5])), ValueError, r"pit must lie in \[0, 1\]"),
        (lambda: pit_negentropy(torch.tensor([0.1, float("nan"), 0.5])), ValueError, "NaN"),
        (lambda: pit_negentropy(torch.rand(50), 64), ValueError, r"spacing \(64\) must be smaller .* \(50\)"),
        (lambda: pit_negentropy(torch.rand(5, 2)), ValueError, r"pit must have 1 dimension"),
        (lambda: pit_negentropy([0.1, 0.5]), TypeError, "pit must be a torch.Tensor"),
        (lambda: pit_negentropy(torch.rand(9), sort="bitonic"), ValueError, "sort must be one of"),
        (lambda: qr_loss(torch.zeros(2), torch.rand(9)), TypeError, "nll must be a scalar"),
        (lambda: qr_loss(torch.tensor(0.0), torch.rand(9), lam=-1.0), ValueError, "lam"),
        (lambda: qr_loss(torch.tensor(0.0), lambda y: y), ValueError, "y is required"),
        (lambda: qr_loss(torch.tensor(0.0), torch.rand(9), torch.rand(9)), ValueError, "y is only used"),
        (lambda: QuantileRegularizedLoss(lam=-0.5), ValueError, "lam"),
        (lambda: QuantileRegularizedLoss(sort="x"), ValueError, "sort"),
        (lambda: QuantileRegularizedLoss(cdf=3), TypeError, "cdf must be callable"),
        (lambda: QuantileRegularizedLoss()(torch.zeros(3), torch.zeros(3)), TypeError, r"\(mean, std\)"),
    ],
)
def test_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_minimizing_the_regularizer_alone_calibrates_a_gaussian():
    # y ~ N(0, 1); start over-confident and shifted (mu = 1, sigma = 0.3). Minimizing the negentropy of
    # the PITs drives them towards uniform: mu to the sample mean and sigma most of the way to the sample
    # std. The m-spacing estimator stops short of 1 at small n (the extreme PITs enter fewer spacings,
    # so squeezing the tails costs little): at n = 128, k = 11 the fixed point is sigma / std ~ 0.8-0.86
    # over seeds (0.93 at n = 2048), so the band is [0.7, 0.95].
    y = torch.randn(128, generator=_gen(8), dtype=torch.float64)
    mu = torch.tensor(1.0, dtype=torch.float64, requires_grad=True)
    log_sigma = torch.tensor(math.log(0.3), dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([mu, log_sigma], lr=0.05)
    for _ in range(150):
        opt.zero_grad()
        pit = torch.distributions.Normal(mu, log_sigma.exp()).cdf(y)
        pit_negentropy(pit).backward()
        opt.step()
    assert abs(float(mu.detach()) - float(y.mean())) < 0.1
    assert 0.7 < math.exp(float(log_sigma.detach())) / float(y.std()) < 0.95
