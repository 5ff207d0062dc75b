"""Exact k-nearest-neighbour search by Euclidean distance: a float32 search, then float64 (torch, CPU or GPU).

**What "exact" means here.** The neighbours of query ``q`` are ranked by the
key ``(D_j, j)``: ``D_j`` is the squared distance to reference ``r_j`` computed
in float64 from the differences, ``sum_l (q_l - r_jl)**2`` (no cancellation;
for float32 input every difference and square is exact, so only the final sum
rounds), and equal ``D_j`` are ordered by the smaller reference index ``j``,
as a stable sort would. The result is the first ``k`` in that order: ties at
the ``k``-th distance are resolved by index too.

**How.** A fast float32 search (``faiss.IndexFlatL2`` when faiss-cpu is
installed, the optional ``knn`` extra; otherwise blocked torch matrix
products) proposes ``K >= k`` candidates per query; the candidates are then
re-measured in float64 and sorted by the key above. Before the search, both
sets are centred on the reference mean and scaled by a power of two, so that
data far from the origin (say ``100 + N(0, I)``) loses no precision to its
offset and nothing overflows.

**Why the candidates are enough.** Write ``a``, ``b_j`` for the centred,
scaled float32 vectors and ``s_j`` for the search's float32 value of
``|a - b_j|**2`` (up to a constant per query). Three roundings separate
``s_j`` from the scaled ``D_j``: the float32 rounding of the centred data
(at most ``2.05 u (|a| + |b_j|)**2`` on the squared distance, ``u`` the unit
roundoff), the float32 search (a dot product of length ``d`` in any summation
order, FMA or not, plus two operations: ``gamma_{d+2} (|a| + |b_j|)**2`` with
``gamma_n = n u / (1 - n u)``), and the float64 sum (``1.01 gamma_{d+2}(2**-53)``
of the same). Their total is at most ``E = c (|a| + R)**2`` with ``R`` the
largest ``|b_j|`` and ``c`` the sum of the three coefficients (the norms are
float32 values raised by ``gamma_{d+2}``, so that they bound the exact ones). Let ``t`` be
the ``k``-th smallest ``s_j``. Any of the ``k`` true neighbours has
``D`` at most the ``k``-th smallest ``D``, which is at most the largest
``D`` among the ``k`` smallest ``s``, so its own ``s`` is at most ``t + 2E``.
Every point with ``s_j <= t + 2E`` is a candidate as soon as the largest
returned ``s`` exceeds ``t + 2E`` (or ``K = n``); queries for which it does
not are searched again with ``K`` doubled. Ties at the ``k``-th distance
(duplicated rows, integer grids) are where the doubling is used; on
continuous data the first ``K = k + k // 2 + 8`` is enough for nearly every
query. Where torch multiplies float32 matrices in reduced precision
(``torch.set_float32_matmul_precision``: TF32 or bfloat16), ``u`` is theirs.

Only the candidates with ``s_j <= t + 2E`` are re-measured in float64: on
continuous data, little more than ``k``.

**Memory.** The queries are taken ``block_size`` at a time (fewer when ``K``
grows); the torch search takes the references ``block_size`` at a time and
merges per-block top-``K`` lists; the float64 re-ranking works on small
blocks. Beyond the inputs, the search holds float32 copies of the centred
queries and references (with faiss, the references' copy is its index, filled
about ``block_size**2`` numbers at a time).

:func:`pairwise_distances` is the full float64 distance matrix of two sets
(``torch.cdist``), which the localizers take.
"""

from __future__ import annotations

import functools
import math

import torch

from calibtut._validation import as_float_array, check_bool, check_int

__all__ = ["nearest_neighbors", "pairwise_distances"]

# the unit roundoff of a float32 matrix product at each torch.get_float32_matmul_precision()
_MATMUL_UNIT_ROUNDOFF = {"highest": 2.0**-24, "high": 2.0**-11, "medium": 2.0**-8}


