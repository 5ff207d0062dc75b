"""ADMIT and Venn-ADMIT (calibtut.selective.admit)."""

import math

import numpy as np
import pytest

from calibtut.recalibration import venn_probability_bounds
from calibtut.selective import (
    ADMIT,
    KNNFeatures,
    VennADMIT,
    admit_sets,
    admitted_accuracy_by_class,
    venn_admit,
)


def _split(rng, n, n_classes=3, q_max=3, ties=False):
    """KNN-like outputs: probabilities, labels drawn from them (slightly miscalibrated), q, d."""
    probs = rng.dirichlet(np.full(n_classes, 0.7), size=n)
    sharpened = probs ** 0.7 / (probs ** 0.7).sum(axis=1, keepdims=True)
    labels = (rng.uniform(size=(n, 1)) > np.cumsum(sharpened, axis=1)).sum(axis=1)
    q = rng.integers(0, q_max + 1, size=n)
    d = rng.exponential(size=n)
    if ties:
        d = np.round(d, 1)
    return probs, labels, q, d


def _cal(split):
    """The KNN features of a labelled split."""
    return KNNFeatures(*split)


def _test(split):
    """The KNN features of a split's points without their labels."""
    return KNNFeatures(split[0], None, split[2], split[3])


def _reference_admit(cal_probs, cal_labels, cal_q, cal_d, probs, q, d, alpha, omega, kappa, partition):
    """Alg. 2 point by point: the band, per-class k-th order statistic, prediction, kappa rule."""
    n_classes = cal_probs.shape[1]
    sets = np.zeros(probs.shape, dtype=bool)
    for t in range(len(probs)):
        if partition == "band":
            band = (cal_q == q[t]) & (cal_d >= d[t] - omega) & (cal_d <= d[t] + omega)
        else:
            band = (cal_q == q[t]) & (np.floor(cal_d / (2 * omega)) == np.floor(d[t] / (2 * omega)))
        counts = []
        for c in range(n_classes):
            scores = np.sort(1 - cal_probs[band & (cal_labels == c), c])
            counts.append(scores.size)
            k = math.ceil(round((scores.size + 1) * (1 - alpha), 9))
            sets[t, c] = k > scores.size or 1 - probs[t, c] <= scores[k - 1]
        sets[t, np.argmax(probs[t])] = True
        if min(counts) < kappa:
            sets[t] = True
    return sets


@pytest.mark.parametrize("partition", ["band", "fixed"])
@pytest.mark.parametrize("seed", range(3))
def test_vectorised_admit_equals_the_per_point_algorithm(partition, seed):
    rng = np.random.default_rng(seed)
    cal = _split(rng, 900, ties=seed == 2)
    test = _split(rng, 200, ties=seed == 2)
    alpha, omega, kappa = [0.1, 0.2, 0.2][seed], [0.3, 0.5, 0.2][seed], [9, 5, 4][seed]
    got = admit_sets(_cal(cal), _test(test), alpha, omega=omega, kappa=kappa, partition=partition)
    expected = _reference_admit(*cal, test[0], test[2], test[3], alpha, omega, kappa, partition)
    assert np.array_equal(got, expected)
    assert 0.05 < np.mean(got.sum(axis=1) == 1) < 0.95  # a test of both outcomes, not of a constant


def test_fixed_partition_admit_matches_crepes():
    # on a fixed partition ADMIT is label-conditional Mondrian conformal with categories (q, bin, label),
    # plus the prediction and the kappa rule; crepes computes the p-values independently
    from crepes import ConformalClassifier

    rng = np.random.default_rng(5)
    (cp, cy, cq, cd), (tp, _, tq, td) = _split(rng, 3000, q_max=2), _split(rng, 400, q_max=2)
    omega, alpha = 0.4, 0.1
    cbin, tbin = np.floor(cd / (2 * omega)).astype(int), np.floor(td / (2 * omega)).astype(int)
    code = lambda q, b, y: (q * 100 + b) * 10 + y  # noqa: E731
    oracle = ConformalClassifier().fit(1 - cp[np.arange(3000), cy], bins=code(cq, cbin, cy))
    counts = {k: v for k, v in zip(*np.unique(code(cq, cbin, cy), return_counts=True))}
    known = np.array([[code(tq[t], tbin[t], c) in counts for c in range(3)] for t in range(400)]).all(axis=1)
    tp, tq, td, tbin = tp[known], tq[known], td[known], tbin[known]
    pvals = np.stack([oracle.predict_p(1 - tp, bins=code(tq, tbin, c), smoothing=False)[:, c] for c in range(3)], 1)
    expected = pvals > alpha + 1e-9
    expected[np.arange(len(tp)), np.argmax(tp, axis=1)] = True
    n_min = np.array([min(counts[code(tq[t], tbin[t], c)] for c in range(3)) for t in range(len(tp))])
    expected[n_min < 9] = True
    got = admit_sets(KNNFeatures(cp, cy, cq, cd), KNNFeatures(tp, None, tq, td), alpha, omega=omega, kappa=9,
                     partition="fixed")
    assert np.array_equal(got, expected)


