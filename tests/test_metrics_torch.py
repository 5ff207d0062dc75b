"""Tests for calibtut.metrics.torch: equal to the numpy versions, correct gradients."""

import numpy as np
import pytest
import torch

from calibtut.metrics import crps_gaussian, crps_mixture, nll_gaussian, nll_mixture, pinball_loss, pit_gaussian
from calibtut.metrics import torch as tm


def gaussian(seed, n=40, requires_grad=False):
    rng = np.random.default_rng(seed)
    arrays = rng.normal(size=n) * 2, rng.normal(size=n), rng.uniform(0.3, 2.0, n)
    return [torch.tensor(a, dtype=torch.float64, requires_grad=requires_grad) for a in arrays]


def mixture(seed, n=15, k=3, requires_grad=False):
    rng = np.random.default_rng(seed)
    w = rng.dirichlet(np.ones(k), n)
    arrays = rng.normal(size=n) * 2, w, rng.normal(size=(n, k)), rng.uniform(0.3, 1.5, (n, k))
    return [torch.tensor(a, dtype=torch.float64, requires_grad=requires_grad) for a in arrays]


def quantiles(seed, n=20, k=5, requires_grad=False):
    rng = np.random.default_rng(seed)
    levels = np.sort(rng.uniform(0.05, 0.95, k))
    arrays = rng.normal(size=n), np.sort(rng.normal(size=(n, k)), axis=1), levels
    return [torch.tensor(a, dtype=torch.float64, requires_grad=requires_grad) for a in arrays]


def np_(tensors):
    return [t.detach().numpy() for t in tensors]


@pytest.mark.parametrize("seed", range(3))
def test_equal_to_numpy(seed):
    g = gaussian(seed)
    np.testing.assert_allclose(tm.pit_gaussian(*g).numpy(), pit_gaussian(*np_(g)), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(tm.nll_gaussian(*g, reduction="none").numpy(), nll_gaussian(*np_(g), reduction="none"))
    np.testing.assert_allclose(tm.crps_gaussian(*g, reduction="none").numpy(), crps_gaussian(*np_(g), reduction="none"))
    m = mixture(seed)
    np.testing.assert_allclose(tm.nll_mixture(*m, reduction="none").numpy(), nll_mixture(*np_(m), reduction="none"))
    np.testing.assert_allclose(tm.crps_mixture(*m, reduction="none").numpy(), crps_mixture(*np_(m), reduction="none"))
    q = quantiles(seed)
    np.testing.assert_allclose(tm.pinball_loss(*q, reduction="none").numpy(), pinball_loss(*np_(q), reduction="none"))
    assert tm.crps_gaussian(*g).item() == pytest.approx(crps_gaussian(*np_(g)), rel=1e-12)
    assert tm.pinball_loss(*q).item() == pytest.approx(pinball_loss(*np_(q)), rel=1e-12)


def test_gradcheck_gaussian():
    g = gaussian(0, n=5, requires_grad=True)
    for fn in (tm.pit_gaussian, tm.nll_gaussian, tm.crps_gaussian):
        assert torch.autograd.gradcheck(fn, g)


def test_gradcheck_mixture_and_pinball():
    y, w, m, s = mixture(1, n=3, k=2, requires_grad=True)
    # weights stay on the simplex: differentiate through a softmax of free logits
    logits = torch.log(w.detach()).requires_grad_(True)
    for fn in (tm.nll_mixture, tm.crps_mixture):
        assert torch.autograd.gradcheck(lambda y, lg, m, s, fn=fn: fn(y, torch.softmax(lg, 1), m, s), (y, logits, m, s))
    yq, q, levels = quantiles(2, n=4, k=3)
    q.requires_grad_(True)
    yq.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda yq, q: tm.pinball_loss(yq, q, levels), (yq, q))


def test_gaussian_crps_gradient_vanishes_at_truth_in_expectation():
    # properness: with y ~ N(0, 1), d/dmu and d/dsigma of the mean CRPS at (0, 1) are ~0
    y = torch.tensor(np.random.default_rng(0).normal(size=50_000))
    mu = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    sigma = torch.ones(1, dtype=torch.float64, requires_grad=True)
    tm.crps_gaussian(y, mu.expand_as(y), sigma.expand_as(y)).backward()
    # per-sample gradients have sd below .6, so the mean's sd is below .6/sqrt(n) ~ .0027; allow 5 sd
    assert abs(mu.grad.item()) < 0.014 and abs(sigma.grad.item()) < 0.014


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: tm.nll_gaussian(np.zeros(2), torch.zeros(2), torch.ones(2)), TypeError, "y"),
        (lambda: tm.nll_gaussian(torch.zeros(2), torch.zeros(2), torch.zeros(2)), ValueError, "std"),
        (lambda: tm.nll_gaussian(torch.zeros(2), torch.zeros(3), torch.ones(3)), ValueError, "same shape"),
        (lambda: tm.crps_gaussian(torch.zeros(2), torch.zeros(2), torch.ones(2), reduction="sum"), ValueError, "reduction"),
        (lambda: tm.nll_gaussian(torch.zeros(2, dtype=torch.int64), torch.zeros(2), torch.ones(2)), TypeError, "y"),
        (lambda: tm.nll_gaussian(torch.tensor([float("nan")]), torch.zeros(1), torch.ones(1)), ValueError, "y"),
        (lambda: tm.pinball_loss(torch.zeros(2), torch.zeros(2, 3), torch.tensor([0.1, 0.5])), ValueError, "quantiles"),
        (lambda: tm.pinball_loss(torch.zeros(2), torch.zeros(2, 2), torch.tensor([0.0, 0.5])), ValueError, "levels"),
        (lambda: tm.nll_mixture(torch.zeros(1), torch.tensor([[0.5, 0.6]]), torch.zeros(1, 2), torch.ones(1, 2)), ValueError, "weights"),
        (lambda: tm.crps_mixture(torch.zeros(2), torch.ones(1, 1), torch.zeros(1, 1), torch.ones(1, 1)), ValueError, "rows"),
    ],
)
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()
