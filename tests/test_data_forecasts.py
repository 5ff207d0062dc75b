"""Tests of calibtut.data.forecasts: COVID-19 Forecast Hub and SPF forecast streams.

The bin-to-quantile conversion is checked on hand-computed histograms and
against an independent inversion (scipy's piecewise-linear interpolation of
the CDF on a fine grid). Loader tests read the offline mirror and are skipped
unless ``CALIBTUT_DATA_MIRROR`` points at it.
"""

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibtut.data import forecasts as F

MIRROR = os.environ.get("CALIBTUT_DATA_MIRROR")
needs_mirror = pytest.mark.skipif(not MIRROR or not Path(MIRROR).is_dir(),
                                  reason="CALIBTUT_DATA_MIRROR is not set to the offline data mirror")


def test_bins_to_quantiles_hand_computed():
    lower = [-np.inf, 0.0, 1.0, 3.0]
    upper = [0.0, 1.0, 3.0, np.inf]
    p = [0.1, 0.4, 0.4, 0.1]
    # CDF knots: (-1, 0), (0, .1), (1, .5), (3, .9), (5, 1)
    q = F.bins_to_quantiles(lower, upper, p, [0.05, 0.3, 0.5, 0.7, 0.95])
    np.testing.assert_allclose(q, [-0.5, 0.5, 1.0, 2.0, 4.0])


def test_bins_to_quantiles_skips_empty_bins():
    q = F.bins_to_quantiles([-np.inf, 0.0, 1.0, 2.0], [0.0, 1.0, 2.0, np.inf], [0.5, 0.0, 0.5, 0.0], [0.5, 0.75])
    np.testing.assert_allclose(q, [0.0, 1.5])


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=3, max_size=8), st.integers(0, 2**31 - 1))
def test_bins_to_quantiles_inverts_the_cdf(weights, seed):
    w = np.asarray(weights) + 1e-3
    p = w / w.sum()
    rng = np.random.default_rng(seed)
    inner = np.cumsum(rng.uniform(0.2, 2.0, size=len(p) - 1))
    lower = np.concatenate([[-np.inf], inner])
    upper = np.concatenate([inner, [np.inf]])
    levels = np.sort(rng.uniform(0.01, 0.99, size=5))
    levels = levels[np.concatenate([[True], np.diff(levels) > 1e-6])]
    q = F.bins_to_quantiles(lower, upper, p, levels)
    assert np.all(np.diff(q) >= 0)
    # the CDF (uniform within bins) evaluated at the quantiles gives back the levels
    lo = np.concatenate([[inner[0] - (inner[1] - inner[0]) if len(inner) > 1 else inner[0] - 1.0], inner])
    hi = np.concatenate([inner, [inner[-1] + (inner[-1] - inner[-2]) if len(inner) > 1 else inner[-1] + 1.0]])
    cdf = np.array([np.sum(p * np.clip((x - lo) / (hi - lo), 0, 1)) for x in q])
    np.testing.assert_allclose(cdf, levels, atol=1e-9)


def test_bins_to_quantiles_rejects_bad_input():
    with pytest.raises(ValueError, match="probability"):
        F.bins_to_quantiles([-np.inf, 0.0], [0.0, np.inf], [0.7, 0.7], [0.5])
    with pytest.raises(ValueError, match="contiguous"):
        F.bins_to_quantiles([-np.inf, 1.0], [0.0, np.inf], [0.5, 0.5], [0.5])
    with pytest.raises(ValueError, match="levels"):
        F.bins_to_quantiles([-np.inf, 0.0], [0.0, np.inf], [0.5, 0.5], [0.5, 0.2])


def test_unknown_variable_is_named():
    with pytest.raises(ValueError, match="variable"):
        F.load_spf_probabilities("inflation")


@needs_mirror
def test_covid_table_shape_and_dtypes():
    df = F.load_covid_forecasts()
    assert list(df.columns) == ["location", "target_type", "model", "forecast_date", "target_end_date", "horizon",
                                "quantile_level", "prediction", "true_value"]
    assert len(df) == 20401
    assert set(df.location) == {"DE", "FR", "GB", "IT"}
    assert set(df.target_type) == {"cases", "deaths"}
    assert set(df.horizon) == {1, 2, 3}
    assert df["horizon"].dtype == np.int64
    assert np.issubdtype(df["forecast_date"].dtype, np.datetime64)
    assert not df[["prediction", "true_value", "quantile_level"]].isna().any().any()
    lead = (df.target_end_date - df.forecast_date).dt.days
    np.testing.assert_array_equal(lead, 7 * df.horizon - 2)  # forecasts made on Monday for the week ending Saturday
    assert df.quantile_level.nunique() == 23