def test_label_conditional_coverage_on_a_fixed_partition():
    # Theorem 2 on a fixed partition: within each class the coverage is >= 1 - alpha (the prediction
    # and kappa only add labels). 60 draws of 3,000 calibration and 1,000 test points; the mean per-class
    # coverage must not fall more than 4 standard errors (binomial, over 60,000 points) below 0.9
    alpha, covered, labels = 0.1, [], []
    for seed in range(60):
        rng = np.random.default_rng(100 + seed)
        cal, test = _split(rng, 3000, q_max=1), _split(rng, 1000, q_max=1)
        sets = admit_sets(_cal(cal), _test(test), alpha, omega=0.5, kappa=9, partition="fixed")
        covered.append(sets[np.arange(1000), test[1]])
        labels.append(test[1])
    covered, labels = np.concatenate(covered), np.concatenate(labels)
    for c in range(3):
        share = covered[labels == c]
        assert share.mean() >= 1 - alpha - 4 * math.sqrt(alpha * (1 - alpha) / share.size)


def _reference_venn_admit(mc, vp, test, alpha, omega, kappa, weight, partition):
    """Venn categories as explicit (q, bin or band, singleton) membership, through venn_probability_bounds."""
    def singleton(split):
        sets = _reference_admit(*mc, split[0], split[2], split[3], alpha, omega, kappa, partition)
        return np.where(sets.sum(1) == 1, sets.argmax(1), -1)

    vp_class, test_class = singleton(vp), singleton(test)
    lower = np.full(len(test[0]), np.nan)
    for t in np.flatnonzero(test_class >= 0):
        if partition == "band":
            near = np.abs(vp[3] - test[3][t]) <= omega
        else:
            near = np.floor(vp[3] / (2 * omega)) == np.floor(test[3][t] / (2 * omega))
        inside = near & (vp[2] == test[2][t]) & (vp_class == test_class[t])
        low, _ = venn_probability_bounds(inside.astype(int), vp[1], [1], 3, test_weight=weight[t])
        lower[t] = low[0, test_class[t]]
    return lower


@pytest.mark.parametrize("partition", ["band", "fixed"])
def test_venn_admit_equals_explicit_venn_categories(partition):
    rng = np.random.default_rng(8)
    mc, vp, test = _split(rng, 1500, q_max=2), _split(rng, 1500, q_max=2), _split(rng, 150, q_max=2)
    weight = rng.uniform(1, 3, size=150)
    admitted, lower = venn_admit(_cal(mc), _cal(vp), _test(test), 0.2, omega=0.4, kappa=5,
                                 test_weight=weight, partition=partition)
    expected = _reference_venn_admit(mc, vp, test, 0.2, 0.4, 5, weight, partition)
    # the band reference tests |d_j - d_t| <= omega, the library d_t - omega <= d_j <= d_t + omega
    assert np.allclose(lower, expected, equal_nan=True)
    assert np.array_equal(admitted, np.nan_to_num(expected, nan=-1) >= 0.8)
    assert 0 < admitted.sum() < admitted.size


