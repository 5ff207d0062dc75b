r"""Calibration regularizers of paper 002 and the loss ``base + lambda * R`` that uses them.

Every regularizer is computed on one minibatch (Algorithm 3 of paper 002) and
returns a differentiable scalar; ``p = 1`` throughout the study.

PCE-KDE, PIT form (eq. 16; mixtures)
    :math:`\frac1M \sum_j |\alpha_j - \frac1N \sum_i \sigma(\tau(\alpha_j - Z_i))|^p`
    at the ``M = 100`` centred levels :math:`\alpha_j = (j - 1/2)/M`, with
    the logistic function :math:`\sigma` and :math:`\tau = 100`, no
    reflection (the authors' code).
PCE-KDE, quantile form (SQR)
    the same with :math:`\sigma(\tau(Q(\alpha_j | X_i) - Y_i))` at the batch's
    levels: the relaxed indicator acts on the (standardised) target scale,
    not on PITs. The paper gives no formula; this is the authors' code.
PCE-Sort (eq. 17; mixtures)
    :math:`\frac1N \sum_i |Z_{(i)} - i/(N + 1)|^p` on sorted PITs. The
    authors' Blondel l2 soft sort at strength 0.1 returns exactly the hard
    sort for PITs (any gap < 1/0.1), so ``sort="hard"`` reproduces them;
    ``sort="soft"`` is a genuinely soft sort (:func:`soft_sort_l2`) for
    the ablation.
QR (mixtures)
    the negentropy of the PITs (:func:`calibtut.regularizers.pit_negentropy`)
    on the mixture CDF, with the authors' spacing rule (64, or the square
    root of N when 64 > N // 2), NeuralSort at 1e-3 and ``eps = 1e-5``.
Trunc (Chung et al. 2021; SQR)
    per level, :math:`\overline{(Y - Q)_+}` when the batch frequency
    :math:`\hat F_Z(\alpha) = \overline{1(Y \le Q(\alpha|X))}` is at most
    :math:`\alpha` (the quantile is pushed up) and :math:`\overline{(Q - Y)_+}`
    when it is at least :math:`\alpha`; both at equality, as the authors'
    code; averaged over the levels.

:class:`StudyLoss` combines a base model (``"mixture"`` or ``"sqr"``), a
score (``"nll"`` or ``"crps"``) and a regularizer with its weight; it is the
``loss`` argument of :func:`calibtut.models.fit`.
"""

from __future__ import annotations

import numpy as np
import torch
from sklearn.isotonic import isotonic_regression

from calibtut._torch import check_quantile_batch, check_tensor
from calibtut._validation import check_choice, check_int, check_levels, check_real
from calibtut.metrics.torch import crps_mixture, nll_mixture, pinball_loss, pit_mixture
from calibtut.regularizers.quantile_regularization import pit_negentropy

__all__ = [
    "BASE_MODELS",
    "REGULARIZERS",
    "StudyLoss",
    "pce_kde_pit",
    "pce_kde_quantile",
    "pce_sort",
    "qr_spacing_002",
    "soft_sort_l2",
    "trunc_penalty",
]

#: Base models and the scores they can be trained by.
BASE_MODELS = {"mixture": ("nll", "crps"), "sqr": ("crps",)}
#: Regularizers and the base models they apply to (as in the authors' study).
REGULARIZERS = {
    "none": ("mixture", "sqr"),
    "pce-kde": ("mixture", "sqr"),
    "pce-sort": ("mixture",),
    "qr": ("mixture",),
    "trunc": ("sqr",),
}


def _check_pit(pit):
    return check_tensor(pit, "pit", ndim=1, low=0, high=1)


