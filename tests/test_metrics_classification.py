"""Tests for calibtut.metrics.classification: oracles, hand cases, properties."""

import inspect

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats
from sklearn.metrics import brier_score_loss

from calibtut.metrics import (
    assign_bins,
    bin_edges,
    brier_decomposition,
    brier_score,
    classwise_ece,
    consistency_band,
    expected_calibration_error,
    overconfidence_error,
    reliability_data,
    top_label_ece,
)
from calibtut.metrics.classification import _assign_bins

RTOL = 1e-10  # achieved: <= 1e-13 on these inputs (see the metrics report)


def random_probs(rng, n, k, sharp=3.0):
    logits = sharp * rng.normal(size=(n, k))
    p = np.exp(logits - logits.max(1, keepdims=True))
    return p / p.sum(1, keepdims=True)


# ---------------------------------------------------------------- oracles


@pytest.mark.parametrize("seed", range(5))
def test_top_label_ece_matches_netcal(seed):
    # netcal bins [l, u) with linspace edges (numpy.histogramdd): closed="left"
    rng = np.random.default_rng(seed)
    probs = random_probs(rng, 600, 4)
    labels = rng.integers(0, 4, 600)
    ours = top_label_ece(probs, labels, n_bins=15, closed="left")
    ECE = pytest.importorskip("netcal.metrics").ECE  # needs torch: absent from the minimum-dependencies check
    theirs = ECE(bins=15).measure(probs, labels)
    np.testing.assert_allclose(ours, theirs, rtol=RTOL)


@pytest.mark.parametrize("seed", range(3))
def test_brier_matches_sklearn(seed):
    rng = np.random.default_rng(seed)
    p = rng.random(300)
    y = rng.integers(0, 2, 300)
    np.testing.assert_allclose(brier_score(p, y), brier_score_loss(y, p), rtol=1e-12)
    if "scale_by_half" not in inspect.signature(brier_score_loss).parameters:
        pytest.skip("this scikit-learn's brier_score_loss is binary only (minimum-dependencies check)")
    probs = random_probs(rng, 300, 5)
    labels = rng.integers(0, 5, 300)
    theirs = brier_score_loss(labels, probs, labels=np.arange(5), scale_by_half=False)
    np.testing.assert_allclose(brier_score(probs, labels), theirs, rtol=1e-12)


def test_consistency_band_is_binomial_interval():
    lo, hi = consistency_band([50, 0, 200], [0.3, np.nan, 0.9], alpha=0.05)
    assert lo[0] == stats.binom.ppf(0.025, 50, 0.3) / 50
    assert hi[2] == stats.binom.ppf(0.975, 200, 0.9) / 200
    assert np.isnan(lo[1]) and np.isnan(hi[1])


# ---------------------------------------------------------------- hand cases


def test_bin_edge_conventions():
    # edges 0, .5, 1: the value .5 joins bin 0 under (l, u], bin 1 under [l, u)
    edges = bin_edges([0.0, 0.5, 1.0], n_bins=2)
    assert assign_bins([0.0, 0.5, 1.0], edges, "right").tolist() == [0, 0, 1]
    assert assign_bins([0.0, 0.5, 1.0], edges, "left").tolist() == [0, 1, 1]
    # confidences .5 (right) and 1 (wrong):
    # right: bin0 {.5: 1} gap .5, bin1 {1: 0} gap 1 -> (.5 + 1) / 2 = .75
    # left:  bin1 {.5: 1, 1: 0} conf .75 acc .5 -> .25
    assert expected_calibration_error([0.5, 1.0], [1, 0], n_bins=2, closed="right") == pytest.approx(0.75)
    assert expected_calibration_error([0.5, 1.0], [1, 0], n_bins=2, closed="left") == pytest.approx(0.25)


def test_ece_hand_case_and_overconfidence():
    # 15 bins; confidences .95, .95, .35, .35 with outcomes 1, 0, 1, 1
    # bin (14/15, 1]: conf .95 acc .5 -> gap .45 (over-confident), weight .5
    # bin (1/3, 2/5]: conf .35 acc 1  -> gap .65 (under-confident), weight .5
    conf, hit = [0.95, 0.95, 0.35, 0.35], [1, 0, 1, 1]
    assert expected_calibration_error(conf, hit) == pytest.approx(0.5 * 0.45 + 0.5 * 0.65)
    assert overconfidence_error(conf, hit) == pytest.approx(0.5 * 0.45)