@pytest.mark.parametrize("partition", ["band", "fixed"])
def test_category_size_counts_the_explicit_venn_category(partition):
    rng = np.random.default_rng(8)
    mc, vp, test = _split(rng, 1500, q_max=2), _split(rng, 1500, q_max=2), _split(rng, 150, q_max=2)
    model = VennADMIT(alpha=0.2, omega=0.4, kappa=5, partition=partition).fit(_cal(mc), _cal(vp))
    size = model.predict_category_size(_test(test))

    def singleton(split):
        sets = _reference_admit(*mc, split[0], split[2], split[3], 0.2, 0.4, 5, partition)
        return np.where(sets.sum(1) == 1, sets.argmax(1), -1)

    vp_class, test_class = singleton(vp), singleton(test)
    expected = np.zeros(150, dtype=int)
    for t in np.flatnonzero(test_class >= 0):
        if partition == "band":
            near = np.abs(vp[3] - test[3][t]) <= 0.4
        else:
            near = np.floor(vp[3] / 0.8) == np.floor(test[3][t] / 0.8)
        expected[t] = np.sum(near & (vp[2] == test[2][t]) & (vp_class == test_class[t]))
    assert np.array_equal(size, expected)
    # the lower probability n / (|T| + w) stands on these |T| points: (|T| + 1) * lower is a count
    lower = model.predict_lower(_test(test))
    held = ~np.isnan(lower)
    counts = lower[held] * (size[held] + 1)
    assert np.allclose(counts, np.round(counts)) and np.all(np.round(counts) <= size[held])
    assert np.all(size[~held] == 0) and size[held].min() >= 0 and size.max() > 10
    # neither the test weight nor q = K changes a category
    censored = VennADMIT(alpha=0.2, omega=0.4, kappa=5, require_q=2, partition=partition).fit(_cal(mc), _cal(vp))
    assert np.array_equal(censored.predict_category_size(_test(test)), size)


def test_weighting_and_censoring_only_remove_admissions():
    # Proposition 3's mechanism (w >= 1 lowers the lower probability) and Proposition 2's (qK is a subset)
    rng = np.random.default_rng(9)
    mc, vp, test = _split(rng, 2000, q_max=2), _split(rng, 2000, q_max=2), _split(rng, 500, q_max=2)
    args = (_cal(mc), _cal(vp), _test(test), 0.2)
    plain, low_plain = venn_admit(*args, omega=0.5, kappa=5)
    weighted, low_weighted = venn_admit(*args, omega=0.5, kappa=5, test_weight=rng.uniform(1, 4, size=500))
    censored, _ = venn_admit(*args, omega=0.5, kappa=5, require_q=2)
    assert np.all(low_weighted[~np.isnan(low_plain)] <= low_plain[~np.isnan(low_plain)])
    assert np.all(weighted <= plain) and np.all(censored <= plain) and np.all(test[2][censored] == 2)
    assert weighted.sum() < plain.sum()


def _reliable_split(rng, n):
    """As ``_split`` with q in {0, 1}, but points with q = 1 have their argmax as label 95 % of the time."""
    probs, labels, q, d = _split(rng, n, q_max=1)
    right = rng.uniform(size=n) < 0.95
    other = (probs.argmax(1) + rng.integers(1, 3, size=n)) % 3
    labels = np.where(q == 1, np.where(right, probs.argmax(1), other), labels)
    return probs, labels, q, d


def test_venn_admit_admitted_accuracy_reaches_one_minus_alpha():
    # Proposition 1, in its corrected form: where the categories separate accurate from inaccurate
    # points, the admitted accuracy reaches 1 - alpha (here up to 4 binomial standard errors over 30
    # draws) while the KNN's overall accuracy is far below it. (Where every category has the same
    # accuracy just below 1 - alpha, admission selects categories that are lucky in the second
    # calibration split and the admitted accuracy stays below 1 - alpha: the lower probability is not
    # the calibrated Venn probability; see the test below.)
    alpha, correct, base = 0.2, [], []
    for seed in range(30):
        rng = np.random.default_rng(200 + seed)
        mc, vp, test = _reliable_split(rng, 2000), _reliable_split(rng, 2000), _reliable_split(rng, 1000)
        admitted, _ = venn_admit(_cal(mc), _cal(vp), _test(test), alpha, omega=0.5, kappa=4)
        hit = test[0].argmax(1) == test[1]
        correct.append(hit[admitted])
        base.append(hit)
    correct, base = np.concatenate(correct), np.concatenate(base)
    assert correct.size > 3000
    assert correct.mean() >= 1 - alpha - 4 * math.sqrt(alpha * (1 - alpha) / correct.size)
    assert base.mean() < 1 - alpha