def pce_kde_pit(pit, n_levels=100, *, tau=100.0, p=1, validate_args=True):
    """PCE-KDE regularizer on PIT values (paper 002, eq. 16, the authors' levels).

    Parameters
    ----------
    pit : torch.Tensor, shape (n,)
        PITs of the batch.
    n_levels : int, default 100
        Number M of centred levels ``(j - 1/2) / M``.
    tau : float, default 100.0
        Inverse scale of the logistic kernel, > 0.
    p : float, default 1
        Exponent of the absolute deviations, >= 1.

    validate_args : bool, default True
        Check the tensors: NaN, out of [0, 1] or of the wrong shape are refused
        (a training step that checked its data once passes False).
    Returns
    -------
    torch.Tensor
        Scalar.

    Examples
    --------
    >>> pit = torch.full((10,), 0.5)  # every PIT in the middle: PCE = mean |a - 1(a >= .5)| = 0.25
    >>> round(float(pce_kde_pit(pit, tau=1e6)), 3), round(float(pce_kde_pit(pit)), 3)  # sharp, smoothed
    (0.25, 0.236)
    """
    if validate_args:
        pit = _check_pit(pit)
    n_levels = check_int(n_levels, "n_levels", minimum=1)
    tau = check_real(tau, "tau", low=0, low_open=True)
    p = check_real(p, "p", low=1)
    levels = (torch.arange(n_levels, dtype=pit.dtype, device=pit.device) + 0.5) / n_levels
    freq = torch.sigmoid(tau * (levels[:, None] - pit[None, :])).mean(dim=1)
    return (levels - freq).abs().pow(p).mean()


def pce_kde_quantile(quantiles, y, levels, *, tau=100.0, p=1, validate_args=True):
    """PCE-KDE regularizer of a quantile model (the authors' SQR version).

    Parameters
    ----------
    quantiles : torch.Tensor, shape (n, m)
        Predicted quantiles of the batch at ``levels``.
    y : torch.Tensor, shape (n,)
    levels : torch.Tensor, shape (m,)
        Strictly inside (0, 1); need not be sorted (training draws random
        levels, possibly tied).
    tau : float, default 100.0
        Inverse scale of the logistic relaxation of ``1(y <= q)``, in units of y, > 0.
    p : float, default 1
        Exponent of the absolute deviations, >= 1.

    validate_args : bool, default True
        Check the tensors: NaN, out of [0, 1] or of the wrong shape are refused
        (a training step that checked its data once passes False).
    Returns
    -------
    torch.Tensor
        Scalar.

    Examples
    --------
    >>> y = torch.zeros(4)
    >>> q = torch.tensor([[-1.0, 1.0]]).repeat(4, 1)  # frequencies 0 and 1 at 0.25, 0.75
    >>> round(float(pce_kde_quantile(q, y, torch.tensor([0.25, 0.75]))), 4)
    0.25
    """
    if validate_args:
        check_quantile_batch(quantiles, y, levels)
    tau = check_real(tau, "tau", low=0, low_open=True)
    p = check_real(p, "p", low=1)
    freq = torch.sigmoid(tau * (quantiles - y[:, None])).mean(dim=0)
    return (levels - freq).abs().pow(p).mean()


