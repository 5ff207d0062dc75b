"""The authors' per-batch metrics, measured against the full-set PCE test (paper 002, chapter 1).

Paper 002's code computes every validation and test metric on batches of 512
rows and averages the batches (:func:`calibtut.metrics.batch_pce`). PCE is
not linear in the sample: a batch's PCE is larger on average than that of the
whole set, so a perfectly calibrated model's per-batch PCE grows with the
number of batches (and jumps when the last batch is small). The paper's
Section 4 test simulates the null distribution at the full test size. Read
together, the per-batch statistic is compared with a full-set null, and a
calibrated model is rejected more often than the level says.

* :func:`per_batch_reading`: for each test size, the mean full-set and
  per-batch PCE of calibrated PITs, and how often the authors' reading rejects
  a calibrated model.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from calibtut._validation import check_int, check_real, check_rng
from calibtut.metrics import pce_null_distribution

__all__ = ["per_batch_reading"]


def per_batch_reading(sizes, batch_size=512, n_sim=2000, level=0.01, seed=0):
    """How a calibrated model fares when its per-batch PCE is tested against the full-set null.

    For each test size ``n``, ``n_sim`` calibrated (uniform) PIT samples give
    the null distribution of the full-set PCE and, independently, that of the
    per-batch PCE (:func:`~calibtut.metrics.pce_null_distribution` with and
    without ``batch_size``). A calibrated model's per-batch statistic is a
    draw of the second; the authors' reading rejects it when it exceeds the
    ``1 - level`` quantile of the first.

    Parameters
    ----------
    sizes : sequence of int
        Test-set sizes (each at least 2).
    batch_size : int, default 512
        Rows per batch (the authors' loaders).
    n_sim : int, default 2000
        Null draws per size and reading.
    level : float, default 0.01
        Significance level in (0, 1).
    seed : int, default 0
        Seed of the draws.

    Returns
    -------
    pandas.DataFrame
        One row per size: ``n``, ``batches``, ``pce_full`` and ``pce_batch``
        (mean PCE of calibrated PITs, full set and per batch) and
        ``rejected`` (share of calibrated models rejected at ``level`` by the
        per-batch statistic against the full-set null; ``level`` when the
        reading is consistent, which it is for ``n <= batch_size``).

    Examples
    --------
    >>> t = per_batch_reading([400, 2064], n_sim=400, seed=0)
    >>> t["batches"].tolist(), bool(t["rejected"].iloc[0] < 0.05), bool(t["rejected"].iloc[1] > 0.9)
    ([1, 5], True, True)
    """
    if isinstance(sizes, (str, bytes)) or not hasattr(sizes, "__iter__"):
        raise TypeError(f"sizes must be a sequence of int, got {sizes!r}")
    sizes = [check_int(n, "sizes", minimum=2) for n in sizes]
    if not sizes:
        raise ValueError("sizes must not be empty")
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    n_sim = check_int(n_sim, "n_sim", minimum=10)
    level = check_real(level, "level", low=0, high=1, low_open=True, high_open=True)
    rng = check_rng(seed)
    rows = []
    for n in sizes:
        full = pce_null_distribution(n, n_sim=n_sim, seed=rng)
        batch = pce_null_distribution(n, n_sim=n_sim, seed=rng, batch_size=batch_size)
        threshold = np.quantile(full, 1 - level)
        rows.append({"n": n, "batches": -(-n // batch_size), "pce_full": float(full.mean()),
                     "pce_batch": float(batch.mean()), "rejected": float(np.mean(batch > threshold))})
    return pd.DataFrame(rows)