def test_uniform_accuracy_below_target_shows_the_winners_curse():
    # every category has the same accuracy (about 0.71 here) below 1 - alpha = 0.8: Venn-ADMIT admits
    # only bands whose second-split accuracy was high by chance, and the admitted accuracy is the
    # true one, below 1 - alpha (Proposition 1 as printed does not hold; its shortfall is the sampling
    # error of small categories)
    alpha, correct = 0.2, []
    for seed in range(20):
        rng = np.random.default_rng(300 + seed)
        mc, vp, test = _split(rng, 2000, q_max=1), _split(rng, 2000, q_max=1), _split(rng, 1000, q_max=1)
        admitted, _ = venn_admit(_cal(mc), _cal(vp), _test(test), alpha, omega=0.5, kappa=4)
        correct.append((test[0].argmax(1) == test[1])[admitted])
    correct = np.concatenate(correct)
    assert correct.size > 100
    assert correct.mean() < 1 - alpha - 2 * math.sqrt(alpha * (1 - alpha) / correct.size)


def test_localizer_weight_is_one_over_the_category_mass():
    # weights from a localizer's psi equal explicit test weights 1 / psi' computed from the categories
    rng = np.random.default_rng(11)
    mc, vp, test = _split(rng, 1500, q_max=2), _split(rng, 1000, q_max=2), _split(rng, 120, q_max=2)
    psi = rng.dirichlet(np.full(1000, 0.3), size=120)
    args = (_cal(mc), _cal(vp), _test(test), 0.2)
    admitted, lower = venn_admit(*args, omega=0.4, kappa=5, localizer_psi=psi)
    vp_sets = admit_sets(_cal(mc), _test(vp), 0.2, omega=0.4, kappa=5)
    test_sets = admit_sets(_cal(mc), _test(test), 0.2, omega=0.4, kappa=5)
    vp_class = np.where(vp_sets.sum(1) == 1, vp_sets.argmax(1), -1)
    weight = np.ones(120)
    for t in np.flatnonzero(test_sets.sum(1) == 1):
        inside = (vp[2] == test[2][t]) & (np.abs(vp[3] - test[3][t]) <= 0.4) & (vp_class == test_sets[t].argmax())
        weight[t] = 1 / psi[t, inside].sum() if inside.any() else 1.0
    expected_admitted, expected = venn_admit(*args, omega=0.4, kappa=5, test_weight=weight)
    assert np.allclose(lower, expected, equal_nan=True) and np.array_equal(admitted, expected_admitted)
    # a localizer spread evenly over the support gives psi' = |T| / n_vp: weights above 1 unless T is everything
    even, _ = venn_admit(*args, omega=0.4, kappa=5, localizer_psi=np.full((120, 1000), 1e-3))
    assert np.all(even <= venn_admit(*args, omega=0.4, kappa=5)[0])


def test_localizer_psi_as_a_function_of_blocks_gives_the_same_result(monkeypatch):
    # the rows of psi are asked for in blocks of bounded size, each test point at most once, and the
    # result is exactly that of the dense matrix
    import calibtut.selective.admit as admit_module

    rng = np.random.default_rng(12)
    mc, vp, test = _split(rng, 1500, q_max=2), _split(rng, 1000, q_max=2), _split(rng, 400, q_max=2)
    psi = rng.dirichlet(np.full(1000, 0.3), size=400)
    args = (_cal(mc), _cal(vp), _test(test), 0.2)
    asked = []

    def rows(index):
        asked.append(np.asarray(index).copy())
        return psi[index]

    monkeypatch.setattr(admit_module, "BLOCK_CELLS", 50_000)  # at most 50 rows of 1000 at once
    admitted, lower = venn_admit(*args, omega=0.4, kappa=5, localizer_psi=rows)
    dense_admitted, dense_lower = venn_admit(*args, omega=0.4, kappa=5, localizer_psi=psi)
    assert np.array_equal(admitted, dense_admitted) and np.array_equal(lower, dense_lower, equal_nan=True)
    assert len(asked) > 2 and max(a.size for a in asked) <= 50
    asked = np.concatenate(asked)
    assert asked.size == np.unique(asked).size == np.isfinite(lower).sum()
    narrow = psi[:, :999] / psi[:, :999].sum(axis=1, keepdims=True)
    with pytest.raises(ValueError, match=r"localizer_psi\(index\) must return shape"):
        venn_admit(*args, omega=0.4, kappa=5, localizer_psi=lambda index: narrow[index])
    with pytest.raises(ValueError, match=r"localizer_psi\(index\)"):
        venn_admit(*args, omega=0.4, kappa=5, localizer_psi=lambda index: 2 * psi[index])


