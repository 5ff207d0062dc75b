r"""The set-ups of the Foundations chapters: the classifier of Foundations 4 and 5, and Foundations 7's simulation.

:func:`mnist_network` is the classifier whose scores Foundations 4 recalibrates
and Foundations 5 turns into sets.

Foundations 7 studies calibration-error estimators on a forecaster whose
error is known. Its confidence is :math:`C \sim \mathrm{Beta}(a, b)` and the
event happens with probability :math:`\Pr(Y = 1 \mid C = c) = c^{\gamma}`:
calibrated for :math:`\gamma = 1`, over-confident (the event rarer than
announced) for :math:`\gamma > 1`. :func:`power_curve_truth` integrates its
true errors numerically, :func:`estimator_draws` draws data sets and applies
every estimator of the chapter, and :func:`estimator_summary` gives each
estimator's bias, spread and RMSE against its target.
"""

from __future__ import annotations

import numpy as np
from scipy import integrate, stats
from sklearn.decomposition import PCA
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from calibtut._validation import check_frame, check_int, check_real, check_rng
from calibtut.metrics import debiased_ece, expected_calibration_error, plugin_l2_ece, smooth_ece

__all__ = ["ESTIMATORS", "draw_power_curve", "estimator_draws", "estimator_summary", "mnist_network",
           "power_curve_truth"]


def mnist_network(seed):
    """The unfitted MNIST classifier of Foundations 4 and 5: 40 principal components into an MLP(32).

    The images are projected on their first 40 principal components,
    standardised, and classified by a multilayer perceptron with one hidden
    layer of 32 units (weight decay ``1e-5``), trained until its loss stops
    improving by ``1e-4`` for 10 epochs (at most 1,000).

    Parameters
    ----------
    seed : int
        Seed of the PCA's randomized solver and of the MLP's initialisation
        and shuffling; non-negative.

    Returns
    -------
    sklearn.pipeline.Pipeline
        Unfitted; ``fit(images, digits)`` trains it.

    Examples
    --------
    >>> net = mnist_network(0)
    >>> [name for name, _ in net.steps]
    ['pca', 'standardscaler', 'mlpclassifier']
    """
    seed = check_int(seed, "seed", minimum=0)
    return make_pipeline(
        PCA(n_components=40, random_state=seed),
        StandardScaler(),
        MLPClassifier(hidden_layer_sizes=(32,), alpha=1e-5, max_iter=1_000, tol=1e-4,
                      n_iter_no_change=10, random_state=seed),
    )


#: The estimators of Foundations 7, each with the true error it estimates ("l1" or "l2").
ESTIMATORS = {
    "ECE, equal-width": "l1",
    "ECE, equal-mass": "l1",
    "smooth ECE": "l1",
    "plug-in l2": "l2",
    "debiased l2": "l2",
}


def _check_curve(a, b, power):
    return (check_real(a, "a", low=0, low_open=True), check_real(b, "b", low=0, low_open=True),
            check_real(power, "power", low=1))


def power_curve_truth(a, b, power, n_bins=15):
    r"""True calibration errors of ``C ~ Beta(a, b)``, ``P(Y = 1 | C = c) = c**power``, by quadrature.

    Parameters
    ----------
    a, b : float
        Positive parameters of the confidence's Beta law.
    power : float
        Exponent ``gamma >= 1`` of the calibration curve (1: calibrated).
    n_bins : int, default 15
        Number of equal-mass bins of the binned l2 error.

    Returns
    -------
    dict
        ``l1`` :math:`= \mathbb E|C - C^\gamma|`, ``l2``
        :math:`= (\mathbb E(C - C^\gamma)^2)^{1/2}` and ``binned_l2``
        :math:`= (\sum_b \Pr(C \in b)\,\mathbb E[C - C^\gamma \mid C \in b]^2)^{1/2}`
        over ``n_bins`` bins of equal probability (at most ``l2``, by Jensen's
        inequality).

    Examples
    --------
    >>> truth = power_curve_truth(2.0, 1.0, 2.0)  # E[C - C^2] = 2/3 - 1/2 for the density 2c
    >>> round(truth["l1"], 10)
    0.1666666667
    >>> power_curve_truth(2.0, 1.0, 1.0)["l2"]
    0.0
    """
    a, b, power = _check_curve(a, b, power)
    n_bins = check_int(n_bins, "n_bins", minimum=1)
    law = stats.beta(a, b)

    def moment(fn, low=0.0, high=1.0):
        return integrate.quad(lambda c: fn(c) * law.pdf(c), low, high, epsabs=1e-13, epsrel=1e-11, limit=200)[0]

    edges = law.ppf(np.linspace(0, 1, n_bins + 1))
    bin_gaps = [moment(lambda c: c - c**power, lo, hi) * n_bins for lo, hi in zip(edges[:-1], edges[1:])]
    return {
        "l1": moment(lambda c: c - c**power),
        "l2": float(np.sqrt(moment(lambda c: (c - c**power) ** 2))),
        "binned_l2": float(np.sqrt(np.mean(np.square(bin_gaps)))),
    }


