"""Marginal kernel-density predictors: calibrated models that ignore the input.

Claim 5 of paper 003 (Utpala & Rai, Sec. 4.3): predicting the marginal law of
``Y`` for every input is perfectly quantile calibrated, however useless. The
unknown marginal density is replaced by a Gaussian kernel density estimate of
the training targets with Silverman's rule-of-thumb bandwidth
``1.06 * std(y) * n ** (-1/5)`` (Silverman 1986, Eq. 3.28; population standard
deviation).

Conditioning on a discrete summary ``g(x)`` of the input (a bin label) gives
the binned marginal :math:`F_{Y \\mid g(X)}`, the KDE of the training targets
that share the test point's label. It is calibrated for every summary, by the
same argument as for the marginal, and sharper the more the summary tells about
``Y``.

Each prediction is an equal-weight Gaussian mixture, so PIT, NLL and CRPS are
those of :mod:`calibtut.metrics`; the CRPS uses that all rows of a group share
one mixture and computes its pair term once per group.
"""

from __future__ import annotations

import numpy as np

from calibtut._estimator import Estimator, optional
from calibtut._numeric import gaussian_abs_mean, reduce_scores
from calibtut._validation import as_float_array, check_fitted, check_int, check_real
from calibtut.metrics.pit import pit_mixture
from calibtut.metrics.scores import nll_mixture

__all__ = ["MarginalKDE", "silverman_bandwidth"]


def silverman_bandwidth(values):
    """Silverman's rule-of-thumb bandwidth ``1.06 * std * n ** (-1/5)`` of a 1-d sample.

    Parameters
    ----------
    values : array_like, shape (n,)
        At least two finite values; ``std`` is the population standard
        deviation (``ddof=0``).

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If ``values`` holds fewer than two values or they are all equal (the
        bandwidth would be zero).

    Examples
    --------
    >>> # std of [0, 2] is 1: 1.06 * 2 ** -0.2
    >>> round(silverman_bandwidth([0.0, 2.0]), 4)
    0.9228
    """
    arr = as_float_array(values, "values", ndim=1)
    if arr.size < 2:
        raise ValueError(f"values must hold at least 2 values, got {arr.size}")
    spread = arr.std()
    if spread == 0:
        raise ValueError("values are all equal: Silverman's bandwidth would be 0")
    return float(1.06 * spread * arr.size**-0.2)


