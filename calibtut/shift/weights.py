"""Importance weights from a probabilistic domain discriminator (paper 004, Section 4.3).

A discriminator ``g(x) = P(source | x)`` trained on equally many source
(``s = 1``) and target (``s = 0``) inputs is, at its optimum,
``g = p / (p + q) = 1 / (1 + w)`` with ``w = q / p`` the density ratio. Two
weightings follow from an estimate ``g_hat``:

* ``kind="ratio"``: the density ratio ``1 / g_hat - 1`` (importance weights;
  Bickel et al. 2007), times ``n_source / n_target`` when the classes were
  not balanced in training;
* ``kind="bound"``: ``1 / g_hat - 1/2``, the weighting that the paper's
  Theorem 1 (Eq. 8) prescribes and its code uses. It equals the density ratio
  plus one half, so a temperature fitted with it minimises the importance
  weighted Brier score plus half the source Brier score: it shrinks towards
  the source optimum. The two are different methods.

Both clamp ``g_hat >= 1 / (1 + upper)`` first (Eq. 6), so that the ratio
weights never exceed ``upper`` (the paper's ``U``; its code uses 1000).

Two diagnostics say whether a set of weights can be trusted:
:func:`weight_summary` (how many source points carry the weight: Kish's
effective sample size, the share of the heaviest points, quantiles) and
:func:`discriminator_reliability` (whether ``g_hat`` is calibrated on held-out
source-versus-target data, since a miscalibrated ``g_hat`` gives wrong ratios).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from calibtut._validation import (
    check_int,
    check_probabilities,
    check_real,
    check_weights,
)
from calibtut.metrics import assign_bins

__all__ = [
    "DiscriminatorReliability",
    "check_discriminator_output",
    "discriminator_reliability",
    "discriminator_weights",
    "effective_sample_size",
    "weight_summary",
]

_KINDS = ("ratio", "bound")


def _source_probabilities(g, name, **kwargs):
    """Discriminator probabilities ``P(source | x)`` in ``(0, 1]``, any shape (``kwargs``: :func:`as_float_array`)."""
    g = check_probabilities(g, name, **kwargs)
    if np.any(g == 0):
        raise ValueError(f"{name} must be positive (a zero probability of the source gives an infinite weight)")
    return g


def check_discriminator_output(g, name="g"):
    """Check discriminator probabilities ``P(source | x)``: finite, in ``(0, 1]``.

    ``g = 1`` (certainly a source point) is allowed, since a sigmoid rounds to
    it in floating point; ``g = 0`` would give an infinite weight.

    Parameters
    ----------
    g : array_like of shape (n,)
        Discriminator outputs.
    name : str, default "g"
        The argument's name, used in error messages.

    Returns
    -------
    numpy.ndarray

    Examples
    --------
    >>> check_discriminator_output([0.25, 1.0])
    array([0.25, 1.  ])
    """
    return _source_probabilities(g, name, ndim=1)


def discriminator_weights(g, *, kind="ratio", upper=1e3, prior_ratio=1.0):
    """Importance weights ``1/g - 1`` or ``1/g - 1/2`` from ``g = P(source | x)``.

    Parameters
    ----------
    g : array_like of shape (n,)
        Discriminator probabilities of the source domain, in ``(0, 1]``.
    kind : {"ratio", "bound"}, default "ratio"
        ``"ratio"``: the density-ratio estimate ``prior_ratio * (1 - g) / g``;
        ``"bound"``: ``1 / g - 1/2``, the weights of the paper's Theorem 1 and
        code (they assume balanced training, so ``prior_ratio`` must be 1).
    upper : float or None, default 1000
        The bound ``U`` on the density ratio: ``g`` is first clamped to
        ``g >= 1 / (1 + U)`` (the paper's Eq. 6), so ratio weights are at most
        ``prior_ratio * U``; at least 1, since ``E_p[w] = 1``. ``None``
        disables the clamp.
    prior_ratio : float, default 1.0
        ``n_source / n_target`` of the discriminator's training set, which
        corrects ``g`` trained on unbalanced classes (``"ratio"`` only).

    Returns
    -------
    numpy.ndarray of shape (n,)
        Non-negative weights.

    Examples
    --------
    >>> discriminator_weights([0.5, 0.2], kind="ratio")
    array([1., 4.])
    >>> discriminator_weights([0.5, 0.2], kind="bound")
    array([1.5, 4.5])
    >>> discriminator_weights([1e-9], upper=9.0)
    array([9.])
    """
    g = check_discriminator_output(g)
    if kind not in _KINDS:
        raise ValueError(f"kind must be one of {_KINDS}, got {kind!r}")
    prior_ratio = check_real(prior_ratio, "prior_ratio", low=0, low_open=True)
    if kind == "bound" and prior_ratio != 1:
        raise ValueError(f"kind='bound' assumes balanced training (prior_ratio=1), got prior_ratio={prior_ratio!r}")
    if upper is not None:
        g = np.maximum(g, 1.0 / (1.0 + check_real(upper, "upper", low=1)))
    if kind == "bound":
        return 1.0 / g - 0.5
    return prior_ratio * (1.0 - g) / g


def effective_sample_size(weights):
    """Kish's effective sample size ``(sum w)^2 / sum w^2``.

    It equals ``n`` for equal weights and 1 when one weight carries all the
    mass; ``ess / n`` measures how much of a weighted sample is left.

    Parameters
    ----------
    weights : array_like of shape (n,)
        Non-negative, finite weights with a positive sum.

    Returns
    -------
    float

    Examples
    --------
    >>> effective_sample_size([1.0, 1.0, 1.0, 1.0])
    4.0
    >>> effective_sample_size([1.0, 0.0, 0.0])
    1.0
    """
    w = check_weights(weights, "weights")
    w = w / w.sum()
    return float(1.0 / np.sum(w**2))


def weight_summary(weights, *, top_fraction=0.01, top_k=10, quantiles=(0.5, 0.9, 0.99)):
    """How many points carry a set of importance weights.

    Parameters
    ----------
    weights : array_like of shape (n,)
        Non-negative, finite weights with a positive sum.
    top_fraction : float, default 0.01
        The heaviest share of the points whose weight share is reported, in
        ``(0, 1]`` (at least one point).
    top_k : int, default 10
        The number of heaviest points whose weight share is reported (>= 1).
    quantiles : sequence of float, default (0.5, 0.9, 0.99)
        Quantile levels in ``[0, 1]`` of the weights rescaled to mean one.

    Returns
    -------
    dict
        ``n``; ``ess`` and ``ess_frac`` (Kish's effective sample size and its
        ratio to ``n``); ``top_fraction_share`` and ``top_k_share`` (the share
        of the total weight on the heaviest ``top_fraction`` of the points and
        on the ``top_k`` heaviest); ``max_over_mean`` (the largest weight over
        the mean weight); ``q<level>`` for each quantile of ``w / mean(w)``.

    Examples
    --------
    >>> s = weight_summary([1.0, 1.0, 1.0, 1.0, 6.0], top_k=1, quantiles=(0.5,))
    >>> s["ess_frac"], s["top_k_share"], s["max_over_mean"], s["q0.5"]
    (0.5, 0.6, 3.0, 0.5)
    """
    w = check_weights(weights, "weights")
    top_fraction = check_real(top_fraction, "top_fraction", low=0, high=1, low_open=True)
    top_k = check_int(top_k, "top_k", minimum=1)
    levels = check_probabilities(quantiles, "quantiles", ndim=1)
    share = np.sort(w)[::-1] / w.sum()
    n_top = max(1, int(np.ceil(top_fraction * w.size)))
    ess = effective_sample_size(w)
    scaled = w / w.mean()
    summary = {
        "n": int(w.size),
        "ess": ess,
        "ess_frac": ess / w.size,
        "top_fraction_share": float(share[:n_top].sum()),
        "top_k_share": float(share[:top_k].sum()),
        "max_over_mean": float(scaled.max()),
    }
    summary.update({f"q{level:g}": float(q) for level, q in zip(levels, np.quantile(scaled, levels))})
    return summary


class DiscriminatorReliability(NamedTuple):
    """Balanced reliability of a domain discriminator (see :func:`discriminator_reliability`).

    Attributes
    ----------
    mean_g : numpy.ndarray
        Balanced mean of ``g_hat`` in each non-empty bin.
    source_share : numpy.ndarray
        Balanced share of source points in each non-empty bin.
    bin_weight : numpy.ndarray
        Balanced probability mass of each non-empty bin (sums to 1).
    ece : float
        ``sum_b bin_weight_b * |mean_g_b - source_share_b|``.
    brier : float
        The balanced squared loss ``E_r[(g_hat - s)^2]`` (the third term of Eq. 8).
    """

    mean_g: np.ndarray
    source_share: np.ndarray
    bin_weight: np.ndarray
    ece: float
    brier: float


def discriminator_reliability(g_source, g_target, *, n_bins=15):
    """Reliability of ``g_hat = P(source | x)`` on held-out points of the two domains.

    The discriminator estimates the source probability under the balanced
    mixture ``r`` of the paper's Section 4.3 (each domain with probability
    one half), so each source point counts ``1 / (2 n_source)`` and each
    target point ``1 / (2 n_target)``. The values of ``g_hat`` are binned in
    ``n_bins`` equal-width bins closed on the right (``[0, 1/B]``, then
    ``(l, u]``); a calibrated discriminator has, in every bin, a share of
    source points equal to its mean ``g_hat``. Written here because binned
    reliability in :mod:`calibtut.metrics` (and
    :func:`sklearn.calibration.calibration_curve`) takes no sample weights;
    with equally many points per domain it equals the unweighted curve.

    Parameters
    ----------
    g_source : array_like of shape (n_source,)
        ``g_hat`` at held-out source points, in ``[0, 1]``.
    g_target : array_like of shape (n_target,)
        ``g_hat`` at held-out target points, in ``[0, 1]``.
    n_bins : int, default 15
        At least 1.

    Returns
    -------
    DiscriminatorReliability

    Examples
    --------
    >>> rel = discriminator_reliability([0.9, 0.9], [0.1, 0.9], n_bins=2)
    >>> rel.mean_g.tolist(), rel.source_share.tolist(), rel.bin_weight.tolist()
    ([0.1, 0.9], [0.0, 0.6666666666666666], [0.25, 0.75])
    >>> round(rel.ece, 4), round(rel.brier, 4)
    (0.2, 0.21)
    """
    g_s = check_probabilities(g_source, "g_source", ndim=1)
    g_t = check_probabilities(g_target, "g_target", ndim=1)
    n_bins = check_int(n_bins, "n_bins", minimum=1)
    g = np.concatenate([g_s, g_t])
    s = np.concatenate([np.ones(g_s.size), np.zeros(g_t.size)])
    mass = np.concatenate([np.full(g_s.size, 0.5 / g_s.size), np.full(g_t.size, 0.5 / g_t.size)])
    bins = assign_bins(g, np.linspace(0.0, 1.0, n_bins + 1), closed="right")
    weight = np.bincount(bins, weights=mass, minlength=n_bins)
    keep = weight > 0
    mean_g = np.bincount(bins, weights=mass * g, minlength=n_bins)[keep] / weight[keep]
    share = np.bincount(bins, weights=mass * s, minlength=n_bins)[keep] / weight[keep]
    return DiscriminatorReliability(
        mean_g=mean_g,
        source_share=share,
        bin_weight=weight[keep],
        ece=float(np.sum(weight[keep] * np.abs(mean_g - share))),
        brier=float(np.sum(mass * (g - s) ** 2)),
    )
