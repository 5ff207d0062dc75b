"""Expert quantile forecasts with their outcomes: the COVID-19 Forecast Hub and the SPF.

Two real forecast streams for the drift chapter (paper 000 uses COVID-19
Forecast Hub forecasts and analysts' earnings forecasts):

* :func:`load_covid_forecasts` reads the European COVID-19 Forecast Hub sample
  shipped with the scoringutils R package (weekly cases and deaths in DE, FR,
  GB and IT, May-July 2021, 23 quantile levels, horizons 1-3 weeks) into a tidy
  table; :func:`covid_quantile_arrays` turns it into ``(n_series, T, K)``
  forecast arrays, one series per (location, target, model, horizon).
* :func:`load_spf_probabilities` reads the Survey of Professional Forecasters'
  probability bins (``prob.xlsx``) for annual-average real GDP growth and the
  annual-average unemployment rate, :func:`spf_realized` the outcomes from
  the FRED and real-time (latest vintage) series, and
  :func:`spf_quantile_streams` makes quantile-forecast streams out of them.
  :func:`load_spf_mean` reads the mean point forecasts.

From probability bins to quantiles (:func:`bins_to_quantiles`): each bin's
probability is spread uniformly over the bin, which makes the CDF piecewise
linear through the bin edges; its inverse is evaluated at the levels. The two
open-ended outer bins are closed at one neighbouring bin width beyond their
finite edge. Bin edges lie halfway between the one-decimal values of the
survey's bin labels (the bin "4.0 to 4.9" spans [3.95, 4.95)).
"""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from calibtut._validation import as_float_array, check_int, check_levels
from calibtut.data.fetching import cache_dir, fetch, sha256_of

__all__ = [
    "COVID_FILE",
    "SPF_VARIABLES",
    "ForecastStreams",
    "bins_to_quantiles",
    "covid_quantile_arrays",
    "load_covid_forecasts",
    "load_spf_mean",
    "load_spf_probabilities",
    "spf_quantile_streams",
    "spf_realized",
]

COVID_FILE = "covid_forecasthub_scoringutils/example_quantile.rda"

_COVID_COLUMNS = ["location", "target_type", "model", "forecast_date", "target_end_date", "horizon",
                  "quantile_level", "prediction", "true_value"]


@dataclass(frozen=True)
class ForecastStreams:
    """Quantile forecasts and outcomes of several series on a common time grid.

    Attributes
    ----------
    forecasts : ndarray of shape (n_series, T, K)
        Non-decreasing along the last axis.
    labels : ndarray of shape (n_series, T)
    levels : ndarray of shape (K,)
    series : pandas.DataFrame
        One row per series (its keys).
    times : pandas.Index
        The ``T`` time stamps (forecast dates or survey years).
    """

    forecasts: np.ndarray
    labels: np.ndarray
    levels: np.ndarray
    series: pd.DataFrame
    times: pd.Index


def _derived_table(name, sources, build, parse_dates=None):
    """A table derived from registered files, kept as CSV in the cache (``<cache>/derived``).

    The file name carries the sha256 of the sources, so a changed source is
    rebuilt; a cache that cannot be written is skipped. Reading the R and Excel
    sources takes seconds, the CSV milliseconds.
    """
    paths = [fetch(src) for src in sources]
    key = hashlib.sha256("".join(sha256_of(p) for p in paths).encode()).hexdigest()[:16]
    target = cache_dir() / "derived" / f"{name}-{key}.csv"
    if target.is_file():
        return pd.read_csv(target, parse_dates=parse_dates)
    table = build(*[str(p) for p in paths])
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            table.to_csv(handle, index=False)
        os.replace(tmp, target)
    except OSError:
        pass
    return table


@functools.lru_cache(maxsize=4)
def _read_rda(path, name):
    import rdata

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # R classes "Date"/"data.table" without a python constructor
        return rdata.read_rda(str(path))[name]


