"""The per-batch PCE reading of paper 002's code (calibtut.experiments.regression_study.pce_protocol)."""

import numpy as np
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
