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