@functools.lru_cache(maxsize=16)
def _read_excel(path, sheet=0):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # openpyxl: unparsable page headers of the SPF files
        return pd.read_excel(path, sheet_name=sheet)


def load_covid_forecasts():
    """The European COVID-19 Forecast Hub sample as a tidy table.

    Returns
    -------
    pandas.DataFrame
        One row per forecast quantile with columns ``location`` (DE, FR, GB,
        IT), ``target_type`` (``"cases"`` or ``"deaths"``), ``model``,
        ``forecast_date`` and ``target_end_date`` (datetime64), ``horizon``
        (weeks, int), ``quantile_level``, ``prediction`` and ``true_value``
        (weekly counts, float; a few reported counts are negative: data
        corrections). Rows of the source that hold only an observation are
        dropped. Sorted by the keys.

    Examples
    --------
    >>> import os
    >>> df = load_covid_forecasts() if os.environ.get("CALIBTUT_DATA_MIRROR") else None
    >>> df is None or (len(df), sorted(df.target_type.unique())) == (20401, ["cases", "deaths"])
    True
    """
    df = _derived_table("covid_example_quantile", [COVID_FILE], _covid_table,
                        parse_dates=["forecast_date", "target_end_date"])
    keys = ["location", "target_type", "model", "horizon", "forecast_date", "quantile_level"]
    return df.sort_values(keys).reset_index(drop=True)[_COVID_COLUMNS]


def _covid_table(path):
    raw = _read_rda(path, "example_quantile")
    raw = raw[raw["model"].notna()]
    df = pd.DataFrame({
        "location": raw["location"].astype(str).to_numpy(),
        "target_type": raw["target_type"].astype(str).str.lower().to_numpy(),
        "model": raw["model"].astype(str).to_numpy(),
        "forecast_date": pd.to_datetime(raw["forecast_date"].to_numpy(dtype=float), unit="D"),
        "target_end_date": pd.to_datetime(raw["target_end_date"].to_numpy(dtype=float), unit="D"),
        "horizon": raw["horizon"].to_numpy(dtype=float).astype(np.int64),
        "quantile_level": raw["quantile_level"].to_numpy(dtype=float),
        "prediction": raw["predicted"].to_numpy(dtype=float),
        "true_value": raw["observed"].to_numpy(dtype=float),
    })
    return df


