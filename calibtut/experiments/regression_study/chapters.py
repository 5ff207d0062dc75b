"""Where two of the study's penalties lead a forecast by themselves (paper 002, chapter 3).

**QR.** Quantile regularization penalises the negative entropy of the batch
PITs, estimated from ``k``-spacings of the sorted PITs
(:func:`calibtut.regularizers.pit_negentropy`). The true negentropy is smallest
for uniform PITs, that is for a calibrated forecast. The *estimate* is not: its
``n - k`` windows ``[Z_(i), Z_(i+k)]`` cover the PITs near 0 and 1 fewer times
than those in the middle, so it gains by spreading the middle PITs and crowding
the extreme ones, which is what an over-confident forecast does. The larger
``k / n``, the larger the pull: at the authors' setting of paper 002
(``k = 64`` in batches of 512) the minimiser over the scale of a Gaussian
forecast is far from the calibrated scale.

* :func:`calibtut.metrics.regression.gaussian_scale_pce` (re-exported here):
  the exact PCE of ``N(0, s^2)`` forecasts of ``N(0, 1)`` outcomes.
* :func:`qr_scale_curve`: the penalty as a function of ``s`` on fixed batches,
  for several spacings, and :func:`qr_scale_optimum`, its minimiser and the
  PCE there; :func:`plot_qr_scale_curve` draws the curves.

**Trunc.** On a batch whose frequency of ``y <= q`` is below the level, the
truncation penalty pushes the quantile up with gradient ``1 - freq``;
otherwise down with gradient ``freq``. At a level near 1 the downward push is
about 19 times the upward one, so under minibatch noise the quantile settles
where the batch overshoots the level only rarely: below the level. Extreme
quantiles move inwards and the central interval covers less than it should.

* :func:`trunc_stationary_level`: the exact coverage where the expected
  minibatch gradient vanishes (a binomial root), and
  :func:`trunc_stationary_table` for a grid of levels and batch sizes;
* :func:`trunc_adam_level`: the same by training one quantile with Adam.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch
from scipy import optimize, stats

from calibtut._validation import check_int, check_levels, check_positive, check_real
from calibtut.metrics.regression import gaussian_scale_pce
from calibtut.regularizers.calibration_penalties import trunc_penalty
from calibtut.regularizers.entropy import resolve_spacing
from calibtut.regularizers.quantile_regularization import pit_negentropy

__all__ = [
    "plot_qr_scale_curve",
    "qr_scale_curve",
    "qr_scale_optimum",
    "trunc_adam_level",
    "trunc_stationary_level",
    "trunc_stationary_table",
]


def _check_scales(scales):
    scales = check_positive(scales, "scales", ndim=1)
    if scales.size < 2 or np.any(np.diff(scales) <= 0):
        raise ValueError(f"scales must be a strictly increasing grid of at least 2 values, got {scales}")
    return scales


def qr_scale_curve(n=512, spacings=(64,), scales=None, seeds=3, sort="neural"):
    """The QR penalty of ``N(0, s^2)`` forecasts on batches of ``N(0, 1)`` outcomes.

    For each seed, one batch of ``n`` standard normal outcomes is drawn; every
    point gets the forecast ``N(0, s^2)``, whose PITs are ``Phi(y / s)``. The
    penalty is the one paper 002's study trains with (NeuralSort at
    ``tau = 1e-3``, ``eps = 1e-5``; :func:`calibtut.regularizers.pit_negentropy`).

    Parameters
    ----------
    n : int, default 512
        Batch size (the study's).
    spacings : sequence of int, "sqrt" or callable, default (64,)
        Spacing rules (:func:`calibtut.regularizers.entropy.resolve_spacing`): 64 is the
        authors' rule of paper 002 at ``n = 512``, ``"sqrt"`` that of paper 003.
    scales : array-like, optional
        Increasing grid of forecast scales; default 121 values from 0.5 to 1.5
        on a log scale.
    seeds : int, default 3
        Number of batches (seeds ``0 .. seeds - 1``).
    sort : {"neural", "hard"}, default "neural"
        The sort inside the penalty.

    Returns
    -------
    pandas.DataFrame
        Columns ``n``, ``k``, ``seed``, ``scale`` and ``penalty``, one row per
        (spacing, seed, scale).

    Examples
    --------
    >>> curve = qr_scale_curve(128, spacings=(8,), scales=[0.8, 1.0], seeds=1)
    >>> curve[["k", "seed", "scale"]].to_numpy().tolist()
    [[8.0, 0.0, 0.8], [8.0, 0.0, 1.0]]
    """
    n = check_int(n, "n", minimum=4)
    seeds = check_int(seeds, "seeds", minimum=1)
    scales = _check_scales(np.geomspace(0.5, 1.5, 121) if scales is None else scales)
    if isinstance(spacings, (str, int)) or callable(spacings):
        raise TypeError("spacings must be a sequence of spacing rules, e.g. (64, 'sqrt')")
    ks = []
    for i, rule in enumerate(spacings):
        try:
            ks.append(resolve_spacing(rule, n))
        except (TypeError, ValueError) as bad:
            raise type(bad)(f"spacings[{i}]: {bad}") from None
    if not ks:
        raise ValueError("spacings must name at least one spacing rule")
    rows = []
    for seed in range(seeds):
        y = torch.randn(n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
        for k in ks:
            for s in scales:
                pit = torch.special.ndtr(y / s)
                penalty = float(pit_negentropy(pit, k, sort=sort, tau=1e-3, eps=1e-5))
                rows.append((n, k, seed, s, penalty))
    return pd.DataFrame(rows, columns=["n", "k", "seed", "scale", "penalty"])


def _check_curve(curve):
    if not isinstance(curve, pd.DataFrame) or not {"n", "k", "seed", "scale", "penalty"} <= set(curve):
        raise TypeError("curve must be the DataFrame returned by qr_scale_curve")


def qr_scale_optimum(curve):
    """The scale that minimises each spacing's seed-mean curve, and the PCE there.

    Parameters
    ----------
    curve : pandas.DataFrame
        The output of :func:`qr_scale_curve`.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``k``: ``k_over_n`` (of the curve's batch size ``n``), ``scale`` (the minimiser on the grid of
        the penalty averaged over the seeds), ``pce``
        (:func:`~calibtut.metrics.regression.gaussian_scale_pce` at that scale) and ``seeds_below``: the
        share of seeds whose own penalty is lower at that scale than at the
        grid point nearest to 1 (the calibrated forecast).

    Examples
    --------
    >>> curve = qr_scale_curve(128, spacings=(8, 32), seeds=2)
    >>> optimum = qr_scale_optimum(curve)
    >>> bool(optimum.loc[32, "scale"] < optimum.loc[8, "scale"] < 1)
    True
    """
    _check_curve(curve)
    rows = {}
    for k, one in curve.groupby("k", sort=False):
        table = one.pivot(index="scale", columns="seed", values="penalty")
        best = table.mean(axis=1).idxmin()
        calibrated = table.index[np.abs(table.index - 1.0).argmin()]
        rows[int(k)] = {
            "k_over_n": k / one["n"].iloc[0],
            "scale": best,
            "pce": gaussian_scale_pce(best),
            "seeds_below": float((table.loc[best] < table.loc[calibrated]).mean()),
        }
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("k")


def plot_qr_scale_curve(curve, ax=None):
    """Seed-mean penalty minus its value at the calibrated scale, one line per spacing.

    Parameters
    ----------
    curve : pandas.DataFrame
        The output of :func:`qr_scale_curve`.
    ax : matplotlib.axes.Axes, optional
        Where to draw; a new figure when omitted.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> ax = plot_qr_scale_curve(qr_scale_curve(128, spacings=(8,), seeds=1))
    >>> ax.get_xlabel()
    'forecast scale s (1 = calibrated)'
    """
    import matplotlib.pyplot as plt

    _check_curve(curve)
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    for k, one in curve.groupby("k", sort=False):
        mean = one.groupby("scale")["penalty"].mean()
        calibrated = mean.iloc[np.abs(mean.index - 1.0).argmin()]
        (line,) = ax.plot(mean.index, mean - calibrated, label=f"k = {k}")
        ax.plot(mean.idxmin(), mean.min() - calibrated, "o", color=line.get_color())
    ax.axvline(1.0, color="grey", lw=0.8, ls="--")
    ax.axhline(0.0, color="grey", lw=0.8)
    ax.set_xlabel("forecast scale s (1 = calibrated)")
    ax.set_ylabel("QR penalty minus its value at s = 1")
    ax.legend(title="spacing")
    return ax


def _check_level(level):
    return check_real(level, "level", low=0, high=1, low_open=True, high_open=True)


def trunc_stationary_level(level, batch):
    """The coverage at which Trunc's expected minibatch gradient on a quantile vanishes.

    For one quantile ``q`` of level ``a`` and a batch of ``B`` outcomes with
    frequency ``f`` of ``y <= q``, the gradient of
    :func:`calibtut.regularizers.calibration_penalties.trunc_penalty` in ``q`` is
    ``-(1 - f)`` when ``f <= a`` and ``f`` when ``f >= a``. With
    ``p = P(Y <= q)``, ``B f`` is binomial ``(B, p)``; gradient descent on
    minibatches settles where the expected gradient is zero, which is solved
    for ``p`` by root finding.

    Parameters
    ----------
    level : float
        The quantile level, in (0, 1).
    batch : int
        Batch size, >= 1.

    Returns
    -------
    float
        The stationary coverage ``p``: below ``level`` above 1/2, above it
        below 1/2, and equal at 1/2; it tends to ``level`` as ``batch`` grows.

    Examples
    --------
    >>> round(trunc_stationary_level(0.5, 512), 6)
    0.5
    >>> round(trunc_stationary_level(0.95, 512), 3)
    0.934
    """
    level = _check_level(level)
    batch = check_int(batch, "batch", minimum=1)
    freq = np.arange(batch + 1) / batch
    push = np.where(freq <= level, -(1 - freq), 0.0) + np.where(freq >= level, freq, 0.0)

    def expected_gradient(p):
        return float(stats.binom.pmf(np.arange(batch + 1), batch, p) @ push)

    return float(optimize.brentq(expected_gradient, 1e-12, 1 - 1e-12, xtol=1e-12))


def trunc_stationary_table(levels=(0.05, 0.25, 0.5, 0.75, 0.95), batches=(64, 512, 4096)):
    """:func:`trunc_stationary_level` on a grid, with the 90% interval's coverage.

    Parameters
    ----------
    levels : sequence of float, default (0.05, 0.25, 0.5, 0.75, 0.95)
        Quantile levels, strictly increasing in (0, 1).
    batches : sequence of int, default (64, 512, 4096)
        Batch sizes.

    Returns
    -------
    pandas.DataFrame
        One row per level (index ``level``), one column per batch size, plus
        the row ``"0.95 - 0.05"`` when both levels are present: the coverage
        of the central 90% interval at the stationary quantiles.

    Examples
    --------
    >>> trunc_stationary_table(levels=(0.05, 0.95), batches=(512,)).round(3)[512].tolist()
    [0.066, 0.934, 0.868]
    """
    if not len(levels) or not len(batches):
        raise ValueError("levels and batches must each hold at least one value")
    levels = check_levels(levels).tolist()
    batches = [check_int(b, "batches", minimum=1) for b in batches]
    table = pd.DataFrame({b: [trunc_stationary_level(a, b) for a in levels] for b in batches},
                         index=pd.Index(levels, name="level"))
    if 0.05 in levels and 0.95 in levels:
        table.loc["0.95 - 0.05"] = table.loc[0.95] - table.loc[0.05]
    return table


def trunc_adam_level(level, batch=512, steps=6000, burn_in=2000, lr=1e-3, seed=0):
    """Coverage of one quantile trained on ``N(0, 1)`` outcomes by Trunc alone, with Adam.

    The quantile starts at the true one, ``Phi^-1(level)``; each step draws a
    fresh batch and takes an Adam step on
    :func:`calibtut.regularizers.calibration_penalties.trunc_penalty`. The result is the
    coverage ``Phi(mean q)`` over the steps after ``burn_in``, to compare with
    :func:`trunc_stationary_level`.

    Parameters
    ----------
    level : float
        The quantile level, in (0, 1).
    batch : int, default 512
        Batch size.
    steps, burn_in : int, default 6000, 2000
        Adam steps in all, and those left out of the mean (``burn_in < steps``).
    lr : float, default 1e-3
        Adam's learning rate.
    seed : int, default 0
        Seed of the batches.

    Returns
    -------
    float

    Examples
    --------
    >>> round(trunc_adam_level(0.5, batch=64, steps=400, burn_in=100), 1)
    0.5
    """
    level = _check_level(level)
    batch = check_int(batch, "batch", minimum=1)
    steps = check_int(steps, "steps", minimum=2)
    burn_in = check_int(burn_in, "burn_in", minimum=0)
    if burn_in >= steps:
        raise ValueError(f"burn_in ({burn_in}) must be smaller than steps ({steps})")
    lr = check_real(lr, "lr", low=0, low_open=True)
    seed = check_int(seed, "seed", minimum=0)
    gen = torch.Generator().manual_seed(seed)
    q = torch.tensor(stats.norm.ppf(level), dtype=torch.float64, requires_grad=True)
    levels = torch.tensor([level], dtype=torch.float64)
    opt = torch.optim.Adam([q], lr=lr)
    kept = []
    for step in range(steps):
        y = torch.randn(batch, generator=gen, dtype=torch.float64)
        loss = trunc_penalty(q.expand(batch, 1), y, levels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step >= burn_in:
            kept.append(q.item())
    return float(stats.norm.cdf(np.mean(kept)))
