"""Tables and fixed set-ups of the covariate-shift teaching chapters."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import special, stats

from calibtut.experiments.covariate_shift import (
    clip_median_summary,
    clip_summary,
    misspecified_classifier_logits,
    top_weight_spread,
)


def test_misspecified_classifier_is_sigmoid_x_minus_one():
    x = np.linspace(-3, 3, 7)[:, None]
    probs = special.softmax(misspecified_classifier_logits(x), axis=1)
    assert np.allclose(probs[:, 1], special.expit(x[:, 0] - 1))
    with pytest.raises(ValueError, match="one column"):
        misspecified_classifier_logits(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="X"):
        misspecified_classifier_logits([[np.nan]])


def test_clip_summary_hand_case_and_errors():
    rows = pd.DataFrame(
        {
            "U": [3.0, 3.0, 3.0, 1e3],
            "T": [0.5, 0.7, 0.9, 0.4],
            "ESS / n": [0.5, 0.4, 0.3, 0.1],
            "best T": 0.5,
        }
    )
    table = clip_summary(rows)
    assert list(table.index) == [3.0, 1e3]
    assert np.isclose(table.loc[3.0, "bias"], 0.2) and np.isclose(table.loc[3.0, "sd"], 0.2)
    assert np.isclose(table.loc[3.0, "rmse"], np.sqrt(0.08)) and np.isclose(table.loc[3.0, "ess"], 0.4)
    # one repeat: no spread, the error is the bias
    assert table.loc[1e3, "sd"] == 0 and np.isclose(table.loc[1e3, "rmse"], 0.1)
    with pytest.raises(ValueError, match="best T"):
        clip_summary(rows.assign(**{"best T": 0.0}))
    with pytest.raises(ValueError, match="best T"):
        clip_summary(rows.assign(**{"best T": np.nan}))
    with pytest.raises(ValueError, match="lacks"):
        clip_summary(rows.drop(columns="T"))


def test_clip_summary_rmse_is_root_mean_squared_error_for_large_samples():
    rng = np.random.default_rng(1)
    t = rng.normal(1.2, 0.3, size=20_000)
    rows = pd.DataFrame({"U": 10.0, "T": t, "ESS / n": 0.5, "best T": 1.0})
    table = clip_summary(rows)
    assert np.isclose(table.loc[10.0, "rmse"], np.sqrt(np.mean((t - 1.0) ** 2)), rtol=1e-3)


def test_clip_median_summary_hand_case_oracles_and_errors():
    rng = np.random.default_rng(3)
    t = rng.lognormal(size=41)
    rows = pd.DataFrame({"U": np.repeat([1.0, 10.0], [41, 1]), "T": [*t, 0.9], "best T": 0.5})
    table = clip_median_summary(rows)
    assert list(table.index) == [1.0, 10.0] and table["repeats"].tolist() == [41, 1]
    assert np.isclose(table.loc[1.0, "median error"], np.median(t) - 0.5)
    assert np.isclose(table.loc[1.0, "iqr"], stats.iqr(t))  # scipy's IQR, linear interpolation
    # sqrt(pi / 2) sigma / sqrt(R), with sigma = IQR / (2 Phi^-1(3/4))
    sigma = stats.iqr(t) / (stats.norm.ppf(0.75) - stats.norm.ppf(0.25))
    assert np.isclose(table.loc[1.0, "median se"], np.sqrt(np.pi / 2) * sigma / np.sqrt(41))
    # one repeat: the median is the value, no spread
    assert np.isclose(table.loc[10.0, "median error"], 0.4) and table.loc[10.0, "median se"] == 0
    with pytest.raises(ValueError, match="best T"):
        clip_median_summary(rows.assign(**{"best T": -1.0}))
    with pytest.raises(ValueError, match="lacks"):
        clip_median_summary(rows.drop(columns="U"))


def test_clip_median_summary_standard_error_matches_the_spread_of_medians():
    # Over 2,000 sets of 51 repeats, the s.d. of the sample median is the standard error
    # the table reports (normal law: sqrt(pi/2) / sqrt(51) = 0.176); both are known to a
    # few per cent (the s.d. of 2,000 medians to 1.6 %, the mean reported s.e. better).
    rng = np.random.default_rng(4)
    t = rng.normal(1.0, 1.0, size=(2_000, 51))
    medians = np.median(t, axis=1)
    rows = pd.DataFrame({"U": np.repeat(np.arange(2_000.0), 51), "T": t.ravel(), "best T": 1.0})
    table = clip_median_summary(rows)
    assert np.isclose(table["median se"].mean(), medians.std(ddof=1), rtol=0.06)
    assert np.isclose(table["median error"].mean(), 0.0, atol=3 * 0.176 / np.sqrt(2_000))


def test_top_weight_spread_picks_largest_mean_weights():
    rng = np.random.default_rng(2)
    w = rng.exponential(size=(10, 200))
    table = top_weight_spread(w, k=15)
    means = w.mean(axis=0)
    assert list(table.index) == list(np.argsort(-means)[:15])
    assert np.all(np.diff(table["mean"]) <= 0)
    assert np.allclose(table["spread"], table["max"] / table["min"])
    assert np.allclose(table["median"], np.median(w[:, table.index], axis=0))


def test_top_weight_spread_zero_minimum_and_errors():
    table = top_weight_spread([[0.0, 1.0], [2.0, 1.0]], k=2)
    assert table.loc[0, "spread"] == np.inf and table.loc[1, "spread"] == 1.0
    with pytest.raises(ValueError, match="non-negative"):
        top_weight_spread([[-1.0, 1.0]])
    with pytest.raises(ValueError, match="k"):
        top_weight_spread([[1.0, 1.0]], k=3)
    with pytest.raises(ValueError, match="weights"):
        top_weight_spread([[np.inf, 1.0]], k=1)