def test_accuracy_table_by_true_and_predicted_class():
    # 6 points: admitted (0 -> 0), (1 -> 0), (1 -> 1), (0 -> 1); rejected two
    admitted = np.array([True, True, True, True, False, False])
    predictions, labels = np.array([0, 0, 1, 1, 0, 1]), np.array([0, 1, 1, 0, 0, 1])
    by_true = admitted_accuracy_by_class(admitted, predictions, labels, 2)
    assert by_true["n"].tolist() == [2, 2, 4] and by_true["accuracy"].tolist() == [0.5, 0.5, 0.5]
    assert np.allclose(by_true["share"], [2 / 6, 2 / 6, 4 / 6])
    by_pred = admitted_accuracy_by_class(admitted, predictions, labels, 3, by="predicted")
    assert by_pred["n"].tolist() == [2, 2, 0, 4] and np.isnan(by_pred["accuracy"][2])
    with pytest.raises(ValueError, match=r"labels must be integers in 0..1, got 2.0"):
        admitted_accuracy_by_class(admitted, predictions, labels + 1, 2)
    with pytest.raises(TypeError, match="admitted must be a 1-d boolean array"):
        admitted_accuracy_by_class(admitted.astype(int), predictions, labels, 2)


def test_clear_errors():
    rng = np.random.default_rng(10)
    cal, test = _split(rng, 50), _split(rng, 5)
    with pytest.raises(ValueError, match="kappa must be >= 1, got 0"):
        admit_sets(_cal(cal), _test(test), 0.1, omega=0.5, kappa=0)
    with pytest.raises(ValueError, match="kappa=5 is too small for alpha=0.1"):
        admit_sets(_cal(cal), _test(test), 0.1, omega=0.5, kappa=5)
    with pytest.raises(ValueError, match=r"alpha must lie in \(0, 1\)"):
        admit_sets(_cal(cal), _test(test), 0.0, omega=0.5)
    with pytest.raises(ValueError, match="test_weight must be >= 1"):
        venn_admit(_cal(cal), _cal(cal), _test(test), 0.1, omega=0.5, kappa=9, test_weight=0.5)
    with pytest.raises(ValueError, match="omega must be > 0 with partition='fixed'"):
        admit_sets(_cal(cal), _test(test), 0.1, omega=0.0, kappa=9, partition="fixed")
    with pytest.raises(ValueError, match="cal must be labelled"):
        admit_sets(_test(cal), _test(test), 0.1, omega=0.5, kappa=9)
    with pytest.raises(ValueError, match="vp must be labelled"):
        venn_admit(_cal(cal), _test(cal), _test(test), 0.1, omega=0.5, kappa=9)
    with pytest.raises(TypeError, match="test must be a KNNFeatures bundle, got tuple"):
        admit_sets(_cal(cal), (test[0], test[2], test[3]), 0.1, omega=0.5, kappa=9)
    with pytest.raises(ValueError, match="test has 2 classes, the calibration split 3"):
        admit_sets(_cal(cal), _test(_split(rng, 5, n_classes=2)), 0.1, omega=0.5, kappa=9)


@pytest.mark.parametrize(("field", "value", "error", "match"), [
    ("probs", lambda s: s[0] * 0.5, ValueError, "probs must sum to 1"),
    ("probs", lambda s: s[0][:, :1] / s[0][:, :1], ValueError, "probs must have at least 2 columns"),
    ("labels", lambda s: np.full(50, 3), ValueError, r"labels must be integers in 0..2, got 3.0"),
    ("labels", lambda s: s[1] + 0.5, ValueError, "labels must be integers"),
    ("labels", lambda s: s[1][:49], ValueError, r"labels must have one entry per point \(50\), got 49"),
    ("q", lambda s: s[2] - 1, ValueError, r"q must be non-negative integers, got -1.0"),
    ("q", lambda s: s[2] + 0.5, ValueError, "q must be non-negative integers"),
    ("q", lambda s: s[2][:49], ValueError, r"q must have one entry per point \(50\)"),
    ("d", lambda s: -s[3], ValueError, "d must be non-negative"),
    ("d", lambda s: np.append(s[3], 1.0), ValueError, "probs has 50, d has 51"),
    ("d", lambda s: np.where(s[3] > 1, np.nan, s[3]), ValueError, "d contains NaN"),
    ("d", lambda s: s[3].astype(str), TypeError, "d must hold numbers"),
])
def test_knn_features_check_every_field_on_construction(field, value, error, match):
    split = _split(np.random.default_rng(13), 50)
    fields = dict(zip(("probs", "labels", "q", "d"), split))
    fields[field] = value(split)
    with pytest.raises(error, match=match):
        KNNFeatures(**fields)


