"""Tests of the authors' weighted interval score and quantile-based standard deviation (paper 002)."""

import numpy as np
import pytest
import scoringrules
from scipy import stats

from calibtut.metrics import crps_quantile, pinball_loss
from calibtut.metrics.interval_scores import quantile_std, weighted_interval_score

LEVELS = np.arange(1, 20) / 20


def test_gaussian_value_in_closed_form():
    # For Y ~ N(0, 1) and the true quantiles, E QS_a = phi(z_a): WIS = 2 (sum phi + 1.5 (phi_.05 + phi_.95)) / 20
    dens = stats.norm.pdf(stats.norm.ppf(LEVELS))
    exact = 2 * (dens.sum() + 1.5 * (dens[0] + dens[-1])) / 20
    assert exact == pytest.approx(0.5928, abs=1e-4)
    y = np.random.default_rng(0).normal(size=100_000)
    q = np.tile(stats.norm.ppf(LEVELS), (y.size, 1))
    assert weighted_interval_score(y, q, LEVELS) == pytest.approx(exact, abs=0.01)
    # ... above the exact CRPS 1/sqrt(pi) = 0.5642 that scoringrules computes
    crps = scoringrules.crps_normal(y, 0.0, 1.0).mean()
    assert crps == pytest.approx(1 / np.sqrt(np.pi), abs=0.01)
    assert weighted_interval_score(y, q, LEVELS) > crps + 0.02


def test_relation_to_the_pinball_loss_and_quantile_crps():
    rng = np.random.default_rng(1)
    y = rng.normal(size=50)
    q = np.sort(rng.normal(size=(50, 19)), axis=1)
    per_level = pinball_loss(y, q, LEVELS, reduction="none")
    want = 2 * (per_level.sum(1) + 1.5 * (per_level[:, 0] + per_level[:, -1])) / 20
    np.testing.assert_allclose(weighted_interval_score(y, q, LEVELS, reduction="none"), want, rtol=1e-12)
    # without the outer weight it would be 19/20 of the quantile CRPS approximation
    outer = 2 * 1.5 * (per_level[:, 0] + per_level[:, -1]) / 20
    np.testing.assert_allclose(
        weighted_interval_score(y, q, LEVELS, reduction="none") - outer,
        19 / 20 * crps_quantile(y, q, LEVELS, reduction="none"),
        rtol=1e-12,
    )


def test_crossing_quantiles_are_scored_as_given():
    assert weighted_interval_score([0.0], [[1.0, -1.0]], [0.25, 0.75]) == pytest.approx(
        2 * (0.75 + 0.75 + 1.5 * 1.5) / 3
    )


def test_quantile_std_of_a_gaussian_is_0_8875_sigma():
    q = stats.norm.ppf(LEVELS, scale=2.0)[None, :]
    assert quantile_std(q) == pytest.approx(0.8875 * 2.0, abs=1e-3)
    assert quantile_std(q) == pytest.approx(np.std(q, ddof=1))


def test_errors():
    with pytest.raises(ValueError, match="strictly increasing"):
        weighted_interval_score([0.0], [[0.0, 1.0]], [0.6, 0.4])
    with pytest.raises(ValueError, match="columns"):
        weighted_interval_score([0.0], [[0.0, 1.0]], [0.1, 0.5, 0.9])
    with pytest.raises(ValueError, match="at least 2"):
        weighted_interval_score([0.0], [[0.0]], [0.5])
    with pytest.raises(ValueError, match="same length"):
        weighted_interval_score([0.0, 1.0], [[0.0, 1.0]], [0.1, 0.9])
    with pytest.raises(ValueError, match="at least 2 columns"):
        quantile_std([[1.0]])
