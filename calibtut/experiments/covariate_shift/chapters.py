"""Tables and fixed set-ups of the teaching chapters on covariate shift (paper 004, chapters 1-4 and 7).

The experiments chapter and its paper-versus-ours table have their own
modules (:mod:`~calibtut.experiments.covariate_shift.tasks` and
:mod:`~calibtut.experiments.covariate_shift.tables`); this one holds what the
teaching chapters share or reshape:

* :func:`misspecified_classifier_logits`: the fixed, misspecified binary
  classifier of chapters 1 and 3, as two logits;
* :func:`clip_summary`: bias, spread, error and effective sample size of an
  importance-weighted temperature per clip ``U`` (chapter 3);
* :func:`clip_median_summary`: their robust counterparts, the median error,
  the interquartile range and the standard error of the median (chapter 3);
* :func:`top_weight_spread`: the paper's Figure 2 as a table, the largest
  importance weights over repeated runs (chapter 3).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from calibtut._validation import as_float_array, check_frame, check_int, check_positive

__all__ = [
    "clip_median_summary",
    "clip_summary",
    "misspecified_classifier_logits",
    "top_weight_spread",
]


def misspecified_classifier_logits(X):
    """Logits ``(0, x - 1)`` of the fixed binary classifier of chapters 1 and 3.

    The classifier predicts ``P(y = 1 | x) = sigmoid(x - 1)`` for a 1-D input;
    the label law of the chapters is ``sigmoid(2 x - 0.5)``, so it is too flat
    and shifted, timid on the source and over-confident on the target.

    Parameters
    ----------
    X : array_like of shape (n, 1)
        One-dimensional inputs.

    Returns
    -------
    numpy.ndarray of shape (n, 2)

    Examples
    --------
    >>> misspecified_classifier_logits([[1.0], [3.0]])
    array([[0., 0.],
           [0., 2.]])
    """
    X = as_float_array(X, "X", ndim=2)
    if X.shape[1] != 1:
        raise ValueError(f"X must have one column (a 1-D input), got shape {X.shape}")
    z = X[:, 0] - 1.0
    return np.column_stack([np.zeros_like(z), z])


def clip_summary(rows):
    """Bias, spread, root mean squared error and ESS of a weighted temperature per clip ``U``.

    Parameters
    ----------
    rows : pandas.DataFrame
        One row per repeat and clip, with columns ``U`` (the clip), ``T`` (the
        fitted temperature), ``ESS / n`` (effective sample fraction) and
        ``best T`` (the target-optimal temperature the fit is judged against,
        positive and finite).

    Returns
    -------
    pandas.DataFrame
        Indexed by ``U``, with columns ``bias`` (mean of ``T - best T``),
        ``sd`` (of ``T``, ddof 1; 0 for a single repeat), ``ess`` (mean ESS
        fraction) and ``rmse`` (``sqrt(bias^2 + sd^2)``).

    Examples
    --------
    >>> rows = pd.DataFrame({"U": [1, 1, 10, 10], "T": [1.0, 1.2, 0.5, 0.7],
    ...                      "ESS / n": [0.9, 0.9, 0.4, 0.6], "best T": 0.6})
    >>> table = clip_summary(rows).round(3)
    >>> table.index.tolist(), table["bias"].tolist(), table["rmse"].tolist()
    ([1, 10], [0.5, 0.0], [0.52, 0.141])
    """
    rows = check_frame(rows, "rows", ("U", "T", "ESS / n", "best T"), allow_empty=False)
    best = check_positive(rows["best T"], "rows['best T']", ndim=1)
    grouped = rows.assign(error=rows["T"] - best).groupby("U")
    table = pd.DataFrame(
        {
            "bias": grouped["error"].mean(),
            "sd": grouped["T"].std().fillna(0.0),
            "ess": grouped["ESS / n"].mean(),
        }
    )
    table["rmse"] = np.sqrt(table["bias"] ** 2 + table["sd"] ** 2)
    return table


#: Interquartile range of the standard normal law, 2 Phi^-1(3/4) = 1.349.
_NORMAL_IQR = 2 * stats.norm.ppf(0.75)


def clip_median_summary(rows):
    """Median error, interquartile range and standard error of the median of a temperature per clip ``U``.

    The robust counterparts of :func:`clip_summary`'s ``bias`` and ``sd``. A
    weighted fit on a small sample is heavy-tailed (now and then a few heavy
    weights, or none, push ``T`` far out, up to the bound of the fit), and one
    such repeat moves a mean and a standard deviation far more than a median
    or an interquartile range.

    Parameters
    ----------
    rows : pandas.DataFrame
        One row per repeat and clip, with columns ``U`` (the clip), ``T`` (the
        fitted temperature) and ``best T`` (the target-optimal temperature,
        positive and finite), as :func:`clip_summary` takes them.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``U``, with columns ``median error`` (median of
        ``T - best T``), ``iqr`` (75th minus 25th percentile of ``T``, linear
        interpolation), ``median se`` (the large-sample standard error of the
        median, ``1 / (2 f(m) sqrt(R))`` for ``R`` repeats, with the density
        ``f`` at the median read from the IQR as for a normal law:
        ``sqrt(pi / 2) * iqr / (1.349 sqrt(R))``) and ``repeats`` (``R``).

    Examples
    --------
    >>> rows = pd.DataFrame({"U": 1.0, "T": [0.5, 0.6, 0.7, 0.8, 0.9], "best T": 0.4})
    >>> table = clip_median_summary(rows).round(4)
    >>> table.loc[1.0, ["median error", "iqr", "median se"]].tolist()
    [0.3, 0.2, 0.0831]
    """
    rows = check_frame(rows, "rows", ("U", "T", "best T"), allow_empty=False)
    best = check_positive(rows["best T"], "rows['best T']", ndim=1)
    grouped = rows.assign(error=rows["T"] - best).groupby("U")
    iqr = grouped["T"].quantile(0.75) - grouped["T"].quantile(0.25)
    repeats = grouped["T"].size()
    return pd.DataFrame(
        {
            "median error": grouped["error"].median(),
            "iqr": iqr,
            "median se": np.sqrt(np.pi / 2) * iqr / (_NORMAL_IQR * np.sqrt(repeats)),
            "repeats": repeats,
        }
    )


def top_weight_spread(weights, k=15):
    """The paper's Figure 2 as a table: the ``k`` largest mean weights over repeated runs.

    Parameters
    ----------
    weights : array_like of shape (n_runs, n)
        Importance weights of the same ``n`` source examples in each run
        (non-negative, finite).
    k : int, default 15
        Number of examples kept (1 <= k <= n), those with the largest mean weight.

    Returns
    -------
    pandas.DataFrame
        One row per kept example, largest mean first, indexed by the example's
        column in ``weights``, with columns ``mean``, ``median``, ``min``,
        ``max`` and ``spread`` (``max / min``; infinite when ``min`` is 0).

    Examples
    --------
    >>> w = [[1.0, 8.0, 0.1], [3.0, 2.0, 0.1]]
    >>> top_weight_spread(w, k=2)
       mean  median  min  max  spread
    1   5.0     5.0  2.0  8.0     4.0
    0   2.0     2.0  1.0  3.0     3.0
    """
    w = check_positive(weights, "weights", strict=False, ndim=2)
    k = check_int(k, "k", minimum=1, maximum=w.shape[1])
    mean = w.mean(axis=0)
    top = np.argsort(-mean, kind="stable")[:k]
    low, high = w[:, top].min(axis=0), w[:, top].max(axis=0)
    with np.errstate(divide="ignore"):
        spread = np.where(low > 0, high / np.where(low > 0, low, 1.0), np.inf)
    return pd.DataFrame(
        {"mean": mean[top], "median": np.median(w[:, top], axis=0), "min": low, "max": high, "spread": spread},
        index=top,
    )


