"""Statistical tests and summaries of repeated runs: paper 002's comparison, standard errors, accuracy gaps.

Written on well-kept libraries (scipy, statsmodels, scikit-posthocs, seaborn).

* :func:`holm`: Holm's step-down correction (written out; checked against ``statsmodels``).
* :func:`pce_study_test`: the per-dataset PCE test against its simulated null
  (:func:`calibtut.metrics.pce_test`), with the paper's p-value (fraction of
  null draws strictly above the statistic, which can be 0) beside the usual
  ``(1 + #>=) / (1 + n_sim)``, each Holm-corrected across datasets.
* :func:`cohens_d`: the standardized mean difference in the textbook form
  (pooled variance with ``ddof=1``) and in the authors' form, whose
  denominator ``sqrt((v1 + v2) / (n1 + n2 - 2))`` with ``ddof=0`` variances
  makes it ``sqrt(n)`` times larger for ``n`` runs against ``n``.
* :func:`select_lambda`: the selection rule of the regularization strength.
* :func:`paired_wilcoxon`: Wilcoxon's signed-rank test (``zero_method="pratt"``,
  scipy) of paired values that may be infinite: equal values, equal
  infinities included, are a zero difference (a tie), as Friedman's ranks
  read them.
* :func:`friedman_wilcoxon`: Friedman's test over methods, then every pair by
  :func:`paired_wilcoxon` with Holm's correction (:func:`holm`), and the
  average ranks; :func:`critical_difference_diagram` draws them
  (``scikit-posthocs``).
* :func:`clustered_proportion_se`: the cluster-robust (CR1) standard error of a
  proportion pooled over clusters of correlated points (the residues of one
  protein, the tokens of one sentence), as ``statsmodels`` computes it for a
  mean with ``cov_type="cluster"``.
* :func:`letter_value_plot`: the distribution over datasets of each method's
  Cohen's d as letter-value ("boxen") plots (``seaborn.boxenplot``), methods
  sorted by median, on a symmetric-log axis, as in paper 002's Figures 3-10.
* :func:`mean_with_sem`: mean and standard error of every column of a table
  of repeated runs (paper 004's chapter 7).
* :func:`accuracy_gap_sd`: an accuracy minus its target ``1 - alpha``, in
  binomial standard deviations (paper 001's "below 1 - alpha" reading).
* :func:`mean_lower_bound`: the one-sided Student-``t`` lower confidence
  bound of a mean from independent runs (paper 001's chapter 4).
* :func:`summarize_runs`: mean and standard deviation of metrics over
  repeated runs, per group (paper 003's "mean ± std" cells).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy import stats as sps

from calibtut._validation import (
    as_float_array,
    check_alpha,
    check_frame,
    check_int,
    check_probabilities,
    check_real,
)
from calibtut.metrics.hypothesis_tests import pce_test

__all__ = [
    "LAMBDA_GRID",
    "ComparisonResult",
    "accuracy_gap_sd",
    "clustered_proportion_se",
    "cohens_d",
    "critical_difference_diagram",
    "friedman_wilcoxon",
    "holm",
    "letter_value_plot",
    "mean_lower_bound",
    "mean_with_sem",
    "paired_wilcoxon",
    "pce_study_test",
    "select_lambda",
    "summarize_runs",
]

#: The regularization strengths of paper 002 (0 is the unregularized model).
LAMBDA_GRID = (0.0, 0.01, 0.05, 0.2, 1.0, 5.0)


def holm(pvalues, alpha=0.01):
    """Holm's step-down correction of a family of p-values.

    The adjusted p-value of the ``i``-th smallest of ``k`` p-values is
    ``max_{j <= i} min(1, (k - j + 1) p_(j))``, as in ``statsmodels``'
    ``multipletests(method="holm")`` (the tests check the two agree). It is
    written out here because ``multipletests`` runs a full garbage collection
    on every call (0.18 s of 0.21 s per 16-method diagram, measured), which
    dominated the bootstrap of the critical-difference diagrams in
    :func:`~calibtut.experiments.regression_study.claim_verdicts`.

    Parameters
    ----------
    pvalues : array_like, shape (k,)
        In [0, 1].
    alpha : float, default 0.01
        Family-wise error rate in (0, 1) (paper 002's level for the PCE tests).

    Returns
    -------
    reject : numpy.ndarray of bool, shape (k,)
    adjusted : numpy.ndarray, shape (k,)
        Holm-adjusted p-values; ``reject == (adjusted <= alpha)``.

    Examples
    --------
    >>> reject, adjusted = holm([0.001, 0.02, 0.004], alpha=0.01)
    >>> reject.tolist(), adjusted.round(3).tolist()
    ([True, False, True], [0.003, 0.02, 0.008])
    """
    p = check_probabilities(pvalues, "pvalues", ndim=1)
    alpha = check_alpha(alpha)
    order = np.argsort(p, kind="stable")
    steps = np.minimum(1.0, (p.size - np.arange(p.size)) * p[order])
    adjusted = np.empty(p.size)
    adjusted[order] = np.maximum.accumulate(steps)
    return adjusted <= alpha, adjusted


def pce_study_test(pits, *, n_sim=10_000, alpha=0.01, seed=None):
    """Per-dataset PCE test of paper 002 (Section 4), Holm-corrected across datasets.

    Parameters
    ----------
    pits : mapping of str to list of array_like
        For each dataset, the test PITs of each run; the statistic is the
        mean over runs of the sorted-form PCE, the null its distribution
        under uniform PITs of the same sizes.
    n_sim : int, default 10000
        Null draws per dataset (paper: 10^4), >= 1.
    alpha : float, default 0.01
        Family-wise level of Holm's correction, in (0, 1).
    seed : int or None
        Seed of the first dataset's null; dataset ``i`` uses ``seed + i``.

    Returns
    -------
    pandas.DataFrame
        Indexed by dataset: ``statistic``, ``null_mean``, ``pvalue_paper``
        (``mean(null > statistic)``), ``pvalue`` (``(1 + #>=) / (1 + n_sim)``),
        and the Holm decisions ``reject_paper`` and ``reject``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> pits = {"calibrated": [rng.random(300)], "skewed": [rng.random(300) ** 2]}
    >>> table = pce_study_test(pits, n_sim=2000, seed=0)
    >>> table["reject"].tolist()
    [False, True]
    """
    if not hasattr(pits, "items") or len(pits) == 0:
        raise TypeError("pits must be a non-empty mapping of dataset name to a list of PIT arrays")
    n_sim = check_int(n_sim, "n_sim", minimum=1)
    alpha = check_alpha(alpha)
    if seed is not None:
        seed = check_int(seed, "seed", minimum=0)
    rows = {}
    for i, (name, runs) in enumerate(pits.items()):
        if not isinstance(runs, (list, tuple)) or len(runs) == 0:
            raise TypeError(f"pits[{name!r}] must be a non-empty list of PIT arrays (one per run)")
        runs = [check_probabilities(run, f"pits[{name!r}][{j}]", ndim=1) for j, run in enumerate(runs)]
        result = pce_test(runs, n_sim=n_sim, seed=None if seed is None else seed + i)
        rows[name] = {
            "statistic": result.statistic,
            "null_mean": float(result.null_distribution.mean()),
            "pvalue_paper": float(np.mean(result.null_distribution > result.statistic)),
            "pvalue": result.pvalue,
        }
    table = pd.DataFrame.from_dict(rows, orient="index")
    table["reject_paper"] = holm(table["pvalue_paper"].to_numpy(), alpha)[0]
    table["reject"] = holm(table["pvalue"].to_numpy(), alpha)[0]
    return table


def clustered_proportion_se(successes, trials):
    r"""Cluster-robust standard error of a proportion pooled over clusters.

    The points of one cluster (the residues of a protein, the tokens of a
    sentence) may be correlated; clusters are taken to be independent. With
    :math:`k_g` successes among the :math:`m_g` points of cluster :math:`g`
    and the pooled proportion :math:`\hat p = \sum_g k_g / \sum_g m_g`, the
    cluster-robust ("sandwich", CR1) variance of :math:`\hat p` is

    .. math::

        \hat V = \frac{G}{G - 1}\,
        \frac{\sum_g (k_g - \hat p\, m_g)^2}{\left(\sum_g m_g\right)^2},

    over the :math:`G` clusters that hold points: the variance of a mean of
    per-point indicators with errors clustered by :math:`g`, as
    ``statsmodels`` computes it (``OLS(...).fit(cov_type="cluster")``; the
    tests check the two agree). With one point per cluster it is the
    binomial :math:`\hat p (1 - \hat p) / N` times :math:`N / (N - 1)`;
    points of a cluster that tend to succeed or fail together make it
    larger. It is estimated from the spread between clusters, so it is
    undefined (NaN) with fewer than two clusters, and noisy with few.

    Parameters
    ----------
    successes : array_like, shape (G,)
        Successes per cluster (non-negative, at most ``trials``).
    trials : array_like, shape (G,)
        Points per cluster (non-negative; clusters with none are ignored).

    Returns
    -------
    float
        :math:`\sqrt{\hat V}`; NaN when fewer than two clusters hold points.

    Examples
    --------
    Two proteins with four residues each, three right in one, one in the
    other: the pooled accuracy 0.5 is far less certain than eight
    independent residues would make it (binomial: 0.177).

    >>> round(clustered_proportion_se([3, 1], [4, 4]), 3)
    0.25
    >>> round(clustered_proportion_se([2, 2], [4, 4]), 3)
    0.0
    """
    k = as_float_array(successes, "successes", ndim=1)
    m = as_float_array(trials, "trials", ndim=1)
    if k.shape != m.shape:
        raise ValueError(f"successes and trials must have the same length, got {k.size} and {m.size}")
    if (m < 0).any() or (k < 0).any():
        raise ValueError("successes and trials must be non-negative counts")
    if (k > m).any():
        raise ValueError("successes must be at most trials in every cluster")
    held = m > 0
    k, m = k[held], m[held]
    if k.size < 2:
        return float("nan")
    p = k.sum() / m.sum()
    g = k.size
    return float(np.sqrt(g / (g - 1) * np.sum((k - p * m) ** 2)) / m.sum())


def cohens_d(compared, baseline, form="authors"):
    """Standardized mean difference ``(mean(compared) - mean(baseline)) / s``.

    Parameters
    ----------
    compared, baseline : array_like, shape (n1,) and (n2,)
        One value per run (lower is better in paper 002, so negative d is an
        improvement of ``compared``).
    form : {"authors", "textbook"}, default "authors"
        ``"textbook"``: ``s`` is the pooled standard deviation
        ``sqrt(((n1 - 1) s1^2 + (n2 - 1) s2^2) / (n1 + n2 - 2))``.
        ``"authors"``: ``s = sqrt((v1 + v2) / (n1 + n2 - 2))`` with ``ddof=0``
        variances ``v``, as in the authors' code; for ``n1 = n2 = n`` this is
        ``sqrt(n)`` times the textbook d.

    Returns
    -------
    float
        ``nan`` when both samples are constant and equal; +-inf when only the
        means differ.

    Examples
    --------
    >>> a, b = [1.0, 2.0, 3.0, 4.0, 5.0], [2.0, 3.0, 4.0, 5.0, 6.0]
    >>> round(cohens_d(a, b, "textbook"), 4), round(cohens_d(a, b, "authors"), 4)
    (-0.6325, -1.4142)
    """
    x = as_float_array(compared, "compared", ndim=1)
    y = as_float_array(baseline, "baseline", ndim=1)
    n1, n2 = x.size, y.size
    if n1 + n2 < 3:
        raise ValueError(f"cohens_d needs at least 3 values in all, got {n1} and {n2}")
    if form == "authors":
        s = np.sqrt((x.var() + y.var()) / (n1 + n2 - 2))
    elif form == "textbook":
        s = np.sqrt(((n1 - 1) * x.var(ddof=1 if n1 > 1 else 0) + (n2 - 1) * y.var(ddof=1 if n2 > 1 else 0))
                    / (n1 + n2 - 2))
    else:
        raise ValueError(f"form must be 'authors' or 'textbook', got {form!r}")
    with np.errstate(divide="ignore", invalid="ignore"):
        return float((x.mean() - y.mean()) / s)


def select_lambda(lambdas, val_score, val_pce, tolerance=0.1):
    """The lambda selection rule of paper 002 (Section 6.1, the authors' code).

    Among the strengths whose run-mean validation score exceeds that of
    ``lambda = 0``, ``s0``, by at most ``tolerance * |s0|``, return the one with
    the smallest run-mean validation PCE. ``lambda = 0`` is always admissible.

    The authors' code keeps ``score <= (1 + tolerance) * s0`` on the
    validation WIS, which is never negative; for ``s0 >= 0`` the two rules are
    the same. For a negative ``s0`` (an NLL can be) the ratio form would
    demand a score *below* the unregularized one's and refuse models better
    than it; the increase relative to ``|s0|`` reads "at most 10 % worse" as
    the paper states it, whatever the sign.

    Parameters
    ----------
    lambdas : array_like, shape (k,)
        Distinct, non-negative; must contain 0.
    val_score : array_like, shape (k,) or (k, n_runs)
        Validation score per strength (and run): the 19-level WIS in the
        authors' code, the CRPS in the paper's text.
    val_pce : array_like, same shape as ``val_score``
    tolerance : float, default 0.1
        Largest admissible increase of the score, relative to ``|s0|``, >= 0.

    Returns
    -------
    float
        The selected strength (the smallest one among tied PCEs).

    Examples
    --------
    >>> select_lambda([0, 0.2, 1, 5], [1.00, 1.02, 1.08, 1.30], [0.05, 0.04, 0.02, 0.01])
    1.0
    >>> select_lambda([0, 0.2, 1, 5], [-1.00, -1.02, -0.92, -0.70], [0.05, 0.04, 0.02, 0.01])
    1.0
    """
    lams = as_float_array(lambdas, "lambdas", ndim=1)
    if np.any(lams < 0):
        raise ValueError(f"lambdas must be >= 0, got {lams.tolist()}")
    if np.unique(lams).size != lams.size:
        raise ValueError("lambdas must be distinct")
    if not np.any(lams == 0):
        raise ValueError("lambdas must contain 0 (the unregularized reference)")
    score = as_float_array(val_score, "val_score", ndim=(1, 2))
    pce = as_float_array(val_pce, "val_pce", ndim=(1, 2))
    if score.shape != pce.shape or score.shape[0] != lams.size:
        raise ValueError(
            f"val_score and val_pce must both have {lams.size} rows and the same shape, "
            f"got {score.shape} and {pce.shape}"
        )
    tolerance = check_real(tolerance, "tolerance", low=0)
    score = score.reshape(lams.size, -1).mean(axis=1)
    pce = pce.reshape(lams.size, -1).mean(axis=1)
    reference = score[lams == 0][0]
    admissible = score <= reference + tolerance * abs(reference)
    admissible[lams == 0] = True
    order = np.lexsort((lams, np.where(admissible, pce, np.inf)))
    return float(lams[order[0]])


class ComparisonResult(NamedTuple):
    """Outcome of :func:`friedman_wilcoxon`: a result record (a named tuple), not built by users.

    Attributes
    ----------
    friedman_statistic, friedman_pvalue : float
        Friedman's chi-square test over the methods.
    pvalues : pandas.DataFrame
        Holm-adjusted two-sided Wilcoxon p-values of every pair (diagonal 1).
    ranks : pandas.Series
        Average rank of each method over datasets (1 = lowest value = best).
    alpha : float
        The level of the test, already validated by :func:`friedman_wilcoxon`.
    """

    friedman_statistic: float
    friedman_pvalue: float
    pvalues: pd.DataFrame
    ranks: pd.Series
    alpha: float

    @property
    def significant(self):
        """Whether Friedman's test rejects at ``alpha`` (else no diagram is drawn)."""
        return self.friedman_pvalue < self.alpha


def paired_wilcoxon(compared, baseline, alternative="two-sided"):
    """Wilcoxon's signed-rank test (``zero_method="pratt"``) of paired values that may be infinite.

    The differences are ``compared - baseline``, except that equal values,
    equal infinities included, give a difference of 0: a pair where both
    values are ``+inf`` (Rec-EMP's NLL against itself) is a tie, as
    Friedman's ranks read it, and ``pratt`` keeps it in the ranking of the
    absolute differences. scipy computes ``inf - inf = nan`` and drops the pair
    instead, which changes the p-value (the tie's rank no longer lowers the
    others). An infinite value against a finite one is an infinite
    difference: the largest absolute difference, in its direction. Pairs
    with a NaN are dropped.

    Parameters
    ----------
    compared, baseline : array_like, shape (n,)
        Paired values (one per dataset); +-inf allowed, NaN drops the pair.
    alternative : {"two-sided", "less", "greater"}, default "two-sided"
        ``"less"``: ``compared`` tends to be below ``baseline``.

    Returns
    -------
    float
        The p-value (scipy's exact or normal method, chosen as
        ``scipy.stats.wilcoxon`` chooses it); 1.0 when no pair differs (no
        evidence of a difference), NaN when no pair is left.

    Examples
    --------
    >>> a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, np.inf]
    >>> b = [1.5, 2.6, 3.7, 4.8, 5.9, 7.0, np.inf]
    >>> round(paired_wilcoxon(a, b, "less"), 4)  # the tie at inf counts, as 3.0 against 3.0 would
    0.0156
    """
    x = as_float_array(compared, "compared", ndim=1, finite=False)
    y = as_float_array(baseline, "baseline", ndim=1, finite=False)
    if x.size != y.size:
        raise ValueError(f"compared and baseline must have the same length, got {x.size} and {y.size}")
    if alternative not in ("two-sided", "less", "greater"):
        raise ValueError(f"alternative must be 'two-sided', 'less' or 'greater', got {alternative!r}")
    keep = ~(np.isnan(x) | np.isnan(y))
    if not np.any(keep):
        return float("nan")
    return float(_wilcoxon_columns(_differences(x[keep, None], y[keep, None]), alternative)[0])


def _differences(x, y):
    """``x - y``, with 0 where the two are equal (equal infinities included)."""
    with np.errstate(invalid="ignore"):
        return np.where(x == y, 0.0, x - y)


def _wilcoxon_columns(diffs, alternative="two-sided"):
    """Wilcoxon (pratt) p-value of each column of differences; 1 for a column of zeros.

    scipy's ``method="auto"`` chooses the exact or the normal method per call,
    but once for all columns when vectorised; up to 50 rows (where it may
    choose the exact one) the columns are tested one at a time, beyond it
    always uses the normal approximation and one vectorised call gives the
    same values, much faster (the bootstrap of a 16-method diagram).
    """
    p = np.ones(diffs.shape[1])
    tested = np.flatnonzero(np.any(diffs != 0, axis=0))
    if diffs.shape[0] > 50 and tested.size:
        p[tested] = sps.wilcoxon(diffs[:, tested], zero_method="pratt", alternative=alternative, axis=0).pvalue
    else:
        for j in tested:
            p[j] = sps.wilcoxon(diffs[:, j], zero_method="pratt", alternative=alternative).pvalue
    return p


def friedman_wilcoxon(values, alpha=0.05):
    """Friedman test, then pairwise Wilcoxon (pratt) with Holm, and average ranks.

    Infinite values are ranked, in both tests alike: Friedman ranks equal
    values within a dataset as tied, +inf last, and the pairwise test
    (:func:`paired_wilcoxon`) reads two equal values, equal infinities
    included, as a zero difference, never as a dataset to drop.

    Parameters
    ----------
    values : pandas.DataFrame
        One row per dataset, one column per method (the run-mean metric;
        lower is better). Rows with NaN are dropped; +inf is kept.
    alpha : float, default 0.05
        Level of Friedman's test and of the diagram's bars, in (0, 1).

    Returns
    -------
    ComparisonResult

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> base = rng.normal(size=30)
    >>> table = pd.DataFrame({"a": base, "b": base + 1 + 0.1 * rng.normal(size=30), "c": base + 2})
    >>> res = friedman_wilcoxon(table)
    >>> res.significant, res.ranks.round(2).tolist(), bool(res.pvalues.loc["a", "b"] < 0.05)
    (True, [1.0, 2.0, 3.0], True)
    """
    if not isinstance(values, pd.DataFrame):
        raise TypeError(f"values must be a pandas DataFrame (datasets x methods), got {type(values).__name__}")
    alpha = check_alpha(alpha)
    table = values.astype(float).dropna()
    if table.shape[1] < 3 or table.shape[0] < 2:
        raise ValueError(f"need at least 3 methods and 2 complete datasets, got shape {table.shape}")
    statistic, pvalue = sps.friedmanchisquare(*(table[c].to_numpy() for c in table.columns))
    columns = table.to_numpy()
    upper = np.triu_indices(columns.shape[1], 1)
    # two identical columns (a regularized method whose selected lambda is 0 is the vanilla
    # model itself) have no nonzero difference: p = 1, no evidence of a difference
    raw = _wilcoxon_columns(_differences(columns[:, upper[0]], columns[:, upper[1]]))
    matrix = np.ones((columns.shape[1],) * 2)
    matrix[upper] = matrix.T[upper] = holm(raw)[1]
    pvalues = pd.DataFrame(matrix, index=table.columns, columns=table.columns)
    ranks = table.rank(axis=1, method="average").mean(axis=0)
    return ComparisonResult(float(statistic), float(pvalue), pvalues, ranks, alpha)


def critical_difference_diagram(result, ax=None, **kwargs):
    """Critical-difference diagram of a :class:`ComparisonResult` (scikit-posthocs).

    Methods are placed at their average rank; bars join those whose pairwise
    tests are not significant at ``result.alpha``.

    Parameters
    ----------
    result : ComparisonResult
    ax : matplotlib.axes.Axes, optional
    **kwargs
        Passed to ``scikit_posthocs.critical_difference_diagram``.

    Returns
    -------
    dict
        The artists drawn, as returned by scikit-posthocs.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> rng = np.random.default_rng(0)
    >>> base = rng.normal(size=20)
    >>> table = pd.DataFrame({"a": base, "b": base + 1, "c": base + 2 + rng.normal(size=20)})
    >>> isinstance(critical_difference_diagram(friedman_wilcoxon(table)), dict)
    True
    """
    import scikit_posthocs as sp

    if not isinstance(result, ComparisonResult):
        raise TypeError(f"result must be a ComparisonResult, got {type(result).__name__}")
    return sp.critical_difference_diagram(result.ranks, result.pvalues, ax=ax, alpha=result.alpha, **kwargs)


def letter_value_plot(effects, ax=None, *, linthresh=1.0, families=None, **kwargs):
    """Letter-value plots of effect sizes per method, sorted by median (paper 002, Figs. 3-10).

    Parameters
    ----------
    effects : pandas.DataFrame
        One row per dataset, one column per method (e.g. Cohen's d against
        a baseline); NaN entries are ignored.
    ax : matplotlib.axes.Axes, optional
    linthresh : float, default 1.0
        Linear range of the symmetric-log x-axis, > 0.
    families : mapping of str to str, optional
        Each method's family (e.g. "post-hoc", "regularizer", "base"): the
        boxes are coloured by family, as in the paper's figures, with a legend.
    **kwargs
        Passed to ``seaborn.boxenplot``.

    Returns
    -------
    matplotlib.axes.Axes
        Methods on the y-axis from the lowest median (best, for
        lower-is-better metrics) at the top.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> rng = np.random.default_rng(0)
    >>> d = pd.DataFrame({"A": rng.normal(-2, 1, 57), "B": rng.normal(0, 1, 57)})
    >>> [t.get_text() for t in letter_value_plot(d).get_yticklabels()]
    ['A', 'B']
    >>> ax = letter_value_plot(d, families={"A": "post-hoc", "B": "base"})
    >>> [t.get_text() for t in ax.get_legend().get_texts()]
    ['post-hoc', 'base']
    """
    import matplotlib.pyplot as plt
    import seaborn as sns
    from matplotlib.ticker import MaxNLocator, ScalarFormatter

    if not isinstance(effects, pd.DataFrame) or effects.shape[1] == 0:
        raise TypeError("effects must be a pandas DataFrame with one column per method")
    linthresh = check_real(linthresh, "linthresh", low=0, low_open=True)
    table = effects.astype(float)
    order = table.median().sort_values(kind="stable").index.tolist()
    long = table.melt(var_name="method", value_name="effect").dropna()
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 0.4 * len(order) + 1))
    if families is None:
        sns.boxenplot(data=long, x="effect", y="method", order=order, ax=ax, **kwargs)
    else:
        families = dict(families)
        missing = [m for m in order if m not in families]
        if missing:
            raise ValueError(f"families has no family for the methods {missing}")
        long["family"] = long["method"].map(families)
        hue_order = list(dict.fromkeys(families[m] for m in order))
        sns.boxenplot(data=long, x="effect", y="method", order=order, hue="family", hue_order=hue_order,
                      dodge=False, ax=ax, **kwargs)
        ax.legend(title=None, fontsize="small", loc="best")
    ax.set_xscale("symlog", linthresh=linthresh)
    low, high = ax.get_xlim()
    if -linthresh <= low and high <= linthresh:
        # all inside the linear part: symlog would tick only the two limits (printed
        # as e.g. -3.14092 x 10^-2, over the 0 label); linear ticks read better
        ax.xaxis.set_major_locator(MaxNLocator(nbins=4))
        ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.axvline(0.0, color="0.5", lw=0.8, zorder=0)
    ax.set_xlabel("Cohen's d")
    ax.set_ylabel("")
    return ax


def accuracy_gap_sd(pooled, alpha):
    r"""Accuracy of admitted points minus :math:`1 - \alpha`, in binomial standard deviations.

    Corollary 1 and the claims about it read "below :math:`1 - \alpha`" as
    a gap under :math:`-3` and "reaches :math:`1 - \alpha` up to sampling
    error" as a gap of at least :math:`-3`, with the standard deviation
    :math:`\sqrt{\alpha (1 - \alpha) / n}` of an accuracy estimated on
    :math:`n` admitted points. Over several calibration splits sharing one
    test set, that deviation is too small (see
    ``calibtut.experiments.venn_admit.pooled_singletons``): a "reaches"
    check built on it is then stricter than it needs to be, and a "below"
    check more lenient, so the latter should hold by a wide margin.

    Where nothing is admitted the gap is NaN. ``(gap >= -3).all()`` then
    fails, which suits a claim about admitted points that needs some;
    ``not (gap < -3).any()`` passes, which suits a claim that holds
    vacuously when a method abstains everywhere.

    Parameters
    ----------
    pooled : pandas.DataFrame
        Columns ``n`` (non-negative counts) and ``accuracy`` (in [0, 1], NaN
        where ``n`` is 0), as ``calibtut.experiments.venn_admit.pooled_singletons``
        returns.
    alpha : float
        The miscoverage level, in (0, 1).

    Returns
    -------
    pandas.Series
        :math:`(\text{accuracy} - (1 - \alpha)) / \sqrt{\alpha (1 - \alpha) / n}`,
        NaN where nothing is admitted.

    Examples
    --------
    >>> pooled = pd.DataFrame({"n": [100, 400, 0], "accuracy": [0.87, 0.60, np.nan]})
    >>> accuracy_gap_sd(pooled, 0.1).round(2).tolist()
    [-1.0, -20.0, nan]
    """
    alpha = check_alpha(alpha)
    if not isinstance(pooled, pd.DataFrame):
        raise TypeError(f"pooled must be a pandas DataFrame, got {type(pooled).__name__}")
    missing = [c for c in ("n", "accuracy") if c not in pooled.columns]
    if missing:
        raise ValueError(f"pooled lacks column(s) {missing}; pass the output of pooled_singletons")
    n = pd.to_numeric(pooled["n"], errors="coerce").astype(float)
    accuracy = pd.to_numeric(pooled["accuracy"], errors="coerce").astype(float)
    if n.isna().any() or (n < 0).any():
        raise ValueError("pooled['n'] must hold non-negative counts")
    if ((accuracy < 0) | (accuracy > 1)).any() or (accuracy.isna() & (n > 0)).any():
        raise ValueError("pooled['accuracy'] must lie in [0, 1] wherever n > 0")
    n = n.where(n > 0)
    return (accuracy - (1 - alpha)) / np.sqrt(alpha * (1 - alpha) / n)


def mean_with_sem(runs):
    """Mean and standard error (``std / sqrt(n)``, ddof 1) of every column over the runs.

    Parameters
    ----------
    runs : pandas.DataFrame
        One row per run, numeric columns (at least two rows).

    Returns
    -------
    pandas.DataFrame
        Indexed by the columns of ``runs``, with columns ``mean`` and ``std. error``.

    Examples
    --------
    >>> mean_with_sem(pd.DataFrame({"coverage": [0.8, 0.9, 1.0]})).round(4)
              mean  std. error
    coverage   0.9      0.0577
    """
    runs = check_frame(runs, "runs", allow_empty=False)
    if len(runs) < 2:
        raise ValueError(f"runs must have at least two rows for a standard error, got {len(runs)}")
    values = runs.astype(float)
    return pd.DataFrame({"mean": values.mean(), "std. error": values.sem()})


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
    return float(np.mean(values) - sps.t.ppf(level, values.size - 1) * sd / math.sqrt(values.size))


def summarize_runs(runs, by, metrics, *, decimals=None):
    """Mean and standard deviation of metrics over repeated runs, one row per group.

    The "mean ± std" over splits and repeats that papers print (paper 003's
    UCI tables), from one row per run (the rows of a sweep).

    Parameters
    ----------
    runs : pandas.DataFrame
        One row per run, with the columns ``by`` and ``metrics``.
    by : str or list of str
        Grouping columns, e.g. ``["model", "dataset", "lam"]``.
    metrics : list of str
        Metric columns to summarize.
    decimals : int, optional
        Round for display.

    Returns
    -------
    pandas.DataFrame
        Columns ``by``, ``n_runs``, then ``<metric>_mean`` and ``<metric>_std``
        (sample std, ddof = 1; NaN for a single run) for each metric.

    Examples
    --------
    >>> runs = pd.DataFrame({"lam": [0, 0, 1], "rmse": [1.0, 3.0, 2.0]})
    >>> summarize_runs(runs, "lam", ["rmse"])
       lam  n_runs  rmse_mean  rmse_std
    0    0       2        2.0  1.414214
    1    1       1        2.0       NaN
    """
    by = [by] if isinstance(by, str) else list(by)
    metrics = [metrics] if isinstance(metrics, str) else list(metrics)
    check_frame(runs, "runs", [*by, *metrics])
    if decimals is not None:
        decimals = check_int(decimals, "decimals", minimum=0)
    groups = runs.groupby(by, sort=False)
    table = groups.size().rename("n_runs").reset_index()
    for metric in metrics:
        moments = groups[metric].agg(["mean", "std"]).rename(columns=lambda c: f"{metric}_{c}").reset_index()
        table = table.merge(moments, on=by, how="left")
    if decimals is not None:
        numeric = [c for c in table.columns if c.endswith(("_mean", "_std"))]
        table[numeric] = table[numeric].round(decimals)
    return table