def soft_sort_l2(values, strength=1.0):
    """Blondel et al. (2020) l2-regularized soft sort, ascending, differentiable.

    The projection of ``w = (n, ..., 1) / strength`` onto the permutahedron of
    ``values``: with ``u = w + sort(values)``, the result is ``v - w`` where
    ``v`` is the decreasing isotonic regression of ``u`` (pool adjacent
    violators, :func:`sklearn.isotonic.isotonic_regression`). The blocks are
    found without gradient; within a block the output is the block mean, so
    the gradient flows through ``torch.sort`` and the block averages. It equals
    the hard sort when ``1 / strength`` exceeds every gap between sorted values.

    Parameters
    ----------
    values : torch.Tensor, shape (n,)
    strength : float, default 1.0
        Regularization strength epsilon (the authors use 0.1), > 0.

    Returns
    -------
    torch.Tensor, shape (n,)
        Non-decreasing; same sum as ``values``.

    Examples
    --------
    >>> x = torch.tensor([0.3, 0.1, 0.2])
    >>> soft_sort_l2(x, strength=0.1)  # gaps of 0.1 < 1 / 0.1: the hard sort
    tensor([0.1000, 0.2000, 0.3000])
    >>> soft_sort_l2(x, strength=100.0)  # very soft: gaps shrunk to 1 / strength around the mean
    tensor([0.1900, 0.2000, 0.2100])
    """
    if not isinstance(values, torch.Tensor) or values.ndim != 1 or not torch.is_floating_point(values):
        raise TypeError("values must be a 1-dimensional floating torch.Tensor")
    strength = check_real(strength, "strength", low=0, low_open=True)
    n = values.shape[0]
    w = torch.arange(n, 0, -1, dtype=values.dtype, device=values.device) / strength
    u = w + torch.sort(values).values
    fitted = isotonic_regression(u.detach().cpu().double().numpy(), increasing=False)
    block = torch.as_tensor(np.concatenate([[0], np.cumsum(np.diff(fitted) != 0)]), device=values.device)
    n_blocks = int(block[-1]) + 1
    sums = torch.zeros(n_blocks, dtype=u.dtype, device=u.device).index_add(0, block, u)
    counts = torch.bincount(block, minlength=n_blocks).to(u.dtype)
    return (sums / counts)[block] - w


def pce_sort(pit, *, p=1, sort="hard", strength=0.1, validate_args=True):
    """PCE-Sort regularizer ``mean_i |Z_(i) - i / (n + 1)|^p`` (paper 002, eq. 17).

    Parameters
    ----------
    pit : torch.Tensor, shape (n,)
    p : float, default 1
        Exponent of the absolute deviations, >= 1.
    sort : {"hard", "soft"}, default "hard"
        ``"hard"``: ``torch.sort`` (what the authors' soft sort computes at
        their strength); ``"soft"``: :func:`soft_sort_l2` at ``strength``.
    strength : float, default 0.1
        Strength of the soft sort, > 0 (checked for either sort); PITs become
        genuinely soft sorted only when ``1 / strength`` is below some gap
        between sorted PITs (strength > 1).

    validate_args : bool, default True
        Check the tensors: NaN, out of [0, 1] or of the wrong shape are refused
        (a training step that checked its data once passes False).
    Returns
    -------
    torch.Tensor
        Scalar.

    Examples
    --------
    >>> round(float(pce_sort(torch.tensor([0.75, 0.25, 0.5]))), 4)  # exactly i / (n + 1)
    0.0
    """
    if validate_args:
        pit = _check_pit(pit)
    p = check_real(p, "p", low=1)
    strength = check_real(strength, "strength", low=0, low_open=True)
    if sort not in ("hard", "soft"):
        raise ValueError(f"sort must be 'hard' or 'soft', got {sort!r}")
    ordered = torch.sort(pit).values if sort == "hard" else soft_sort_l2(pit, strength)
    n = pit.shape[0]
    expected = torch.arange(1, n + 1, dtype=pit.dtype, device=pit.device) / (n + 1)
    return (ordered - expected).abs().pow(p).mean()


def trunc_penalty(quantiles, y, levels, *, validate_args=True):
    """Truncation regularizer of Chung et al. (2021) as the authors of paper 002 run it.

    Parameters
    ----------
    quantiles : torch.Tensor, shape (n, m)
    y : torch.Tensor, shape (n,)
    levels : torch.Tensor, shape (m,)
        Strictly inside (0, 1); need not be sorted.

    validate_args : bool, default True
        Check the tensors: NaN, out of [0, 1] or of the wrong shape are refused
        (a training step that checked its data once passes False).
    Returns
    -------
    torch.Tensor
        Scalar: mean over levels of ``mean (y - q)_+`` where the batch
        frequency of ``y <= q`` is at most the level, plus ``mean (q - y)_+``
        where it is at least the level.

    Examples
    --------
    >>> y = torch.tensor([0.0, 1.0, 2.0, 3.0])
    >>> q = torch.tensor([[0.5], [0.5], [0.5], [0.5]])  # frequency 1/4 < 0.5: pushed up
    >>> float(trunc_penalty(q, y, torch.tensor([0.5])))  # mean of (0, 0.5, 1.5, 2.5)
    1.125
    """
    if validate_args:
        check_quantile_batch(quantiles, y, levels)
    with torch.no_grad():
        freq = (y[:, None] <= quantiles).to(quantiles.dtype).mean(dim=0)
    diff = y[:, None] - quantiles
    up = (freq <= levels).to(quantiles.dtype) * torch.relu(diff)
    down = (freq >= levels).to(quantiles.dtype) * torch.relu(-diff)
    return (up + down).mean()


