"""Label-preserving covariate shifts: rotations, textures, and selection with an exact ratio.

* :func:`rotate_images`: rotation by a fixed angle (a severity sweep);
* :func:`texture_images`: ``|x - texture|`` with procedural multi-scale
  smoothed-noise textures, a near-disjoint-support stand-in for SVHN
  (Netzer et al. 2011) or MNIST-M;
* :func:`selection_shift`: source and target drawn from one pool by
  selection on a scalar feature, so that the density ratio is known exactly
  (:func:`ink_mass` gives one such feature for images);
  :func:`california_shift` applies it to California housing (Pace & Barry
  1997) on median income.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import ndimage, special

from calibtut._validation import as_float_array, check_int, check_positive, check_real, check_rng
from calibtut.data.digits import as_input_layout, square_images
from calibtut.data.regression import load_regression

__all__ = ["SelectionShift", "california_shift", "ink_mass", "rotate_images", "selection_shift", "texture_images"]


def rotate_images(X, angle):
    """Rotate square images by ``angle`` degrees (bilinear, same frame, zeros outside).

    Parameters
    ----------
    X : array_like of shape (n, h * h) or (n, h, h)
    angle : float
        Counter-clockwise rotation in degrees; any finite real number.

    Returns
    -------
    numpy.ndarray, same shape as ``X``

    Examples
    --------
    >>> img = np.zeros((1, 5, 5)); img[0, 2, :] = 1.0
    >>> rotate_images(img, 90)[0, :, 2].round(6).tolist()
    [1.0, 1.0, 1.0, 1.0, 1.0]
    """
    images, flat = square_images(X)
    angle = check_real(angle, "angle")
    out = ndimage.rotate(images, angle, axes=(2, 1), reshape=False, order=1, mode="constant", cval=0.0)
    return as_input_layout(np.clip(out, images.min(), images.max()), flat)


def texture_images(X, *, scales=(1.0, 2.0, 4.0), seed=None):
    """Blend digits with procedural textures: ``|x - t|``, a near-disjoint-support shift.

    Each image gets its own texture ``t``: white noise smoothed by Gaussian
    filters at several ``scales`` (pixels), summed and min-max scaled to
    [0, 1]. The label is unchanged but almost no textured image looks like a
    clean digit (a procedural stand-in for SVHN or MNIST-M).

    Parameters
    ----------
    X : array_like of shape (n, h * h) or (n, h, h), values in [0, 1]
    scales : tuple of float, default (1, 2, 4)
        Positive widths of the Gaussian filters, in pixels.
    seed : int, numpy.random.Generator or None

    Returns
    -------
    numpy.ndarray, same shape as ``X``, values in [0, 1]

    Examples
    --------
    >>> out = texture_images(np.zeros((2, 784)), seed=0)
    >>> out.shape, bool(out.min() >= 0 and out.max() <= 1)
    ((2, 784), True)
    """
    images, flat = square_images(X)
    if np.any(images < 0) or np.any(images > 1):
        raise ValueError("X must hold pixel values in [0, 1]")
    scales = check_positive(scales, "scales", ndim=1)
    rng = check_rng(seed)
    noise = rng.random(images.shape)
    texture = sum(ndimage.gaussian_filter(noise, sigma=(0, s, s)) for s in scales)
    lo = texture.min(axis=(1, 2), keepdims=True)
    hi = texture.max(axis=(1, 2), keepdims=True)
    texture = (texture - lo) / np.where(hi > lo, hi - lo, 1.0)
    return as_input_layout(np.abs(images - texture), flat)


def ink_mass(X):
    """Mean pixel intensity of each image (a scalar feature for :func:`selection_shift`).

    Examples
    --------
    >>> ink_mass([[0.0, 1.0, 1.0, 0.0]]).tolist()
    [0.5]
    """
    images, _ = square_images(X)
    return images.reshape(len(images), -1).mean(axis=1)


@dataclass(frozen=True)
class SelectionShift:
    """Source and target indices into a pool, with the exact density ratio.

    A result record, returned by :func:`selection_shift` and
    :func:`california_shift` and never built by users, so it validates
    nothing (the API walker of ``tests/test_api_validation.py`` lists it in
    ``RESULT_RECORDS``).

    Attributes
    ----------
    source_index, target_index : numpy.ndarray of int
        Rows of the pool in the source and the target sample.
    source_weights, target_weights : numpy.ndarray
        The density ratio ``q/p`` at the source and the target rows.
    upper : float
        ``U = max q/p`` over the pool.
    """

    source_index: np.ndarray
    target_index: np.ndarray
    source_weights: np.ndarray
    target_weights: np.ndarray
    upper: float


def _check_selection(strength, n_source, n_target):
    """Validated ``strength, n_source, n_target`` of :func:`selection_shift`."""
    strength = check_real(strength, "strength", low=0)
    n_source = None if n_source is None else check_int(n_source, "n_source", minimum=1)
    n_target = None if n_target is None else check_int(n_target, "n_target", minimum=1)
    if (n_source is None) != (n_target is None):
        raise ValueError(f"give both n_source and n_target or neither, got n_source={n_source}, n_target={n_target}")
    return strength, n_source, n_target


def selection_shift(feature, *, strength=1.0, n_source=None, n_target=None, seed=None):
    """Source and target drawn from one pool by selection on a scalar feature: exact ratio.

    With ``z`` the standardised feature, ``a = sigmoid(-strength * z)`` and
    ``b = sigmoid(strength * z)``, the source law is the pool's empirical law
    reweighted by ``a`` and the target law the one reweighted by ``b``. The
    selection depends on ``x`` only, so the labels' conditional law is
    unchanged (exact covariate shift) and ``q/p = (b / mean b) / (a / mean a)``
    exactly, means over the pool. Two ways to draw:

    * default (``n_source = n_target = None``): the pool is halved at random,
      a point of the first half enters the source with probability ``a`` and
      one of the second half the target with probability ``b``. Source and
      target are disjoint (no item in both), but, given the pool, a Poisson
      sample is only approximately a sample of independent draws from ``p``;
    * ``n_source`` and ``n_target`` given: independent draws with replacement
      from the pool with probabilities proportional to ``a`` and ``b``. The
      points are then exactly i.i.d. from ``p`` and ``q`` (an item may repeat),
      which is what a coverage guarantee needs.

    Parameters
    ----------
    feature : array_like of shape (n,)
        A scalar summary of each pool item (e.g. :func:`ink_mass`, or a column
        such as California housing's median income).
    strength : float, default 1.0
        At least 0: 0 gives no shift; larger values a stronger one.
    n_source, n_target : int, optional
        Sample sizes (>= 1) of the i.i.d. mode; give both or neither.
    seed : int, numpy.random.Generator or None

    Returns
    -------
    SelectionShift

    Examples
    --------
    >>> t = np.linspace(-1, 1, 2000)
    >>> s = selection_shift(t, strength=2.0, seed=0)
    >>> bool(t[s.target_index].mean() > 0 > t[s.source_index].mean())
    True
    >>> len(selection_shift(t, n_source=50, n_target=30, seed=0).target_index)
    30
    """
    t = as_float_array(feature, "feature", ndim=1)
    strength, n_source, n_target = _check_selection(strength, n_source, n_target)
    rng = check_rng(seed)
    sd = t.std()
    z = (t - t.mean()) / (sd if sd > 0 else 1.0)
    a, b = special.expit(-strength * z), special.expit(strength * z)
    ratio = (b / b.mean()) / (a / a.mean())
    if n_source is None:
        half = rng.permutation(len(t))
        first, second = half[: len(t) // 2], half[len(t) // 2 :]
        source = np.sort(first[rng.random(first.size) < a[first]])
        target = np.sort(second[rng.random(second.size) < b[second]])
    else:
        source = rng.choice(len(t), size=n_source, p=a / a.sum())
        target = rng.choice(len(t), size=n_target, p=b / b.sum())
    return SelectionShift(source, target, ratio[source], ratio[target], float(ratio.max()))


def california_shift(*, strength=1.0, feature="MedInc", n_source=None, n_target=None, seed=None):
    """An exact covariate shift on California housing: selection on one input column.

    Parameters
    ----------
    strength : float, default 1.0
        See :func:`selection_shift`.
    feature : str, default "MedInc"
        The column that drives the selection (median income: the target
        holds richer block groups).
    n_source, n_target : int, optional
        Draw i.i.d. samples of these sizes (see :func:`selection_shift`).
    seed : int, numpy.random.Generator or None

    Returns
    -------
    X_source, y_source, X_target, y_target : numpy.ndarray
        The (already standardised) inputs and median house values.
    shift : SelectionShift
        Indices and exact density ratios.

    Examples
    --------
    >>> Xs, ys, Xt, yt, s = california_shift(seed=0)  # doctest: +SKIP
    >>> bool(yt.mean() > ys.mean())  # doctest: +SKIP
    True
    """
    strength, n_source, n_target = _check_selection(strength, n_source, n_target)
    data = load_regression("openml/cal-housing")
    if feature not in data.feature_names:
        raise ValueError(f"feature must be one of {data.feature_names}, got {feature!r}")
    shift = selection_shift(data.X[:, data.feature_names.index(feature)], strength=strength, n_source=n_source,
                            n_target=n_target, seed=seed)
    src, tgt = shift.source_index, shift.target_index
    return data.X[src], data.y[src], data.X[tgt], data.y[tgt], shift
