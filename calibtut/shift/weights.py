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
"""

from __future__ import annotations

import numpy as np

from calibtut._validation import check_probabilities, check_real, check_weights

__all__ = ["check_discriminator_output", "discriminator_weights", "effective_sample_size"]

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