def covid_quantile_arrays(levels=None, *, horizon=1, transform="log1p", table=None):
    """COVID-19 forecasts as arrays: one series per (location, target, model) at one horizon.

    Parameters
    ----------
    levels : array_like of shape (K,), optional
        A subset of the hub's 23 levels; default the nine levels 0.1, ..., 0.9.
    horizon : int, default 1
        Forecast horizon in weeks (1, 2 or 3).
    transform : {"log1p", "none"}, default "log1p"
        ``"log1p"`` maps forecasts and outcomes by ``z -> log(1 + max(z, 0))``
        (the paper's transform of heavy-tailed counts; negative corrections
        become 0).
    table : pandas.DataFrame, optional
        The output of :func:`load_covid_forecasts` (loaded when omitted).

    Returns
    -------
    ForecastStreams
        Only series with a forecast at every forecast date of the horizon are
        kept; ``series`` has columns ``location``, ``target_type``, ``model``,
        ``horizon``; ``times`` are the forecast dates. A running maximum over
        levels guarantees non-decreasing quantiles (the sample's own are
        already monotone).

    Examples
    --------
    >>> import os
    >>> s = covid_quantile_arrays() if os.environ.get("CALIBTUT_DATA_MIRROR") else None
    >>> s is None or (s.forecasts.shape[1:], s.labels.shape[1]) == ((11, 9), 11)
    True
    """
    a = np.round(np.arange(1, 10) / 10, 10) if levels is None else check_levels(levels, "levels")
    h = check_int(horizon, "horizon", minimum=1)
    if transform not in ("log1p", "none"):
        raise ValueError(f"transform must be 'log1p' or 'none', got {transform!r}")
    df = load_covid_forecasts() if table is None else table
    missing = [c for c in _COVID_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"table lacks columns {missing}")
    horizons = sorted(int(x) for x in df["horizon"].unique())
    if h not in horizons:
        raise ValueError(f"horizon must be one of {horizons}, got {h}")
    df = df[df["horizon"] == h]
    have = np.round(np.sort(df["quantile_level"].unique()), 10)
    a_r = np.round(a, 10)
    absent = [float(x) for x in a_r if x not in have]
    if absent:
        raise ValueError(f"levels {absent} are not among the hub's levels {have.tolist()}")
    df = df[np.isin(np.round(df["quantile_level"].to_numpy(), 10), a_r)]
    keys = ["location", "target_type", "model"]
    dates = pd.Index(np.sort(df["forecast_date"].unique()), name="forecast_date")
    cube = df.pivot_table(index=keys + ["forecast_date"], columns="quantile_level", values="prediction",
                          aggfunc="first")
    truth = df.groupby(keys + ["forecast_date"])["true_value"].first()
    complete = cube.notna().all(axis=1).groupby(level=keys).sum() == len(dates)
    series = complete[complete].index
    idx = pd.MultiIndex.from_tuples([(*s, d) for s in series for d in dates], names=keys + ["forecast_date"])
    q = cube.reindex(idx).to_numpy(dtype=float).reshape(len(series), len(dates), len(a))
    y = truth.reindex(idx).to_numpy(dtype=float).reshape(len(series), len(dates))
    if transform == "log1p":
        q, y = np.log1p(np.maximum(q, 0.0)), np.log1p(np.maximum(y, 0.0))
    q = np.maximum.accumulate(q, axis=-1)
    frame = series.to_frame(index=False).assign(horizon=h)
    return ForecastStreams(q, y, a, frame, dates)


SPF_VARIABLES = {
    "unemployment": "PRUNEMP",
    "real_gdp": "PRGDP",
}
"""Variables with probability bins and an outcome series: name -> ``prob.xlsx`` sheet."""

# Interior bin edges of each survey regime (first survey, last survey), lowest edge first.
# Every regime asks about the current year and the following years (n_years).
_SPF_BINS = {
    "PRUNEMP": [
        ((2009, 2), (2013, 4), 4, [5.95, 6.95, 7.45, 7.95, 8.45, 8.95, 9.45, 9.95, 10.95]),
        ((2014, 1), (2020, 1), 4, [3.95, 4.95, 5.45, 5.95, 6.45, 6.95, 7.45, 7.95, 8.95]),
        ((2020, 2), (9999, 4), 4, [2.95, 3.95, 4.95, 5.95, 6.95, 7.95, 9.95, 11.95, 14.95]),
    ],
    "PRGDP": [
        ((1981, 3), (1991, 4), 2, [-2.05, -0.05, 1.95, 3.95, 5.95]),
        ((1992, 1), (2009, 1), 2, [-2.05, -1.05, -0.05, 0.95, 1.95, 2.95, 3.95, 4.95, 5.95]),
        ((2009, 2), (2020, 1), 4, [-3.05, -2.05, -1.05, -0.05, 0.95, 1.95, 2.95, 3.95, 4.95, 5.95]),
        ((2020, 2), (9999, 4), 4, [-12.05, -6.05, -3.05, -0.55, 1.45, 2.45, 3.95, 6.95, 9.95, 15.95]),
    ],
}


def _check_variable(variable):
    if variable not in SPF_VARIABLES:
        raise ValueError(f"variable must be one of {sorted(SPF_VARIABLES)}, got {variable!r}")
    return SPF_VARIABLES[variable]


