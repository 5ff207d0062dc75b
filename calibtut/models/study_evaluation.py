"""Paper 002's evaluation of a fitted study model: its predictions in original units and the study's metrics.

:class:`StudyPredictor` holds a trained base model of the study (a mixture
network or an SQR network, :mod:`calibtut.models.study_training`) with the
:class:`~calibtut.data.Standardizer` it was trained under, and gives its
predictions in the target's units. :func:`mixture_metrics` and
:func:`quantile_metrics` score such predictions with the study's metrics, as
the authors' code computes them: NLL, CRPS, the mean predicted standard
deviation, PCE on the 19 levels of :data:`~calibtut.models.sqr.EVAL_LEVELS`
(over the whole set and averaged over batches of :data:`AUTHORS_BATCH` rows),
the weighted interval score and the test frequencies of ``y <= Q(a)``. A
mixture can be scored after a quantile-recalibration map
(:class:`~calibtut.recalibration.QuantileRecalibrator`).

It lives beside the models it evaluates rather than in :mod:`calibtut.metrics`
because it calls the trained network (torch) and the recalibration maps, both
above the metrics layer.
"""

from __future__ import annotations

import math

import numpy as np

from calibtut._validation import as_float_array, check_choice, check_same_length
from calibtut.metrics import (
    batch_pce,
    crps_mixture,
    crps_quantile,
    mixture_std,
    nll_mixture,
    pce,
    pit_mixture,
    quantile_calibration_error,
    quantile_std,
    weighted_interval_score,
)
from calibtut.models.mixture import predict_mixture
from calibtut.models.sqr import EVAL_LEVELS, predict_quantiles
from calibtut.recalibration import QuantileRecalibrator, mixture_quantile_function, recalibrated_nll

__all__ = ["AUTHORS_BATCH", "CRPS_LEVELS", "StudyPredictor", "mixture_metrics", "quantile_metrics"]

#: Rows per batch of the authors' validation and test loaders (their metrics average the batches).
AUTHORS_BATCH = 512

#: The 64 mid-point levels on which an SQR network's CRPS is computed.
CRPS_LEVELS = (np.arange(64) + 0.5) / 64


def _mixture_quantiles(weights, means, stds):
    base = mixture_quantile_function(weights, means, stds)
    # PITs of exactly 0 or 1 (far outliers) would give infinite base quantiles
    return lambda u: base(np.clip(u, 1e-12, 1 - 1e-12))


def _checked_y(y, n=None):
    y = as_float_array(y, "y", ndim=1)
    if n is not None and len(y) != n:
        raise ValueError(f"y must have one value per prediction ({n}), got {len(y)}")
    return y


def mixture_metrics(y, weights, means, stds, *, recalibrator=None):
    """The study's metrics of Gaussian-mixture predictions, optionally after a quantile-recalibration map.

    Parameters
    ----------
    y : array_like of shape (n,)
        Targets (original units).
    weights, means, stds : array_like of shape (n, n_components)
        The mixture predictions (original units).
    recalibrator : QuantileRecalibrator, optional
        A fitted map of the PIT values; the metrics are then those of the
        recalibrated predictions (CRPS is NaN: the authors do not compute it
        after a map).

    Returns
    -------
    metrics : dict
        ``nll``, ``crps``, ``std`` (mean predicted standard deviation),
        ``pce``, ``pce_batch`` (PCE averaged over batches of
        :data:`AUTHORS_BATCH`), ``wis``, ``std_quantile`` (the standard
        deviation implied by the 19 quantiles).
    freq : numpy.ndarray of shape (19,)
        Frequencies of ``PIT <= a`` at the levels of
        :data:`~calibtut.models.sqr.EVAL_LEVELS`.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> y = rng.normal(size=400)
    >>> ones = np.ones((400, 1))
    >>> metrics, freq = mixture_metrics(y, ones, 0 * ones, ones)
    >>> round(metrics["std"], 3), bool(metrics["pce"] < 0.05), freq.shape
    (1.0, True, (19,))
    """
    y = _checked_y(y)
    params = tuple(as_float_array(p, name, ndim=2) for p, name in ((weights, "weights"), (means, "means"),
                                                                   (stds, "stds")))
    check_same_length(y=y, weights=params[0], means=params[1], stds=params[2])
    if recalibrator is not None and not isinstance(recalibrator, QuantileRecalibrator):
        raise TypeError(f"recalibrator must be a QuantileRecalibrator, got {type(recalibrator).__name__}")
    pit = pit_mixture(y, *params)
    qf = _mixture_quantiles(*params)
    if recalibrator is None:
        quantiles = qf(EVAL_LEVELS)
        out = {
            "nll": nll_mixture(y, *params),
            "crps": crps_mixture(y, *params),
            "std": float(np.mean(mixture_std(*params))),
        }
    else:
        quantiles = recalibrator.predict_quantiles(EVAL_LEVELS, qf)
        log_density = -nll_mixture(y, *params, reduction="none")
        out = {"nll": recalibrated_nll(recalibrator, pit, log_density), "crps": math.nan,
               "std": quantile_std(quantiles)}
        pit = recalibrator.transform(pit)
    out.update(
        pce=pce(pit),
        pce_batch=batch_pce(pit, AUTHORS_BATCH),
        wis=weighted_interval_score(y, quantiles, EVAL_LEVELS),
        std_quantile=quantile_std(quantiles),
    )
    freq = (pit[:, None] <= EVAL_LEVELS[None, :]).mean(axis=0)
    return out, freq