def draw_power_curve(n, a, b, power, seed=None):
    """Draw ``n`` confidences ``C ~ Beta(a, b)`` and outcomes ``Y ~ Bernoulli(C**power)``.

    Parameters
    ----------
    n : int
        Sample size (at least 1).
    a, b, power : float
        As in :func:`power_curve_truth`.
    seed : int, numpy.random.Generator or None

    Returns
    -------
    confidence : numpy.ndarray of shape (n,)
    correct : numpy.ndarray of shape (n,), float 0/1

    Examples
    --------
    >>> c, y = draw_power_curve(5, 4.0, 1.5, 1.0, seed=0)
    >>> c.shape, set(y) <= {0.0, 1.0}
    ((5,), True)
    """
    n = check_int(n, "n", minimum=1)
    a, b, power = _check_curve(a, b, power)
    rng = check_rng(seed)
    confidence = rng.beta(a, b, size=n)
    return confidence, (rng.random(n) < confidence**power).astype(float)


def estimator_draws(n, n_bins, a, b, power, n_seeds, seed=0, smooth=True, n_grid=500):
    """Every estimator of :data:`ESTIMATORS` on ``n_seeds`` independent data sets of size ``n``.

    Parameters
    ----------
    n : int
        Sample size of each data set (at least 2).
    n_bins : int
        Bins of the binned estimators (at least 1).
    a, b, power : float
        As in :func:`power_curve_truth`.
    n_seeds : int
        Number of data sets (at least 1).
    seed : int, default 0
        Data set ``i`` is drawn with ``numpy.random.default_rng([seed, n, i])``, so
        every sample size has its own streams.
    smooth : bool, default True
        Also compute the smooth ECE (it does not depend on ``n_bins``).
    n_grid : int, default 500
        Grid of the smooth ECE (see :func:`calibtut.metrics.smooth_ece`).

    Returns
    -------
    pandas.DataFrame
        One row per data set and estimator: ``seed``, ``estimator``, ``n``,
        ``n_bins``, ``value`` (the l1 error, or the l2 error
        ``sqrt(max(squared, 0))``) and ``squared`` (the l2 estimators' squared
        value, negative possible for the debiased one; NaN for the l1 ones).

    Examples
    --------
    >>> draws = estimator_draws(200, 10, 4.0, 1.5, 1.0, n_seeds=2, smooth=False)
    >>> sorted(draws["estimator"].unique())
    ['ECE, equal-mass', 'ECE, equal-width', 'debiased l2', 'plug-in l2']
    """
    import pandas as pd

    n = check_int(n, "n", minimum=2)
    n_bins = check_int(n_bins, "n_bins", minimum=1)
    a, b, power = _check_curve(a, b, power)
    n_seeds = check_int(n_seeds, "n_seeds", minimum=1)
    seed = check_int(seed, "seed", minimum=0)
    rows = []
    for i in range(n_seeds):
        c, y = draw_power_curve(n, a, b, power, np.random.default_rng([seed, n, i]))
        squared = {"plug-in l2": plugin_l2_ece(c, y, n_bins, squared=True),
                   "debiased l2": debiased_ece(c, y, n_bins, squared=True)}
        values = {"ECE, equal-width": expected_calibration_error(c, y, n_bins),
                  "ECE, equal-mass": expected_calibration_error(c, y, n_bins, strategy="quantile")}
        if smooth:
            values["smooth ECE"] = smooth_ece(c, y, n_grid=n_grid)
        values.update({k: float(np.sqrt(max(v, 0.0))) for k, v in squared.items()})
        rows += [{"seed": i, "estimator": k, "n": n, "n_bins": n_bins, "value": v,
                  "squared": squared.get(k, np.nan)} for k, v in values.items()]
    return pd.DataFrame(rows)


def estimator_summary(draws, truth):
    """Bias, standard deviation and RMSE of each estimator against its true error.

    Parameters
    ----------
    draws : pandas.DataFrame
        Rows of :func:`estimator_draws` (any number of ``n`` and ``n_bins``).
    truth : dict
        :func:`power_curve_truth`'s errors (keys ``l1`` and ``l2``).

    Returns
    -------
    pandas.DataFrame
        One row per estimator, ``n`` and ``n_bins``: ``target`` (the true l1 or
        l2 error), ``mean``, ``bias`` (mean minus target), ``sd``, ``rmse``,
        ``se`` (the standard error of the mean) and ``seeds``.

    Examples
    --------
    >>> import pandas as pd
    >>> draws = pd.DataFrame({"estimator": ["ECE, equal-mass"] * 2, "n": 100, "n_bins": 10,
    ...                       "value": [0.1, 0.3]})
    >>> row = estimator_summary(draws, {"l1": 0.1, "l2": 0.2}).iloc[0]
    >>> round(float(row["bias"]), 6), round(float(row["rmse"]), 6)
    (0.1, 0.141421)
    """
    draws = check_frame(draws, "draws", ["estimator", "n", "n_bins", "value"], allow_empty=False)
    if not isinstance(truth, dict) or not {"l1", "l2"} <= set(truth):
        raise ValueError(f"truth must be a dict with keys 'l1' and 'l2', got {truth!r}")
    unknown = set(draws["estimator"]) - set(ESTIMATORS)
    if unknown:
        raise ValueError(f"draws holds unknown estimators {sorted(unknown)}; known: {list(ESTIMATORS)}")
    target = draws["estimator"].map(ESTIMATORS).map(truth)
    error = draws.assign(target=target, error=draws["value"] - target)
    out = error.groupby(["estimator", "n", "n_bins"], sort=False).agg(
        target=("target", "first"), mean=("value", "mean"), sd=("value", "std"),
        rmse=("error", lambda e: float(np.sqrt(np.mean(np.square(e))))), seeds=("value", "size"))
    out["bias"] = out["mean"] - out["target"]
    out["se"] = out["sd"] / np.sqrt(out["seeds"])
    return out[["target", "mean", "bias", "sd", "rmse", "se", "seeds"]].reset_index()
