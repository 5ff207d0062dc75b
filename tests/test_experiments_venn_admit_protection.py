"""Chapter 9 of the Venn-ADMIT part: synthetic shifts, their summaries, signals and figures."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import roc_auc_score

from calibtut.experiments.venn_admit.protection import (
    PROTECTION_METHODS,
    SHIFTS,
    plot_accuracy_share,
    plot_protection_map,
    protection_map,
    protection_runs,
    protection_side_by_side,
    protection_summary,
    protection_tables,
    representation_signals,
    run_protection_config,
    sentiment_map_points,
    sentiment_signals,
    separation_signals,
    shifted_sample,
)
from calibtut.selective import KNNFeatures, VennADMIT, band_width

# ------------------------------------------------------------------------------------------ the test worlds


def _u(x):
    """Signed distance to the boundary along x1."""
    return x[:, 0] - 0.1 * x[:, 1] ** 3


def test_exchangeable_sample_has_the_stated_law():
    x, y = shifted_sample(20_000, seed=1)
    # x2 ~ N(0, 1) and u ~ N(0, 1.5^2) (Kolmogorov-Smirnov at 0.1 %)
    assert stats.kstest(x[:, 1], "norm").pvalue > 1e-3
    assert stats.kstest(_u(x) / 1.5, "norm").pvalue > 1e-3
    # P(y = 1 | x) = sigmoid(3 u): the labels' mean matches within 4 binomial sd
    p = 1 / (1 + np.exp(-3 * _u(x)))
    assert abs(y.mean() - p.mean()) < 4 * np.sqrt(np.sum(p * (1 - p))) / y.size


@pytest.mark.parametrize("strength", [0.25, 1.0])
def test_shifts_move_what_they_say(strength):
    n = 20_000
    x0, y0 = shifted_sample(n, seed=2)
    x_off, _ = shifted_sample(n, seed=2, shift="off-support", strength=strength)
    x_near, _ = shifted_sample(n, seed=2, shift="boundary", strength=strength)
    x_noise, y_noise = shifted_sample(n, seed=2, shift="label noise", strength=strength)
    # off-support: x2 moves by 4 s, u keeps its law
    assert abs(x_off[:, 1].mean() - 4 * strength) < 4 / np.sqrt(n)
    assert stats.kstest(_u(x_off) / 1.5, "norm").pvalue > 1e-3
    # boundary: u shrinks by 1 - 0.75 s (the same draws, so exactly)
    np.testing.assert_allclose(_u(x_near), _u(x0) * (1 - 0.75 * strength), atol=1e-9)
    # label noise: the same points, each label flipped with probability 0.2 s
    np.testing.assert_array_equal(x_noise, x0)
    flipped = np.mean(y_noise != y0)
    rho = 0.2 * strength
    assert abs(flipped - rho) < 4 * np.sqrt(rho * (1 - rho) / n)


def test_shifted_sample_refuses_bad_arguments():
    with pytest.raises(ValueError, match="shift"):
        shifted_sample(3, shift="drift")
    with pytest.raises(ValueError, match="strength"):
        shifted_sample(3, shift="boundary", strength=1.5)
    with pytest.raises(ValueError, match="n"):
        shifted_sample(0)


# ------------------------------------------------------------------------------------------ signals


def _bundle(rng, n, d, q=25, probs=None, labels=None):
    probs = np.tile([[0.3, 0.7]], (n, 1)) if probs is None else probs
    labels = rng.integers(0, 2, n) if labels is None else labels
    return KNNFeatures(probs, labels, np.broadcast_to(q, (n,)), d)


def test_separation_is_chance_for_one_law_and_one_for_disjoint_distances():
    rng = np.random.default_rng(3)
    same = separation_signals(_bundle(rng, 2000, rng.uniform(size=2000)), _bundle(rng, 2000, rng.uniform(size=2000)))
    # AUROC of a cross-fitted score under H0: mean 0.5, sd about sqrt((n+m+1)/(12 n m)); 4 sd
    assert abs(same["separation"] - 0.5) < 4 * np.sqrt(4001 / (12 * 2000 * 2000))
    apart = separation_signals(_bundle(rng, 200, rng.uniform(0, 1, 200)), _bundle(rng, 200, rng.uniform(2, 3, 200)))
    assert apart["separation"] == 1.0


def test_error_auroc_matches_scikit_learn_and_qk_statistics_by_hand():
    rng = np.random.default_rng(4)
    n = 300
    q = np.where(np.arange(n) < 200, 25, 3)
    labels = rng.integers(0, 2, n)
    d = rng.uniform(size=n)
    test = _bundle(rng, n, d, q=q, labels=labels)  # prediction is class 1 everywhere
    out = separation_signals(_bundle(rng, n, rng.uniform(size=n), q=q), test)
    top = q == 25
    assert out["error_auroc"] == pytest.approx(roc_auc_score(labels[top] != 1, d[top]))
    assert out["qk_share_test"] == pytest.approx(200 / 300)
    assert out["qk_accuracy_test"] == pytest.approx(np.mean(labels[top] == 1))


def test_error_auroc_is_nan_without_both_outcomes():
    rng = np.random.default_rng(5)
    test = _bundle(rng, 50, rng.uniform(size=50), labels=np.ones(50, dtype=int))
    assert np.isnan(separation_signals(_bundle(rng, 50, rng.uniform(size=50)), test)["error_auroc"])


def test_separation_signals_refuses_unlabelled_bundles():
    rng = np.random.default_rng(6)
    unlabelled = KNNFeatures(np.tile([[0.5, 0.5]], (5, 1)), None, np.zeros(5), np.zeros(5))
    with pytest.raises(TypeError, match="test"):
        separation_signals(_bundle(rng, 5, np.zeros(5)), unlabelled)


# ------------------------------------------------------------------------------------------ summary


def test_protection_summary_by_hand():
    runs = pd.DataFrame({"run": [0, 0, 1, 1], "shift": "boundary", "strength": 0.5, "method": "m", "by": "true",
                         "class": [0, 1, 0, 1], "n": [100, 100, 100, 100], "admitted": [40, 0, 60, 10],
                         "correct": [36, 0, 58, 5]})
    table = protection_summary(runs, 0.1, z=2.0).set_index("class")
    assert table.loc["0", "admitted"] == 100 and table.loc["0", "share"] == 0.5
    assert table.loc["0", "accuracy"] == pytest.approx(0.94)
    assert table.loc["0", "band"] == pytest.approx(0.9 - 2 * np.sqrt(0.09 / 100))
    assert bool(table.loc["0", "holds"])
    assert table.loc["1", "accuracy"] == 0.5 and not table.loc["1", "holds"]
    assert table.loc["all", "n"] == 400 and table.loc["all", "admitted"] == 110
    assert table.loc["all", "accuracy"] == pytest.approx(99 / 110)


def test_protection_summary_refuses_bad_input():
    with pytest.raises(ValueError, match="admissions"):
        protection_summary(pd.DataFrame({"run": [0]}), 0.1)
    runs = pd.DataFrame({"shift": "b", "strength": 0.0, "method": "m", "by": "true", "class": [0], "n": [1],
                         "admitted": [1], "correct": [1]})
    with pytest.raises(ValueError, match="z"):
        protection_summary(runs, 0.1, z=0.0)


# ------------------------------------------------------------------------------------------ runs


@pytest.fixture(scope="module")
def small_runs():
    return protection_runs(2, strengths=(1.0,), n_train=600, n_knn=200, n_mc=500, n_vp=500, n_test=400, kappa=20,
                           epochs=3)


def test_runs_are_complete_and_consistent(small_runs):
    rows, signals = small_runs["admissions"], small_runs["signals"]
    assert set(rows["method"]) == set(PROTECTION_METHODS) and set(rows["shift"]) == set(SHIFTS)
    assert len(signals) == 2 * len(SHIFTS)
    # every stratification covers every test point once
    assert (rows.groupby(["run", "shift", "strength", "method", "by"])["n"].sum() == 400).all()
    assert (rows["correct"] <= rows["admitted"]).all() and (rows["admitted"] <= rows["n"]).all()


def test_runs_keep_the_propositions_subset_relations(small_runs):
    rows = small_runs["admissions"]
    count = rows.set_index(["run", "shift", "strength", "by", "class", "method"])["admitted"].unstack("method")
    # Propositions 2-3 in counts: censoring and up-weighting only remove admissions
    assert (count["Venn-ADMIT"] <= count["Venn-ADMIT-w"]).all()
    assert (count["Venn-ADMIT_qK"] <= count["Venn-ADMIT"]).all()
    assert (count["Venn-ADMIT_qK-w"] <= count["Venn-ADMIT-w"]).all()
    # Venn-ADMIT admits only ADMIT singletons
    assert (count["Venn-ADMIT-w"] <= count["ADMIT"]).all()


def test_runs_are_deterministic_given_the_seed(small_runs):
    again = protection_runs(1, strengths=(1.0,), n_train=600, n_knn=200, n_mc=500, n_vp=500, n_test=400, kappa=20,
                            epochs=3, seed=1)
    first = small_runs["admissions"]
    pd.testing.assert_frame_equal(again["admissions"].drop(columns="run"),
                                  first[first["run"] == 1].drop(columns="run").reset_index(drop=True))


def test_a_sweep_task_is_one_run_of_protection_runs(small_runs):
    # run_protection_config(seed=1) must be run 1 of protection_runs(2, seed=0), row for row
    rows = run_protection_config(1, strengths="1.0", n_train=600, n_knn=200, n_mc=500, n_vp=500, n_test=400,
                                 kappa=20, epochs=3)
    tables = protection_tables(rows.assign(dataset="synthetic"))  # a sweep's extra key columns are kept
    for name in ("admissions", "signals"):
        first = small_runs[name]
        expected = first[first["run"] == 1].reset_index(drop=True)
        pd.testing.assert_frame_equal(tables[name].drop(columns="dataset"), expected, check_like=True)


def test_protection_tables_and_strengths_refuse_bad_input():
    with pytest.raises(TypeError, match="rows must be a pandas DataFrame"):
        protection_tables([{"table": "admissions"}])
    bad = pd.DataFrame({"table": ["counts"], "run": [0], "shift": ["boundary"], "strength": [1.0]})
    with pytest.raises(ValueError, match=r"rows\['table'\] must hold"):
        protection_tables(bad)
    with pytest.raises(ValueError, match="strengths must be numbers separated by commas"):
        run_protection_config(0, strengths="0.5,strong")
    with pytest.raises(TypeError, match="strengths must be a sequence"):
        run_protection_config(0, strengths=0.5)
    with pytest.raises(ValueError, match="strengths"):
        run_protection_config(0, strengths="0.5,1.5")


def test_protection_side_by_side_by_hand():
    def summary(accuracy):
        return pd.DataFrame({
            "shift": ["exchangeable", "off-support", "off-support", "off-support"],
            "strength": [0.0, 0.5, 1.0, 1.0], "method": ["Venn-ADMIT", "Venn-ADMIT", "Venn-ADMIT", "ADMIT"],
            "by": "true", "class": "all", "n": 100, "admitted": 10, "share": 0.1, "accuracy": accuracy,
            "band": 0.85, "holds": [a >= 0.85 for a in accuracy]})
    table = protection_side_by_side({"ci": summary([0.9, 0.8, 0.7, 0.6]), "full": summary([0.95, 0.9, 0.8, 0.7])},
                                    methods=("Venn-ADMIT",), classes=("all",))
    # the exchangeable row and the row at strength 1 of the shift; other methods and strengths left out
    assert table.index.tolist() == [("exchangeable", "Venn-ADMIT", "all"), ("off-support", "Venn-ADMIT", "all")]
    assert table[("ci", "accuracy")].tolist() == [0.9, 0.7]
    assert table[("full", "holds")].tolist() == [True, False]
    with pytest.raises(TypeError, match="summaries must be a non-empty dict"):
        protection_side_by_side({})
    with pytest.raises(ValueError, match="has no rows at strength 0.25"):
        protection_side_by_side({"ci": summary([0.9, 0.8, 0.7, 0.6])}, strength=0.25, methods=("ADMIT",))
    with pytest.raises(ValueError, match="columns must name columns of a summary"):
        protection_side_by_side({"ci": summary([0.9, 0.8, 0.7, 0.6])}, columns=["coverage"])
    assert protection_side_by_side({"ci": summary([0.9, 0.8, 0.7, 0.6])}, methods=("Venn-ADMIT",),
                                   columns=["band"]).columns.tolist() == [("ci", "band")]
    with pytest.raises(ValueError, match=r"summaries\['ci'\] lacks column"):
        protection_side_by_side({"ci": pd.DataFrame({"shift": []})})


def test_label_noise_leaves_what_the_method_sees_unchanged(small_runs):
    # statistical property: the flips touch no x, so q and d cannot separate the noisy test set
    signals = small_runs["signals"].set_index(["shift", "strength"])
    noisy = signals.loc[("label noise", 1.0), "separation"]
    # the AUROC's sd under H0 for 500 against 400 points is about 0.019; 4 sd
    assert (abs(noisy - 0.5) < 0.08).all()
    far = signals.loc[("off-support", 1.0), "separation"]
    assert (far > 0.9).all()


def test_protection_map_and_figures(small_runs):
    summary = protection_summary(small_runs["admissions"], 0.1)
    world_map = protection_map(summary, small_runs["signals"])
    assert len(world_map) == len(SHIFTS)
    assert world_map["share"].between(0, 1).all()
    with pytest.raises(ValueError, match="method"):
        protection_map(summary, small_runs["signals"], method="nothing")
    fig = plot_accuracy_share(summary, 0.1)
    assert len(fig.axes) == 3 and fig.get_size_inches()[0] <= 7
    plt.close(fig)
    points = pd.DataFrame({"label": ["x"], "separation": [0.6], "qk_drop": [0.1], "accuracy": [0.8]})
    fig = plot_protection_map(world_map, 0.1, points=points)
    assert len(fig.axes) == 2 and fig.get_size_inches()[0] <= 7
    plt.close(fig)


# ------------------------------------------------------------------------------------------ sentiment


def _points(rng, n_mc=300, n_vp=300, n_test=200):
    n = n_mc + n_vp + n_test
    p1 = rng.uniform(size=n)
    return pd.DataFrame({"split": np.repeat(["mc", "vp", "test"], [n_mc, n_vp, n_test]),
                         "label": (rng.uniform(size=n) < p1).astype(int), "p0": 1 - p1, "p1": p1,
                         "q": rng.choice([3, 25], size=n), "d": rng.uniform(size=n)})


def test_sentiment_signals_agree_with_venn_admit_run_directly():
    rng = np.random.default_rng(7)
    points = _points(rng)
    signals, admissions = sentiment_signals(points, kappa=9)
    parts = {name: points[points["split"] == name] for name in ("mc", "vp", "test")}
    feats = {name: KNNFeatures(f[["p0", "p1"]].to_numpy(), f["label"].to_numpy(), f["q"].to_numpy(),
                               f["d"].to_numpy()) for name, f in parts.items()}
    venn = VennADMIT(alpha=0.1, omega=band_width(feats["mc"]), kappa=9).fit(feats["mc"], feats["vp"])
    admitted = venn.predict_admitted(feats["test"])
    pooled = admissions[(admissions["by"] == "true") & (admissions["class"] == "all")].iloc[0]
    assert pooled["n"] == admitted.sum()
    assert signals == separation_signals(feats["vp"], feats["test"])


def test_sentiment_map_points_pool_over_splits_by_hand():
    rows = pd.DataFrame({"dataset": "sentiment", "by": "true", "class": ["all", "all"], "n": [10, 30],
                         "accuracy": [0.5, 0.9], "share": [0.1, 0.3], "separation": [0.5, 0.7],
                         "error_auroc": 0.5, "qk_share_cal": 0.8, "qk_share_test": 0.8, "qk_accuracy_cal": 0.9,
                         "qk_accuracy_test": [0.9, 0.8]})
    point = sentiment_map_points(rows).iloc[0]
    assert point["label"] == "Sentiment"
    assert point["accuracy"] == pytest.approx((5 + 27) / 40)
    assert point["separation"] == pytest.approx(0.6) and point["qk_drop"] == pytest.approx(0.05)
    assert point["share"] == pytest.approx(0.2)


def _signal_rows(dataset, seed, pred_acc, admitted):
    """Rows of run_sentiment_signals for one split: ``admitted`` = {(by, class): (n, correct)}."""
    rows = []
    for (by, c), (n, correct) in admitted.items():
        rows.append({"dataset": dataset, "seed": seed, "by": by, "class": c, "n": n,
                     "accuracy": correct / n if n else np.nan, "share": n / 100})
    frame = pd.DataFrame(rows)
    return frame.assign(separation=0.6 + seed / 10, error_auroc=0.5, qk_share_cal=0.8, qk_share_test=0.5,
                        qk_accuracy_cal_pred0=pred_acc[0], qk_accuracy_cal_pred1=pred_acc[1])


def test_representation_signals_pools_splits_and_takes_the_weakest_admitting_category():
    split0 = _signal_rows("sentiment_ood", 0, (0.95, 0.92), {("true", "0"): (10, 6), ("true", "1"): (10, 10),
                                                               ("true", "all"): (20, 16),
                                                               ("predicted", "0"): (8, 6),
                                                               ("predicted", "1"): (12, 10)})
    split1 = _signal_rows("sentiment_ood", 1, (0.89, 0.99), {("true", "0"): (0, 0), ("true", "1"): (30, 27),
                                                               ("true", "all"): (30, 27),
                                                               ("predicted", "0"): (0, 0),
                                                               ("predicted", "1"): (30, 27)})
    empty = _signal_rows("sentiment", 0, (0.5, 0.5), {("true", "0"): (0, 0), ("true", "all"): (0, 0)})
    t = representation_signals({"A": pd.concat([split0, split1]), "B": empty}, alpha=0.1)
    row = t.loc[("A", "SentimentOOD")]
    assert row["separation"] == pytest.approx(0.65)
    assert row["margin"] == pytest.approx(((0.92 + 0.89) / 2) - 0.9)  # mean over splits of the weaker category
    assert row["share"] == pytest.approx((0.2 + 0.3) / 2)
    # pooled over splits: counts add up, not the per-split accuracies
    assert row["true 0"] == pytest.approx(6 / 10) and row["true 1"] == pytest.approx(37 / 40)
    assert row["pred 0"] == pytest.approx(6 / 8) and row["pred 1"] == pytest.approx(37 / 42)
    assert np.isnan(t.loc[("B", "Sentiment"), "true 0"]) and t.loc[("B", "Sentiment"), "share"] == 0


def test_representation_signals_refuses_bad_input():
    with pytest.raises(TypeError, match="signals must be a non-empty dict"):
        representation_signals({})
    with pytest.raises(ValueError, match="qk_accuracy_cal_pred0"):
        representation_signals({"A": pd.DataFrame({"dataset": ["x"]})})
    with pytest.raises(ValueError, match="alpha"):
        representation_signals({"A": pd.DataFrame()}, alpha=1.5)