def test_quantile_bins_have_equal_mass():
    rng = np.random.default_rng(0)
    conf = rng.random(1000)
    df = reliability_data(conf, rng.random(1000) < conf, n_bins=10, strategy="quantile")
    assert df["count"].tolist() == [100] * 10
    assert df["bin_lower"].iloc[0] == 0 and df["bin_upper"].iloc[-1] == 1


def test_reliability_data_columns_and_empty_bins():
    df = reliability_data([0.05, 0.95], [0, 1], n_bins=3)
    assert list(df.columns) == ["bin_lower", "bin_upper", "count", "mean_confidence", "accuracy"]
    assert df["count"].tolist() == [1, 0, 1]
    assert np.isnan(df["accuracy"].iloc[1])
    # ECE equals the count-weighted gap of the table
    filled = df["count"] > 0
    gap = (df["count"] * (df["accuracy"] - df["mean_confidence"]).abs())[filled].sum() / 2
    assert gap == pytest.approx(expected_calibration_error([0.05, 0.95], [0, 1], n_bins=3))


def test_classwise_ece_binary_equals_both_columns():
    # for two classes, column 1 is 1 - column 0 and the event flips: equal per-class ECEs
    # (up to the bin edge convention, avoided with values off the edges)
    rng = np.random.default_rng(1)
    p1 = rng.uniform(0.01, 0.99, 400)
    y = (rng.random(400) < p1).astype(int)
    probs = np.column_stack([1 - p1, p1])
    ece1 = expected_calibration_error(p1, y == 1, n_bins=10)
    assert classwise_ece(probs, y, n_bins=10) == pytest.approx(ece1, rel=1e-9)


# ---------------------------------------------------------------- Murphy decomposition


def test_murphy_three_terms_exact_for_distinct_value_bins():
    rng = np.random.default_rng(2)
    f = rng.choice([0.1, 0.3, 0.6, 0.9], size=500)
    y = (rng.random(500) < f).astype(int)
    d = brier_decomposition(f, y)
    assert abs(d.within_bin_variance) < 1e-15 and abs(d.within_bin_covariance) < 1e-15
    assert d.reliability - d.resolution + d.uncertainty == pytest.approx(d.brier, rel=1e-12)
    # equal-width bins that separate the 4 values give the same terms
    d10 = brier_decomposition(f, y, n_bins=10)
    assert d10.reliability == pytest.approx(d.reliability, rel=1e-12)


@pytest.mark.parametrize("multiclass", [False, True])
def test_murphy_five_terms_always_exact(multiclass):
    rng = np.random.default_rng(3)
    if multiclass:
        f = random_probs(rng, 400, 3)
        y = np.array([rng.choice(3, p=row) for row in f])
    else:
        f = rng.random(400)
        y = (rng.random(400) < f).astype(int)
    d = brier_decomposition(f, y, n_bins=10)
    rebuilt = d.reliability - d.resolution + d.uncertainty + d.within_bin_variance - 2 * d.within_bin_covariance
    assert rebuilt == pytest.approx(d.brier, rel=1e-12)
    assert d.brier == pytest.approx(brier_score(f, y), rel=1e-12)


# ---------------------------------------------------------------- properties


conf_hit = st.integers(1, 60).flatmap(
    lambda n: st.tuples(
        arrays(np.float64, n, elements=st.floats(0, 1)),
        arrays(np.bool_, n),
    )
)


@settings(max_examples=40, deadline=None)
@given(conf_hit, st.integers(1, 20), st.sampled_from(["uniform", "quantile"]), st.sampled_from(["left", "right"]))
def test_ece_bounds_and_permutation_invariance(data, n_bins, strategy, closed):
    conf, hit = data
    ece = expected_calibration_error(conf, hit, n_bins, strategy, closed)
    over = overconfidence_error(conf, hit, n_bins, strategy, closed)
    assert 0 <= over <= ece + 1e-12 <= 1 + 1e-12
    perm = np.random.default_rng(0).permutation(conf.size)
    assert expected_calibration_error(conf[perm], hit[perm], n_bins, strategy, closed) == pytest.approx(ece, abs=1e-12)
    df = reliability_data(conf, hit, n_bins, strategy, closed)
    assert df["count"].sum() == conf.size