def quantile_metrics(y, quantiles, *, crps_quantiles=None):
    """The study's metrics of 19 predicted quantiles, crossings kept as the authors keep them.

    Parameters
    ----------
    y : array_like of shape (n,)
        Targets (original units).
    quantiles : array_like of shape (n, 19)
        Predicted quantiles at :data:`~calibtut.models.sqr.EVAL_LEVELS`
        (not necessarily increasing: each level's PCE term counts on its own).
    crps_quantiles : array_like of shape (n, 64), optional
        Quantiles at :data:`CRPS_LEVELS`, sorted here, for the CRPS (NaN
        without them).

    Returns
    -------
    metrics : dict
        ``pce``, ``wis``, ``nll`` (NaN), ``crps``, ``std``, ``std_quantile``
        (the same) and ``pce_batch`` (NaN).
    freq : numpy.ndarray of shape (19,)
        Frequencies of ``y <= Q(a)`` at each level.

    Examples
    --------
    >>> from scipy import stats
    >>> y = np.random.default_rng(0).normal(size=500)
    >>> q = np.tile(stats.norm.ppf(EVAL_LEVELS), (500, 1))
    >>> metrics, freq = quantile_metrics(y, q)
    >>> bool(metrics["pce"] < 0.05), bool(np.isnan(metrics["crps"]))
    (True, True)
    """
    y = _checked_y(y)
    quantiles = as_float_array(quantiles, "quantiles", ndim=2)
    check_same_length(y=y, quantiles=quantiles)
    if quantiles.shape[1] != len(EVAL_LEVELS):
        raise ValueError(f"quantiles must have {len(EVAL_LEVELS)} columns (EVAL_LEVELS), got {quantiles.shape}")
    if crps_quantiles is not None:
        crps_quantiles = as_float_array(crps_quantiles, "crps_quantiles", ndim=2)
        check_same_length(y=y, crps_quantiles=crps_quantiles)
    out = {
        "pce": quantile_calibration_error(y, quantiles, EVAL_LEVELS, allow_crossing=True),
        "wis": weighted_interval_score(y, quantiles, EVAL_LEVELS),
        "nll": math.nan,
        "crps": math.nan if crps_quantiles is None else crps_quantile(y, np.sort(crps_quantiles, axis=1), CRPS_LEVELS),
        "std": quantile_std(quantiles),
    }
    out["std_quantile"] = out["std"]
    out["pce_batch"] = math.nan
    return out, (y[:, None] <= quantiles).mean(axis=0)


class StudyPredictor:
    """A trained base model of the study with its scaler: predictions in original units and their metrics.

    Parameters
    ----------
    model : torch.nn.Module
        A trained :class:`~calibtut.models.mixture.MixtureMLP` or
        :class:`~calibtut.models.sqr.SQRNet`.
    scaler : calibtut.data.Standardizer
        The scaler of inputs and target the model was trained under.
    family : {"mixture", "sqr"}
        The model's family.
    device : str or torch.device, default "cpu"
        Where the model runs.

    Examples
    --------
    >>> from calibtut.data import Standardizer
    >>> from calibtut.models import MixtureMLP
    >>> X = np.random.default_rng(0).normal(size=(50, 3))
    >>> y = X[:, 0] + 10.0
    >>> fitted = StudyPredictor(MixtureMLP(3, n_components=2), Standardizer().fit(X, y), "mixture")
    >>> weights, means, stds = fitted.mixture(X)
    >>> metrics, freq = fitted.metrics(X, y)
    >>> means.shape, sorted(metrics)[:3]
    ((50, 2), ['crps', 'nll', 'pce'])
    """

    def __init__(self, model, scaler, family, device="cpu"):
        self.family = check_choice(family, "family", ("mixture", "sqr"))
        self.model, self.scaler, self.device = model, scaler, device

    def mixture(self, X):
        """The mixture ``(weights, means, stds)`` at inputs ``X``, in the target's units."""
        w, m, s = predict_mixture(self.model, self.scaler.transform(X), device=self.device)
        return w, self.scaler.inverse_transform_y(m), self.scaler.inverse_transform_y(s, scale_only=True)

    def quantiles(self, X, levels=EVAL_LEVELS):
        """The predicted quantiles at ``levels`` for inputs ``X``, in the target's units."""
        q = predict_quantiles(self.model, self.scaler.transform(X), levels, device=self.device)
        return self.scaler.inverse_transform_y(q)

    def metrics(self, X, y):
        """:func:`mixture_metrics` or :func:`quantile_metrics` of the predictions at ``X`` against ``y``."""
        if self.family == "mixture":
            return mixture_metrics(y, *self.mixture(X))
        return quantile_metrics(y, self.quantiles(X), crps_quantiles=self.quantiles(X, CRPS_LEVELS))
