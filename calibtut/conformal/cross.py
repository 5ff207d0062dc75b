"""Jackknife+ and CV+ intervals (Barber, Candès, Ramdas & Tibshirani 2021), and their naive and min-max forms.

Unlike the split methods of this package, these refit the model: the data
are cut into ``K`` folds (``K = n``, leave-one-out, for the jackknife), the
model is fitted once without each fold, and each point's out-of-fold
residual ``R_i = |y_i - mu_{-k(i)}(x_i)|`` is kept with the model
``mu_{-k(i)}`` that did not see it. At a test input ``x``, with
``k_lo = floor(alpha (n + 1))`` and ``k_hi = ceil((1 - alpha)(n + 1))``:

============  ==============================================================  ==============================
``method``    interval                                                        guarantee (exchangeable data)
============  ==============================================================  ==============================
``"plus"``    ``[k_lo-th smallest of mu_{-k(i)}(x) - R_i,``                   ``>= 1 - 2 alpha`` (jackknife+);
              `` k_hi-th smallest of mu_{-k(i)}(x) + R_i]``                   CV+ a little less (Thm. 4)
``"minmax"``  ``[min_k mu_{-k}(x) - q, max_k mu_{-k}(x) + q]``                 ``>= 1 - alpha``
``"naive"``   ``mu(x) -/+ q``, ``mu`` fitted on all the data                   none in general
============  ==============================================================  ==============================

``q`` is the ``k_hi``-th smallest residual. A rank outside ``1..n`` gives an
infinite bound (too few points for this ``alpha``). With ``n_folds=None`` the
rows are the paper's jackknife+, jackknife-minmax and jackknife; with ``K``
folds they are CV+, CV-minmax and CV. Vovk's cross-conformal predictor,
whose set need not be an interval, is not implemented; Barber et al. show
that it lies inside the CV+ interval.

:func:`cross_conformal_interval` is the one-call wrapper of :class:`CrossConformalRegressor`.
"""

from __future__ import annotations

import numpy as np

from calibtut._estimator import Estimator, check_seed, optional, rule
from calibtut._numeric import ceil_rank
from calibtut._validation import (
    as_float_array,
    check_alpha,
    check_categories,
    check_choice,
    check_fitted,
    check_int,
    check_same_length,
)

__all__ = ["CrossConformalRegressor", "cross_conformal_interval"]

_METHODS = ("plus", "minmax", "naive")
#: test points per block of the (block, n) arrays of ``predict_interval`` (about 32 MB each)
_BLOCK_ENTRIES = 1 << 22


def _is_model(estimator):
    """An estimator instance (cloned for each fit), as opposed to a class or a factory (called)."""
    return (not isinstance(estimator, type) and callable(getattr(estimator, "fit", None))
            and callable(getattr(estimator, "predict", None)))


def _check_estimator(estimator, name="estimator"):
    if _is_model(estimator) or callable(estimator):
        return estimator
    raise TypeError(f"{name} must be an unfitted regressor with fit and predict (scikit-learn style) "
                    f"or a function returning one, got {type(estimator).__name__}")


def _check_X(X, name, n_features=None):
    X = as_float_array(X, name, ndim=(1, 2))
    X = X[:, None] if X.ndim == 1 else X
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(f"{name} must have {n_features} features as in fit, got shape {X.shape}")
    return X


def _order_statistic(values, rank):
    """The ``rank``-th smallest entry of each row (1-based); -inf below 1, +inf above the row length."""
    n = values.shape[1]
    if rank < 1:
        return np.full(values.shape[0], -np.inf)
    if rank > n:
        return np.full(values.shape[0], np.inf)
    return np.partition(values, rank - 1, axis=1)[:, rank - 1]