def _as_matrix(x, name):
    """``x`` checked, with its columns' minima and maxima (they also reveal NaN and infinity)."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.ndim != 2 or x.shape[0] == 0:
        raise ValueError(f"{name} must have shape (n, dim) with n >= 1, got {tuple(x.shape)}")
    if not torch.is_floating_point(x):
        raise TypeError(f"{name} must be a floating-point tensor, got {x.dtype}")
    low, high = x.detach().amin(dim=0), x.detach().amax(dim=0)  # amin and amax propagate NaN
    if not (torch.isfinite(low).all() and torch.isfinite(high).all()):
        raise ValueError(f"{name} contains NaN or infinite values")
    return x, low, high


@functools.cache
def _load_faiss():
    """The faiss module when faiss-cpu is installed (the optional ``knn`` extra), else None."""
    try:
        import faiss
    except ImportError:
        return None
    return faiss


def _gamma(n, unit):
    """Higham's ``gamma_n = n u / (1 - n u)``: the error factor of ``n`` roundings; inf when ``n u >= 1``."""
    return n * unit / (1 - n * unit) if n * unit < 1 else math.inf


def _error_coefficient(dim, unit):
    """``c`` of the module docstring: ``|s_j - D_j| <= c (|a| + |b_j|)**2`` in scaled units."""
    return 2.05 * unit + _gamma(dim + 2, unit) + 1.01 * _gamma(dim + 2, 2.0**-53)


def _scale(centre, *ranges):
    """A power of two that brings every centred coordinate into [-1, 1] (exact: it only moves exponents)."""
    spread = max(float(torch.maximum(high - centre, centre - low).amax()) for low, high in ranges)
    return 1.0 if spread == 0 else math.ldexp(1.0, -math.frexp(spread)[1])


def _centred(x, centre, scale):
    """float32 ``(x - centre) * scale`` rounded once, and upper bounds of its rows' norms."""
    block = (x.detach().to(centre.dtype) - centre).mul_(scale).to(torch.float32)
    # a float32 norm is within gamma_{dim+2} of the exact one, relatively
    return block, torch.linalg.vector_norm(block, dim=1).double() * (1 + _gamma(x.shape[1] + 2, 2.0**-24))


