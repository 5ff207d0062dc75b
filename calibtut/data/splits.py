"""Seeded index splits (train/validation/calibration/test, K-fold, Venn-ADMIT's calibration parts) and standardisation fitted on training data only."""

from __future__ import annotations

import numbers

import numpy as np

from calibtut._estimator import Estimator
from calibtut._validation import as_float_array, check_int, check_positive, check_rng

__all__ = ["Standardizer", "calibration_parts", "kfold_indices", "train_val_cal_test_split"]


def train_val_cal_test_split(n, fractions=(0.65, 0.10, 0.15, 0.10), seed=None):
    """Randomly partition ``range(n)`` into train, validation, calibration and test indices.

    Part sizes are ``floor(fraction * n)`` for the first three parts and the
    remainder for the last, so every index lands in exactly one part.

    Parameters
    ----------
    n : int
        Number of rows, at least the number of parts.
    fractions : sequence of float, default (0.65, 0.10, 0.15, 0.10)
        Positive fractions summing to 1 (within 1e-9); any number of parts
        >= 2 is accepted, the default gives (train, val, cal, test).
    seed : int, numpy.random.Generator or None
        Source of randomness.

    Returns
    -------
    tuple of numpy.ndarray
        One sorted int64 index array per fraction.

    Examples
    --------
    >>> train, val, cal, test = train_val_cal_test_split(20, seed=0)
    >>> [len(a) for a in (train, val, cal, test)]
    [13, 2, 3, 2]
    """
    n = check_int(n, "n", minimum=1)
    fractions = check_positive(fractions, "fractions", ndim=1)
    if len(fractions) < 2:
        raise ValueError(f"fractions must have at least 2 entries, got {len(fractions)}")
    if abs(fractions.sum() - 1.0) > 1e-9:
        raise ValueError(f"fractions must sum to 1, got sum {fractions.sum():.6g}")
    sizes = np.floor(fractions[:-1] * n).astype(np.int64)
    sizes = np.append(sizes, n - sizes.sum())
    if np.any(sizes == 0):
        raise ValueError(f"n={n} is too small: fractions {fractions.tolist()} give an empty part ({sizes.tolist()})")
    order = check_rng(seed).permutation(n)
    bounds = np.cumsum(sizes)[:-1]
    return tuple(np.sort(part) for part in np.split(order, bounds))


class Standardizer(Estimator):
    """Centre and scale by the training mean and standard deviation.

    Columns with zero variance (or a single training row) get scale 1, so
    they are only centred and never divided by zero.

    Attributes
    ----------
    mean_, scale_ : numpy.ndarray
        Per-column location and scale of ``X`` (shape ``(d,)``).
    y_mean_, y_scale_ : float
        Location and scale of ``y`` (set when ``y`` was given to :meth:`fit`).

    See Also
    --------
    train_val_cal_test_split : the seeded split whose training part it is fitted on.

    References
    ----------
    - Dheur & Ben Taieb (2023), "A large-scale study of probabilistic calibration in neural network
      regression", Proceedings of the 40th International Conference on Machine Learning (ICML)
      (its authors' code standardizes x and y on the training split, with ddof 1).
    - Pedregosa et al. (2011), "Scikit-learn: machine learning in Python", Journal of Machine
      Learning Research 12, 2825-2830 (``StandardScaler``, the same map of ``X``).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 5.0], [3.0, 5.0]])
    >>> s = Standardizer().fit(X, y=np.array([0.0, 2.0]))
    >>> s.transform(X).tolist(), s.transform_y(np.array([2.0])).tolist()
    ([[-1.0, 0.0], [1.0, 0.0]], [1.0])
    >>> s.inverse_transform(s.transform(X)).tolist()
    [[1.0, 5.0], [3.0, 5.0]]
    """

    def fit(self, X, y=None):
        """Learn column means and scales from training data.

        Parameters
        ----------
        X : array_like, shape (n, d)
            Training inputs.
        y : array_like, shape (n,), optional
            Training target.

        Returns
        -------
        Standardizer
            ``self``.
        """
        X = as_float_array(X, "X", ndim=2)
        self.mean_ = X.mean(axis=0)
        self.scale_ = self._safe_scale(X.std(axis=0))
        if y is not None:
            y = as_float_array(y, "y", ndim=1)
            if len(y) != len(X):
                raise ValueError(f"y must have one entry per row of X ({len(X)}), got {len(y)}")
            self.y_mean_ = float(y.mean())
            self.y_scale_ = float(self._safe_scale(np.array([y.std()]))[0])
        return self

    @staticmethod
    def _safe_scale(std):
        return np.where(std > 0, std, 1.0)

    def _check_fitted(self, attribute):
        if not hasattr(self, attribute):
            what = "fit(X, y)" if attribute.startswith("y_") else "fit(X)"
            raise RuntimeError(f"this Standardizer is not fitted for that: call {what} first")

    def _check_X(self, X):
        self._check_fitted("mean_")
        X = as_float_array(X, "X", ndim=2, allow_empty=True)
        if X.shape[1] != len(self.mean_):
            raise ValueError(f"X must have {len(self.mean_)} columns, got {X.shape[1]}")
        return X

    def transform(self, X):
        """Standardise inputs with the training statistics."""
        return (self._check_X(X) - self.mean_) / self.scale_

    def inverse_transform(self, X):
        """Map standardised inputs back to the original units."""
        return self._check_X(X) * self.scale_ + self.mean_

    def transform_y(self, y):
        """Standardise target values (any shape, e.g. predicted quantiles)."""
        self._check_fitted("y_mean_")
        return (as_float_array(y, "y", allow_empty=True) - self.y_mean_) / self.y_scale_

    def inverse_transform_y(self, y, *, scale_only=False):
        """Map standardised target values back; ``scale_only`` for spreads such as standard deviations."""
        self._check_fitted("y_mean_")
        y = as_float_array(y, "y", allow_empty=True)
        return y * self.y_scale_ if scale_only else y * self.y_scale_ + self.y_mean_