@settings(max_examples=25, deadline=None)
@given(arrays(np.float64, st.integers(2, 40), elements=st.floats(0, 1)), st.integers(0, 2**16))
def test_brier_bounds_and_decomposition(p, seed):
    y = (np.random.default_rng(seed).random(p.size) < 0.5).astype(int)
    d = brier_decomposition(p, y)
    assert 0 <= d.brier <= 1
    assert d.reliability - d.resolution + d.uncertainty == pytest.approx(d.brier, abs=1e-12)


def test_calibrated_ece_shrinks_like_inverse_sqrt_n():
    # for a calibrated model the binned ECE is driven by binomial noise: ~ c / sqrt(n)
    # (with 15 bins the bias term is negligible); 16x more data -> about 4x smaller
    rng = np.random.default_rng(4)

    def mean_ece(n):
        vals = []
        for _ in range(30):
            conf = rng.uniform(0.5, 1.0, n)
            vals.append(expected_calibration_error(conf, rng.random(n) < conf))
        return np.mean(vals)

    ratio = mean_ece(1000) / mean_ece(16000)
    assert 3.0 < ratio < 5.3


def test_consistency_band_covers_calibrated_accuracy():
    # each bin's accuracy falls inside its 90% band with probability >= .9 (conservative band):
    # over 200 replications x the filled bins the coverage must exceed .9 minus 3 binomial sd (~.0127)
    rng = np.random.default_rng(5)
    inside = []
    for _ in range(200):
        conf = rng.uniform(0.5, 1.0, 500)
        df = reliability_data(conf, rng.random(500) < conf, n_bins=5)
        lo, hi = consistency_band(df["count"], df["mean_confidence"], alpha=0.1)
        filled = df["count"].to_numpy() > 0
        acc = df["accuracy"].to_numpy()[filled]
        inside.extend((acc >= lo[filled] - 1e-12) & (acc <= hi[filled] + 1e-12))
    assert np.mean(inside) > 0.9 - 3 * np.sqrt(0.09 / len(inside))


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(confidence=[0.2, 1.2], correct=[0, 1]), "confidence"),
        (dict(confidence=[0.2, np.nan], correct=[0, 1]), "confidence"),
        (dict(confidence=[0.2, 0.3], correct=[0, 2]), "correct"),
        (dict(confidence=[0.2, 0.3], correct=[0, 1, 1]), "correct"),
        (dict(confidence=[], correct=[]), "confidence"),
        (dict(confidence=[[0.2]], correct=[1]), "confidence"),
        (dict(confidence=[0.2], correct=[1], n_bins=0), "n_bins"),
        (dict(confidence=[0.2], correct=[1], strategy="width"), "strategy"),
        (dict(confidence=[0.2], correct=[1], closed="both"), "closed"),
    ],
)
def test_ece_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        expected_calibration_error(**kwargs)


@pytest.mark.parametrize(
    ("probs", "labels", "match"),
    [
        ([[0.5, 0.6]], [0], "probs"),
        ([[0.5, 0.5]], [2], "labels"),
        ([[0.5, 0.5]], [-1], "labels"),
        ([[0.5, 0.5]], [0.5], "labels"),
        ([[1.0]], [0], "probs"),
        ([[0.5, 0.5], [0.5, 0.5]], [0], "labels"),
    ],
)
def test_probs_labels_bad_input(probs, labels, match):
    with pytest.raises(ValueError, match=match):
        top_label_ece(probs, labels)
    with pytest.raises(ValueError, match=match):
        brier_score(probs, labels)


