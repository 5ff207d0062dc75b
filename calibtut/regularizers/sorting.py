"""NeuralSort: a continuous relaxation of sorting (Grover et al., 2019).

For scores :math:`s \\in \\mathbb{R}^n` let :math:`A_s` be the matrix of pairwise
absolute differences, :math:`(A_s)_{jl} = |s_j - s_l|`, and :math:`b = A_s 1` its
row sums. The relaxed permutation matrix for a descending sort has rows

.. math::

    \\hat P_{i,:} = \\operatorname{softmax}\\big(((n + 1 - 2i)\\, s - b) / \\tau\\big),
    \\qquad i = 1, \\dots, n,

each a probability vector (the matrix is unimodal row-stochastic). As
:math:`\\tau \\to 0` row :math:`i` puts all its mass on the index of the
:math:`i`-th largest score, so :math:`\\hat P s` tends to the sorted scores.
Because row :math:`i`'s logits are linear in :math:`i`, :math:`\\hat P s` is
non-increasing in :math:`i` for every :math:`\\tau > 0` (a tilted mean decreasing
in its tilt), so spacings of the relaxed sort are never negative.

The row sums :math:`b` are computed in O(n log n) from a sort
(:func:`abs_diff_row_sums`), so only the logits and the softmax are n x n. The
softmax is evaluated with its maximum subtracted (``torch.softmax``), so the
matrix stays finite for small temperatures (``tau = 1e-3`` is the value used by
the QR code); the logits scale like ``n * range(s) / tau``, so for very large
batches float64 keeps more of the gaps between logits than float32.
"""

from __future__ import annotations

import torch

from calibtut._validation import check_real

__all__ = ["abs_diff_row_sums", "hard_sort_matrix", "neural_sort_matrix", "soft_sort"]


def _check_scores(scores):
    if not isinstance(scores, torch.Tensor):
        raise TypeError(f"scores must be a torch.Tensor, got {type(scores).__name__}")
    if scores.ndim < 1:
        raise ValueError("scores must have at least 1 dimension (..., n)")
    if not torch.is_floating_point(scores):
        raise TypeError(f"scores must have a floating dtype, got {scores.dtype}")
    if scores.shape[-1] < 1:
        raise ValueError("scores must not be empty")


def _check_tau(tau):
    return check_real(tau, "tau", low=0, low_open=True)


def neural_sort_matrix(scores, tau=1.0, *, descending=True):
    """Relaxed permutation matrix of NeuralSort.

    Parameters
    ----------
    scores : torch.Tensor, shape (..., n)
        Values to sort along the last dimension (leading dimensions are batches).
    tau : float, default 1.0
        Temperature; smaller is closer to the hard sort.
    descending : bool, default True
        NeuralSort's own convention is descending (row 1 picks the largest);
        ``False`` flips the rows so that row 1 picks the smallest.

    Returns
    -------
    torch.Tensor, shape (..., n, n)
        Row-stochastic matrix ``P`` with ``P @ scores`` the relaxed sort.

    Examples
    --------
    >>> import torch
    >>> s = torch.tensor([0.2, 0.9, 0.5])
    >>> neural_sort_matrix(s, tau=1e-3).round().int()
    tensor([[0, 1, 0],
            [0, 0, 1],
            [1, 0, 0]], dtype=torch.int32)
    """
    _check_scores(scores)
    tau = _check_tau(tau)
    n = scores.shape[-1]
    scaling = n + 1 - 2 * torch.arange(1, n + 1, dtype=scores.dtype, device=scores.device)  # (n,)
    # ascending: the rows in reverse order, whose coefficients are exactly -scaling (small
    # integers), so the rows are built in place rather than the n x n matrix flipped
    logits = (scaling if descending else -scaling).unsqueeze(-1) * (scores / tau).unsqueeze(-2)
    logits = logits.sub_((abs_diff_row_sums(scores) / tau).unsqueeze(-2))  # (..., n, n)
    return torch.softmax(logits, dim=-1)


def abs_diff_row_sums(scores):
    """Row sums ``b_j = sum_l |s_j - s_l|`` of NeuralSort's matrix ``A_s``, in O(n log n).

    With ``v`` the scores sorted ascending and ``i`` the 0-based rank of ``s_j``,
    ``b_j = (2 i - n) v_i + sum(v) - 2 sum_{l < i} v_l``; the sums are accumulated
    in float64. Equal to the O(n^2) definition (and differentiable like it away
    from ties) without building the n x n matrix.

    Parameters
    ----------
    scores : torch.Tensor, shape (..., n)

    Returns
    -------
    torch.Tensor, shape (..., n)

    Examples
    --------
    >>> import torch
    >>> abs_diff_row_sums(torch.tensor([0.0, 3.0, 1.0]))
    tensor([4., 5., 3.])
    """
    _check_scores(scores)
    n = scores.shape[-1]
    values, order = torch.sort(scores, dim=-1)
    wide = values.double()
    before = torch.cumsum(wide, dim=-1) - wide  # sum of the smaller values
    rank = torch.arange(n, dtype=torch.float64, device=scores.device)
    sums = (2 * rank - n) * wide + wide.sum(dim=-1, keepdim=True) - 2 * before
    return torch.empty_like(scores).scatter(-1, order, sums.to(scores.dtype))


def hard_sort_matrix(scores, *, descending=True):
    """Exact permutation matrix of the sort (the ``tau -> 0`` limit of NeuralSort).

    Parameters
    ----------
    scores : torch.Tensor, shape (..., n)
    descending : bool, default True

    Returns
    -------
    torch.Tensor, shape (..., n, n)
        0/1 matrix with ``P @ scores`` equal to ``torch.sort(scores)``.

    Examples
    --------
    >>> import torch
    >>> hard_sort_matrix(torch.tensor([0.2, 0.9, 0.5]), descending=False).int()
    tensor([[1, 0, 0],
            [0, 0, 1],
            [0, 1, 0]], dtype=torch.int32)
    """
    _check_scores(scores)
    order = torch.argsort(scores, dim=-1, descending=descending, stable=True)
    return torch.nn.functional.one_hot(order, scores.shape[-1]).to(scores.dtype)


def soft_sort(scores, tau=1.0, *, descending=False):
    """Relaxed sort ``P_hat @ scores`` along the last dimension.

    Parameters
    ----------
    scores : torch.Tensor, shape (..., n)
    tau : float, default 1.0
        NeuralSort temperature.
    descending : bool, default False
        Ascending by default (the order the spacing estimator expects).

    Returns
    -------
    torch.Tensor, shape (..., n)
        Monotone in the last dimension, differentiable in ``scores``.

    Examples
    --------
    >>> import torch
    >>> soft_sort(torch.tensor([0.2, 0.9, 0.5]), tau=1e-3)
    tensor([0.2000, 0.5000, 0.9000])
    """
    p = neural_sort_matrix(scores, tau, descending=descending)
    return (p @ scores.unsqueeze(-1)).squeeze(-1)