@needs_mirror
@pytest.mark.parametrize("horizon, n_steps", [(1, 11), (3, 10)])
def test_covid_arrays(horizon, n_steps):
    s = F.covid_quantile_arrays(horizon=horizon)
    n = len(s.series)
    assert s.forecasts.shape == (n, n_steps, 9) and s.labels.shape == (n, n_steps)
    assert n == 27  # 4 locations x (3 case models + 4 death models), minus FR deaths of EpiNow2 (incomplete)
    assert np.all(np.isfinite(s.forecasts)) and np.all(np.isfinite(s.labels))
    assert np.all(np.diff(s.forecasts, axis=-1) >= 0)
    assert np.all(s.labels >= 0)  # log1p of non-negative counts
    # the arrays agree with the tidy table
    df = F.load_covid_forecasts()
    row = s.series.iloc[0]
    one = df[(df.location == row.location) & (df.target_type == row.target_type) & (df.model == row.model)
             & (df.horizon == horizon) & np.isclose(df.quantile_level, 0.5)].sort_values("forecast_date")
    np.testing.assert_allclose(s.forecasts[0, :, 4], np.log1p(np.maximum(one.prediction.to_numpy(), 0)))


@needs_mirror
def test_covid_levels_must_exist():
    with pytest.raises(ValueError, match="levels"):
        F.covid_quantile_arrays([0.33])


@needs_mirror
@pytest.mark.parametrize("variable", sorted(F.SPF_VARIABLES))
def test_spf_probabilities_are_histograms(variable):
    p = F.load_spf_probabilities(variable)
    sums = p.groupby(["survey_year", "survey_quarter", "horizon"]).probability.sum()
    np.testing.assert_allclose(sums, 1.0, atol=1e-9)
    assert (p.probability >= 0).all()
    inner = p[np.isfinite(p.lower) & np.isfinite(p.upper)]
    assert (inner.upper > inner.lower).all()


@needs_mirror
@pytest.mark.parametrize("variable, first_year", [("real_gdp", 1982), ("unemployment", 2010)])
def test_spf_streams(variable, first_year):
    s = F.spf_quantile_streams(variable)
    T = s.forecasts.shape[1]
    assert s.forecasts.shape == (4, T, 9) and s.labels.shape == (4, T)
    assert int(s.times[0]) == first_year and int(s.times[-1]) == 2023 and T == 2023 - first_year + 1
    assert np.all(np.isfinite(s.forecasts)) and np.all(np.isfinite(s.labels))
    assert np.all(np.diff(s.forecasts, axis=-1) >= 0)
    # a forecast made in the fourth quarter about the current year is sharper than one made in the first
    width = s.forecasts[..., -1] - s.forecasts[..., 0]
    assert width[3].mean() < width[0].mean()
    # outcomes lie mostly inside the forecasts' 10-90% range (the forecasters are informative)
    inside = (s.labels >= s.forecasts[..., 0]) & (s.labels <= s.forecasts[..., -1])
    assert inside.mean() > 0.4


@needs_mirror
def test_spf_realized_values():
    u = F.spf_realized("unemployment")
    assert round(float(u.loc[2009]), 2) == 9.28  # BLS annual average 2009
    g = F.spf_realized("real_gdp")
    assert -3.0 < g.loc[2009] < -2.0 and g.loc[2020] < -2.0 and g.loc[2021] > 5.0


@needs_mirror
def test_spf_mean_table():
    m = F.load_spf_mean("real_gdp")
    assert set(m.horizon) == {-1, 0, 1, 2, 3, 4}
    first = m[(m.survey_year == 2000) & (m.survey_quarter == 1)]
    assert first.target_quarter.tolist() == [4, 1, 2, 3, 4, 1]
    assert first.target_year.tolist() == [1999, 2000, 2000, 2000, 2000, 2001]
    assert not m.forecast.isna().any()


@needs_mirror
def test_derived_cache_roundtrip(tmp_path, monkeypatch):
    monkeypatch.setenv("CALIBTUT_CACHE", str(tmp_path))
    first = F.spf_realized("unemployment")
    assert any((tmp_path / "derived").glob("spf_realized_unemployment-*.csv"))
    second = F.spf_realized("unemployment")
    pd.testing.assert_series_equal(first, second)


@needs_mirror
def test_covid_horizon_is_checked():
    with pytest.raises(ValueError, match="horizon"):
        F.covid_quantile_arrays(horizon=4)
