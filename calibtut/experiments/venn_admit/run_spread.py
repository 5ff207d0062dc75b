"""The spread of a statistic over the independent random splits of one pool (paper 001, chapter 4).

:func:`~calibtut.experiments.venn_admit.venn_admit_runs` splits one pool at
random ``n_seeds`` times. Pooling the admitted points of all splits and
reading the pooled accuracy with a binomial interval treats them as
independent draws, but every pool point is a test point in about a third of
the splits, so that interval is too narrow (by up to the square root of the
number of splits): a claim that an accuracy lies *above* a threshold must not
rest on it. Given the pool, the splits are independent permutations, so a
statistic computed once per split (the split's admitted count, or the
accuracy of its admitted points) is a sample of independent, identically
distributed values, and the law of their mean is Student's ``t``:

* :func:`admissions_by_run`: the admitted and correct points of one method in
  each split, and the split's accuracy;
* :func:`mean_lower_bound`: the one-sided Student-``t`` lower confidence
  bound of the mean of such per-split values.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from calibtut._validation import as_float_array, check_frame, check_real

__all__ = ["admissions_by_run", "mean_lower_bound"]


def admissions_by_run(runs, method):
    """Admitted and correct points of one method in each run, and the run's accuracy among them.

    Parameters
    ----------
    runs : pandas.DataFrame
        The output of :func:`~calibtut.experiments.venn_admit.venn_admit_runs`
        (columns ``run``, ``method``, ``admitted`` and ``correct``; with a
        ``by`` column only its ``"true"`` rows are summed, since both
        stratifications count the same points).
    method : str
        The method whose runs are summed (a value of ``runs["method"]``).

    Returns
    -------
    pandas.DataFrame
        Indexed by ``run``: ``admitted``, ``correct`` and ``accuracy``
        (``correct / admitted``, NaN for a run that admits nothing).

    Examples
    --------
    >>> import pandas as pd
    >>> runs = pd.DataFrame({"run": [0, 0, 1, 1], "method": "m", "class": [0, 1, 0, 1],
    ...                      "admitted": [30, 10, 0, 0], "correct": [29, 9, 0, 0]})
    >>> table = admissions_by_run(runs, "m")
    >>> table.index.tolist(), table["admitted"].tolist(), table["accuracy"].tolist()
    ([0, 1], [40, 0], [0.95, nan])
    """
    runs = check_frame(runs, "runs", ["run", "method", "admitted", "correct"])
    if method not in set(runs["method"]):
        raise ValueError(f"method must be one of runs['method'] {sorted(set(runs['method']))}, got {method!r}")
    rows = runs[runs["method"] == method]
    if "by" in rows.columns:
        rows = rows[rows["by"] == "true"]
    table = rows.groupby("run")[["admitted", "correct"]].sum()
    table["accuracy"] = table["correct"] / table["admitted"].where(table["admitted"] > 0)
    return table


def mean_lower_bound(values, level=0.99):
    """One-sided lower confidence bound of a mean from independent values (Student's ``t``).

    ``mean - t_{level, n - 1} * sd / sqrt(n)``, with ``sd`` the sample
    standard deviation of the ``n`` values: the mean of their law is above
    it with probability ``level`` when the values are independent draws of
    one normal law, and close to that for a statistic that averages many
    points, such as the accuracy of one random split's admitted points.

    Parameters
    ----------
    values : array_like of shape (n,)
        Finite values, one per independent run (at least 2).
    level : float, default 0.99
        Confidence level in (0, 1).

    Returns
    -------
    float

    Examples
    --------
    >>> round(mean_lower_bound([0.96, 0.97, 0.95, 0.98, 0.97]), 4)
    0.9469
    """
    values = as_float_array(values, "values", ndim=1)
    level = check_real(level, "level", low=0, high=1, low_open=True, high_open=True)
    if values.size < 2:
        raise ValueError(f"values must hold at least 2 runs, got {values.size}")
    sd = float(np.std(values, ddof=1))
    return float(np.mean(values) - stats.t.ppf(level, values.size - 1) * sd / math.sqrt(values.size))