def load_spf_probabilities(variable):
    """The SPF's probability bins for one variable as a tidy table.

    Parameters
    ----------
    variable : {"unemployment", "real_gdp"}
        Annual-average civilian unemployment rate (asked since 2009Q2) or
        annual-average over annual-average real output growth (real GNP before
        1992; from 1981Q3, when the question moved from nominal to real output).

    Returns
    -------
    pandas.DataFrame
        One row per survey, target year and bin: ``survey_year``,
        ``survey_quarter``, ``target_year``, ``horizon`` (target year minus
        survey year), ``bin`` (0 = lowest), ``lower`` and ``upper`` (bin edges,
        ``-inf``/``inf`` for the open outer bins) and ``probability`` (in [0, 1],
        renormalised to sum to one per forecast). Forecasts left blank in the
        survey are dropped.

    Examples
    --------
    >>> import os
    >>> p = load_spf_probabilities("unemployment") if os.environ.get("CALIBTUT_DATA_MIRROR") else None
    >>> p is None or bool(np.allclose(p.groupby(["survey_year", "survey_quarter", "horizon"]).probability.sum(), 1))
    True
    """
    sheet = _check_variable(variable)
    return _derived_table(f"spf_prob_{sheet}", ["spf/prob.xlsx"], functools.partial(_spf_prob_table, sheet=sheet))


def _spf_prob_table(path, sheet):
    raw = _read_excel(path, sheet)
    year = raw["YEAR"].to_numpy(dtype=int)
    quarter = raw["QUARTER"].to_numpy(dtype=int)
    frames = []
    for first, last, n_years, edges in _SPF_BINS[sheet]:
        n_bins = len(edges) + 1
        period = np.array([first <= (y, q) <= last for y, q in zip(year, quarter)], dtype=bool)
        for h in range(n_years):
            cols = [f"{sheet}{h * n_bins + j + 1}" for j in range(n_bins)]
            p = raw.loc[period, cols].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)[:, ::-1]
            ok = np.all(np.isfinite(p), axis=1) & (np.nansum(p, axis=1) > 0)  # survey: highest bin first
            p = p[ok] / p[ok].sum(axis=1, keepdims=True)
            n = len(p)
            frames.append(pd.DataFrame({
                "survey_year": np.repeat(year[period][ok], n_bins),
                "survey_quarter": np.repeat(quarter[period][ok], n_bins),
                "target_year": np.repeat(year[period][ok] + h, n_bins), "horizon": h,
                "bin": np.tile(np.arange(n_bins), n),
                "lower": np.tile(np.concatenate([[-np.inf], edges]), n),
                "upper": np.tile(np.concatenate([edges, [np.inf]]), n),
                "probability": p.ravel(),
            }))
    keys = ["survey_year", "survey_quarter", "horizon", "bin"]
    return pd.concat(frames, ignore_index=True).sort_values(keys).reset_index(drop=True)


def bins_to_quantiles(lower, upper, probability, levels):
    """Quantiles of a histogram forecast: uniform within bins, outer bins closed at one neighbouring width.

    An open outer bin next to another open bin (``J = 2``) gets unit width.

    Parameters
    ----------
    lower, upper : array_like of shape (J,)
        Edges of ``J >= 2`` contiguous bins in increasing order; the first
        ``lower`` and the last ``upper`` may be infinite.
    probability : array_like of shape (J,)
        Non-negative, summing to one.
    levels : array_like of shape (K,)

    Returns
    -------
    ndarray of shape (K,)
        Non-decreasing.

    Examples
    --------
    >>> bins_to_quantiles([-np.inf, 0.0, 1.0], [0.0, 1.0, np.inf], [0.25, 0.5, 0.25], [0.25, 0.5, 0.875]).tolist()
    [0.0, 0.5, 1.5]
    """
    # the outer bin edges may be infinite; NaN is refused below
    lo = as_float_array(lower, "lower", ndim=1, finite=False).copy()
    hi = as_float_array(upper, "upper", ndim=1, finite=False).copy()
    p = as_float_array(probability, "probability", ndim=1)
    a = check_levels(levels, "levels")
    if not (len(lo) == len(hi) == len(p)) or len(p) < 2:
        raise ValueError("lower, upper and probability must have the same length J >= 2")
    if np.any(p < 0) or not np.isclose(p.sum(), 1.0, atol=1e-6):
        raise ValueError("probability must be non-negative and sum to one")
    if not np.all(np.isfinite(lo[1:])) or not np.all(np.isfinite(hi[:-1])) or np.any(lo[1:] != hi[:-1]):
        raise ValueError("lower and upper must describe contiguous bins with finite inner edges")
    if not np.isfinite(lo[0]):
        lo[0] = hi[0] - (hi[1] - lo[1]) if len(p) > 2 or np.isfinite(hi[1]) else hi[0] - 1.0
    if not np.isfinite(hi[-1]):
        hi[-1] = lo[-1] + (hi[-2] - lo[-2])
    knots = np.concatenate([[lo[0]], hi])
    cdf = np.concatenate([[0.0], np.cumsum(p)]) / p.sum()
    cdf[-1] = 1.0
    j = np.clip(np.searchsorted(cdf, a, side="left") - 1, 0, len(p) - 1)  # cdf[j] < a <= cdf[j + 1]: a bin with mass
    return knots[j] + (a - cdf[j]) / (cdf[j + 1] - cdf[j]) * (knots[j + 1] - knots[j])


