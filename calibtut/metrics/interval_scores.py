r"""The "CRPS" and "STD" that paper 002's figures plot, in the authors' code's definitions.

The paper reports the CRPS (closed form for mixtures, 64 levels for SQR) and
the predictive standard deviation. The authors' code plots instead:

* :func:`weighted_interval_score`, a weighted interval score of the 19
  quantiles at 0.05, ..., 0.95:
  :math:`2\,\mathrm{mean}(QS_{0.05}, \dots, QS_{0.95}, 1.5 (QS_{0.05} + QS_{0.95}))`
  with :math:`QS_\alpha` the pinball loss at level :math:`\alpha`. For N(0, 1)
  forecasts of N(0, 1) outcomes it is 0.5928 against an exact CRPS of 0.5642;
* :func:`quantile_std`, the sample standard deviation (``ddof=1``) of the 19
  quantiles, for every post-hoc and SQR model (closed-form mixture standard
  deviations, :func:`calibtut.metrics.mixture_std`, for the others). For a
  Gaussian it is about 0.8875 of the true standard deviation.

Quantiles are not required to be sorted: the authors score the SQR outputs as
predicted, crossings included.
"""

from __future__ import annotations

import numpy as np

from calibtut._validation import as_float_array, check_levels, check_same_length

__all__ = ["quantile_std", "weighted_interval_score"]


def weighted_interval_score(y, quantiles, levels, reduction="mean"):
    """Weighted interval score of the authors of paper 002 (their figures' "CRPS").

    Parameters
    ----------
    y : array_like, shape (n,)
    quantiles : array_like, shape (n, m)
        Predicted quantiles at ``levels`` (crossings allowed).
    levels : array_like, shape (m,)
        Strictly increasing in (0, 1); the outermost two get the extra weight
        (0.05 and 0.95 in the study).
    reduction : {"mean", "none"}, default "mean"

    Returns
    -------
    float or numpy.ndarray

    Examples
    --------
    >>> # y = 1, quantiles 0 and 3 at 0.1 and 0.9: QS = 0.1, 0.2; extra 1.5 * 0.3
    >>> round(weighted_interval_score([1.0], [[0.0, 3.0]], [0.1, 0.9]), 4)  # 2 * mean(.1, .2, .45)
    0.5
    """
    y = as_float_array(y, "y", ndim=1)
    quantiles = as_float_array(quantiles, "quantiles", ndim=2)
    levels = check_levels(levels)
    if quantiles.shape[1] != levels.size:
        raise ValueError(f"quantiles has {quantiles.shape[1]} columns but levels has {levels.size} entries")
    if levels.size < 2:
        raise ValueError("levels must have at least 2 entries (the outer pair is weighted)")
    check_same_length(y=y, quantiles=quantiles)
    diff = y[:, None] - quantiles
    qs = np.maximum(levels * diff, (levels - 1) * diff)
    outer = 1.5 * (qs[:, 0] + qs[:, -1])
    values = 2 * np.concatenate([qs, outer[:, None]], axis=1).mean(axis=1)
    if reduction == "mean":
        return float(values.mean())
    if reduction == "none":
        return values
    raise ValueError(f"reduction must be 'mean' or 'none', got {reduction!r}")


def quantile_std(quantiles):
    """Mean over rows of the sample standard deviation (ddof 1) of each row's quantiles.

    Parameters
    ----------
    quantiles : array_like, shape (n, m)
        ``m >= 2`` quantiles per row.

    Returns
    -------
    float

    Examples
    --------
    >>> quantile_std([[0.0, 2.0], [1.0, 1.0]])  # sqrt(2) and 0
    0.7071067811865476
    """
    quantiles = as_float_array(quantiles, "quantiles", ndim=2)
    if quantiles.shape[1] < 2:
        raise ValueError(f"quantiles must have at least 2 columns, got {quantiles.shape[1]}")
    return float(quantiles.std(axis=1, ddof=1).mean())
