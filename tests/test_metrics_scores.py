"""Tests for calibtut.metrics.scores against scoringrules, properscoring, sklearn, scipy."""

import numpy as np
import properscoring as ps
import pytest
import scoringrules as sr
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn.metrics import mean_pinball_loss

from calibtut.metrics import crps_gaussian, crps_mixture, crps_quantile, nll_gaussian, nll_mixture, pinball_loss

RTOL = 1e-10  # achieved: <= 1e-13 on these inputs (see the metrics report)


def gaussian_data(seed, n=300):
    rng = np.random.default_rng(seed)
    mean = rng.normal(size=n) * 3
    std = rng.uniform(0.2, 3.0, n)
    y = rng.normal(size=n) * 4
    return y, mean, std


def mixture_data(seed, n=200, k=3):
    rng = np.random.default_rng(seed)
    w = rng.dirichlet(np.ones(k), n)
    m = rng.normal(size=(n, k)) * 2
    s = rng.uniform(0.3, 1.5, (n, k))
    y = rng.normal(size=n) * 2
    return y, w, m, s


def quantile_data(seed, n=200, k=9):
    rng = np.random.default_rng(seed)
    levels = np.sort(rng.uniform(0.02, 0.98, k))
    q = np.sort(rng.normal(size=(n, k)), axis=1) * 2
    y = rng.normal(size=n) * 2
    return y, q, levels


# ---------------------------------------------------------------- oracles


@pytest.mark.parametrize("seed", range(3))
def test_crps_gaussian_matches_properscoring_and_scoringrules(seed):
    y, mean, std = gaussian_data(seed)
    ours = crps_gaussian(y, mean, std, reduction="none")
    np.testing.assert_allclose(ours, ps.crps_gaussian(y, mean, std), rtol=RTOL)
    np.testing.assert_allclose(ours, sr.crps_normal(y, mean, std), rtol=RTOL)


@pytest.mark.parametrize("seed", range(3))
def test_crps_mixture_matches_scoringrules(seed):
    y, w, m, s = mixture_data(seed)
    np.testing.assert_allclose(
        crps_mixture(y, w, m, s, reduction="none"), sr.crps_mixnorm(y, m, s, w, m_axis=-1), rtol=RTOL
    )


@pytest.mark.parametrize("seed", range(3))
def test_crps_quantile_matches_scoringrules(seed):
    y, q, levels = quantile_data(seed)
    np.testing.assert_allclose(crps_quantile(y, q, levels, reduction="none"), sr.crps_quantile(y, q, levels), rtol=RTOL)


@pytest.mark.parametrize("seed", range(3))
def test_nll_matches_scoringrules_and_scipy(seed):
    # scoringrules takes log(pdf), which underflows beyond ~38 sd: keep z moderate here
    y, mean, std = gaussian_data(seed)
    y = mean + 3 * std * np.random.default_rng(seed).normal(size=y.size)
    ours = nll_gaussian(y, mean, std, reduction="none")
    np.testing.assert_allclose(ours, sr.logs_normal(y, mean, std), rtol=RTOL)
    np.testing.assert_allclose(ours, -stats.norm.logpdf(y, mean, std), rtol=1e-12)
    y, w, m, s = mixture_data(seed)
    np.testing.assert_allclose(nll_mixture(y, w, m, s, reduction="none"), sr.logs_mixnorm(y, m, s, w), rtol=RTOL)


@pytest.mark.parametrize("seed", range(3))
def test_pinball_matches_sklearn(seed):
    y, q, levels = quantile_data(seed)
    per_level = pinball_loss(y, q, levels, reduction="level")
    theirs = [mean_pinball_loss(y, q[:, j], alpha=a) for j, a in enumerate(levels)]
    np.testing.assert_allclose(per_level, theirs, rtol=1e-12)
    assert pinball_loss(y, q, levels) == pytest.approx(np.mean(theirs), rel=1e-12)


# ---------------------------------------------------------------- hand cases and identities


def test_hand_cases():
    # N(0,1) at y = 0: 2 phi(0) - 1/sqrt(pi) = 2/sqrt(2 pi) - 1/sqrt(pi) = (sqrt 2 - 1)/sqrt(pi)
    assert crps_gaussian([0.0], [0.0], [1.0]) == pytest.approx((np.sqrt(2) - 1) / np.sqrt(np.pi))
    # y = 2, q(.5) = 0: pinball .5 * 2 = 1; quantile CRPS = 2 * 1 = 2 (= |y - median| * 2 * .5 * 2)
    assert pinball_loss([2.0], [[0.0]], [0.5]) == 1.0
    assert crps_quantile([2.0], [[0.0]], [0.5]) == 2.0
    # NLL of N(1, 2^2) at 1: log 2 + log(2 pi)/2
    assert nll_gaussian([1.0], [1.0], [2.0]) == pytest.approx(np.log(2) + 0.5 * np.log(2 * np.pi))