def spf_realized(variable):
    """Annual outcomes of an SPF variable.

    ``"unemployment"``: the mean of the twelve monthly rates (FRED UNRATE);
    ``"real_gdp"``: ``100 (mean(Y_t) / mean(Y_{t-1}) - 1)`` of the quarterly real
    output levels of the latest vintage of the Philadelphia Fed's real-time
    data set. Only complete years.

    Returns
    -------
    pandas.Series
        Indexed by year.

    Examples
    --------
    >>> import os
    >>> r = spf_realized("unemployment") if os.environ.get("CALIBTUT_DATA_MIRROR") else None
    >>> r is None or round(float(r.loc[2020]), 2) == 8.09
    True
    """
    _check_variable(variable)
    if variable == "unemployment":
        table = _derived_table("spf_realized_unemployment", ["spf/UNRATE.csv"], _annual_unemployment)
    else:
        table = _derived_table("spf_realized_real_gdp", ["spf/ROUTPUTQvQd.xlsx"], _annual_output_growth)
    return pd.Series(table["value"].to_numpy(dtype=float), index=pd.Index(table["year"].astype(int), name="year"),
                     name=variable)


def _annual_unemployment(path):
    raw = pd.read_csv(path)
    g = raw.groupby(pd.to_datetime(raw["DATE"]).dt.year)["VALUE"]
    out = g.mean()[g.count() == 12]
    return pd.DataFrame({"year": out.index.astype(int), "value": out.to_numpy(dtype=float)})


def _annual_output_growth(path):
    raw = _read_excel(path)
    level = pd.to_numeric(raw[raw.columns[-1]], errors="coerce")
    g = level.groupby(raw["DATE"].astype(str).str.slice(0, 4).astype(int).to_numpy())
    avg = g.mean()[g.count() == 4]
    out = (100 * (avg / avg.shift(1) - 1)).dropna()
    return pd.DataFrame({"year": out.index.astype(int), "value": out.to_numpy(dtype=float)})


