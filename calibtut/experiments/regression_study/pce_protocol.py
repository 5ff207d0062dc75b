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
* :func:`per_batch_test_table`: the per-dataset PCE test of our own MIX-NLL
  models read three ways: full-set statistic and null (ours, the paper's
  Section 4), per-batch statistic against the full-set null (the paper's
  statistic as its code computes it), and per-batch against a per-batch null;
  :func:`published_per_batch_test` reads it as chapter 6's full profile
  publishes it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from calibtut._validation import check_frame, check_int, check_real, check_rng
from calibtut.experiments.regression_study._common import published_table
from calibtut.models.study_evaluation import AUTHORS_BATCH
from calibtut.metrics import pce_null_distribution
from calibtut.stats import holm

__all__ = ["per_batch_reading", "per_batch_test_table", "published_per_batch_test"]

#: The three readings of :func:`per_batch_test_table`: (statistic, null) columns.
_READINGS = {"full set": ("pce", None), "per batch, full-set null": ("pce_batch", None),
             "per batch, per-batch null": ("pce_batch", AUTHORS_BATCH)}


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


def per_batch_test_table(rows, *, n_sim=10_000, alpha=0.01, seed=0):
    """Our vanilla MIX-NLL's per-dataset PCE test, read with the full-set and the authors' per-batch PCE.

    For each dataset the statistic is a run mean of the test PCE: of the
    whole test set (``test_pce``), or averaged over batches of 512 rows as
    the authors' code reports it (``test_pce_batch``). Its null is the same
    mean for uniform PITs of the runs' test sizes
    (:func:`~calibtut.metrics.pce_null_distribution`), simulated on the whole
    set or per batch. Three readings: the full-set statistic against the
    full-set null (the paper's Section 4, and ours); the per-batch statistic
    against the full-set null (what the paper's statistic, as its code
    computes it, meets in its test); the per-batch statistic against the
    per-batch null (a consistent per-batch test). p-values are
    ``(1 + #null >= statistic) / (1 + n_sim)``, Holm-corrected across
    datasets.

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of :func:`~calibtut.experiments.regression_study.run_study_task`
        with ``test_pce_batch``: the vanilla MIX-NLL trained on 80% is read.
    n_sim : int, default 10000
        Null draws per dataset and null, >= 10.
    alpha : float, default 0.01
        Family-wise level of Holm's correction, in (0, 1).
    seed : int, default 0
        Dataset ``i`` (sorted by name) draws from ``[seed, i]``; >= 0.

    Returns
    -------
    pandas.DataFrame
        One row per dataset, sorted by name: ``dataset``, ``n_test`` (of the
        first run), ``batches``, ``pce`` and ``pce_batch`` (run means), and for
        each reading (``full set``, ``per batch, full-set null``, ``per batch,
        per-batch null``) ``p (<reading>)`` and ``reject (<reading>)``.

    Examples
    --------
    >>> rows = pd.DataFrame({"dataset": ["a", "a", "b", "b"], "run": [0, 1, 0, 1], "method": "MIX-NLL",
    ...                      "train_fraction": 0.8, "n_test": [2064, 2064, 100, 100],
    ...                      "test_pce": [0.007, 0.007, 0.2, 0.2], "test_pce_batch": [0.027, 0.027, 0.2, 0.2]})
    >>> t = per_batch_test_table(rows, n_sim=500)
    >>> t.filter(like="reject").values.tolist()
    [[False, True, False], [True, True, True]]
    """
    check_frame(rows, "rows", ["dataset", "run", "method", "train_fraction", "n_test", "test_pce", "test_pce_batch"])
    n_sim = check_int(n_sim, "n_sim", minimum=10)
    alpha = check_real(alpha, "alpha", low=0, high=1, low_open=True, high_open=True)
    seed = check_int(seed, "seed", minimum=0)
    vanilla = rows[(rows["method"] == "MIX-NLL") & (rows["train_fraction"] == 0.8)]
    if vanilla.empty:
        raise ValueError("rows hold no vanilla MIX-NLL model trained on 80% of the data")
    if vanilla["test_pce_batch"].isna().any():
        raise ValueError("rows lack the per-batch PCE (test_pce_batch) of some MIX-NLL model")
    records = []
    for i, (name, group) in enumerate(vanilla.sort_values("run").groupby("dataset", sort=True)):
        sizes = [int(n) for n in group["n_test"]]
        record = {"dataset": name, "n_test": sizes[0], "batches": -(-sizes[0] // AUTHORS_BATCH),
                  "pce": float(group["test_pce"].mean()), "pce_batch": float(group["test_pce_batch"].mean())}
        rng = np.random.default_rng([seed, i])
        nulls = {batch: pce_null_distribution(sizes, n_sim=n_sim, seed=rng, batch_size=batch)
                 for batch in (None, AUTHORS_BATCH)}
        for reading, (statistic, batch) in _READINGS.items():
            null = nulls[batch]
            record[f"p ({reading})"] = float((1 + np.sum(null >= record[statistic])) / (1 + n_sim))
        records.append(record)
    table = pd.DataFrame(records)
    for reading in _READINGS:
        table[f"reject ({reading})"] = holm(table[f"p ({reading})"].to_numpy(), alpha=alpha)[0]
    return table


def published_per_batch_test(*, seed=0, root=None):
    """The full run's :func:`per_batch_test_table` as chapter 6 published it, if drawn with ``seed``; else None.

    Chapter 6's full profile retrains the vanilla MIX-NLL of every offline
    dataset and run (the per-batch PCE is not in the stored study) and
    publishes the table; chapter 1 reads it.

    Parameters
    ----------
    seed : int, default 0
        Seed the published table must have been drawn with, >= 0.
    root : str or path-like, optional
        Repository root; found from the working directory by default.

    Returns
    -------
    pandas.DataFrame or None

    Examples
    --------
    >>> import tempfile
    >>> published_per_batch_test(root=tempfile.mkdtemp()) is None
    True
    """
    return published_table("per_batch_test", seed, root)
