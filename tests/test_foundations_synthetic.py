"""Foundations 7's simulation: the true errors by quadrature, the draws and their summary.

The truth is checked against the closed-form Beta moments, the draws against
their seeds and the law of the debiased estimator, the summary against a hand
case.
"""

import numpy as np
import pandas as pd
import pytest
from scipy import special

from calibtut.experiments.foundations import (
    ESTIMATORS,
    draw_power_curve,
    estimator_draws,
    estimator_summary,
    power_curve_truth,
)


def _beta_moment(a, b, p):
    """E[C^p] for C ~ Beta(a, b): B(a + p, b) / B(a, b)."""
    return float(np.exp(special.betaln(a + p, b) - special.betaln(a, b)))


@pytest.mark.parametrize("a, b, power", [(4.0, 1.5, 1.25), (2.0, 2.0, 2.0), (0.7, 0.9, 3.0)])
def test_truth_matches_closed_form_beta_moments(a, b, power):
    """E[C - C^g] and E[(C - C^g)^2] = E C^2 - 2 E C^{1+g} + E C^{2g} in closed form; quadrature
    agrees to 1e-9 (1e-13 seen away from the singular densities, 1e-11 for a, b < 1)."""
    truth = power_curve_truth(a, b, power)
    m = lambda p: _beta_moment(a, b, p)  # noqa: E731
    assert truth["l1"] == pytest.approx(m(1) - m(power), abs=1e-9)
    assert truth["l2"] ** 2 == pytest.approx(m(2) - 2 * m(1 + power) + m(2 * power), abs=1e-9)
    # binning averages the gap inside each bin: never above the unbinned error (Jensen), and equal
    # to the l1 error with one bin (the gap has one sign)
    assert truth["binned_l2"] <= truth["l2"] + 1e-12
    assert power_curve_truth(a, b, power, n_bins=1)["binned_l2"] == pytest.approx(truth["l1"], abs=1e-9)


def test_calibrated_curve_has_zero_error_and_draws_are_reproducible():
    assert power_curve_truth(4.0, 1.5, 1.0) == {"l1": 0.0, "l2": 0.0, "binned_l2": 0.0}
    c1, y1 = draw_power_curve(50, 4.0, 1.5, 1.3, seed=3)
    c2, y2 = draw_power_curve(50, 4.0, 1.5, 1.3, seed=3)
    assert np.array_equal(c1, c2) and np.array_equal(y1, y2)
    first = estimator_draws(100, 5, 4.0, 1.5, 1.0, n_seeds=3, seed=1, n_grid=200)
    again = estimator_draws(100, 5, 4.0, 1.5, 1.0, n_seeds=3, seed=1, n_grid=200)
    pd.testing.assert_frame_equal(first, again)
    assert set(first["estimator"]) == set(ESTIMATORS)


def test_debiased_draws_center_on_the_binned_truth():
    """Over-confident forecaster (gamma = 1.5), n = 500, 10 equal-mass bins, 300 seeds: the mean of
    the debiased squared estimator lies within 4 standard errors of the binned squared truth (its
    second-order excess correction, sum_b w_b s_b^2 / (n_b - 1), is below 1e-5 here, a tenth of one
    standard error); the plug-in's mean lies above it by more than 10 standard errors."""
    truth = power_curve_truth(4.0, 1.5, 1.5, n_bins=10)
    draws = estimator_draws(500, 10, 4.0, 1.5, 1.5, n_seeds=300, smooth=False)
    sq = draws.pivot(index="seed", columns="estimator", values="squared")
    debiased, plugin = sq["debiased l2"], sq["plug-in l2"]
    assert abs(debiased.mean() - truth["binned_l2"] ** 2) < 4 * debiased.sem()
    assert plugin.mean() - truth["binned_l2"] ** 2 > 10 * plugin.sem()


def test_summary_hand_case_and_checks():
    draws = pd.DataFrame({"estimator": ["ECE, equal-mass"] * 2 + ["debiased l2"] * 2, "n": 100,
                          "n_bins": 10, "value": [0.1, 0.3, 0.2, 0.2]})
    out = estimator_summary(draws, {"l1": 0.1, "l2": 0.25}).set_index("estimator")
    assert out.loc["ECE, equal-mass", "bias"] == pytest.approx(0.1)
    assert out.loc["ECE, equal-mass", "rmse"] == pytest.approx(np.sqrt((0 + 0.04) / 2))
    assert out.loc["ECE, equal-mass", "se"] == pytest.approx(np.std([0.1, 0.3], ddof=1) / np.sqrt(2))
    assert out.loc["debiased l2", "bias"] == pytest.approx(-0.05)
    assert out.loc["debiased l2", "sd"] == 0.0
    with pytest.raises(ValueError, match="truth"):
        estimator_summary(draws, {"l1": 0.1})
    with pytest.raises(ValueError, match="unknown estimators"):
        estimator_summary(draws.assign(estimator="MCE"), {"l1": 0.1, "l2": 0.2})
    with pytest.raises(ValueError, match="power"):
        power_curve_truth(4.0, 1.5, 0.5)