def spf_quantile_streams(variable, levels=None, *, horizon=0, start=None, end=None):
    """SPF quantile-forecast streams with outcomes: one series per survey quarter.

    Series ``q`` holds, for each year, the forecast made in quarter ``q`` of
    the survey year about the annual value ``horizon`` years later, and its
    outcome. With ``horizon=0`` each outcome is known at the end of the survey
    year, before the next forecast of the series: a causal stream.

    Parameters
    ----------
    variable : {"unemployment", "real_gdp"}
    levels : array_like of shape (K,), optional
        Default the nine levels 0.1, ..., 0.9.
    horizon : int, default 0
    start, end : int, optional
        First and last survey year; default every year where all four
        quarters have a forecast and the outcome is known.

    Returns
    -------
    ForecastStreams
        ``series`` has columns ``variable``, ``survey_quarter``, ``horizon``;
        ``times`` are the survey years.

    Examples
    --------
    >>> import os
    >>> s = spf_quantile_streams("real_gdp") if os.environ.get("CALIBTUT_DATA_MIRROR") else None
    >>> s is None or (s.forecasts.shape[0], s.forecasts.shape[2], int(s.times[0])) == (4, 9, 1982)
    True
    """
    a = np.arange(1, 10) / 10 if levels is None else check_levels(levels, "levels")
    h = check_int(horizon, "horizon", minimum=0)
    start = None if start is None else check_int(start, "start")
    end = None if end is None else check_int(end, "end")
    probs = load_spf_probabilities(variable)
    probs = probs[probs["horizon"] == h]
    if probs.empty:
        raise ValueError(f"horizon {h} has no {variable} forecasts")
    realized = spf_realized(variable)
    per_year = probs.groupby("survey_year")["survey_quarter"].nunique()
    years = [int(y) for y in per_year.index if per_year[y] == 4 and (y + h) in realized.index]
    if start is not None:
        years = [y for y in years if y >= start]
    if end is not None:
        years = [y for y in years if y <= end]
    if not years:
        raise ValueError("no survey year between start and end has all four quarters and an outcome")
    years = list(range(years[0], years[-1] + 1))
    grouped = dict(tuple(probs.groupby(["survey_year", "survey_quarter"])))
    q = np.empty((4, len(years), len(a)))
    for i in range(4):
        for j, year in enumerate(years):
            if (year, i + 1) not in grouped:
                raise ValueError(f"survey {year}Q{i + 1} has no {variable} forecast; choose start and end")
            b = grouped[(year, i + 1)]
            q[i, j] = bins_to_quantiles(b["lower"], b["upper"], b["probability"], a)
    y = np.broadcast_to(realized.loc[[yr + h for yr in years]].to_numpy(dtype=float), (4, len(years))).copy()
    series = pd.DataFrame({"variable": variable, "survey_quarter": [1, 2, 3, 4], "horizon": h})
    return ForecastStreams(q, y, a, series, pd.Index(years, name="survey_year"))


def load_spf_mean(variable):
    """The SPF's mean point forecasts of quarterly levels as a tidy table.

    Parameters
    ----------
    variable : {"unemployment", "real_gdp"}
        Unemployment rate (``mean_UNEMP_level.xlsx``) or real output level
        (``mean_RGDP_level.xlsx``).

    Returns
    -------
    pandas.DataFrame
        ``survey_year``, ``survey_quarter``, ``horizon`` (quarters after the
        survey quarter: -1 is the previous quarter, 0 the current one, up to
        4), ``target_year``, ``target_quarter``, ``forecast``. Blank forecasts
        are dropped.

    Examples
    --------
    >>> import os
    >>> m = load_spf_mean("unemployment") if os.environ.get("CALIBTUT_DATA_MIRROR") else None
    >>> m is None or sorted(m.horizon.unique().tolist()) == [-1, 0, 1, 2, 3, 4]
    True
    """
    _check_variable(variable)
    stem = {"unemployment": "UNEMP", "real_gdp": "RGDP"}[variable]
    raw = _read_excel(str(fetch(f"spf/mean_{stem}_level.xlsx")))
    frames = []
    for j in range(1, 7):
        quarter_index = raw["YEAR"].astype(int) * 4 + raw["QUARTER"].astype(int) - 1 + (j - 2)
        frames.append(pd.DataFrame({
            "survey_year": raw["YEAR"].astype(int), "survey_quarter": raw["QUARTER"].astype(int),
            "horizon": j - 2, "target_year": quarter_index // 4, "target_quarter": quarter_index % 4 + 1,
            "forecast": pd.to_numeric(raw[f"{stem}{j}"], errors="coerce"),
        }))
    out = pd.concat(frames, ignore_index=True).dropna(subset=["forecast"])
    return out.sort_values(["survey_year", "survey_quarter", "horizon"]).reset_index(drop=True)
