"""The decision task of the drift paper's Appendix C.1, which chapter 6 plays on the COVID forecasts.

A response tier ``a`` in ``{0, 1, 2, 3}`` is chosen from a forecast's median of
the log outcome (:func:`best_action`) and scored against the outcome by the
COVID loss plus the shut-down loss (:func:`decision_loss`).
"""

from __future__ import annotations

import numpy as np

from calibtut._validation import as_float_array

__all__ = ["COVID_LOSS", "COVID_LOSS_THRESHOLDS", "SHUTDOWN_LOSS", "best_action", "decision_loss"]


COVID_LOSS_THRESHOLDS = (4.0, 6.0, 8.0)
"""Log-case thresholds of the COVID loss of Appendix C.1 (``z <= 4``, ``4 < z <= 6``, ``6 < z <= 8``, ``z > 8``)."""

COVID_LOSS = np.array([[0.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0], [3.0, 2.0, 0.0, 0.0], [6.0, 5.0, 3.0, 0.0]])
"""COVID loss of Appendix C.1: row = band of the outcome ``z``, column = response tier ``a`` = 0..3."""

SHUTDOWN_LOSS = np.array([0.0, 0.3, 0.7, 1.0])
"""Shut-down loss of response tiers 0..3 (Appendix C.1)."""


def decision_loss(action, z):
    """Loss of response tier ``action`` when the (log) outcome is ``z``: COVID loss + shut-down loss.

    Parameters
    ----------
    action : array_like of int in {0, 1, 2, 3}
    z : array_like of float, broadcastable with ``action``

    Returns
    -------
    ndarray

    Examples
    --------
    >>> decision_loss([0, 3, 2], [7.0, 7.0, 9.0]).tolist()
    [3.0, 1.0, 3.7]
    """
    a = as_float_array(action, "action")
    bad = (a != np.round(a)) | (a < 0) | (a > 3)
    if np.any(bad):
        raise ValueError(f"action must hold integers in {{0, 1, 2, 3}}, got {float(a[bad][0])!r}")
    band = np.searchsorted(COVID_LOSS_THRESHOLDS, as_float_array(z, "z"), side="left")
    a = a.astype(np.int64)
    return COVID_LOSS[band, a] + SHUTDOWN_LOSS[a]


def best_action(z_forecast):
    """The tier that minimises :func:`decision_loss` if the outcome were ``z_forecast`` (the paper uses the median).

    Examples
    --------
    >>> best_action([3.0, 5.0, 7.0, 9.0]).tolist()
    [0, 1, 2, 3]
    """
    z = as_float_array(z_forecast, "z_forecast")
    losses = np.stack([decision_loss(np.full(z.shape, a), z) for a in range(4)], axis=-1)
    return np.argmin(losses, axis=-1)
