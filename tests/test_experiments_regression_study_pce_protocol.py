"""The per-batch PCE reading of paper 002's code (the per-batch tables of calibtut.experiments.regression_study.tables)."""

import numpy as np
import pandas as pd
import pytest

from calibtut.experiments.regression_study import per_batch_reading
from calibtut.metrics import batch_pce, pce


def test_one_batch_is_the_full_set_and_the_reading_is_consistent():
    t = per_batch_reading([300, 512], n_sim=3000, level=0.05, seed=1).set_index("n")
    assert (t["batches"] == 1).all()
    # the same statistic under two independent null draws: means agree within their sampling error
    assert np.allclose(t["pce_full"], t["pce_batch"], rtol=0.03)
    # rejection at the level, inside a 4-sigma binomial band over 3000 draws
    band = 4 * np.sqrt(0.05 * 0.95 / 3000)
    assert (abs(t["rejected"] - 0.05) < band + 1 / 3000).all(), t


def test_many_batches_raise_a_calibrated_models_pce_and_its_rejection():
    t = per_batch_reading([2064, 4574], n_sim=800, seed=0).set_index("n")
    assert (t["pce_batch"] > 2 * t["pce_full"]).all()
    assert (t["rejected"] > 0.5).all(), t
    # the mean per-batch PCE is the mean of batch_pce over calibrated draws
    rng = np.random.default_rng(3)
    draws = [batch_pce(rng.random(2064)) for _ in range(300)]
    assert np.mean(draws) == pytest.approx(t.loc[2064, "pce_batch"], rel=0.08)
    assert t.loc[2064, "pce_full"] == pytest.approx(np.mean([pce(rng.random(2064)) for _ in range(300)]), rel=0.08)


def test_per_batch_reading_refuses_bad_arguments():
    with pytest.raises(TypeError, match="sizes"):
        per_batch_reading(100)
    with pytest.raises(ValueError, match="sizes must not be empty"):
        per_batch_reading([])
    with pytest.raises(ValueError, match="sizes"):
        per_batch_reading([1])
    with pytest.raises(ValueError, match="level"):
        per_batch_reading([100], level=1.0)
    with pytest.raises(ValueError, match="n_sim"):
        per_batch_reading([100], n_sim=5)


def _calibrated_rows(sizes, runs=2, seed=0):
    """Rows of a perfectly calibrated MIX-NLL: PCE and per-batch PCE of uniform PITs."""
    rng = np.random.default_rng(seed)
    rows = []
    for i, n in enumerate(sizes):
        for run in range(runs):
            u = rng.random(n)
            rows.append({"dataset": f"d{i}", "run": run, "method": "MIX-NLL", "train_fraction": 0.8,
                         "n_test": n, "test_pce": pce(u), "test_pce_batch": batch_pce(u)})
    return pd.DataFrame(rows)


def test_per_batch_test_table_rejects_a_calibrated_model_only_in_the_mixed_reading():
    from calibtut.experiments.regression_study import per_batch_test_table

    sizes = [100, 300, 900, 2064, 3000, 5000]
    table = per_batch_test_table(_calibrated_rows(sizes), n_sim=1000, seed=0).set_index("dataset")
    assert table["batches"].tolist() == [1, 1, 2, 5, 6, 10]
    # the consistent readings reject no calibrated model (Holm at 0.01 over six)
    assert not table["reject (full set)"].any() and not table["reject (per batch, per-batch null)"].any()
    # the mixed one rejects it wherever the set spans several batches: a calibrated model's
    # mean per-batch PCE is 2-4 times its full-set PCE at these sizes
    mixed = table["reject (per batch, full-set null)"]
    assert not mixed[table["batches"] == 1].any() and mixed[table["batches"] >= 5].all(), table
    # one batch: the per-batch statistic is the full-set one
    one = table[table["batches"] == 1]
    assert np.allclose(one["pce"], one["pce_batch"])


def test_per_batch_test_table_refuses_rows_without_the_per_batch_pce():
    from calibtut.experiments.regression_study import per_batch_test_table

    rows = _calibrated_rows([100, 900])
    with pytest.raises(ValueError, match="test_pce_batch"):
        per_batch_test_table(rows.drop(columns="test_pce_batch"))
    with pytest.raises(ValueError, match="per-batch PCE"):
        per_batch_test_table(rows.assign(test_pce_batch=np.nan))
    with pytest.raises(ValueError, match="MIX-NLL"):
        per_batch_test_table(rows.assign(method="MIX-CRPS"))
    with pytest.raises(ValueError, match="n_sim"):
        per_batch_test_table(rows, n_sim=5)
