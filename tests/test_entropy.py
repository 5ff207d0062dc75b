"""Tests of the m-spacing entropy estimators (numpy and torch)."""

import math

import numpy as np
import pytest
import torch
from scipy import stats
from scipy.special import polygamma

from calibtut.regularizers import (
    resolve_spacing,
    spacing_entropy,
    spacing_entropy_bias,
    spacing_entropy_torch,
)

A, B = 2.0, 5.0


def _var_log_beta_density(a, b):
    # Var[(a-1) log X + (b-1) log(1-X)] for X ~ Beta(a, b), from the trigamma function.
    t = lambda z: float(polygamma(1, z))  # noqa: E731
    return (a - 1) ** 2 * (t(a) - t(a + b)) + (b - 1) ** 2 * (t(b) - t(a + b)) - 2 * (a - 1) * (b - 1) * t(a + b)


# (frozen distribution, Var[log f(X)]): the asymptotic variance of sqrt(n) * H_hat (van Es, 1992).
DISTRIBUTIONS = {
    "gaussian": (stats.norm(), 0.5),
    "exponential": (stats.expon(), 1.0),
    "beta": (stats.beta(A, B), _var_log_beta_density(A, B)),
}


def _replicate(dist, n, reps, spacing, seed):
    rng = np.random.default_rng(seed)
    return np.array([spacing_entropy(dist.rvs(n, random_state=rng), spacing) for _ in range(reps)])


def test_resolve_spacing_rules():
    assert resolve_spacing("sqrt", 100) == 10
    assert resolve_spacing("sqrt", 512) == round(math.sqrt(512))
    assert resolve_spacing(64, 512) == 64
    assert resolve_spacing(lambda n: 3 * math.isqrt(n), 100) == 30


@pytest.mark.parametrize(
    ("spacing", "n", "error", "match"),
    [
        (64, 64, ValueError, "smaller than the number of samples"),
        (0, 10, ValueError, "spacing must be >= 1"),
        ("log", 10, ValueError, "spacing must be 'sqrt'"),
        (True, 10, TypeError, "spacing"),
        (2.5, 10, TypeError, "spacing"),
        (lambda n: 2.0, 10, TypeError, "spacing callable"),
    ],
)
def test_resolve_spacing_errors(spacing, n, error, match):
    with pytest.raises(error, match=match):
        resolve_spacing(spacing, n)


def test_hand_computed_equal_gaps():
    # Gaps of 1 with k = 1 and n = 4: every term is log(5/1 * 1).
    assert spacing_entropy([3.0, 0.0, 2.0, 1.0], spacing=1) == pytest.approx(math.log(5))
    # k = 2: gaps 2, terms log(5/2 * 2) = log 5 again.
    assert spacing_entropy([0.0, 1.0, 2.0, 3.0], spacing=2) == pytest.approx(math.log(5))


def test_bias_formula_matches_digamma_definition():
    n, k = 50, 7
    expected = math.log((n + 1) / k) + sum(1 / j for j in range(1, k)) - sum(1 / j for j in range(1, n + 1))
    assert spacing_entropy_bias(n, k) == pytest.approx(expected)
    assert spacing_entropy_bias(n, k) < 0


@pytest.mark.parametrize("spacing", ["sqrt", 64])
def test_uniform_mean_equals_exact_bias(spacing):
    # Uniform spacings are Beta(k, n+1-k), so E[H_hat] = 0 + bias exactly: within 4 standard errors.
    n, reps = 500, 400
    est = _replicate(stats.uniform(), n, reps, spacing, seed=1)
    k = resolve_spacing(spacing, n)
    se = est.std(ddof=1) / math.sqrt(reps)
    assert abs(est.mean() - spacing_entropy_bias(n, k)) < 4 * se


@pytest.mark.parametrize("name", sorted(DISTRIBUTIONS))
def test_known_entropies_consistent_and_asymptotic_variance(name):
    dist, var_log_f = DISTRIBUTIONS[name]
    h = float(dist.entropy())
    small = _replicate(dist, 500, 200, "sqrt", seed=2)
    large = _replicate(dist, 4000, 200, "sqrt", seed=3)
    err_small, err_large = small.mean() - h, large.mean() - h
    se_large = large.std(ddof=1) / math.sqrt(large.size)
    # The estimator is biased downwards and consistent: the error shrinks when n grows eightfold.
    assert err_small < 0 and err_large < 2 * se_large
    assert abs(err_large) < 0.6 * abs(err_small)
    assert abs(err_large) < 0.08
    # n Var(H_hat) -> Var(log f(X)); the sample variance of 200 replicates has ~10% relative error.
    ratio = 4000 * large.var(ddof=1) / var_log_f
    assert 0.7 < ratio < 1.4


def test_uniform_variance_is_of_smaller_order():
    # Var(log f) = 0 for the uniform: n Var(H_hat) is far below the other cases' O(1).
    est = _replicate(stats.uniform(), 4000, 100, "sqrt", seed=4)
    assert 4000 * est.var(ddof=1) < 0.05


def test_bias_correction_subtracts_constant():
    x = np.random.default_rng(0).normal(size=300)
    k = resolve_spacing("sqrt", 300)
    assert spacing_entropy(x, bias_correction=True) == pytest.approx(spacing_entropy(x) - spacing_entropy_bias(300, k))


def test_ties_give_minus_infinity_unless_eps():
    x = [0.0, 0.0, 0.0, 1.0]
    assert spacing_entropy(x, spacing=1) == -math.inf
    assert np.isfinite(spacing_entropy(x, spacing=1, eps=1e-6))


@pytest.mark.parametrize("spacing", ["sqrt", 5])
def test_torch_matches_numpy(spacing):
    x = np.random.default_rng(5).exponential(size=(3, 100))
    got = spacing_entropy_torch(torch.as_tensor(x), spacing)
    assert got.shape == (3,)
    want = [spacing_entropy(row, spacing) for row in x]
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    presorted = spacing_entropy_torch(torch.as_tensor(np.sort(x, axis=1)), spacing, assume_sorted=True)
    np.testing.assert_allclose(presorted.numpy(), want, rtol=1e-12)


def test_torch_gradcheck_float64():
    x = torch.tensor([0.1, 0.5, 0.35, 0.9, 0.72, 0.2], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: spacing_entropy_torch(t, 2), (x,))


def test_torch_gradient_spreads_samples():
    # Entropy grows when samples spread: the gradient on the largest sample is positive.
    x = torch.tensor([0.0, 0.1, 0.2, 0.3, 0.4], dtype=torch.float64, requires_grad=True)
    spacing_entropy_torch(x, 1).backward()
    assert x.grad[-1] > 0 and x.grad[0] < 0


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: spacing_entropy([[0.0, 1.0]]), ValueError, "x must have 1"),
        (lambda: spacing_entropy([1.0]), ValueError, "at least 2"),
        (lambda: spacing_entropy([0.0, np.nan, 1.0]), ValueError, "x contains NaN"),
        (lambda: spacing_entropy([0.0, 1.0, 2.0], eps=-1.0), ValueError, "eps"),
        (lambda: spacing_entropy_torch([0.0, 1.0]), TypeError, "torch.Tensor"),
        (lambda: spacing_entropy_torch(torch.zeros(3, 1)), ValueError, "at least 2"),
        (lambda: spacing_entropy_bias(10, 10), ValueError, "smaller than n"),
    ],
)
def test_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()