class MarginalKDE(Estimator):
    """Predict a Gaussian KDE of the training targets, the same for every input of a group.

    Parameters
    ----------
    n_kernels : int, optional
        ``None`` (default): one kernel at each training target of the group,
        the usual KDE. An int ``K``: ``K`` kernels at the group's empirical
        quantiles of levels ``(j - 1/2) / K``, ``j = 1..K``, which keeps the
        cost of the mixture independent of the training size (the bandwidth is
        still that of all the group's targets).
    bandwidth : float, optional
        Kernel standard deviation; default Silverman's rule per group
        (:func:`silverman_bandwidth`).

    Attributes
    ----------
    groups_ : numpy.ndarray, shape (n_groups,)
        Sorted group labels seen in :meth:`fit` (``[0]`` without ``categories``).
    centers_ : list of numpy.ndarray
        Kernel centres of each group.
    bandwidths_ : numpy.ndarray, shape (n_groups,)
        Kernel standard deviation of each group.

    See Also
    --------
    silverman_bandwidth : the default bandwidth.
    calibtut.metrics.pit_mixture : the PIT of its mixtures.

    References
    ----------
    - Utpala & Rai (2021), "Quantile regularization: towards implicit calibration of regression
      models", submitted to the Ninth International Conference on Learning Representations (ICLR
      2021) (Sec. 4.3, claim 5).
    - Silverman (1986), *Density Estimation for Statistics and Data Analysis*, Chapman & Hall (Eq.
      3.28).

    Examples
    --------
    >>> kde = MarginalKDE().fit([0.0, 2.0])
    >>> kde.pit([1.0]).tolist()  # the median of a symmetric KDE
    [0.5]
    >>> mean, std = kde.moments(n=1)
    >>> float(mean[0]), round(float(std[0]), 4)  # sqrt(1 + 0.9228^2)
    (1.0, 1.3607)
    """

    _parameter_constraints = {
        "n_kernels": optional(check_int, minimum=1),
        "bandwidth": optional(check_real, low=0, low_open=True),
    }

    def __init__(self, *, n_kernels=None, bandwidth=None):
        self.n_kernels = n_kernels
        self.bandwidth = bandwidth

    def fit(self, y, *, categories=None):
        """Estimate one KDE per group of training targets.

        Parameters
        ----------
        y : array_like, shape (n,)
            Training targets.
        categories : array_like of int, shape (n,), optional
            Group label of each target (e.g. the bin of a summary of its
            input); ``None``: one group, the marginal model.

        Returns
        -------
        MarginalKDE
            ``self``, fitted.

        Raises
        ------
        ValueError
            If a group has fewer than two targets or all equal targets (with
            the default bandwidth), or ``categories`` does not match ``y``.

        Examples
        --------
        >>> kde = MarginalKDE(n_kernels=2).fit([0.0, 1.0, 2.0, 3.0])
        >>> kde.centers_[0].tolist()  # quantiles of levels 1/4 and 3/4
        [0.75, 2.25]
        """
        p = self._validate_params()
        y = as_float_array(y, "y", ndim=1)
        labels = self._check_categories(categories, len(y), "categories")
        self.groups_ = np.unique(labels)
        self.centers_, bandwidths = [], []
        for group in self.groups_:
            targets = y[labels == group]
            if len(targets) < 2:
                raise ValueError(f"group {group} of categories holds {len(targets)} target(s); each group needs at least 2")
            if p.n_kernels is None:
                centers = np.sort(targets)
            else:
                centers = np.quantile(targets, (np.arange(p.n_kernels) + 0.5) / p.n_kernels)
            self.centers_.append(centers)
            bandwidths.append(silverman_bandwidth(targets) if p.bandwidth is None else p.bandwidth)
        self.bandwidths_ = np.asarray(bandwidths)
        return self

    @staticmethod
    def _check_categories(categories, n, name):
        if categories is None:
            return np.zeros(n, dtype=np.int64)
        labels = np.asarray(categories)
        if labels.ndim != 1 or len(labels) != n:
            raise ValueError(f"{name} must have shape ({n},), got {labels.shape}")
        if not np.issubdtype(labels.dtype, np.integer):
            raise TypeError(f"{name} must hold integer group labels, got dtype {labels.dtype}")
        return labels

    def _groups_of(self, categories, n):
        """Index into ``groups_`` of each test row (``n`` rows)."""
        check_fitted(self, "groups_")
        if categories is None and len(self.groups_) > 1:
            raise ValueError("the model was fitted with categories: pass the categories of the test rows")
        labels = self._check_categories(categories, n, "categories")
        index = np.searchsorted(self.groups_, labels)
        index = np.minimum(index, len(self.groups_) - 1)
        unknown = self.groups_[index] != labels
        if unknown.any():
            raise ValueError(f"categories holds labels not seen in fit: {sorted(set(labels[unknown].tolist()))}")
        return index

    def _rows(self, y, categories):
        """Validated test targets and, per group index, the rows that belong to it."""
        y = as_float_array(y, "y", ndim=1)
        index = self._groups_of(categories, len(y))
        return y, [(g, np.flatnonzero(index == g)) for g in range(len(self.groups_))]

    def _mixture(self, g, n):
        centers = self.centers_[g]
        shape = (n, len(centers))
        return np.full(shape, 1 / len(centers)), np.broadcast_to(centers, shape), np.full(shape, self.bandwidths_[g])

    def pit(self, y, categories=None):
        """PIT values ``F(y)`` of test targets under their group's KDE.

        Parameters
        ----------
        y : array_like, shape (n,)
        categories : array_like of int, shape (n,), optional
            Group labels of the test rows; required if and only if the model
            was fitted with ``categories``.

        Returns
        -------
        numpy.ndarray, shape (n,)

        Examples
        --------
        >>> kde = MarginalKDE().fit([0.0, 1.0, 10.0, 11.0], categories=[0, 0, 1, 1])
        >>> kde.pit([0.5, 10.5], categories=[0, 1]).tolist()
        [0.5, 0.5]
        """
        y, rows = self._rows(y, categories)
        out = np.empty(len(y))
        for g, r in rows:
            if r.size:
                out[r] = pit_mixture(y[r], *self._mixture(g, r.size))
        return out

    def nll(self, y, categories=None, reduction="mean"):
        """Negative log-likelihood of test targets (natural log).

        Parameters
        ----------
        y : array_like, shape (n,)
        categories : array_like of int, shape (n,), optional
            As in :meth:`pit`.
        reduction : {"mean", "none"}

        Returns
        -------
        float or numpy.ndarray

        Examples
        --------
        >>> kde = MarginalKDE(bandwidth=1.0).fit([0.0, 0.0])
        >>> round(kde.nll([0.0]), 4)  # log(2 pi) / 2
        0.9189
        """
        y, rows = self._rows(y, categories)
        out = np.empty(len(y))
        for g, r in rows:
            if r.size:
                out[r] = nll_mixture(y[r], *self._mixture(g, r.size), reduction="none")
        return reduce_scores(out, reduction)

    def crps(self, y, categories=None, reduction="mean"):
        r"""CRPS of test targets, :math:`E|X - y| - \tfrac12 E|X - X'|` with ``X, X'`` from the KDE.

        The second term depends on the group only and is computed once per
        group, so the cost is O(n K + n_groups K^2) for ``K`` kernels.

        Parameters
        ----------
        y : array_like, shape (n,)
        categories : array_like of int, shape (n,), optional
            As in :meth:`pit`.
        reduction : {"mean", "none"}

        Returns
        -------
        float or numpy.ndarray

        Examples
        --------
        >>> # one kernel N(0, 1): CRPS at 0 is 2 phi(0) - 1/sqrt(pi)
        >>> round(MarginalKDE(bandwidth=1.0).fit([0.0, 0.0]).crps([0.0]), 4)
        0.2337
        """
        y, rows = self._rows(y, categories)
        out = np.empty(len(y))
        for g, r in rows:
            if not r.size:
                continue
            centers, h = self.centers_[g], self.bandwidths_[g]
            first = gaussian_abs_mean(y[r, None] - centers, h).mean(axis=1)
            # E|X - X'| = mean over kernel pairs of E|N(c_i - c_j, 2 h^2)|, in blocks of about 2**20 pairs.
            step = max(1, 2**20 // len(centers))
            spread = sum(
                gaussian_abs_mean(centers[i : i + step, None] - centers, np.sqrt(2.0) * h).sum()
                for i in range(0, len(centers), step)
            )
            out[r] = first - 0.5 * spread / len(centers) ** 2
        return reduce_scores(out, reduction)

    def moments(self, n=None, categories=None):
        """Mean and standard deviation of each test row's prediction.

        Parameters
        ----------
        n : int, optional
            Number of test rows; needed only without ``categories``.
        categories : array_like of int, shape (n,), optional
            As in :meth:`pit`.

        Returns
        -------
        tuple of numpy.ndarray
            ``(mean, std)``, each of shape ``(n,)``.

        Examples
        --------
        >>> kde = MarginalKDE(bandwidth=1.0).fit([0.0, 4.0])
        >>> mean, std = kde.moments(n=2)
        >>> mean.tolist(), std.round(4).tolist()  # sqrt(1 + 4)
        ([2.0, 2.0], [2.2361, 2.2361])
        """
        if n is not None:
            n = check_int(n, "n", minimum=1)
        elif categories is not None:
            n = np.atleast_1d(np.asarray(categories)).shape[0]
        else:
            raise ValueError("moments needs n (the number of test rows) or categories")
        index = self._groups_of(categories, n)
        # equal-weight mixture: mean of the centres, variance h^2 + population variance of the centres
        group_mean = np.array([c.mean() for c in self.centers_])
        group_std = np.sqrt(self.bandwidths_**2 + np.array([c.var() for c in self.centers_]))
        return group_mean[index], group_std[index]