def test_knn_features_hold_clean_arrays_and_select_points():
    probs, labels, q, d = _split(np.random.default_rng(14), 20)
    features = KNNFeatures(probs.tolist(), labels.astype(float), q.astype(float), d)
    assert features.labels.dtype == features.q.dtype == np.int64 and features.probs.dtype == np.float64
    assert np.array_equal(features.q, q) and np.array_equal(features.labels, labels)
    assert len(features) == 20 and features.n_classes == 3
    part = features[q == 0]
    assert len(part) == int(np.sum(q == 0)) and np.array_equal(part.d, d[q == 0])
    assert KNNFeatures(probs, None, q, d)[:3].labels is None
    with pytest.raises(AttributeError):
        features.q = q  # a bundle is frozen: it stays as checked


def test_classes_are_the_one_call_functions_and_keep_their_fit():
    rng = np.random.default_rng(15)
    mc, vp, test = _split(rng, 1500, q_max=2), _split(rng, 1500, q_max=2), _split(rng, 300, q_max=2)
    admit = ADMIT(alpha=0.2, omega=0.4, kappa=5)
    assert admit.fit(_cal(mc)) is admit and admit.n_classes_ == 3
    assert set(admit.groups_) == {(v, c) for v in range(3) for c in range(3)}
    sets = admit.predict_set(_test(test))
    assert np.array_equal(sets, admit_sets(_cal(mc), _test(test), 0.2, omega=0.4, kappa=5))
    # a labelled bundle predicts as an unlabelled one: the labels are not read
    assert np.array_equal(sets, admit.predict_set(_cal(test)))
    model = VennADMIT(alpha=0.2, omega=0.4, kappa=5, require_q=2).fit(_cal(mc), _cal(vp))
    assert model.n_vp_ == 1500 and model.admit_.n_classes_ == 3
    admitted, lower = venn_admit(_cal(mc), _cal(vp), _test(test), 0.2, omega=0.4, kappa=5, require_q=2)
    assert np.array_equal(model.predict_admitted(_test(test)), admitted) and admitted.any()
    assert np.array_equal(model.predict_lower(_test(test)), lower, equal_nan=True)
    # the fitted categories are those of the vp points whose ADMIT set is a singleton
    vp_sets = admit.predict_set(_test(vp))
    members = np.concatenate([category[0] for category in model.groups_.values()])
    assert np.array_equal(np.sort(members), np.flatnonzero(vp_sets.sum(axis=1) == 1))


def test_predicting_before_fit_raises_and_options_are_checked_at_fit():
    test = _test(_split(np.random.default_rng(16), 5))
    cal = _cal(_split(np.random.default_rng(17), 30))
    with pytest.raises(RuntimeError, match="not fitted: call fit first"):
        ADMIT(omega=0.5, kappa=9).predict_set(test)
    with pytest.raises(RuntimeError, match="not fitted: call fit first"):
        VennADMIT(omega=0.5, kappa=9).predict_admitted(test)
    with pytest.raises(ValueError, match="kappa=5 is too small for alpha=0.1"):
        ADMIT(alpha=0.1, omega=0.5, kappa=5).fit(cal)
    with pytest.raises(ValueError, match="partition must be one of"):
        VennADMIT(alpha=0.1, omega=0.5, kappa=9, partition="sliding").fit(cal, cal)
    with pytest.raises(ValueError, match="require_q must be >= 0, got -1"):
        VennADMIT(alpha=0.1, omega=0.5, kappa=9, require_q=-1).fit(cal, cal)


def test_venn_categories_are_an_array_of_codes_as_in_the_venn_predictor():
    rng = np.random.default_rng(3)
    mc, vp = _split(rng, 400, q_max=2), _split(rng, 400, q_max=2)
    model = VennADMIT(alpha=0.2, omega=0.4, kappa=5).fit(_cal(mc), _cal(vp))
    singleton = model.admit_.predict_set(_test(vp)).sum(axis=1) == 1
    c_star = model.admit_.predict_set(_test(vp)).argmax(axis=1)
    expected = np.unique(np.column_stack([vp[2], c_star])[singleton], axis=0)
    assert isinstance(model.categories_, np.ndarray) and model.categories_.dtype.kind == "i"
    assert np.array_equal(model.categories_, expected)  # the (q, c*) codes met on vp, sorted
    assert set(map(tuple, model.categories_.tolist())) == set(model.groups_)