def kfold_indices(n, n_folds, fold, seed=None):
    """Train and test indices of one fold of a K-fold split of ``range(n)``.

    The rows are permuted with ``seed`` (``None``: kept in order, as scikit-learn's
    ``KFold(shuffle=False)`` used by the authors' code) and cut into ``n_folds``
    contiguous folds whose sizes differ by at most one (the first ``n % n_folds``
    folds are one larger, as in ``KFold``).

    Parameters
    ----------
    n : int
        Number of rows.
    n_folds : int
        Number of folds, at least 2 and at most ``n``.
    fold : int
        The test fold, ``0 <= fold < n_folds``.
    seed : int, numpy.random.Generator or None
        Permutation of the rows before cutting.

    Returns
    -------
    train_idx, test_idx : numpy.ndarray of int64
        Sorted, disjoint, covering ``range(n)``.

    Examples
    --------
    >>> train, test = kfold_indices(10, 5, 1)
    >>> test.tolist(), len(train)
    ([2, 3], 8)
    >>> sorted(np.concatenate([kfold_indices(7, 3, k, seed=0)[1] for k in range(3)]).tolist()) == list(range(7))
    True
    """
    n = check_int(n, "n", minimum=2)
    n_folds = check_int(n_folds, "n_folds", minimum=2)
    if n_folds > n:
        raise ValueError(f"n_folds ({n_folds}) must not exceed the number of rows n ({n})")
    fold = check_int(fold, "fold", minimum=0)
    if fold >= n_folds:
        raise ValueError(f"fold must be < n_folds ({n_folds}), got {fold}")
    if seed is None:
        order = np.arange(n)
    else:
        if isinstance(seed, bool) or not isinstance(seed, (numbers.Integral, np.random.Generator)):
            raise TypeError(f"seed must be None, an int or a numpy Generator, got {type(seed).__name__}")
        order = np.random.default_rng(seed).permutation(n)
    parts = np.array_split(order, n_folds)
    test = np.sort(parts[fold])
    train = np.sort(np.concatenate([p for k, p in enumerate(parts) if k != fold]))
    return train.astype(np.int64), test.astype(np.int64)


def calibration_parts(n, seed, groups=None):
    """Paper 001's calibration rows split at random into ``D_knn`` (10 %), ``D_ca^mc`` and ``D_ca^vp`` (45 % each).

    With ``groups`` (one sequence id per row) whole sequences are split, so
    that the tokens of one protein or sentence never sit in two parts; the
    shares then hold for sequences, not rows.

    Parameters
    ----------
    n : int
        Number of calibration rows, at least 1.
    seed : int
        Seed of the split, >= 0 (the generator is ``default_rng([seed, 1])``).
    groups : array_like of shape (n,), optional
        The sequence of each row.

    Returns
    -------
    dict
        ``{"knn": idx, "mc": idx, "vp": idx}``: disjoint row indices covering ``range(n)``.

    Examples
    --------
    >>> parts = calibration_parts(20, 0)
    >>> [len(parts[k]) for k in ("knn", "mc", "vp")]
    [2, 9, 9]
    >>> sorted(np.concatenate(list(parts.values())).tolist()) == list(range(20))
    True
    """
    n = check_int(n, "n", minimum=1)
    check_int(seed, "seed", minimum=0)
    if groups is not None and len(groups) != n:
        raise ValueError(f"groups must have one entry per row (n={n}), got {len(groups)}")
    rng = np.random.default_rng([seed, 1])
    if groups is None:
        order = rng.permutation(n)
    else:
        ids, inverse = np.unique(groups, return_inverse=True)
        order = rng.permutation(ids.size)
    n_knn, n_mc = order.size // 10, (order.size - order.size // 10) // 2
    parts = {"knn": order[:n_knn], "mc": order[n_knn:n_knn + n_mc], "vp": order[n_knn + n_mc:]}
    if groups is None:
        return parts
    part_of = np.empty(ids.size, dtype=np.int64)
    for i, chosen in enumerate(parts.values()):
        part_of[chosen] = i
    return {name: rng.permutation(np.flatnonzero(part_of[inverse] == i)) for i, name in enumerate(parts)}