def qr_spacing_002(n):
    """The authors' QR spacing: 64, or ``int(sqrt(n))`` when 64 > n // 2.

    Parameters
    ----------
    n : int
        Number of PITs in the batch, >= 1.

    Returns
    -------
    int

    Examples
    --------
    >>> qr_spacing_002(512), qr_spacing_002(100)
    (64, 10)
    """
    n = check_int(n, "n", minimum=1)
    return 64 if 64 <= n // 2 else int(n**0.5)


class StudyLoss:
    """Training loss ``base score + lam * regularizer`` for the models of paper 002.

    Parameters
    ----------
    model : {"mixture", "sqr"}
        Base model: :class:`calibtut.models.MixtureMLP` outputs or
        :class:`calibtut.models.QuantileFunction` of an SQR network.
    score : {"nll", "crps"}, default "crps" for SQR, "nll" for mixtures
        ``"crps"`` is the closed-form mixture CRPS or, for SQR, the mean
        pinball loss at ``n_levels`` sorted uniform random levels drawn at
        each call (from torch's global generator, which
        :func:`calibtut.models.fit` seeds). A quantile model has no density,
        so ``"nll"`` is refused for SQR.
    regularizer : {"none", "pce-kde", "pce-sort", "qr", "trunc"}, default "none"
        See the module docstring and :data:`REGULARIZERS` for which applies
        to which base model.
    lam : float, default 0.0
        Weight of the regularizer, >= 0.
    n_levels : int, default 64
        Random levels per SQR step, >= 1.
    sort : {"hard", "soft"}, default "hard"
        Sort of PCE-Sort.
    strength : float, default 0.1
        Soft-sort strength of PCE-Sort, > 0.
    levels : array_like, optional
        Fixed SQR levels instead of random ones (e.g. for a less noisy
        validation monitor).

    Examples
    --------
    >>> from calibtut.models import MixtureMLP
    >>> out = MixtureMLP(2, seed=0)(torch.zeros(8, 2))
    >>> y = torch.linspace(-1, 1, 8)
    >>> base = StudyLoss("mixture", "nll")(out, y)
    >>> bool(StudyLoss("mixture", "nll", "pce-kde", lam=1.0)(out, y) > base)
    True
    >>> StudyLoss("sqr", "nll")
    Traceback (most recent call last):
    ...
    ValueError: score 'nll' is not available for model 'sqr' (a quantile model has no density); use one of ('crps',)
    """

    def __init__(
        self,
        model,
        score=None,
        regularizer="none",
        lam=0.0,
        *,
        n_levels=64,
        sort="hard",
        strength=0.1,
        levels=None,
    ):
        self.model = check_choice(model, "model", tuple(BASE_MODELS))
        score = BASE_MODELS[model][0] if score is None else score
        check_choice(score, "score", ("nll", "crps"))
        if score not in BASE_MODELS[model]:
            raise ValueError(
                f"score {score!r} is not available for model {model!r} (a quantile model has no density); "
                f"use one of {BASE_MODELS[model]}"
            )
        self.score = score
        self.regularizer = check_choice(regularizer, "regularizer", tuple(REGULARIZERS))
        if model not in REGULARIZERS[regularizer]:
            raise ValueError(
                f"regularizer {regularizer!r} applies to {REGULARIZERS[regularizer]} models, not {model!r}"
            )
        self.lam = check_real(lam, "lam", low=0)
        self.n_levels = check_int(n_levels, "n_levels", minimum=1)
        if sort not in ("hard", "soft"):
            raise ValueError(f"sort must be 'hard' or 'soft', got {sort!r}")
        self.sort, self.strength = sort, check_real(strength, "strength", low=0, low_open=True)
        if levels is not None:
            levels = torch.as_tensor(check_levels(levels))
        self.levels = levels

    def _mixture(self, output, y):
        if not isinstance(output, (tuple, list)) or len(output) != 3:
            raise TypeError("a mixture loss needs a (weights, means, stds) output")
        score = nll_mixture if self.score == "nll" else crps_mixture
        # a training step: the loop checked its data once, so no check reads the device here
        base = score(y, *output, validate_args=False)
        if self.lam == 0 or self.regularizer == "none":
            return base
        pit = pit_mixture(y, *output, validate_args=False).clamp(0.0, 1.0)
        if self.regularizer == "pce-kde":
            penalty = pce_kde_pit(pit, validate_args=False)
        elif self.regularizer == "pce-sort":
            penalty = pce_sort(pit, sort=self.sort, strength=self.strength, validate_args=False)
        else:
            # imported here: calibtut.regularizers re-exports this module's names
            penalty = pit_negentropy(pit, qr_spacing_002, sort="neural", tau=1e-3, eps=1e-5, validate_args=False)
        return base + self.lam * penalty

    def draw_levels(self, y):
        """The SQR levels of one step: the fixed ``levels``, or sorted uniform draws.

        The draws come from torch's global generator, in the order the loss
        consumes them (before the network's dropout masks).
        """
        if self.levels is not None:
            return self.levels.to(dtype=y.dtype, device=y.device)
        # drawn by the CPU generator on every device, so a seed gives one stream on CPU and GPU
        levels = torch.sort(torch.rand(self.n_levels, dtype=y.dtype)).values.to(y.device)
        return levels.clamp(1e-6, 1 - 1e-6)

    def quantile_loss(self, quantiles, y, levels):
        """Pinball loss plus ``lam`` times the SQR regularizer, from computed quantiles."""
        base = pinball_loss(y, quantiles, levels, validate_args=False)
        if self.lam == 0 or self.regularizer == "none":
            return base
        if self.regularizer == "pce-kde":
            penalty = pce_kde_quantile(quantiles, y, levels, validate_args=False)
        else:
            penalty = trunc_penalty(quantiles, y, levels, validate_args=False)
        return base + self.lam * penalty

    def _sqr(self, output, y):
        if not callable(output):
            # a quantile function of the batch, levels -> (n, m) quantiles (an SQR network's output)
            raise TypeError(f"an SQR loss needs a quantile-function output, got {type(output).__name__}")
        levels = self.draw_levels(y)
        return self.quantile_loss(output(levels), y, levels)

    def __call__(self, output, y):
        return self._mixture(output, y) if self.model == "mixture" else self._sqr(output, y)

    def base_loss(self):
        """The same loss without the regularizer: the base score the study monitors.

        The authors early-stop on and restore the checkpoint of the
        validation *base* loss (``val/base_loss``: the NLL or CRPS of a
        mixture, the pinball loss at fresh random levels for SQR), never on
        ``base + lam * R``; :func:`calibtut.models.fit_study` monitors this.
        An SQR base loss draws its levels exactly as the full loss does.

        Returns
        -------
        StudyLoss

        Examples
        --------
        >>> StudyLoss("mixture", "crps", "qr", lam=0.2).base_loss()
        StudyLoss('mixture', 'crps', 'none', lam=0.0)
        """
        return StudyLoss(self.model, self.score, n_levels=self.n_levels, sort=self.sort, strength=self.strength,
                         levels=None if self.levels is None else self.levels.numpy())

    def __repr__(self):
        return f"StudyLoss({self.model!r}, {self.score!r}, {self.regularizer!r}, lam={self.lam})"
