"""Tests for calibtut.metrics.hypothesis_tests (Monte Carlo calibration tests)."""

import numpy as np
import pytest
from scipy import stats

from calibtut.metrics import ece_test, expected_calibration_error, pce, pce_null_distribution, pce_test


def test_null_distribution_is_seeded_and_matches_direct_simulation():
    a = pce_null_distribution(50, n_sim=300, seed=7)
    b = pce_null_distribution(50, n_sim=300, seed=7)
    np.testing.assert_array_equal(a, b)
    # the first draws are the PCE of the first rows of the same uniform matrix
    u = np.random.default_rng(7).random((300, 50))
    assert a[0] == pytest.approx(pce(u[0]), rel=1e-12)
    assert a[299] == pytest.approx(pce(u[299]), rel=1e-12)


def test_null_distribution_with_grid_levels_and_runs():
    u = np.random.default_rng(3).random((20, 40))
    null = pce_null_distribution(40, n_sim=20, levels=10, p=2, seed=3)
    assert null[5] == pytest.approx(pce(u[5], p=2, levels=10), rel=1e-12)
    # two runs of sizes 30 and 40: average of the two PCEs, drawn run after run
    rng = np.random.default_rng(4)
    first, second = rng.random((10, 30)), rng.random((10, 40))
    null = pce_null_distribution([30, 40], n_sim=10, seed=4)
    assert null[2] == pytest.approx((pce(first[2]) + pce(second[2])) / 2, rel=1e-12)


def test_null_mean_matches_brownian_bridge_limit():
    # n^(1/2) PCE_1 -> int |B(a)| da, mean sqrt(pi/2) / 4 ~ .3133 (B a Brownian bridge)
    null = pce_null_distribution(2000, n_sim=400, seed=0)
    assert np.sqrt(2000) * null.mean() == pytest.approx(np.sqrt(np.pi / 2) / 4, rel=0.05)


def test_pce_test_pvalues_uniform_under_null():
    # under calibration the Monte Carlo p-value is (super-)uniform: P(p <= .1) <= .1;
    # with 100 tests the count of p <= .1 is Binomial(100, .1): below its .999 quantile
    rng = np.random.default_rng(1)
    pvals = [pce_test(rng.random(40), n_sim=99, seed=rng).pvalue for _ in range(100)]
    assert np.sum(np.array(pvals) <= 0.1) <= stats.binom.ppf(0.999, 100, 0.1)
    assert np.sum(np.array(pvals) > 0.5) >= stats.binom.ppf(0.001, 100, 0.5)


def test_pce_test_rejects_miscalibration_and_averages_runs():
    rng = np.random.default_rng(2)
    res = pce_test(rng.random(300) ** 1.5, n_sim=999, seed=0)
    assert res.pvalue == 1 / 1000  # larger than every simulated value
    runs = [rng.random(100), rng.random(150)]
    res = pce_test(runs, n_sim=50, seed=0)
    assert res.statistic == pytest.approx((pce(runs[0]) + pce(runs[1])) / 2)
    assert res.null_distribution.shape == (50,)


def test_ece_test_null_matches_direct_resampling():
    rng = np.random.default_rng(5)
    conf = rng.uniform(0.3, 1.0, 200)
    hit = rng.random(200) < conf
    res = ece_test(conf, hit, n_bins=10, n_sim=50, seed=11)
    draws = np.random.default_rng(11).random((50, 200)) < conf
    assert res.null_distribution[7] == pytest.approx(expected_calibration_error(conf, draws[7], n_bins=10), abs=1e-12)
    assert res.statistic == pytest.approx(expected_calibration_error(conf, hit, n_bins=10))


def test_ece_test_pvalues_uniform_when_calibrated_and_small_when_not():
    # calibrated: count of p <= .1 among 100 tests is Binomial(100, .1) at most; stay below its .999 quantile
    rng = np.random.default_rng(6)
    pvals = []
    for _ in range(100):
        conf = rng.uniform(0.5, 1.0, 200)
        pvals.append(ece_test(conf, rng.random(200) < conf, n_sim=99, seed=rng).pvalue)
    assert np.sum(np.array(pvals) <= 0.1) <= stats.binom.ppf(0.999, 100, 0.1)
    conf = rng.uniform(0.5, 1.0, 2000)
    over = ece_test(conf, rng.random(2000) < conf - 0.1, n_sim=199, seed=0)
    assert over.pvalue == 1 / 200  # 10 points of over-confidence on 2000 samples: beyond every draw


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: pce_null_distribution(0), "n must"),
        (lambda: pce_null_distribution([]), "n must not"),
        (lambda: pce_test([0.2, 1.2]), "pit"),
        (lambda: pce_test([0.2, 0.5], n_sim=0), "n_sim"),
        (lambda: ece_test([0.2, 0.5], [0, 3]), "correct"),
    ],
)
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_bad_seed():
    with pytest.raises(TypeError, match="seed"):
        pce_null_distribution(10, n_sim=5, seed="zero")


# --- the per-batch PCE of paper 002's code --------------------------------------------------


def test_batch_pce_by_hand():
    from calibtut.metrics.hypothesis_tests import batch_pce

    u = np.random.default_rng(11).random(1100)
    # batches of 512, 512 and 76 rows, averaged unweighted
    want = np.mean([pce(u[:512]), pce(u[512:1024]), pce(u[1024:])])
    assert batch_pce(u) == pytest.approx(want, rel=1e-12)
    assert batch_pce(u, batch_size=2000) == pytest.approx(pce(u), rel=1e-12)
    runs = [u[:600], u[600:]]
    assert batch_pce(runs, batch_size=300) == pytest.approx(
        np.mean([np.mean([pce(u[:300]), pce(u[300:600])]), np.mean([pce(u[600:900]), pce(u[900:])])]))
    with pytest.raises(ValueError, match="batch_size"):
        batch_pce(u, batch_size=0)


def test_batch_null_matches_direct_simulation_and_the_notes_figures():
    null = pce_null_distribution(700, n_sim=50, seed=5, batch_size=512)
    u = np.random.default_rng(5).random((50, 700))
    assert null[3] == pytest.approx((pce(u[3, :512]) + pce(u[3, 512:])) / 2, rel=1e-12)
    # a calibrated model's expected PCE, full set against batches of 512 (the reading notes:
    # 819 rows 0.0110 vs 0.0159; 2,064 rows, last batch of 16, 0.0068 vs 0.0266)
    for n, full, batched in ((819, 0.0110, 0.0159), (2064, 0.0068, 0.0266)):
        assert pce_null_distribution(n, n_sim=3000, seed=1).mean() == pytest.approx(full, rel=0.05)
        assert pce_null_distribution(n, n_sim=3000, seed=1, batch_size=512).mean() == pytest.approx(batched, rel=0.05)


def test_per_batch_statistic_against_the_full_set_null_rejects_a_calibrated_model():
    from calibtut.metrics.hypothesis_tests import batch_pce

    u = np.random.default_rng(12).random(2064)  # calibrated PITs
    matched = pce_test(u, n_sim=2000, seed=0, batch_size=512)
    assert matched.statistic == pytest.approx(batch_pce(u)) and matched.pvalue > 0.05
    # the authors' reading: per-batch statistic, full-set null (p = 0, as "most datasets")
    null = pce_null_distribution(2064, n_sim=2000, seed=0)
    assert np.mean(null > batch_pce(u)) == 0.0
    assert pce_test(u, n_sim=2000, seed=0).pvalue > 0.05