class CrossConformalRegressor(Estimator):
    """Jackknife+ / CV+ prediction intervals around refitted regressors.

    Parameters
    ----------
    estimator : object or callable
        An unfitted regressor with ``fit(X, y)`` and ``predict(X)``, cloned
        (``sklearn.base.clone``; deep-copied without ``get_params``) for
        each fit, or a class or function of no argument returning a fresh one.
    alpha : float, default 0.1
        Miscoverage level in (0, 1).
    method : {"plus", "minmax", "naive"}, default "plus"
        The interval (see the module docstring).
    n_folds : int or None, default None
        Number of folds ``K >= 2`` (CV+); None: leave-one-out (jackknife+).
    seed : int, numpy.random.Generator or None, default None
        Seed of the random assignment of points to folds (unused for
        leave-one-out).

    Attributes
    ----------
    folds_ : numpy.ndarray of int, shape (n,)
        The fold of each training point.
    residuals_ : numpy.ndarray of shape (n,)
        Out-of-fold absolute residuals ``R_i``.
    estimators_ : list
        The model fitted without each fold, in fold order.
    full_estimator_ : object or None
        The model fitted on all the data (``method="naive"`` only).
    quantile_ : float
        The ``ceil((1 - alpha)(n + 1))``-th smallest residual (``inf``
        when that rank exceeds ``n``).

    Notes
    -----
    The model is called here, unlike in the split methods (whose ``fit``
    takes predictions): the refits are the method. ``K`` models are fitted
    (``n`` for leave-one-out), plus one for ``"naive"``; ``predict_interval``
    calls each model once and takes the order statistics over blocks of
    test points.

    See Also
    --------
    SplitConformalRegressor : one split, one fit, predictions in.
    calibtut.metrics.interval_coverage : the coverage of the intervals.

    References
    ----------
    - Barber, Candès, Ramdas & Tibshirani, "Predictive inference with the
      jackknife+", Annals of Statistics 49(1), 2021.
    - Vovk, "Cross-conformal predictors", Annals of Mathematics and
      Artificial Intelligence 74, 2015.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LinearRegression
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(100, 2))
    >>> y = X @ [1.0, -1.0] + rng.normal(size=100)
    >>> model = CrossConformalRegressor(LinearRegression(), alpha=0.1).fit(X, y)  # jackknife+
    >>> lower, upper = model.predict_interval(np.zeros((1, 2)))
    >>> bool(lower[0] < 0 < upper[0]), round(float(upper[0] - lower[0]), 1)
    (True, 3.7)
    """

    def __init__(self, estimator, *, alpha=0.1, method="plus", n_folds=None, seed=None):
        self.estimator = estimator
        self.alpha = alpha
        self.method = method
        self.n_folds = n_folds
        self.seed = seed

    _parameter_constraints = {
        "estimator": _check_estimator,
        "alpha": check_alpha,
        "method": rule(check_choice, choices=_METHODS),
        "n_folds": optional(check_int, minimum=2),
        "seed": check_seed,
    }

    def _new_model(self):
        from sklearn.base import clone  # here: importing calibtut.conformal does not load scikit-learn

        # clone(safe=False) deep-copies an object without scikit-learn's get_params
        estimator = self.params_.estimator
        return clone(estimator, safe=False) if _is_model(estimator) else estimator()

    def fit(self, X, y, *, folds=None):
        """Fit one model without each fold and keep the out-of-fold residuals.

        Parameters
        ----------
        X : array_like of shape (n, n_features) or (n,)
            Training inputs (a 1-d array is one feature).
        y : array_like of shape (n,)
            Training targets.
        folds : array_like of int, shape (n,), optional
            The fold of each point (non-negative integer codes; each code
            present is one fold, at least two); overrides ``n_folds``.

        Returns
        -------
        CrossConformalRegressor
            ``self``.
        """
        p = self._validate_params()
        X = _check_X(X, "X")
        y = as_float_array(y, "y", ndim=1)
        n = check_same_length(X=X, y=y)
        if folds is not None:
            folds = np.unique(check_categories(folds, "folds", n=n), return_inverse=True)[1]
            if folds.max() < 1:
                raise ValueError("folds must hold at least two distinct codes")
        elif p.n_folds is None:
            folds = np.arange(n)
        else:
            if p.n_folds > n:
                raise ValueError(f"n_folds ({p.n_folds}) must not exceed the number of points ({n})")
            order = p.seed.permutation(n)
            folds = np.empty(n, dtype=np.int64)
            for k, part in enumerate(np.array_split(order, p.n_folds)):
                folds[part] = k
        if n < 2:
            raise ValueError(f"X must hold at least 2 points, got {n}")
        residuals = np.empty(n)
        estimators = []
        for k in range(int(folds.max()) + 1):
            out = folds == k
            model = self._new_model().fit(X[~out], y[~out])
            residuals[out] = np.abs(y[out] - np.asarray(model.predict(X[out]), dtype=np.float64).ravel())
            estimators.append(model)
        self.folds_, self.residuals_, self.estimators_ = folds, residuals, estimators
        self.full_estimator_ = self._new_model().fit(X, y) if p.method == "naive" else None
        rank = int(ceil_rank((n + 1) * (1 - p.alpha)))
        self.quantile_ = float(np.inf if rank > n else np.partition(residuals, rank - 1)[rank - 1])
        self.n_features_ = X.shape[1]
        return self

    def _fold_predictions(self, X):
        return np.column_stack([np.asarray(m.predict(X), dtype=np.float64).ravel() for m in self.estimators_])

    def predict_interval(self, X):
        """Prediction intervals at test inputs.

        Parameters
        ----------
        X : array_like of shape (m, n_features) or (m,)
            Test inputs.

        Returns
        -------
        lower, upper : numpy.ndarray of shape (m,)
            Interval bounds (infinite when ``alpha`` is too small for ``n``).
        """
        check_fitted(self, "residuals_")
        X = _check_X(X, "X", self.n_features_)
        p = self.params_
        if p.method == "naive":
            centre = np.asarray(self.full_estimator_.predict(X), dtype=np.float64).ravel()
            return centre - self.quantile_, centre + self.quantile_
        fold_pred = self._fold_predictions(X)  # (m, K)
        if p.method == "minmax":
            return fold_pred.min(axis=1) - self.quantile_, fold_pred.max(axis=1) + self.quantile_
        n = self.residuals_.size
        k_lo = int(np.floor(np.round(p.alpha * (n + 1), 9)))
        k_hi = int(ceil_rank((n + 1) * (1 - p.alpha)))
        lower, upper = np.empty(len(X)), np.empty(len(X))
        block = max(1, _BLOCK_ENTRIES // n)
        for start in range(0, len(X), block):
            centres = fold_pred[start:start + block][:, self.folds_]  # (b, n): mu_{-k(i)}(x)
            lower[start:start + block] = _order_statistic(centres - self.residuals_, k_lo)
            upper[start:start + block] = _order_statistic(centres + self.residuals_, k_hi)
        return lower, upper


def cross_conformal_interval(estimator, X, y, X_test, alpha, *, method="plus", n_folds=None, seed=None):
    """Jackknife+ / CV+ intervals in one call (:class:`CrossConformalRegressor`).

    Parameters
    ----------
    estimator : object or callable
        An unfitted scikit-learn-style regressor (cloned) or a function
        returning one.
    X : array_like of shape (n, n_features) or (n,)
        Training inputs.
    y : array_like of shape (n,)
        Training targets.
    X_test : array_like of shape (m, n_features) or (m,)
        Test inputs.
    alpha : float
        Miscoverage level in (0, 1).
    method : {"plus", "minmax", "naive"}, default "plus"
        The interval.
    n_folds : int or None, default None
        Number of folds (None: leave-one-out).
    seed : int, numpy.random.Generator or None, default None
        Seed of the fold assignment.

    Returns
    -------
    lower, upper : numpy.ndarray of shape (m,)

    See Also
    --------
    CrossConformalRegressor : the class, with the residuals and the models.

    References
    ----------
    Barber, Candès, Ramdas & Tibshirani, "Predictive inference with the
    jackknife+", Annals of Statistics, 2021.

    Examples
    --------
    >>> from sklearn.dummy import DummyRegressor
    >>> # a model predicting the training mean: leave-one-out means 16/3, 14/3, 4, 2 and residuals
    >>> # 16/3, 8/3, 0, 8; alpha = 0.2, n = 4: the 1st smallest of mu - R, the 4th of mu + R
    >>> lo, hi = cross_conformal_interval(DummyRegressor(), [[0.0]] * 4, [0.0, 2.0, 4.0, 10.0], [[1.0]], 0.2)
    >>> float(lo[0]), round(float(hi[0]), 4)
    (-6.0, 10.6667)
    """
    model = CrossConformalRegressor(estimator, alpha=alpha, method=method, n_folds=n_folds, seed=seed).fit(X, y)
    return model.predict_interval(_check_X(X_test, "X_test", model.n_features_))  # named here, as the caller knows it