@pytest.mark.parametrize(
    ("probs", "labels", "error", "match"),
    [
        (np.array([[0.5, 0.5]]) + 0j, [0], TypeError, "probs must hold real numbers"),
        ([[0.5, 0.5]], np.array(["0"]), TypeError, "labels must hold numbers"),
        ([[0.5, 0.5]], [True], TypeError, "labels must hold integer class labels"),
        ([[0.5, 0.4]], [0], ValueError, r"probs must sum to 1 along axis 1 \(largest deviation 0.1\)"),
    ],
)
def test_probs_labels_refuse_complex_strings_booleans_and_rows_off_the_simplex(probs, labels, error, match):
    for metric in (top_label_ece, classwise_ece, brier_score, brier_decomposition):
        with pytest.raises(error, match=match):
            metric(probs, labels)


def test_bin_edges_checks_the_confidences_for_every_strategy():
    with pytest.raises(TypeError, match="confidence must hold real numbers"):
        bin_edges(np.array([0.2 + 1j]), n_bins=2)
    with pytest.raises(ValueError, match="confidence"):
        bin_edges([1.5], n_bins=2, strategy="uniform")


def test_band_bad_input():
    with pytest.raises(ValueError, match="alpha"):
        consistency_band([10], [0.5], alpha=1.5)
    with pytest.raises(ValueError, match="mean_confidence"):
        consistency_band([10], [np.nan])
    with pytest.raises(ValueError, match="count"):
        consistency_band([-1], [0.5])
    with pytest.raises(ValueError, match=r"labels must be integers in 0..1, got 2.0"):
        brier_score([0.2, 0.7], [0, 2])


def test_uniform_bins_by_multiplication_equal_the_binary_search_on_the_edges():
    # confidences on and next to every edge of the grid (k / n_bins and its float neighbours)
    rng = np.random.default_rng(0)
    for n_bins in (1, 2, 3, 7, 10, 15, 20, 100):
        edges = np.linspace(0.0, 1.0, n_bins + 1)
        grid = np.concatenate([edges, np.nextafter(edges, 2.0), np.nextafter(edges, -1.0),
                               np.arange(n_bins + 1) / n_bins])
        confidence = np.clip(np.concatenate([grid, rng.uniform(size=2000)]), 0.0, 1.0)
        for closed in ("right", "left"):
            expected = np.clip(np.searchsorted(edges, confidence, side="left" if closed == "right" else "right") - 1,
                               0, n_bins - 1)
            assert np.array_equal(_assign_bins(confidence, edges, closed, uniform=True), expected)
            assert np.array_equal(assign_bins(confidence, edges, closed), expected)


def test_ece_equals_the_three_bincount_form_and_netcal():
    ECE = pytest.importorskip("netcal.metrics").ECE  # absent from the minimum-dependencies check

    rng = np.random.default_rng(1)
    probs = rng.dirichlet(np.full(4, 0.5), size=3000)
    probs[:300] = np.round(probs[:300] * 15) / 15  # confidences on the edges
    probs /= probs.sum(axis=1, keepdims=True)
    labels = rng.integers(0, 4, size=3000)
    confidence, correct = probs.max(axis=1), (probs.argmax(axis=1) == labels).astype(float)
    for closed in ("right", "left"):
        data = reliability_data(confidence, correct, closed=closed).fillna(0.0)
        three = np.sum(data["count"] * np.abs(data["accuracy"] - data["mean_confidence"])) / confidence.size
        assert np.isclose(expected_calibration_error(confidence, correct, closed=closed), three, rtol=0, atol=1e-14)
        assert np.isclose(top_label_ece(probs, labels, closed=closed), three, rtol=0, atol=1e-14)
    netcal = ECE(bins=15).measure(probs, labels)
    assert np.isclose(top_label_ece(probs, labels, closed="left"), netcal, rtol=0, atol=1e-12)


def test_a_probability_matrix_given_as_confidence_points_at_top_label_ece():
    probs = np.random.default_rng(0).dirichlet(np.ones(3), size=20)
    labels = np.arange(20) % 3
    for fn in (expected_calibration_error, overconfidence_error, reliability_data):
        with pytest.raises(ValueError, match=r"confidence must be 1-d.* shape \(20, 3\).*top_label_ece\(probs, labels\)"):
            fn(probs, labels)
    assert top_label_ece(probs, labels) == expected_calibration_error(
        probs.max(axis=1), probs.argmax(axis=1) == labels)