def test_mixture_of_identical_components_is_gaussian():
    y, mean, std = gaussian_data(0, n=50)
    w = np.full((50, 2), 0.5)
    m = np.column_stack([mean, mean])
    s = np.column_stack([std, std])
    np.testing.assert_allclose(crps_mixture(y, w, m, s, reduction="none"), crps_gaussian(y, mean, std, reduction="none"))
    np.testing.assert_allclose(nll_mixture(y, w, m, s, reduction="none"), nll_gaussian(y, mean, std, reduction="none"))


def test_nll_mixture_is_stable_far_in_the_tail():
    # naive log(sum w pdf) underflows to -inf at 60 sd; log-sum-exp keeps 60^2 / 2 + const
    val = nll_mixture([60.0], [[0.5, 0.5]], [[0.0, 0.0]], [[1.0, 1.0]])
    assert val == pytest.approx(1800 + 0.5 * np.log(2 * np.pi))


def test_crps_quantile_approaches_crps_with_many_levels():
    # the midpoint rule over 999 levels of 2 int_0^1 pinball is within 1e-3 relative of the exact CRPS
    y, mean, std = gaussian_data(1, n=100)
    levels = (np.arange(1, 1000) - 0.5) / 999
    q = mean[:, None] + std[:, None] * stats.norm.ppf(levels)
    assert crps_quantile(y, q, levels) == pytest.approx(crps_gaussian(y, mean, std), rel=1e-3)


def test_crps_gaussian_is_proper_in_expectation():
    # E_Y~N(0,1) CRPS(N(m, s), Y) is minimised at m = 0, s = 1 (Monte Carlo with common draws)
    y = np.random.default_rng(0).normal(size=20000)
    ones = np.ones_like(y)
    best = crps_gaussian(y, 0 * ones, ones)
    for m, s in [(0.2, 1.0), (0.0, 0.7), (0.0, 1.4)]:
        assert crps_gaussian(y, m * ones, s * ones) > best


# ---------------------------------------------------------------- properties


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**16), st.floats(0.1, 10), st.floats(-5, 5))
def test_scores_nonnegative_and_scale_equivariant(seed, scale, shift):
    y, mean, std = gaussian_data(seed, n=30)
    base = crps_gaussian(y, mean, std, reduction="none")
    assert np.all(base >= 0)
    moved = crps_gaussian(scale * y + shift, scale * mean + shift, scale * std, reduction="none")
    np.testing.assert_allclose(moved, scale * base, rtol=1e-9, atol=1e-12)
    # NLL shifts by log(scale)
    nll = nll_gaussian(y, mean, std)
    assert nll_gaussian(scale * y + shift, scale * mean + shift, scale * std) == pytest.approx(nll + np.log(scale))
    y2, w, m, s = mixture_data(seed, n=20)
    assert np.all(crps_mixture(y2, w, m, s, reduction="none") >= -1e-12)
    perm = np.random.default_rng(seed).permutation(3)
    assert crps_mixture(y2, w[:, perm], m[:, perm], s[:, perm]) == pytest.approx(crps_mixture(y2, w, m, s))



def test_crps_mixture_blocks_match_unchunked_formula():
    # K = 400 components: 2**20 // 400**2 = 6 rows per block, so the 40 rows take 7 blocks. Rows 3..9
    # straddle the first block boundary; there the (rows, K, K) formula in one piece gives the same values.
    y, w, m, s = mixture_data(5, n=40, k=400)
    rows = slice(3, 10)
    yr, wr, mr, sr_ = y[rows], w[rows], m[rows], s[rows]

    def expected_abs(mu, sd):  # E|N(mu, sd^2)|
        return mu * (2 * stats.norm.cdf(mu / sd) - 1) + 2 * sd * stats.norm.pdf(mu / sd)

    first = np.sum(wr * expected_abs(yr[:, None] - mr, sr_), axis=1)
    pair = wr[:, :, None] * wr[:, None, :] * expected_abs(
        mr[:, :, None] - mr[:, None, :], np.sqrt(sr_[:, :, None] ** 2 + sr_[:, None, :] ** 2)
    )
    unchunked = first - 0.5 * pair.sum(axis=(1, 2))
    np.testing.assert_allclose(crps_mixture(y, w, m, s, reduction="none")[rows], unchunked, rtol=1e-12, atol=0)

# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: crps_gaussian([0.0], [0.0], [-1.0]), "std"),
        (lambda: crps_gaussian([0.0], [0.0], [1.0], reduction="sum"), "reduction"),
        (lambda: crps_mixture([0.0], [[0.5, 0.4]], [[0.0, 0.0]], [[1.0, 1.0]]), "weights"),
        (lambda: nll_mixture([0.0, 1.0], [[1.0]], [[0.0]], [[1.0]]), "y has 2"),
        (lambda: pinball_loss([0.0], [[0.0, 1.0]], [0.5, 0.5]), "levels"),
        (lambda: pinball_loss([0.0], [[0.0, 1.0]], [0.5, 1.0]), "levels"),
        (lambda: crps_quantile([0.0], [[0.0, np.inf]], [0.2, 0.5]), "quantiles"),
        (lambda: nll_gaussian([[0.0]], [0.0], [1.0]), "y"),
    ],
)
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()