def _torch_search(reference, centre, scale, block_size):
    """A float32 search by blocked matrix products: ``(search, R)``, ``search(a, K) -> (values, indices)``.

    ``values`` are ``|b_j|**2 - 2 a.b_j`` (squared distances less ``|a|**2``), ascending;
    ``R`` bounds the norms of the centred references ``b_j``.
    """
    b, b_norm = _centred(reference, centre, scale)
    b_sq = (b * b).sum(dim=1)

    def search_rows(a, kk, width):
        vals, idx, kept = [], [], 0
        for start in range(0, b.shape[0], width):
            block = slice(start, start + width)
            s = torch.addmm(b_sq[block], a, b[block].T, alpha=-2)
            v, i = torch.topk(s, min(kk, s.shape[1]), dim=1, largest=False, sorted=False)
            vals.append(v)
            idx.append(i + start)
            kept += v.shape[1]
            last = start + width >= b.shape[0]
            if kept >= width or last:  # merge into one top-K
                v, i = torch.cat(vals, dim=1), torch.cat(idx, dim=1)
                v, keep = torch.topk(v, min(kk, v.shape[1]), dim=1, largest=False, sorted=last)
                vals, idx, kept = [v], [i.gather(1, keep)], v.shape[1]
        return vals[0], idx[0]

    def search(a, kk):
        # torch's CPU top-k is about twice as fast when K <= columns / 64 (measured); rows
        # shrink as the reference blocks widen, so that a block holds about block_size**2 numbers
        width = max(block_size, 64 * kk)
        step = max(1, block_size**2 // width)
        found = [search_rows(a[start:start + step], kk, width) for start in range(0, a.shape[0], step)]
        return torch.cat([v for v, _ in found]), torch.cat([i for _, i in found])

    return search, float(b_norm.max())


def _faiss_search(faiss, reference, centre, scale, block_size):
    """``(search, R)`` as :func:`_torch_search`, with ``faiss.IndexFlatL2`` on torch's thread count.

    ``values`` are the squared distances; the index is filled about ``block_size**2`` numbers at a time.
    """
    index, norm = faiss.IndexFlatL2(reference.shape[1]), 0.0
    step = max(block_size, block_size**2 // reference.shape[1])  # about block_size**2 numbers
    for start in range(0, reference.shape[0], step):
        b, b_norm = _centred(reference[start:start + step], centre, scale)
        index.add(b.numpy())
        norm = max(norm, float(b_norm.max()))

    def search(a, kk):
        faiss.omp_set_num_threads(torch.get_num_threads())
        values, indices = index.search(a.numpy(), kk)
        return torch.from_numpy(values), torch.from_numpy(indices)

    return search, norm


def _candidates(search, a, bound, rows, kk, k, n, exclude_self, block_size):
    """Yield ``(rows, indices)``: candidate lists that provably hold each row's ``k`` nearest.

    Each list keeps, in ascending search order, the candidates within ``2 * bound`` of
    the row's ``k``-th search value (the module docstring's ``t + 2E``).
    """
    step = max(1, min(block_size, block_size**2 // kk))  # rows * K and rows * block_size bounded
    for start in range(0, rows.shape[0], step):
        part = rows[start:start + step]
        values, indices = search(a[part], kk)
        ranked = values.masked_fill(indices == part[:, None], math.inf) if exclude_self else values
        limit = ranked.kthvalue(k, dim=1).values.double() + 2 * bound[part]
        enough = values[:, -1].double() > limit
        if kk == n:
            enough[:] = True
        if enough.any():
            width = int((values[enough].double() <= limit[enough, None]).sum(dim=1).max())
            yield part[enough], indices[enough, :width]
        if not enough.all():
            yield from _candidates(search, a, bound, part[~enough], min(n, 2 * kk), k, n, exclude_self, block_size)


def _rerank(queries, reference, rows, indices, k, exclude_self, elements):
    """The first ``k`` candidates of each row by (float64 distance, index): lists of distances and indices.

    Rows are taken so that a float64 temporary holds about ``elements`` numbers.
    """
    step = max(1, elements // max(1, indices.shape[1] * queries.shape[1]))
    out_d, out_i = [], []
    for start in range(0, rows.shape[0], step):
        part, cand = rows[start:start + step], indices[start:start + step].to(queries.device)
        diff = torch.sub(queries[part].double()[:, None, :], reference[cand])  # exact for float32 input
        sq = (diff * diff).sum(dim=2)
        if exclude_self:
            sq = sq.masked_fill(cand == part[:, None], math.inf)
        by_index = torch.sort(cand, dim=1, stable=True)
        sq, cand = sq.gather(1, by_index.indices), by_index.values
        by_distance = torch.sort(sq, dim=1, stable=True)
        out_d.append(by_distance.values[:, :k].sqrt())
        out_i.append(cand.gather(1, by_distance.indices[:, :k]))
    return out_d, out_i


def nearest_neighbors(queries, reference, k, *, block_size=2048, exclude_self=False):
    """The ``k`` nearest reference vectors of every query, exactly, by L2 distance.

    Candidates come from a float32 search (faiss-cpu's ``IndexFlatL2`` when
    installed and the tensors are on the CPU, blocked torch matrix products
    otherwise) with a margin derived from a rounding-error bound, and are
    ranked in float64; the module docstring gives the argument that makes the
    result exact. Written here because neither library is exact on float32
    data: scikit-learn's brute force ranks by ``|a|^2 + |b|^2 - 2 a.b`` and
    faiss in float32, and neither orders ties by index.

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
        Euclidean distances, non-decreasing along each row, computed in
        float64 and returned in the inputs' dtype (two distances that differ
        in float64 may round to the same value).
    indices : torch.Tensor of int64, shape (m, k)
        Reference indices, ordered by float64 distance and then by index.

    Examples
    --------
    >>> import torch
    >>> ref = torch.tensor([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0], [0.0, 2.0]])
    >>> d, i = nearest_neighbors(torch.tensor([[0.9, 0.0]]), ref, 2)
    >>> d, i
    (tensor([[0.1000, 0.9000]]), tensor([[1, 0]]))
    """
    queries, q_low, q_high = _as_matrix(queries, "queries")
    reference, r_low, r_high = _as_matrix(reference, "reference")
    if queries.shape[1] != reference.shape[1]:
        raise ValueError(f"queries have dimension {queries.shape[1]}, reference has {reference.shape[1]}")
    if queries.dtype != reference.dtype or queries.device != reference.device:
        raise ValueError(
            f"queries ({queries.dtype}, {queries.device}) and reference ({reference.dtype}, "
            f"{reference.device}) must share dtype and device"
        )
    check_bool(exclude_self, "exclude_self")
    if exclude_self and queries.shape != reference.shape:
        raise ValueError("exclude_self=True needs queries to be the reference itself (same shape)")
    n, dim = reference.shape
    k = check_int(k, "k", minimum=1, maximum=n - 1 if exclude_self else n)
    block_size = check_int(block_size, "block_size", minimum=1)
    faiss = _load_faiss() if reference.device.type == "cpu" else None
    centre = reference.detach().mean(dim=0, dtype=torch.promote_types(reference.dtype, torch.float32))
    scale = _scale(centre, (q_low, q_high), (r_low, r_high))
    a, a_norm = _centred(queries, centre, scale)
    if faiss is None:
        search, norm = _torch_search(reference, centre, scale, block_size)
        unit = _MATMUL_UNIT_ROUNDOFF[torch.get_float32_matmul_precision()]
    else:
        search, norm = _faiss_search(faiss, reference, centre, scale, block_size)
        unit = 2.0**-24
    bound = _error_coefficient(dim, unit) * (a_norm + norm) ** 2
    kk = min(n, k + int(exclude_self) + k // 2 + 8)
    rows = torch.arange(queries.shape[0], device=queries.device)
    groups = list(_candidates(search, a, bound, rows, kk, k, n, exclude_self, block_size))
    # float64 temporaries of a few hundred KiB stay in a CPU's cache; a GPU wants large blocks
    elements = 2**16 if queries.device.type == "cpu" else block_size**2
    out_rows, out_d, out_i = [], [], []
    for part, cand in groups:
        d, i = _rerank(queries, reference, part, cand, k, exclude_self, elements)
        out_rows.append(part)
        out_d += d
        out_i += i
    order = torch.argsort(torch.cat(out_rows))
    return torch.cat(out_d)[order].to(queries.dtype), torch.cat(out_i)[order]


def pairwise_distances(a, b):
    """Euclidean distances of every row of ``a`` to every row of ``b``, in float64 (``torch.cdist``).

    The distance matrix the localizers take (paper 001's ``exp(-d / eta)``
    kernels and softmax weights), on CPU.

    Parameters
    ----------
    a : array_like of shape (n, d)
    b : array_like of shape (m, d)

    Returns
    -------
    torch.Tensor of shape (n, m), float64

    Examples
    --------
    >>> pairwise_distances([[0.0, 0.0], [3.0, 4.0]], [[0.0, 0.0]]).tolist()
    [[0.0], [5.0]]
    """
    a = as_float_array(a, "a", ndim=2)
    b = as_float_array(b, "b", ndim=2)
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"a and b must have the same number of columns, got {a.shape[1]} and {b.shape[1]}")
    return torch.cdist(torch.as_tensor(a, dtype=torch.float64), torch.as_tensor(b, dtype=torch.float64))
