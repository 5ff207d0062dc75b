"""Exact k-nearest-neighbour search by Euclidean distance, in blocks (torch, CPU or GPU).

The distance matrix of ``m`` queries against ``n`` reference vectors never
exists whole: queries and references are taken in blocks, each block's squared
distances come from one matrix product (``|a|^2 + |b|^2 - 2 a.b``), and a
running top-``k`` is merged across reference blocks. The ``k`` winners are
then re-measured directly (``|a - b|``, no cancellation) and ordered by
(distance, reference index), so equal distances are broken by the smaller
index, as a stable sort would. Which of several points tied at the ``k``-th
distance makes the cut is not specified. Each reference block contributes its
own top-``k`` to the merge, so peak memory is about
``query_block * reference_block`` numbers.
"""

from __future__ import annotations

import torch

from calibtut._validation import check_int

__all__ = ["nearest_neighbors"]


def _as_matrix(x, name):
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.ndim != 2 or x.shape[0] == 0:
        raise ValueError(f"{name} must have shape (n, dim) with n >= 1, got {tuple(x.shape)}")
    if not torch.is_floating_point(x):
        raise TypeError(f"{name} must be a floating-point tensor, got {x.dtype}")
    if not torch.isfinite(x).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    return x


def nearest_neighbors(queries, reference, k, *, block_size=2048, exclude_self=False):
    """The ``k`` nearest reference vectors of every query, exactly, by L2 distance.

    Parameters
    ----------
    queries : torch.Tensor of shape (m, dim)
        Query vectors (floating point, finite).
    reference : torch.Tensor of shape (n, dim)
        Reference vectors (e.g. a training set's exemplar vectors), same
        dtype and device as ``queries``.
    k : int
        Number of neighbours, at least 1 and at most ``n`` (``n - 1`` with
        ``exclude_self``).
    block_size : int, default 2048
        Rows of queries and of references handled at once (memory, not result).
    exclude_self : bool, default False
        ``queries`` is ``reference`` itself: never return a point as its own
        neighbour (query ``i`` is reference ``i``).

    Returns
    -------
    distances : torch.Tensor of shape (m, k)
        Euclidean distances, increasing along each row.
    indices : torch.Tensor of int64, shape (m, k)
        Reference indices; equal distances are ordered by index.

    Examples
    --------
    >>> import torch
    >>> ref = torch.tensor([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0], [0.0, 2.0]])
    >>> d, i = nearest_neighbors(torch.tensor([[0.9, 0.0]]), ref, 2)
    >>> d, i
    (tensor([[0.1000, 0.9000]]), tensor([[1, 0]]))
    """
    queries = _as_matrix(queries, "queries")
    reference = _as_matrix(reference, "reference")
    if queries.shape[1] != reference.shape[1]:
        raise ValueError(f"queries have dimension {queries.shape[1]}, reference has {reference.shape[1]}")
    if queries.dtype != reference.dtype or queries.device != reference.device:
        raise ValueError(
            f"queries ({queries.dtype}, {queries.device}) and reference ({reference.dtype}, "
            f"{reference.device}) must share dtype and device"
        )
    if not isinstance(exclude_self, bool):
        raise TypeError(f"exclude_self must be a bool, got {exclude_self!r}")
    if exclude_self and queries.shape != reference.shape:
        raise ValueError("exclude_self=True needs queries to be the reference itself (same shape)")
    n = reference.shape[0]
    k = check_int(k, "k", minimum=1, maximum=n - 1 if exclude_self else n)
    block_size = check_int(block_size, "block_size", minimum=1)
    ref_sq = (reference * reference).sum(dim=1)
    out_d, out_i = [], []
    for start in range(0, queries.shape[0], block_size):
        q = queries[start:start + block_size]
        q_sq = (q * q).sum(dim=1, keepdim=True)
        best_d = torch.empty((q.shape[0], 0), dtype=q.dtype, device=q.device)
        best_i = torch.empty((q.shape[0], 0), dtype=torch.int64, device=q.device)
        for r_start in range(0, n, block_size):
            r = reference[r_start:r_start + block_size]
            sq = (q_sq + ref_sq[r_start:r_start + block_size][None, :] - 2.0 * q @ r.T).clamp_min_(0)
            if exclude_self and r_start < start + q.shape[0] and start < r_start + r.shape[0]:
                rows = torch.arange(max(start, r_start), min(start + q.shape[0], r_start + r.shape[0]),
                                    device=q.device)
                sq[rows - start, rows - r_start] = float("inf")
            # the block's own top-k first, then merge with the running top-k
            block = torch.topk(sq, min(k, sq.shape[1]), dim=1, largest=False)
            cand_d = torch.cat([best_d, block.values], dim=1)
            cand_i = torch.cat([best_i, block.indices + r_start], dim=1)
            keep = torch.topk(cand_d, min(k, cand_d.shape[1]), dim=1, largest=False).indices
            best_d, best_i = cand_d.gather(1, keep), cand_i.gather(1, keep)
        exact = torch.linalg.vector_norm(q[:, None, :] - reference[best_i], dim=2)
        by_index = torch.sort(best_i, dim=1, stable=True)
        exact, best_i = exact.gather(1, by_index.indices), by_index.values
        by_distance = torch.sort(exact, dim=1, stable=True)
        out_d.append(by_distance.values)
        out_i.append(best_i.gather(1, by_distance.indices))
    return torch.cat(out_d), torch.cat(out_i)
