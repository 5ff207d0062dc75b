"""The theory chapters' synthetic set-ups and simulation loops (calibtut.experiments.venn_admit.chapters)."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from calibtut.conformal import localized_conformal_sets
from calibtut.experiments.venn_admit import (
    admission_summary,
    binomial_admission,
    category_coverage_runs,
    category_coverage_table,
    conformal_singleton_runs,
    naive_lcp_population_coverage,
    rare_class_sample,
    singleton_summary,
    synthetic_knn_pipeline,
    two_group_sample,
    venn_admit_runs,
    venn_calibration_table,
)


@pytest.fixture(scope="module")
def pool():
    return synthetic_knn_pipeline(0, n_train=1000, n_pool=1200, n_knn=200, epochs=5)


def test_rare_class_posterior_matches_scipy_densities():
    x, probs, labels = rare_class_sample(500, seed=1)
    means, priors = [[0.0, 0.0], [1.5, 0.0], [3.0, 0.0]], [0.6, 0.34, 0.06]
    joint = np.stack([p * stats.multivariate_normal(m, np.eye(2)).pdf(x) for m, p in zip(means, priors)], axis=1)
    assert np.allclose(probs, joint / joint.sum(axis=1, keepdims=True))
    # the labels follow the priors: each class count inside its 99.9 % binomial interval
    _, big_probs, big_labels = rare_class_sample(20_000, seed=2)
    for c, p in enumerate(priors):
        lo, hi = stats.binom.ppf([0.0005, 0.9995], 20_000, p)
        assert lo <= np.sum(big_labels == c) <= hi
    # the posterior is calibrated and the classifier's accuracy is below 0.9
    assert abs(np.mean(big_probs.max(axis=1)) - np.mean(big_probs.argmax(axis=1) == big_labels)) < 0.015
    assert np.mean(big_probs.argmax(axis=1) == big_labels) < 0.8


def test_conformal_singleton_runs_count_consistently_and_split_sets_cover():
    runs = conformal_singleton_runs(30, 300, 300, 0.1, seed=5)
    assert (runs["covered"] <= runs["n"]).all() and (runs["correct_singletons"] <= runs["singletons"]).all()
    assert (runs.groupby(["run", "method"])["n"].sum() == 300).all()
    summary = singleton_summary(runs, 0.1).set_index(["method", "class"])
    pooled = runs[runs["method"] == "split"]
    coverage = pooled["covered"].sum() / pooled["n"].sum()
    assert 0.9 - 0.01 <= coverage <= 0.9 + 1 / 301 + 0.01  # 9,000 test points, sd of the mean about 0.004
    # label-conditional sets cover the rare class; its singleton accuracy stays far below 0.9 under split sets
    assert summary.loc[("label-conditional", 2), "coverage"] >= 0.85
    assert summary.loc[("split", 2), "accuracy_high"] < 0.9


def test_singleton_summary_intervals_and_errors():
    runs = pd.DataFrame({"method": ["m", "m"], "class": [0, 1], "n": [10, 10], "covered": [9, 10],
                         "singletons": [20, 0], "correct_singletons": [18, 0]})
    table = singleton_summary(runs, 0.2)
    lo, hi = stats.binomtest(18, 20).proportion_ci(0.99)
    assert table.loc[0, "accuracy_low"] == pytest.approx(lo) and table.loc[0, "accuracy_high"] == pytest.approx(hi)
    assert np.isnan(table.loc[1, "singleton_accuracy"]) and table.loc[0, "target"] == pytest.approx(0.8)
    with pytest.raises(ValueError, match="runs must be a DataFrame"):
        singleton_summary(runs.drop(columns="covered"), 0.1)


def test_two_group_sample_scores_and_shares():
    probs, labels, hard = two_group_sample(20_000, seed=3)
    scores = 1 - probs[np.arange(20_000), labels]
    assert np.all(scores[~hard] <= 0.25) and np.all(scores[hard] >= 0.5)
    lo, hi = stats.binom.ppf([0.0005, 0.9995], 20_000, 0.05)
    assert lo <= hard.sum() <= hi


def test_naive_lcp_population_coverage_matches_a_large_simulation():
    # the closed form against the naive sets themselves with n = 4,000 calibration points (20 draws of
    # 1,000 test points)
    coverage = []
    for seed in range(20):
        rng = np.random.default_rng(seed)
        cal, y_cal, g_cal = two_group_sample(4000, rng)
        test, y_test, g_test = two_group_sample(1000, rng)
        sets = localized_conformal_sets(cal, y_cal, g_cal, test, g_test, 0.1,
                                        kernel=lambda a, b: np.where(a == b.T, 1.0, 0.47))
        coverage.append(sets[np.arange(1000), y_test].mean())
    expected = naive_lcp_population_coverage(0.1, 0.05, 0.47)["marginal"]
    # 4 standard errors of the mean over draws, plus 0.003 for the finite-n rounding of the thresholds
    assert abs(np.mean(coverage) - expected) < 4 * np.std(coverage, ddof=1) / np.sqrt(20) + 0.003
    # clipping: with no hard group weight across, the easy group is covered at 1 - alpha exactly in the limit
    assert naive_lcp_population_coverage(0.1, 0.05, 0.0) == pytest.approx({"easy": 0.9, "hard": 0.9,
                                                                            "marginal": 0.9})
    assert naive_lcp_population_coverage(0.1, 0.01, 1.0)["hard"] == 0.0


def test_synthetic_pipeline_is_deterministic_and_consistent(pool):
    again = synthetic_knn_pipeline(0, n_train=1000, n_pool=1200, n_knn=200, epochs=5)
    features = pool["features"]
    for key in ("probs", "labels", "q", "d"):
        assert np.array_equal(getattr(features, key), getattr(again["features"], key))
    assert np.allclose(features.probs.sum(axis=1), 1) and set(np.unique(features.q)) <= set(range(26))
    assert pool["omega"] > 0 and np.all(features.d >= 0) and len(features) == 1200
    # omega is Eq. 6 on the whole pool: the std of d over the correct points with q > 0
    right = features.probs.argmax(axis=1) == features.labels
    assert pool["omega"] == np.std(features.d[right & (features.q > 0)])
    # the KNN mimics the network: it agrees with it on most points and is about as accurate
    assert pool["agreement"] > 0.75 and abs(pool["knn_accuracy"] - pool["network_accuracy"]) < 0.1
    # q = 25 points are more often right than q = 0 points (the paper's Table 3)
    assert right[features.q == 25].mean() > right[features.q == 0].mean() + 0.2


def test_synthetic_pipeline_geometry_places_the_class_means():
    small = {"n_train": 300, "n_pool": 60, "n_knn": 40, "epochs": 1}
    # the default draws each mean in its own random direction, as before the option existed
    for seed in (0, 2):
        directions = np.random.default_rng(seed).normal(size=(3, 8))
        expected = 2.2 * directions / np.linalg.norm(directions, axis=1, keepdims=True)
        assert np.array_equal(synthetic_knn_pipeline(seed, **small)["means"], expected)
    # equilateral: every seed the same triangle up to a rotation, centred on the origin
    pairs = ([0, 0, 1], [1, 2, 2])
    for seed in (0, 2, 7):
        means = synthetic_knn_pipeline(seed, separation=1.7, geometry="equilateral", **small)["means"]
        assert np.allclose(np.linalg.norm(means, axis=1), 1.7)
        assert np.allclose(np.linalg.norm(means[pairs[0]] - means[pairs[1]], axis=1), 1.7 * np.sqrt(3))
        assert np.allclose(means.sum(axis=0), 0, atol=1e-12)
    # the random geometry's pairwise distances change with the seed (seed 2 puts two classes 1.3 apart)
    random = synthetic_knn_pipeline(2, **small)["means"]
    assert np.linalg.norm(random[0] - random[2]) < 1.3
    with pytest.raises(ValueError, match="geometry must be 'random' or 'equilateral', got 'simplex'"):
        synthetic_knn_pipeline(0, geometry="simplex", **small)


def test_mondrian_on_the_fixed_partition_covers_every_category_and_class(pool):
    runs = category_coverage_runs(pool, 40, 600, 0.1)
    assert set(runs["method"]) == {"mondrian fixed", "admit fixed", "admit band"}
    # Theorem 2 per category and class: in every cell kept (>= 20 calibration points, >= 20 runs) the mean
    # coverage over runs is at least the exact conformal mean less 4 standard errors over runs, and the
    # standardised gaps centre on 0 (the mean is exact for distinct scores)
    table = category_coverage_table(runs, 0.1, min_cal=20)
    mondrian = table[table["method"] == "mondrian fixed"]
    assert len(mondrian) >= 3
    assert (mondrian["z"] >= -4).all() and mondrian["z"].abs().median() < 2, mondrian
    assert mondrian["expected"].between(0.9, 1.0).all()
    # ADMIT adds the prediction and rejects thin bands: never less coverage than the Mondrian sets, run by run
    wide = runs.pivot_table(index=["run", "category", "class"], columns="method", values="covered")
    assert (wide["admit fixed"] >= wide["mondrian fixed"]).all()


def test_venn_admit_runs_nest_and_admit_accurately(pool):
    runs = venn_admit_runs(pool, 10, 400, 400, 0.1)
    assert runs["nested"].all()
    # both stratifications count the same admitted and correct points
    strata = runs.groupby(["method", "by"])[["n", "admitted", "correct"]].sum().unstack("by")
    for column in ("n", "admitted", "correct"):
        assert (strata[(column, "true")] == strata[(column, "predicted")]).all()
    # by predicted class, admitted points are correct exactly when their true class is that class
    predicted = admission_summary(runs, 0.1, by="predicted").set_index(["method", "class"])
    true = admission_summary(runs, 0.1, by="true").set_index(["method", "class"])
    assert predicted.loc[("Venn-ADMIT-w", "all"), "accuracy"] == true.loc[("Venn-ADMIT-w", "all"), "accuracy"]
    total = runs[runs["by"] == "true"].groupby("method")[["admitted", "correct"]].sum()
    assert total.loc["Venn-ADMIT", "admitted"] <= total.loc["Venn-ADMIT-w", "admitted"]
    assert total.loc["Venn-ADMIT_qK", "admitted"] <= total.loc["Venn-ADMIT", "admitted"]
    assert total.loc["Venn-ADMIT-w", "admitted"] > 0
    accuracy = total["correct"] / total["admitted"]
    assert accuracy["Venn-ADMIT-w"] >= 0.9 - 3 * np.sqrt(0.09 / total.loc["Venn-ADMIT-w", "admitted"])


def test_binomial_admission_against_the_exact_tail():
    for accuracy, n in ((0.89, 1000), (0.88, 200), (0.95, 100)):
        out = binomial_admission(accuracy, n, 0.1, n_draws=40_000, seed=7)
        sd = np.sqrt(out["admission_exact"] * (1 - out["admission_exact"]) / 40_000)
        assert abs(out["admission_rate"] - out["admission_exact"]) <= 4 * sd + 1e-12
        assert out["admission_exact"] <= out["hoeffding"]
        sd_acc = np.sqrt(accuracy * (1 - accuracy) / out["admitted"])
        assert abs(out["admitted_accuracy"] - accuracy) <= 4 * sd_acc
    # a larger test weight only lowers the admission probability
    rates = [binomial_admission(0.9, 200, 0.1, n_draws=10, test_weight=w)["admission_exact"] for w in (1, 2, 5, 20)]
    assert rates == sorted(rates, reverse=True) and rates[0] > rates[-1]


def test_category_coverage_table_drops_thin_cells_and_checks_its_input():
    runs = pd.DataFrame({"run": [0, 1, 2, 0], "method": "m", "category": [1, 1, 1, 2], "class": 0,
                         "n_cal": [9, 8, 19, 50], "n": 10, "covered": [9, 10, 10, 9]})
    table = category_coverage_table(runs, 0.1, min_runs=2)
    assert table["category"].tolist() == [1] and table.loc[0, "runs"] == 2  # n_cal = 8 dropped, cell 2 thin
    assert table.loc[0, "coverage"] == pytest.approx(0.95) and table.loc[0, "expected"] == pytest.approx(0.9)
    with pytest.raises(ValueError, match="runs must be a DataFrame"):
        category_coverage_table(runs.drop(columns="n_cal"), 0.1)


def test_pool_arguments_are_checked(pool):
    with pytest.raises(ValueError, match="pool must be the dict"):
        category_coverage_runs({"probs": pool["features"].probs}, 1, 10, 0.1)
    with pytest.raises(ValueError, match="n_cal"):
        category_coverage_runs(pool, 1, len(pool["features"]), 0.1)
    with pytest.raises(ValueError, match="n_vp"):
        venn_admit_runs(pool, 1, 600, 600, 0.1)


def test_venn_calibration_table_is_calibrated_and_brackets_the_truth():
    # Theorem 3: E(Y | p_Y) = p_Y for every value taken often (4 binomial standard errors); on average
    # p0 <= accuracy <= p1
    for n, accuracy in ((20, 0.3), (20, 0.8), (5, 0.95)):
        table = venn_calibration_table(n, accuracy, n_draws=100_000, seed=11)
        common = table[table["draws"] >= 500]
        assert len(common) >= 3
        assert ((common["frequency"] - common["p_true"]).abs() <= 4 * common["sem"] + 1e-12).all(), table
        mean_p0 = np.average(table["p0"], weights=table["draws"])
        mean_p1 = np.average(table["p1"], weights=table["draws"])
        assert mean_p0 <= accuracy <= mean_p1
    # the p_Y of a wrong construction (the lower probability p0 instead) is not calibrated
    table = venn_calibration_table(20, 0.8, n_draws=100_000, seed=11)
    assert (table["frequency"] - table["p0"]).abs().max() > 0.02


def test_admission_summary_pools_runs_per_class_and_overall():
    runs = pd.DataFrame({"run": [0, 0, 1, 1], "method": "m", "class": [0, 1, 0, 1], "n": [50, 50, 50, 50],
                         "admitted": [20, 0, 30, 10], "correct": [19, 0, 30, 8]})
    table = admission_summary(runs, 0.1).set_index("class")
    assert table.loc[0, "admitted"] == 50 and table.loc[0, "accuracy"] == pytest.approx(49 / 50)
    assert table.loc[1, "share"] == pytest.approx(0.1) and table.loc["all", "accuracy"] == pytest.approx(57 / 60)
    lo, hi = stats.binomtest(57, 60).proportion_ci(0.99)
    assert table.loc["all", "accuracy_low"] == pytest.approx(lo)
    assert table.loc["all", "accuracy_high"] == pytest.approx(hi)
    with pytest.raises(ValueError, match="runs must be a DataFrame"):
        admission_summary(runs.drop(columns="correct"), 0.1)
    with pytest.raises(ValueError, match="by must be"):
        admission_summary(runs, 0.1, by="label")
    both = pd.concat([runs.assign(by="true"), runs.assign(by="predicted", correct=0)])
    assert admission_summary(both, 0.1, by="predicted")["accuracy"].fillna(0).eq(0).all()
