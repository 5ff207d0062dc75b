"""The experiments layer of paper 002: tasks and runner, chapter tables, figures, ablations, claims and SQR forms."""

import math
import os
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from calibtut.experiments import regression_study as rs
from calibtut.models.sqr import EVAL_LEVELS
from calibtut.run import Verdict
from calibtut.stats import cohens_d

needs_mirror = pytest.mark.skipif(not os.environ.get("CALIBTUT_DATA_MIRROR"), reason="needs the data mirror")


# ----------------------------------------------------------------------------- tasks and labels


def test_tasks_hold_plain_values_and_vary_runs_slowest():
    tasks = rs.study_tasks(["Yacht", "CPU"], [0, 3], ["mix-nll", "sqr"], lambdas=(0.2, 5.0), epochs=10)
    assert len(tasks) == 8
    assert [t["run"] for t in tasks] == [0] * 4 + [3] * 4
    assert all(isinstance(v, (str, int, float, bool)) for t in tasks for v in t.values())
    assert {t["lambdas"] for t in tasks} == {"0.2,5"}


@pytest.mark.parametrize("kwargs, error, match", [
    ({"datasets": ["nope"]}, ValueError, "datasets"),
    ({"runs": [-1]}, ValueError, "runs"),
    ({"bases": ["gaussian"]}, ValueError, "base"),
    ({"lambdas": (0.0,)}, ValueError, "lambdas"),
    ({"lambdas": (-1.0,)}, ValueError, "lambdas"),
    ({"lambdas": (math.nan,)}, ValueError, "lambdas"),
    ({"lambdas": (1.0, 1.0)}, ValueError, "distinct"),
    ({"regularizers": ["trunc"]}, ValueError, "trunc"),
    ({"regularizers": ["l2"]}, ValueError, "regularizers"),
])
def test_tasks_refuse_bad_grids(kwargs, error, match):
    args = {"datasets": ["Yacht"], "runs": [0], "bases": ["mix-nll"], **kwargs}
    with pytest.raises(error, match=match):
        rs.study_tasks(args.pop("datasets"), args.pop("runs"), args.pop("bases"), **args)


def test_method_labels_cover_every_figure_method():
    assert rs.method_label("mix-crps", "qr") == "MIX-CRPS + QR"
    assert rs.method_label("sqr", posthoc="cqr") == "SQR-CRPS + CQR"
    assert rs.method_label("sqr-affine") == "SQR-CRPS (affine)"
    with pytest.raises(ValueError, match="regularizer"):
        rs.method_label("mix-nll", "lasso")
    with pytest.raises(ValueError, match="posthoc"):
        rs.method_label("mix-nll", posthoc="platt")


@pytest.mark.parametrize("kwargs, error, match", [
    ({"dataset": 3}, TypeError, "dataset"),
    ({"dataset": "Atlantis"}, ValueError, "dataset"),
    ({"run": -1}, ValueError, "run"),
    ({"base": "mlp"}, ValueError, "base"),
    ({"lambdas": [1.0]}, TypeError, "lambdas"),
    ({"lambdas": "1,x"}, ValueError, "lambdas"),
    ({"lambdas": "0"}, ValueError, "lambdas"),
    ({"lambdas": "inf"}, ValueError, "lambdas"),
    ({"regularizers": "trunc"}, ValueError, "trunc"),
    ({"fit_posthoc": 1}, TypeError, "fit_posthoc"),
    ({"epochs": 0}, ValueError, "epochs"),
    ({"patience": 0}, ValueError, "patience"),
    ({"crime": "raw"}, ValueError, "crime"),
    ({"num_threads": 0}, ValueError, "num_threads"),
])
def test_runner_validates_before_any_work(kwargs, error, match):
    args = {"dataset": "Yacht", **kwargs}
    with pytest.raises(error, match=match):
        rs.run_study_task(args.pop("dataset"), **args)


# ----------------------------------------------------------------------------- the runner on a real dataset


@pytest.fixture(scope="module")
def yacht_rows():
    if not os.environ.get("CALIBTUT_DATA_MIRROR"):
        pytest.skip("needs the data mirror")
    return rs.run_study_task("Yacht", 0, "mix-nll", lambdas="1", regularizers="pce-kde,qr", epochs=4, patience=2)


@needs_mirror
def test_runner_rows_follow_the_protocol(yacht_rows):
    rows = yacht_rows
    assert rows["method"].tolist() == [
        "MIX-NLL", "MIX-NLL + PCE-KDE", "MIX-NLL + QR",
        "MIX-NLL", "MIX-NLL + Rec-EMP", "MIX-NLL + Rec-LIN", "MIX-NLL + Rec-KDE",
    ]
    # Yacht has 308 rows: splits floor(0.65 n) = 200, 30, 46 and the 32 left for the test
    assert set(rows["n_train"]) == {200 + 46, 200}
    assert rows.loc[rows["train_fraction"] == 0.8, "n_train"].eq(246).all()
    assert set(rows["n_test"]) == {32} and set(rows["n_val"]) == {30}
    # the post-hoc maps share the 65% network with the unrecalibrated row
    assert rows.loc[rows["train_fraction"] == 0.65, "best_epoch"].nunique() == 1
    assert np.isinf(rows.loc[rows["posthoc"] == "emp", "test_nll"]).all()
    assert np.isfinite(rows.loc[rows["posthoc"].isin(["none", "lin", "kde"]), "test_nll"]).all()
    assert rows.loc[rows["posthoc"] != "none", "test_crps"].isna().all()
    # frequencies are a CDF over the 19 levels
    freq = rows[list(rs.FREQ_COLUMNS)].to_numpy()
    assert np.all(np.diff(freq, axis=1) >= 0) and np.all((freq >= 0) & (freq <= 1))


@needs_mirror
def test_runner_metrics_match_a_by_hand_evaluation(yacht_rows):
    """The PCE, WIS and STD of a row agree with their definitions recomputed from its frequencies."""
    rows = yacht_rows
    vanilla = rows.iloc[0]
    # the sorted-PIT PCE and the 19-level grid PCE estimate the same integral (within 1/19 + 1/n)
    grid = np.mean(np.abs(vanilla[list(rs.FREQ_COLUMNS)].to_numpy(dtype=float) - EVAL_LEVELS))
    assert abs(grid - vanilla["test_pce"]) < 1 / 19 + 1 / vanilla["n_test"]
    # a Gaussian's 19-quantile std is 0.8875 of its std; mixtures of 3 components are close to that
    ratio = vanilla["test_std_quantile"] / vanilla["test_std"]
    assert 0.7 < ratio < 1.0
    # WIS is close to the CRPS for a smooth predictive distribution (0.5928 vs 0.5642 for N(0, 1))
    assert 0.9 < vanilla["test_wis"] / vanilla["test_crps"] < 1.2


@needs_mirror
def test_vmapped_and_sequential_training_give_the_same_rows():
    kwargs = {"lambdas": "0.2", "regularizers": "pce-kde", "fit_posthoc": False, "epochs": 3, "patience": 2}
    batched = rs.run_study_task("Yacht", 1, "mix-crps", trainer="vmapped", **kwargs)
    alone = rs.run_study_task("Yacht", 1, "mix-crps", trainer="alone", **kwargs)
    metrics = [c for c in batched.columns if c.startswith(("val_", "test_"))]
    np.testing.assert_allclose(batched[metrics].to_numpy(float), alone[metrics].to_numpy(float), rtol=1e-4)
    assert batched["best_epoch"].tolist() == alone["best_epoch"].tolist()


@needs_mirror
def test_runner_is_deterministic_and_runs_differ():
    kwargs = {"lambdas": "", "fit_posthoc": False, "epochs": 2, "patience": 2}
    a = rs.run_study_task("Yacht", 0, "mix-nll", **kwargs)
    b = rs.run_study_task("Yacht", 0, "mix-nll", **kwargs)
    c = rs.run_study_task("Yacht", 1, "mix-nll", **kwargs)
    pd.testing.assert_frame_equal(a, b)
    assert a["test_pce"].iloc[0] != c["test_pce"].iloc[0]


@needs_mirror
def test_sqr_rows_use_cqr_in_both_forms():
    rows = rs.run_study_task("Yacht", 0, "sqr-affine", lambdas="1", regularizers="trunc", epochs=2, patience=2)
    assert rows["method"].tolist() == [
        "SQR-CRPS (affine)", "SQR-CRPS (affine) + Trunc", "SQR-CRPS (affine)",
        "SQR-CRPS (affine) + CQR", "SQR-CRPS (affine) + CQR (paper)",
    ]
    assert rows["test_nll"].isna().all()  # a quantile model has no density
    # one-sided CQR on 46 calibration points: ceil(47 a) <= 46 for every level up to 0.95,
    # so the clipped and the paper's corrections coincide here
    cqr = rows[rows["posthoc"].str.startswith("cqr")]
    assert cqr["test_pce"].nunique() == 1
    # the affine SQR is a shifted uniform of one width: quantile std equals the std column
    np.testing.assert_allclose(rows["test_std"], rows["test_std_quantile"])


# ----------------------------------------------------------------------------- summary tables


def _synthetic_rows(n_datasets=6, runs=5, seed=0):
    """Rows shaped like run_study_task's for two regularizers, a post-hoc map and two lambdas."""
    rng = np.random.default_rng(seed)
    records = []
    for d in range(n_datasets):
        for run in range(runs):
            def add(method, reg, lam, posthoc, fraction, pce, wis):
                records.append({"dataset": f"d{d}", "run": run, "base": "mix-nll", "method": method,
                                "regularizer": reg, "lam": lam, "posthoc": posthoc, "train_fraction": fraction,
                                "n_test": 200, "val_pce": pce + rng.normal(0, 0.002), "test_pce": pce,
                                "val_wis": wis, "test_wis": wis, "test_nll": wis})
            base_pce = 0.08 + 0.01 * d + rng.normal(0, 0.005)
            add("MIX-NLL", "none", 0.0, "none", 0.8, base_pce, 1.0)
            add("MIX-NLL + PCE-KDE", "pce-kde", 1.0, "none", 0.8, base_pce - 0.03, 1.05)
            add("MIX-NLL + PCE-KDE", "pce-kde", 5.0, "none", 0.8, base_pce - 0.05, 1.2)
            add("MIX-NLL + QR", "qr", 1.0, "none", 0.8, base_pce + 0.01, 1.01)
            add("MIX-NLL", "none", 0.0, "none", 0.65, base_pce + 0.01, 1.02)
            add("MIX-NLL + Rec-EMP", "none", 0.0, "emp", 0.65, 0.02 + rng.normal(0, 0.003), 1.03)
    return pd.DataFrame(records)


def test_lambda_rule_keeps_the_costly_strength_out():
    chosen = rs.selected_lambdas(_synthetic_rows()).set_index(["dataset", "regularizer"])["lam"]
    # lambda = 5 costs 20% of WIS (above the 10% tolerance): 1 is chosen for PCE-KDE;
    # QR at 1 has a higher PCE than lambda = 0, so the vanilla model is kept
    assert set(chosen.xs("pce-kde", level="regularizer")) == {1.0}
    assert set(chosen.xs("qr", level="regularizer")) == {0.0}
    loose = rs.selected_lambdas(_synthetic_rows(), tolerance=0.5)
    assert set(loose.loc[loose["regularizer"] == "pce-kde", "lam"]) == {5.0}


def test_study_results_put_each_method_once_per_run():
    results = rs.study_results(_synthetic_rows())
    counts = results[results["train_fraction"].eq(0.8) | results["posthoc"].ne("none")].groupby(
        ["dataset", "method"]).size()
    assert set(counts) == {5}
    qr = results[results["method"] == "MIX-NLL + QR"]
    vanilla = results[(results["method"] == "MIX-NLL") & (results["train_fraction"] == 0.8)]
    np.testing.assert_array_equal(qr["test_pce"].to_numpy(), vanilla["test_pce"].to_numpy())


def test_cohens_d_table_matches_the_stats_function_and_its_forms():
    results = rs.study_results(_synthetic_rows())
    authors = rs.cohens_d_table(results, "pce")
    textbook = rs.cohens_d_table(results, "pce", form="textbook")
    sub = results[results["dataset"] == "d2"]
    emp = sub.loc[sub["method"] == "MIX-NLL + Rec-EMP", "test_pce"]
    ref = sub.loc[(sub["method"] == "MIX-NLL") & (sub["train_fraction"] == 0.8), "test_pce"]
    assert authors.loc["d2", "MIX-NLL + Rec-EMP"] == pytest.approx(cohens_d(emp, ref))
    # five runs against five: the authors' d is sqrt(5) times the textbook one
    np.testing.assert_allclose(authors.to_numpy(float), np.sqrt(5) * textbook.to_numpy(float))
    assert (authors["MIX-NLL + Rec-EMP"] < -2).all()  # a "huge" improvement on every dataset
    assert "MIX-NLL" not in authors.columns


def test_cohens_d_of_an_infinite_metric_is_signed_infinity():
    rows = _synthetic_rows(n_datasets=1)
    rows.loc[rows["posthoc"] == "emp", "test_nll"] = math.inf
    table = rs.cohens_d_table(rs.study_results(rows), "nll")
    assert table.loc["d0", "MIX-NLL + Rec-EMP"] == math.inf
    # infinite on both sides: undefined (NaN), and no 'inf - inf' warning
    rows.loc[(rows["method"] == "MIX-NLL") & (rows["train_fraction"] == 0.8), "test_nll"] = math.inf
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        both = rs.cohens_d_table(rs.study_results(rows), "nll", baseline="MIX-NLL + Rec-EMP")
    assert math.isnan(both.loc["d0", "MIX-NLL"]) and both.loc["d0", "MIX-NLL + PCE-KDE"] == -math.inf


def test_run_mean_table_feeds_the_cd_diagram():
    from calibtut.stats import friedman_wilcoxon

    table = rs.run_mean_table(rs.study_results(_synthetic_rows(n_datasets=12)), "pce")
    assert table.shape == (12, 4)
    # QR's selected lambda is 0 here, so its column repeats MIX-NLL's (all-zero differences)
    assert table["MIX-NLL + QR"].equals(table["MIX-NLL"])
    result = friedman_wilcoxon(table.drop(columns="MIX-NLL + QR"))
    assert result.ranks.idxmin() == "MIX-NLL + Rec-EMP"
    assert result.significant


def test_calibration_test_table_rejects_the_miscalibrated_and_keeps_the_calibrated():
    rng = np.random.default_rng(1)
    records = []
    for run in range(3):
        for name, pit in (("calibrated", rng.random(150)), ("skewed", rng.random(150) ** 1.6)):
            from calibtut.metrics import pce

            records.append({"dataset": name, "run": run, "method": "MIX-NLL", "train_fraction": 0.8,
                            "test_pce": pce(pit), "n_test": 150})
    table = rs.calibration_test_table(pd.DataFrame(records), n_sim=4000, seed=0).set_index("dataset")
    assert table.loc["skewed", "reject"] and table.loc["skewed", "reject_paper"]
    assert not table.loc["calibrated", "reject"]
    # a calibrated model's mean PCE on n points: E|U_(i) - i/(n+1)| ~ sqrt(2/pi) sqrt(a(1-a)/n),
    # integrated over a: sqrt(pi/32) / sqrt(n) = 0.0256 at n = 150 (asymptotic; within 10%)
    assert table.loc["calibrated", "calibrated_pce"] == pytest.approx(np.sqrt(np.pi / 32 / 150), rel=0.1)
    # the paper's p-value is never above the conservative one
    assert (table["pvalue_paper"] <= table["pvalue"]).all()


def test_calibration_test_of_sqr_uses_the_19_level_statistic():
    from calibtut.metrics import pce, pce_null_distribution
    from calibtut.models.sqr import EVAL_LEVELS

    rng = np.random.default_rng(2)
    records = [{"dataset": "a", "run": run, "method": "SQR-CRPS (affine)", "train_fraction": 0.8,
                "test_pce": pce(rng.random(100), levels=EVAL_LEVELS), "n_test": 100} for run in range(2)]
    table = rs.calibration_test_table(pd.DataFrame(records), base="sqr-affine", n_sim=3000, seed=0)
    levels = pce_null_distribution([100, 100], n_sim=3000, levels=EVAL_LEVELS, seed=0).mean()
    assert table["calibrated_pce"].iloc[0] == pytest.approx(levels, rel=0.02)
    # the sorted-PIT null is lower (0.0313 against 0.0324 at n = 100): the forms must not mix
    assert pce_null_distribution([100, 100], n_sim=3000, seed=0).mean() < 0.98 * levels


def test_calibration_p_values_are_uniform_for_calibrated_models():
    """Property over seeds: with uniform PITs, the conservative p-value rejects at 0.1 about 10% of the time."""
    rng = np.random.default_rng(7)
    from calibtut.metrics import pce

    records = [{"dataset": f"d{k}", "run": 0, "method": "MIX-NLL", "train_fraction": 0.8,
                "test_pce": pce(rng.random(60)), "n_test": 60} for k in range(80)]
    table = rs.calibration_test_table(pd.DataFrame(records), n_sim=500, seed=0)
    share = float((table["pvalue"] <= 0.1).mean())
    # Binomial(80, 0.1): 99.9% of draws lie in [1, 18] rejections
    assert stats.binom.ppf(0.0005, 80, 0.1) / 80 <= share <= stats.binom.ppf(0.9995, 80, 0.1) / 80


def test_rejection_counts_give_both_readings():
    table = pd.DataFrame({"reject_paper": [True] * 20 + [False] * 4, "reject": [True] * 18 + [False] * 6})
    counts = rs.rejection_counts(table).set_index("reading")
    assert counts.loc["rejected for 11", "paper_rejected"] == 11
    assert counts.loc["not rejected for 11", "paper_rejected"] == 46
    assert counts["ours_rejected"].eq(20).all() and counts["ours_rejected_conservative"].eq(18).all()
    with pytest.raises(ValueError, match="total"):
        rs.rejection_counts(table, printed=11, total=5)


def test_reliability_table_is_long_and_checks_its_method():
    rows = pd.DataFrame([{"dataset": "a", "run": r, "method": "MIX-NLL", "train_fraction": 0.8, "lam": 0.0,
                          "n_test": 10, **{c: a for c, a in zip(rs.FREQ_COLUMNS, EVAL_LEVELS)}} for r in range(2)])
    long = rs.reliability_table(rows)
    assert len(long) == 38 and np.allclose(long["frequency"], long["level"])
    with pytest.raises(ValueError, match="MIX-CRPS"):
        rs.reliability_table(rows, method="MIX-CRPS")


def test_method_means_separate_the_65_percent_base():
    rows = _synthetic_rows(n_datasets=2)
    means = rs.method_means(rows, ["pce"])["test_pce"]
    assert set(means.index) == {"MIX-NLL", "MIX-NLL (65%)", "MIX-NLL + PCE-KDE", "MIX-NLL + QR", "MIX-NLL + Rec-EMP"}
    mask = (rows["method"] == "MIX-NLL") & (rows["train_fraction"] == 0.65)
    assert means["MIX-NLL (65%)"] == pytest.approx(rows.loc[mask, "test_pce"].mean())
    with pytest.raises(TypeError, match="metrics"):
        rs.method_means(rows, "pce")


@pytest.mark.parametrize("fn, args", [
    (rs.method_means, ()),
    (rs.calibration_test_table, ()),
    (rs.selected_lambdas, ()),
    (rs.run_mean_table, ("pce",)),
    (rs.cohens_d_table, ("pce",)),
    (rs.reliability_table, ()),
])
def test_summaries_refuse_what_is_not_a_rows_table(fn, args):
    with pytest.raises(TypeError, match="rows|results|DataFrame"):
        fn([1, 2], *args)
    with pytest.raises(ValueError, match="lacks"):
        fn(pd.DataFrame({"x": [1]}), *args)


# ----------------------------------------------------------------------------- Figures 9-10 and the claims


@needs_mirror
def test_combined_and_train_split_rows():
    rows = rs.run_study_task("Yacht", 0, "mix-nll", lambdas="1", regularizers="qr", epochs=2, combine=True,
                             map_on_train=True)
    by_method = rows.set_index("method")
    # maps on the training split belong to the 80% vanilla network, fitted on its 65% part
    trained = by_method.loc[["MIX-NLL + Rec-LIN (train)", "MIX-NLL + Rec-KDE (train)"]]
    assert (trained["train_fraction"] == 0.8).all() and (trained["map_split"] == "train").all()
    vanilla = by_method.loc["MIX-NLL"].query("train_fraction == 0.8")
    assert (trained["epochs_run"] == vanilla["epochs_run"].iloc[0]).all()
    combo = rows[(rows["regularizer"] == "qr") & (rows["train_fraction"] == 0.65)]
    assert sorted(combo["method"]) == ["MIX-NLL + QR + Rec-EMP", "MIX-NLL + QR + Rec-KDE", "MIX-NLL + QR + Rec-LIN"]
    assert (combo["lam"] == 1.0).all() and (combo["map_split"] == "calibration").all()
    # the flags leave the default rows as they were
    plain = rs.run_study_task("Yacht", 0, "mix-nll", lambdas="1", regularizers="qr", epochs=2)
    assert set(plain["method"]) < set(rows["method"])
    with pytest.raises(ValueError, match="combine"):
        rs.run_study_task("Yacht", 0, "mix-nll", combine=True, fit_posthoc=False, epochs=1)
    with pytest.raises(TypeError, match="map_on_train"):
        rs.run_study_task("Yacht", 0, "mix-nll", map_on_train="yes", epochs=1)


def test_figure_methods_follow_the_paper():
    fig3 = rs.figure_methods("3")
    assert fig3[0] == "MIX-NLL" and len(set(fig3)) == 16 and not any("PCE-Sort" in m for m in fig3)
    assert rs.figure_methods("5") == [m for m in fig3 if not m.startswith("SQR")]
    assert "MIX-CRPS + PCE-Sort" in rs.figure_methods("7") and len(rs.figure_methods("6")) == 7
    fig9 = rs.figure_methods("9", sqr="sqr")
    assert fig9[-2:] == ["SQR-CRPS + CQR", "SQR-CRPS + Trunc + CQR"] and len(fig9) == 14
    assert "MIX-NLL + Rec-KDE (train)" in rs.figure_methods("10")
    with pytest.raises(ValueError, match="figure"):
        rs.figure_methods("2")
    with pytest.raises(ValueError, match="sqr"):
        rs.figure_methods("3", sqr="mix-nll")


def _combo_rows(val_wis, val_pce, test_pce):
    rows = []
    for run in range(3):
        for reg, lam in (("none", 0.0), ("qr", 1.0), ("qr", 5.0)):
            method = "MIX-NLL + Rec-KDE" if reg == "none" else "MIX-NLL + QR + Rec-KDE"
            rows.append({"dataset": "a", "run": run, "base": "mix-nll", "train_fraction": 0.65, "posthoc": "kde",
                         "map_split": "calibration", "regularizer": reg, "lam": lam, "method": method,
                         "val_wis": val_wis[lam], "val_pce": val_pce[lam], "test_pce": test_pce[lam] + 0.01 * run})
    return pd.DataFrame(rows)


def test_combined_results_apply_the_lambda_rule_against_the_map_alone():
    rows = _combo_rows({0.0: 1.0, 1.0: 1.09, 5.0: 1.2}, {0.0: 0.1, 1.0: 0.05, 5.0: 0.01}, {0.0: 0.1, 1.0: 0.2, 5.0: 0})
    out = rs.combined_results(rows)
    combo = out[out["method"] == "MIX-NLL + QR + Rec-KDE"]
    assert (combo["selected_lam"] == 1.0).all() and (combo["lam"] == 1.0).all() and len(combo) == 3
    # too costly everywhere: the map alone under the combined label
    rows = _combo_rows({0.0: 1.0, 1.0: 1.5, 5.0: 1.6}, {0.0: 0.1, 1.0: 0.05, 5.0: 0.01}, {0.0: 0.1, 1.0: 0.2, 5.0: 0})
    combo = rs.combined_results(rows).query("method == 'MIX-NLL + QR + Rec-KDE'")
    assert (combo["lam"] == 0.0).all()
    # the effect is against the same map alone: hand-computed Cohen's d (textbook form)
    rows = _combo_rows({0.0: 1.0, 1.0: 1.0, 5.0: 2.0}, {0.0: 0.1, 1.0: 0.05, 5.0: 0.2}, {0.0: 0.1, 1.0: 0.2, 5.0: 0})
    d = rs.combination_effects(rs.combined_results(rows), "pce", form="textbook")
    assert d.loc["a", "MIX-NLL + QR + Rec-KDE"] == pytest.approx((0.2 - 0.1) / 0.01)
    with pytest.raises(ValueError, match="score"):
        rs.combined_results(rows, score="val_nll")


def _claim_rows(effects, n_datasets=15, seed=0, std=None, nll=None):
    """Synthetic rows of every Figure 3 method: PCE = 0.1 + effect + dataset level + noise.

    ``std`` and ``nll`` map methods to their test STD (both forms) and NLL (default 1).
    """
    std, nll = std or {}, nll or {}
    rng = np.random.default_rng(seed)
    rows = []
    for d in range(n_datasets):
        level = rng.uniform(0, 0.05)
        for method in rs.figure_methods("3"):
            for run in range(2):
                base = "sqr-affine" if method.startswith("SQR") else ("mix-crps" if "CRPS" in method else "mix-nll")
                reg = next((k for k, v in rs.REGULARIZER_LABELS.items() if f"+ {v}" in method), "none")
                post = next((k for k, v in rs.POSTHOC_LABELS.items() if method.endswith(v)), "none")
                pce = 0.1 + effects.get(method, 0.0) + level + 0.001 * rng.normal()
                rows.append({"dataset": f"d{d}", "run": run, "base": base, "method": method, "regularizer": reg,
                             "lam": 1.0 if reg != "none" else 0.0, "posthoc": post, "map_split": "none",
                             "train_fraction": 0.65 if post != "none" else 0.8, "n_test": 200, "val_wis": 1.0,
                             "val_pce": 0.0 if reg != "none" else 0.1, "test_pce": pce, "test_wis": 1.0,
                             "test_nll": math.inf if post == "emp" else nll.get(method, 1.0) + 0.001 * rng.normal(),
                             "test_std": std.get(method, 1.0), "test_std_quantile": std.get(method, 1.0)})
    return pd.DataFrame(rows)


def test_claim_verdicts_follow_the_rows():
    posthoc_best = {m: -0.05 for m in rs.figure_methods("3") if "Rec-" in m or "CQR" in m}
    posthoc_best["MIX-NLL + Rec-EMP"] = -0.08
    out = rs.claim_verdicts(_claim_rows(posthoc_best), n_sim=200, n_boot=10).set_index("claim")
    assert list(out.index) == [f"C{i}" for i in range(1, 18)]
    assert set(out["verdict"]) <= set(Verdict)
    # post-hoc lower than regularization on 15 of 15 datasets: Wilcoxon p = 2/2^15, and at most
    # 120 times that after Holm over the 120 pairs of Figure 3's diagram
    assert out.loc["C3", "verdict"] == "holds" and out.loc["C15", "verdict"] == "holds"
    assert "Figure 3 CD: Friedman p = " in out.loc["C3", "evidence"]
    assert out.loc["C16", "verdict"] == "not run" and out.loc["C13", "verdict"] == "not run"
    assert out.loc["C14", "verdict"] == "not run"
    # the reverse: regularization better, Rec-EMP never the best
    reversed_ = rs.claim_verdicts(_claim_rows({m: -v for m, v in posthoc_best.items()}), n_sim=200, n_boot=10)
    reversed_ = reversed_.set_index("claim")
    assert reversed_.loc["C3", "verdict"] == "does not hold" and reversed_.loc["C15", "verdict"] == "does not hold"
    # three datasets cannot show significance; eight can for one pair (p = 2/2^8), not after Holm:
    # the direction holds, with the test's power at 57 datasets
    few = rs.claim_verdicts(_claim_rows(posthoc_best, n_datasets=3), n_sim=200).set_index("claim")
    assert few.loc["C3", "verdict"] == "not testable at this size"
    eight = rs.claim_verdicts(_claim_rows(posthoc_best, n_datasets=8), n_sim=200, n_boot=20).set_index("claim")
    assert eight.loc["C3", "verdict"] == "direction holds, not significant"
    assert "Holm p = " in eight.loc["C3", "evidence"] and "power at 57 datasets 1.00" in eight.loc["C3", "evidence"]
    with pytest.raises(ValueError, match="min_datasets"):
        rs.claim_verdicts(_claim_rows(posthoc_best), min_datasets=0)


def test_sharpness_claim_compares_like_with_like():
    # every map 5% less sharp than the regularizers in the quantile STD; in the authors' STD the
    # maps' 19 quantiles spread 0.89 of a Gaussian's sigma, which alone would make them look sharper
    maps = [m for m in rs.figure_methods("7") if "Rec-" in m]
    rows = _claim_rows({}, std={m: 1.05 for m in maps})
    rows.loc[rows["posthoc"] != "none", "test_std"] *= 0.8875
    out = rs.claim_verdicts(rows, n_sim=100, n_boot=10).set_index("claim")
    assert out.loc["C12", "verdict"] == "does not hold"
    assert "on std_quantile: 0/15" in out.loc["C12", "evidence"]
    assert "authors' STD: MIX-CRPS + Rec-EMP < MIX-CRPS + PCE-KDE on std: 15/15" in out.loc["C12", "evidence"]


def test_best_calibrated_claim_is_among_figure_14s_five_models():
    # Rec-EMP on MIX-CRPS is better still, but it is not one of Figure 14's five models
    rows = _claim_rows({"MIX-NLL + Rec-EMP": -0.05, "MIX-CRPS + Rec-EMP": -0.08})
    out = rs.claim_verdicts(rows, n_sim=100, n_boot=10).set_index("claim")
    assert out.loc["C15", "verdict"] == "holds" and "on 15/15 datasets" in out.loc["C15", "evidence"]
    rows = _claim_rows({"MIX-NLL + Rec-EMP": -0.05, "MIX-NLL + PCE-KDE": -0.08})
    assert rs.claim_verdicts(rows, n_sim=100, n_boot=10).set_index("claim").loc["C15", "verdict"] == "does not hold"


def test_small_effects_scale_with_runs_and_a_decrease_is_not_harm():
    # Rec-KDE lowers the NLL a lot: "without a large increase" holds, "little effect" would not
    kde = {"MIX-NLL + Rec-KDE": 0.5, "MIX-CRPS + Rec-KDE": 0.5}
    rows = _claim_rows({m: -0.05 for m in kde}, nll=kde)
    checks = rs.claims._Checks(rs.study_results(rows), 0.05, 6, "sqr-affine", 50, 0)
    assert checks.small_effect("MIX-NLL + Rec-KDE", "MIX-NLL", "nll", increase_only=True)[0] == "holds"
    assert checks.small_effect("MIX-NLL + Rec-KDE", "MIX-NLL", "nll")[0] == "does not hold"
    # two runs: the authors' d of a textbook 0.8 / sqrt(5) effect is 0.8 sqrt(2/5)
    assert rs.claims._large_d(2) == pytest.approx(0.8 * math.sqrt(2 / 5))
    assert rs.claims._large_d(5) == pytest.approx(0.8)
    verdict, text = checks.small_effect("MIX-NLL + Rec-KDE", "MIX-NLL", "wis")[:2]  # both constant: d is NaN
    assert verdict in ("holds", "not run")


def test_a_significant_difference_needs_the_claimed_direction():
    # Trunc better than CQR on most datasets by a little, much worse on the rest: the majority
    # says "lower", the one-sided test in that direction does not
    rows = _claim_rows({})
    sqr = rows["method"] == "SQR-CRPS (affine) + Trunc"
    worse = rows["dataset"].isin(["d0", "d1", "d2", "d3", "d4", "d5"])
    rows.loc[sqr & ~worse, "test_pce"] -= 0.002
    rows.loc[sqr & worse, "test_pce"] += 0.05
    checks = rs.claims._Checks(rs.study_results(rows), 0.05, 6, "sqr-affine", 50, 0)
    lower, higher, ties, p = checks.compare("SQR-CRPS (affine) + Trunc", "SQR-CRPS (affine)", "pce")
    assert lower > higher and ties == 0 and p > 0.5
    part = checks.lower("SQR-CRPS (affine) + Trunc", "SQR-CRPS (affine)", "pce", significant=True)
    assert part.verdict == "direction holds, not significant" and part.power < 0.05


def test_figure_effects_use_the_figure_baseline_and_methods():
    rows = _claim_rows({"MIX-CRPS + QR": -0.05, "MIX-CRPS": 0.02}, n_datasets=3)
    results = rs.study_results(rows)
    fig7 = rs.figure_effects(results, "7", "pce", form="textbook")
    assert "MIX-CRPS" not in fig7.columns and "MIX-NLL + QR" not in fig7.columns
    # against MIX-CRPS: QR is 0.07 lower, about 70 run standard deviations (noise sd 0.001)
    assert (fig7["MIX-CRPS + QR"] < -20).all()
    authors = rs.figure_effects(results, "7", "pce")
    np.testing.assert_allclose(authors.to_numpy(), np.sqrt(2) * fig7.to_numpy())
    with pytest.raises(ValueError, match="combination_effects"):
        rs.figure_effects(results, "9", "pce")
    summary = rs.median_effects({"pce": fig7})
    row = summary.set_index("method").loc["MIX-CRPS + QR"]
    assert row["share_negative"] == 1.0 and row["datasets"] == 3
    with pytest.raises(TypeError, match="effects"):
        rs.median_effects([fig7])


def _tie_rows(n_tied, n_lower, n_higher, seed=1):
    """Claim rows where MIX-CRPS + QR ties MIX-CRPS (lambda = 0 selected) on ``n_tied`` datasets.

    On the others QR is selected at lambda = 1 and is 0.01 lower (``n_lower``) or higher in PCE.
    """
    rows = _claim_rows({}, n_datasets=n_tied + n_lower + n_higher, seed=seed)
    qr = rows["method"] == "MIX-CRPS + QR"
    index = rows["dataset"].str[1:].astype(int)
    rows.loc[qr & (index < n_tied), "val_wis"] = 2.0  # above 1.1 x the vanilla's: lambda = 0 is kept
    rows.loc[qr & (index >= n_tied), "test_pce"] = (
        rows.loc[qr & (index >= n_tied), "test_pce"] + np.where(index[qr & (index >= n_tied)] < n_tied + n_lower,
                                                                -0.01, 0.01))
    return rows


def test_ties_are_left_out_of_the_direction_and_reported():
    # the C9: lower on 11 of 23, but 9 are ties (lambda = 0), so 11 of 14 where they differ
    rows = _tie_rows(9, 11, 3)
    selected = rs.selected_lambdas(rows).query("base == 'mix-crps' and regularizer == 'qr'")
    assert (selected["lam"] == 0.0).sum() == 9
    out = rs.claim_verdicts(rows, n_sim=100, n_boot=10, parts=True)
    c9 = out[out["claim"] == "C9"].iloc[0]
    assert c9["verdict"] == "holds" and c9["rule"] == "direction"
    assert (c9["agree"], c9["differ"], c9["ties"]) == (11, 14, 9)
    assert "11/14 datasets where they differ (9 tied)" in c9["evidence"]
    # the same counts without ties: 11 of 23 is no majority
    out = rs.claim_verdicts(_tie_rows(0, 11, 12), n_sim=100, n_boot=10, parts=True)
    assert out[out["claim"] == "C9"].iloc[0]["verdict"] == "does not hold"


def test_tend_to_pools_the_directions_of_the_pairs():
    # pair 1 worse on 12 of 15, pair 2 on 6 of 15: no conjunction of majorities, but 18 of 30
    # (pair, dataset) pooled, which is what "tend to" asks
    rows = _claim_rows({}, n_datasets=15)
    for method, worse in (("MIX-NLL + Rec-LIN", 12), ("MIX-NLL + Rec-KDE", 6)):
        mask = rows["method"] == method
        index = rows.loc[mask, "dataset"].str[1:].astype(int)
        rows.loc[mask, "test_wis"] = np.where(index < worse, 1.1, 0.9)
    checks = rs.claims._Checks(rs.study_results(rows), 0.05, 6, "sqr-affine", 50, 0)
    pairs = [("MIX-NLL", "MIX-NLL + Rec-LIN"), ("MIX-NLL", "MIX-NLL + Rec-KDE")]
    part = checks.tend(pairs, "wis", "vanilla < map")
    assert part.verdict == "holds" and (part.agree, part.differ, part.ties) == (18, 30, 0)
    assert [checks.lower(a, b, "wis").verdict for a, b in pairs] == ["holds", "does not hold"]
    assert checks.tend(pairs[1:], "wis", "vanilla < map").verdict == "does not hold"
    few = rs.claims._Checks(rs.study_results(rows), 0.05, 16, "sqr-affine", 50, 0)
    assert few.tend(pairs, "wis", "vanilla < map").verdict == "not testable at this size"


def test_significance_power_is_seeded_and_grows_with_the_effect():
    rows = _claim_rows({}, n_datasets=12)
    nll = rows["method"] == "MIX-NLL + QR"
    index = rows["dataset"].str[1:].astype(int)
    # QR lower on 8 of 12 datasets by 0.01, higher on 4 by 0.004: pair p about 0.08, no significance
    rows.loc[nll, "test_pce"] += np.where(index[nll] < 8, -0.01, 0.004)
    checks = rs.claims._Checks(rs.study_results(rows), 0.05, 6, "sqr-affine", 100, 3)
    part = checks.lower("MIX-NLL + QR", "MIX-NLL", "pce", significant=True, figure="6")
    assert part.verdict == "direction holds, not significant" and (part.agree, part.differ) == (8, 12)
    assert 0.3 < part.power <= 1.0 and "(100 bootstrap draws, seed 3)" in part.evidence
    again = rs.claims._Checks(rs.study_results(rows), 0.05, 6, "sqr-affine", 100, 3)
    assert again.lower("MIX-NLL + QR", "MIX-NLL", "pce", significant=True, figure="6").power == part.power
    # the pair's own one-sided test (no Holm over Figure 6's 21 pairs) finds it
    pair = checks.lower("MIX-NLL + QR", "MIX-NLL", "pce", significant=True)
    assert pair.verdict == "holds" and "one-sided Wilcoxon p" in pair.evidence and math.isnan(pair.power)


def test_at_ci_sizes_nothing_is_declared_not_to_hold():
    posthoc_best = {m: -0.05 for m in rs.figure_methods("3") if "Rec-" in m or "CQR" in m}
    for effects in (posthoc_best, {m: -v for m, v in posthoc_best.items()}):
        out = rs.claim_verdicts(_claim_rows(effects, n_datasets=2), n_sim=100, parts=True)
        assert "does not hold" not in set(out["verdict"]), out[out["verdict"] == "does not hold"]
        claims = rs.claims.claims_from_parts(out)
        assert set(claims["verdict"]) <= {"not testable at this size", "not run"}
        assert claims.set_index("claim").loc["C1", "verdict"] == "not testable at this size"


def test_claim_is_the_weakest_of_its_judged_parts():
    rows = _claim_rows({m: 0.0 for m in rs.figure_methods("3")}, n_datasets=8)
    cqr = rows["method"] == "SQR-CRPS (affine) + CQR"
    rows.loc[cqr, "test_pce"] -= 0.05
    rows.loc[cqr, "test_std"] = rows.loc[cqr, "test_std_quantile"] = 3.0  # much less sharp
    parts = rs.claim_verdicts(rows, n_sim=100, n_boot=10, parts=True)
    c17 = parts[parts["claim"] == "C17"]
    # the sharpness of CQR is reported, not judged: the paper itself finds CQR less sharp (C12)
    assert set(c17.loc[c17["rule"] == "reported", "verdict"]) == {"not judged"}
    claims = rs.claims.claims_from_parts(parts).set_index("claim")
    assert "sharpness, not judged" in claims.loc["C17", "evidence"]
    assert claims.loc["C17", "verdict"] in ("holds", "does not hold")
    assert claims.equals(rs.claim_verdicts(rows, n_sim=100, n_boot=10).set_index("claim"))
    table = pd.DataFrame({"claim": "C3", "verdict": ["holds", "direction holds, not significant", "not run"],
                          "evidence": ["a", "b", "c"], "datasets": 8})
    assert rs.claims.claims_from_parts(table)["verdict"].item() == "not run"
    table.loc[2, "verdict"] = "does not hold"
    assert rs.claims.claims_from_parts(table)["verdict"].item() == "does not hold"
    assert rs.claims.claims_from_parts(table.iloc[:2])["verdict"].item() == "direction holds, not significant"
    with pytest.raises(TypeError, match="parts"):
        rs.claim_verdicts(rows, parts="yes")


def test_claims_table_puts_verdicts_side_by_side():
    ci = rs.claim_verdicts(_claim_rows({}, n_datasets=3), n_sim=100)
    table = rs.claims_table(ci)
    assert list(table.columns) == ["ours (ci)", "claim", "paper", "evidence"] and len(table) == 17
    full = ci.assign(verdict="holds")
    both = rs.claims_table(ci, full)
    assert both["difference"].tolist() == (ci["verdict"] != "holds").tolist()
    assert "ours (full)" in both.columns
    interim = rs.claims_table(ci, full, label="full, 2 of 5 runs")
    assert interim.columns.tolist()[:2] == ["ours (ci)", "ours (full, 2 of 5 runs)"]
    with pytest.raises(ValueError, match="verdict"):
        rs.claims_table(ci.drop(columns="verdict"))
    with pytest.raises(TypeError, match="label must be"):
        rs.claims_table(ci, full, label="")


def test_posthoc_gains_compare_each_map_with_the_network_it_corrects():
    rows = _synthetic_rows(n_datasets=4, runs=2)
    rows["map_split"] = np.where(rows["posthoc"] == "none", "none", "calibration")
    gains = rs.posthoc_gains(rows)
    assert gains[["base", "posthoc", "datasets"]].values.tolist() == [["MIX-NLL", "Rec-EMP", 4]]
    # the synthetic EMP map sits near 0.02, far below every 65% network (0.09 upwards)
    assert gains["share_lower"].item() == 1.0 and gains["median_ratio"].item() < 0.3
    # a map of a regularized network, or one fitted on the training split, is not counted
    extra = rows[rows["posthoc"] == "emp"].assign(regularizer="qr", test_pce=1.0)
    train = rows[rows["posthoc"] == "emp"].assign(map_split="train", train_fraction=0.8, test_pce=1.0)
    pd.testing.assert_frame_equal(rs.posthoc_gains(pd.concat([rows, extra, train])), gains)
    worse = rows.assign(test_pce=np.where(rows["posthoc"] == "emp", 1.0, rows["test_pce"]))
    assert rs.posthoc_gains(worse)["share_lower"].item() == 0.0
    with pytest.raises(ValueError, match="no post-hoc map"):
        rs.posthoc_gains(rows[rows["posthoc"] == "none"])
    with pytest.raises(ValueError, match="map_split"):
        rs.posthoc_gains(rows.drop(columns="map_split"))


def test_coverage_shift_compares_each_penalty_with_its_vanilla_network():
    rows = _synthetic_rows(n_datasets=4, runs=2)
    # vanilla networks cover 0.90; QR narrows the interval, PCE-KDE widens it
    width = {"none": 0.45, "qr": 0.40, "pce-kde": 0.47}
    rows["freq_05"] = 0.5 - rows["regularizer"].map(width)
    rows["freq_95"] = 0.5 + rows["regularizer"].map(width)
    shift = rs.coverage_shift(rows).set_index(["regularizer", "lam"])
    assert shift["datasets"].tolist() == [4, 4, 4]
    assert shift.loc[("QR", 1.0), "coverage_change"] == pytest.approx(-0.1)
    assert shift.loc[("QR", 1.0), "lower_on"] == 4
    assert shift.loc[("PCE-KDE", 5.0), "lower_on"] == 0
    assert shift.loc[("PCE-KDE", 5.0), "pce_ratio"] < 1
    np.testing.assert_allclose(shift["vanilla_coverage"], 0.9)
    # the 65% network and its map are not vanilla networks of the comparison
    wrong = rows.assign(freq_95=np.where(rows["train_fraction"] == 0.65, 0.0, rows["freq_95"]))
    pd.testing.assert_frame_equal(rs.coverage_shift(wrong), rs.coverage_shift(rows))
    assert rs.coverage_shift(rows, lambdas=[5.0])["lam"].tolist() == [5.0]
    with pytest.raises(ValueError, match="lambdas"):
        rs.coverage_shift(rows, lambdas=[-1.0])
    with pytest.raises(ValueError, match="freq_05"):
        rs.coverage_shift(rows.drop(columns="freq_05"))
    with pytest.raises(ValueError, match="no regularized network"):
        rs.coverage_shift(rows[rows["regularizer"] == "none"])


def _stored_study(root, tasks):
    """A committed study store under ``root`` holding one finished line per (dataset, run, base)."""
    from calibtut.run.store import SweepStore

    store = SweepStore(root / "results" / "regression_study" / "04_comparison_at_scale" / "sweeps" / "study.jsonl")
    for dataset, run, base in tasks:
        task = {"dataset": dataset, "run": run, "base": base}
        store.append({"key": f"{dataset}-{run}-{base}", "status": "ok", "task": task, "seconds": 1.0,
                      "records": [{"method": rs.BASE_LABELS[base], "test_pce": 0.1}]})


def test_complete_runs_keep_whole_runs_only():
    rows = pd.DataFrame([{"dataset": d, "run": r, "base": b} for r in (0, 1, 2) for b in ("mix-nll", "sqr-affine")
                         for d in ("A", "B") if (r, b, d) != (1, "sqr-affine", "B")])
    kept = rs.complete_runs(rows, ["A", "B"], ["mix-nll", "sqr-affine"])
    assert sorted(kept["run"].unique()) == [0, 2] and len(kept) == 8
    # a dataset or base outside the study is dropped, not counted towards completeness
    extra = pd.concat([rows, pd.DataFrame([{"dataset": "C", "run": 1, "base": "mix-nll"}])])
    assert rs.complete_runs(extra, ["A", "B"], ["mix-nll", "sqr-affine"]).equals(kept)
    assert rs.complete_runs(rows, ["A", "B", "C"], ["mix-nll"]).empty
    assert rs.complete_runs(rows.iloc[:0], ["A"], ["mix-nll"]).empty
    with pytest.raises(TypeError, match="rows must be"):
        rs.complete_runs(rows.to_dict(), ["A"], ["mix-nll"])
    with pytest.raises(TypeError, match="datasets must be"):
        rs.complete_runs(rows, "A", ["mix-nll"])
    with pytest.raises(ValueError, match="run"):
        rs.complete_runs(rows.drop(columns="run"), ["A"], ["mix-nll"])


def test_full_study_prefers_the_published_run_then_the_store(tmp_path):
    every = [(d, r, b) for r in range(rs.STUDY_RUNS) for b in rs.STUDY_BASES for d in rs.OFFLINE_DATASETS]
    per_run = len(rs.STUDY_BASES) * len(rs.OFFLINE_DATASETS)
    _stored_study(tmp_path, every[: per_run + 5])  # run 0 and five tasks of run 1
    found = rs.full_study(root=tmp_path)
    assert found.rows is None and found.label is None
    assert found.note.endswith(f"1 complete run ({per_run + 5} of 345 tasks stored).")
    _stored_study(tmp_path, every[per_run + 5: 2 * per_run + 1])
    found = rs.full_study(root=tmp_path)
    assert found.label == "full, 2 of 5 runs" and sorted(found.rows["run"].unique()) == [0, 1]
    assert len(found.rows) == 2 * per_run and found.rows.columns[:3].tolist() == ["dataset", "run", "base"]
    assert "seconds" in found.rows and f"{2 * per_run + 1} of 345 tasks stored" in found.note
    assert rs.full_study(min_runs=3, root=tmp_path).rows is None
    published = tmp_path / "results" / "regression_study" / "04_comparison_at_scale"
    found.rows.to_csv(published / "runs.csv", index=False)
    (published / "provenance.json").write_text('{"finished": "2026-11-24T00:00:00+00:00"}')
    final = rs.full_study(root=tmp_path)
    assert final.label == "full" and final.note.startswith("The full run of 2026-11-24")
    with pytest.raises(ValueError, match="min_runs"):
        rs.full_study(min_runs=1, root=tmp_path)


def test_complete_ablation_runs_need_every_model_of_the_grids():
    tasks = rs.ablation_tasks(["Yacht", "CPU"], [0, 1, 2], epochs=1)
    rows = pd.DataFrame([t for t in tasks if not (t["run"] == 1 and t.get("n_hidden") == 20 and t["dataset"] == "CPU")])
    rows = rows.assign(test_pce=0.1)
    kept = rs.complete_ablation_runs(rows, ["Yacht", "CPU"])
    assert sorted(kept["run"].unique()) == [0, 2] and len(kept) == 2 * len(tasks) // 3
    # a model off the grids (here six components) neither completes a run nor is kept
    odd = pd.concat([rows, pd.DataFrame([{**tasks[0], "n_components": 6, "run": 1}])])
    assert rs.complete_ablation_runs(odd, ["Yacht", "CPU"]).equals(kept)
    # without the n_levels column the levels ablation reads as default models: no run is complete
    assert rs.complete_ablation_runs(rows.drop(columns="n_levels"), ["Yacht", "CPU"]).empty
    assert rs.complete_ablation_runs(rows.iloc[:0], ["Yacht"]).empty
    with pytest.raises(TypeError, match="rows must be"):
        rs.complete_ablation_runs(rows.to_dict(), ["Yacht"])
    with pytest.raises(TypeError, match="datasets must be"):
        rs.complete_ablation_runs(rows, "Yacht")
    with pytest.raises(ValueError, match="run"):
        rs.complete_ablation_runs(rows.drop(columns="run"), ["Yacht"])


def test_full_ablations_prefer_the_published_run_then_the_store(tmp_path):
    from calibtut.run.store import SweepStore

    tasks = rs.ablation_tasks(rs.OFFLINE_DATASETS, range(rs.STUDY_RUNS), epochs=5000)
    per_run = len(tasks) // rs.STUDY_RUNS
    published = tmp_path / "results" / "regression_study" / "05_combining_and_where_to_fit"
    store = SweepStore(published / "sweeps" / "ablations.jsonl")
    for i, task in enumerate(tasks[: 2 * per_run + 3]):  # runs 0 and 1, three tasks of run 2
        store.append({"key": str(i), "status": "ok", "task": task, "seconds": 1.0,
                      "records": [{"method": "MIX-NLL", "test_pce": 0.1}]})
    found = rs.full_ablations(root=tmp_path)
    assert found.label == "full, 2 of 5 runs" and sorted(found.rows["run"].unique()) == [0, 1]
    assert len(found.rows) == 2 * per_run and f"{2 * per_run + 3} of 1725 tasks stored" in found.note
    assert "every dataset and ablated model" in found.note
    assert rs.full_ablations(min_runs=3, root=tmp_path).rows is None
    found.rows.to_csv(published / "ablations.csv", index=False)
    (published / "provenance.json").write_text('{"finished": "2026-11-25T00:00:00+00:00"}')
    final = rs.full_ablations(root=tmp_path)
    assert final.label == "full" and final.note.startswith("The full ablation run of 2026-11-25")
    with pytest.raises(ValueError, match="min_runs"):
        rs.full_ablations(min_runs=0, root=tmp_path)


@needs_mirror
def test_ablation_tasks_run_and_label_their_factor():
    tasks = rs.ablation_tasks(["Yacht"], [0], {"n_components": (1, 3), "n_levels": (4, 64)}, epochs=20)
    assert len(tasks) == 4 and all(t["lambdas"] == "" and t["fit_posthoc"] is False for t in tasks)
    from calibtut.run import sweep

    rows = sweep(tasks, rs.run_study_task, progress=False)
    assert set(rows["n_components"].dropna()) == {1} and set(rows["n_levels"].dropna()) == {4}
    assert len(rows) == 4 and (rows["train_fraction"] == 0.8).all()
    d = rs.ablation_effects(rows, "n_components", "nll")
    assert list(d.columns) == ["n_components = 1"]
    with pytest.raises(ValueError, match="n_levels applies"):
        rs.run_study_task("Yacht", 0, "mix-nll", n_levels=4, epochs=1)
    with pytest.raises(ValueError, match="n_components applies"):
        rs.run_study_task("Yacht", 0, "sqr-affine", n_components=1, epochs=1)
    with pytest.raises(ValueError, match="default"):
        rs.ablation_tasks(["Yacht"], [0], {"n_hidden": (1, 2)})


def _ablation_rows(effects, n_datasets=3, n_runs=3):
    """Ablation rows whose test metrics are ``1 + effect`` (plus small noise) for each (factor, value).

    ``effects`` maps (factor, value) to {metric: effect}; the defaults get 0.
    """
    rng = np.random.default_rng(0)
    configs = [("n_components", None), ("n_levels", None)] + list(effects)
    rows = []
    for d in range(n_datasets):
        for run in range(n_runs):
            for factor, value in configs:
                base = "sqr-affine" if factor == "n_levels" else "mix-nll"
                shift = effects.get((factor, value), {})
                rows.append({"dataset": f"d{d}", "run": run, "base": base, "method": "m", "train_fraction": 0.8,
                             "posthoc": "none", factor: value,
                             **{f"test_{m}": 1.0 + shift.get(m, 0.0) + 0.01 * rng.normal()
                                for m in ("pce", "wis", "nll", "std")}})
    return pd.DataFrame(rows)


def test_ablation_tasks_go_run_by_run():
    tasks = rs.ablation_tasks(["Yacht", "CPU"], [2, 0], {"n_components": (1, 3), "n_hidden": (3, 5)}, epochs=5)
    assert [t["run"] for t in tasks] == [2] * 6 + [0] * 6
    first = [(t["dataset"], t.get("n_components"), t.get("n_hidden")) for t in tasks[:6]]
    assert first == [("Yacht", 1, None), ("CPU", 1, None), ("Yacht", None, None), ("CPU", None, None),
                     ("Yacht", None, 5), ("CPU", None, 5)]


def test_ablation_verdict_reads_each_sentence_on_its_metrics():
    worse = {"wis": 1.0, "nll": 1.0, "std": 1.0, "pce": 1.0}
    as_paper = {("n_components", 1): worse, ("n_components", 5): {},
                ("n_levels", 4): worse, ("n_levels", 16): {m: 0.5 for m in worse},
                ("n_hidden", 2): {"wis": -0.1, "nll": -0.1}, ("n_hidden", 20): worse}
    verdict, evidence = rs.claims._ablation_verdict(_ablation_rows(as_paper))[:2]
    assert verdict == "holds", evidence
    assert "best: 2 layers on wis, 2 layers on nll" in evidence and "n_components = 3" in evidence
    # each sentence can fail on its own
    assert evidence.count("(holds)") == 3
    for key, effect in ((("n_components", 1), {**worse, "std": 0.0}),  # not worse on STD
                        (("n_components", 5), {"nll": 2.0}),  # five components differ more than one
                        (("n_levels", 16), {**worse, "pce": -0.5}),  # 16 levels better calibrated than 64
                        (("n_hidden", 20), {"nll": -0.5})):  # 20 layers best on NLL
        verdict, evidence = rs.claims._ablation_verdict(_ablation_rows({**as_paper, key: effect}))[:2]
        assert verdict == "does not hold", (key, evidence)
        sentence = rs.claims._ABLATION_SENTENCES[key[0]]
        assert f"{sentence} (does not hold)" in evidence and evidence.count("(holds)") == 2, evidence
    # no n_levels ablation, or no single-component model: that part cannot be checked
    no_levels = {k: v for k, v in as_paper.items() if k[0] != "n_levels"}
    verdict, evidence = rs.claims._ablation_verdict(_ablation_rows(no_levels).drop(columns="n_levels"))[:2]
    assert verdict == "not run" and "no n_levels ablation" in evidence
    no_single = {k: v for k, v in as_paper.items() if k != ("n_components", 1)}
    verdict, evidence = rs.claims._ablation_verdict(_ablation_rows(no_single))[:2]
    assert verdict == "not run" and "no single-component model" in evidence
    d = rs.ablation_effects(_ablation_rows(as_paper), "n_components", "nll", form="textbook")
    assert (d["n_components = 1"] > 20).all() and (d["n_components = 5"].abs() < 5).all()


def test_ablation_summary_and_figures_leave_out_what_a_model_lacks():
    import matplotlib

    matplotlib.use("Agg")
    rows = _ablation_rows({("n_components", 1): {"nll": 1.0}, ("n_levels", 4): {"wis": 1.0},
                           ("n_hidden", 5): {"wis": -1.0}})
    rows.loc[rows["base"] == "sqr-affine", "test_nll"] = np.nan  # quantile models have no NLL
    summary = rs.ablation_summary(rows)
    assert set(summary["figure"]) == {"17", "18", "19"}
    assert set(summary.loc[summary["figure"] == "18", "metric"]) == {"pce", "wis", "std"}
    nll = summary.set_index(["method", "metric"]).loc[("n_components = 1", "nll"), "median_d"]
    assert nll > 10
    fig = rs.plot_ablation_figures(rows, title=" (demo)")
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles[:4] == ["Figure 17 (demo): PCE", "Figure 17 (demo): CRPS (19-level WIS)",
                          "Figure 17 (demo): NLL", "Figure 17 (demo): STD"]
    off = [ax for ax in fig.axes if not ax.axison]
    assert len(off) == 1 and off[0].get_title() == "Figure 18 (demo): NLL"
    matplotlib.pyplot.close(fig)
    with pytest.raises(ValueError, match="no ablated model"):
        rs.ablation_summary(rows, ["crps_missing"])
    with pytest.raises(TypeError, match="metrics"):
        rs.ablation_summary(rows, "pce")


def _form_rows(paper_pce, authors_pce, runs=3):
    """Rows of the SQR-form sweep: per dataset the vanilla, 65% base and CQR rows of both forms."""
    rows = []
    for i, (paper, authors) in enumerate(zip(paper_pce, authors_pce)):
        for run in range(runs):
            for base, pce, seconds in (("sqr", paper, 40.0 + i), ("sqr-affine", authors, 2.0)):
                for posthoc, fraction in (("none", 0.8), ("none", 0.65), ("cqr", 0.65)):
                    rows.append({"dataset": f"d{i}", "run": run, "base": base, "posthoc": posthoc,
                                 "train_fraction": fraction, "n_train": 100 - i, "seconds": seconds,
                                 "test_pce": pce + 0.01 * run + (0.5 if fraction == 0.65 and posthoc == "none" else 0),
                                 "test_wis": 1.0 + i, "test_std_quantile": 2.0})
    return pd.DataFrame(rows)


def test_sqr_form_table_and_summary_against_scipy():
    rng = np.random.default_rng(3)
    paper, authors = rng.uniform(0.02, 0.2, 8), rng.uniform(0.02, 0.2, 8)
    table = rs.sqr_form_table(_form_rows(paper, authors))
    # smallest dataset first; run means (the 65% base rows, offset by 0.5, are not read)
    assert table.index.get_level_values("dataset").tolist() == [f"d{i}" for i in range(7, -1, -1)]
    assert np.allclose(table[("vanilla", "pce", "sqr")].loc["d2"], paper[2] + 0.01)
    assert np.allclose(table[("+ CQR", "pce", "sqr-affine")].loc["d5"], authors[5] + 0.01)
    summary = rs.sqr_form_summary(table)
    expected = stats.wilcoxon(paper, authors, zero_method="pratt").pvalue
    assert np.isclose(summary.loc[("vanilla", "pce"), "p"], expected)
    assert summary.loc[("vanilla", "pce"), "lower"] == (paper < authors).sum()
    assert np.isclose(summary.loc[("vanilla", "pce"), "median_ratio"], np.median((paper + 0.01) / (authors + 0.01)))
    # equal WIS everywhere: no test, ratio 1; the cost row compares seconds per task
    assert np.isnan(summary.loc[("vanilla", "wis"), "p"]) and summary.loc[("vanilla", "wis"), "lower"] == 0
    assert np.isclose(summary.loc[("cost", "seconds"), "median_ratio"], np.median((40.0 + np.arange(8)) / 2.0))
    with pytest.raises(ValueError, match="only the SQR forms"):
        rs.sqr_form_table(_form_rows(paper, authors).replace({"base": {"sqr": "mix-nll"}}))
    with pytest.raises(ValueError, match="seconds"):
        rs.sqr_form_table(_form_rows(paper, authors).drop(columns="seconds"))
    with pytest.raises(TypeError, match="sqr_form_table"):
        rs.sqr_form_summary(_form_rows(paper, authors))


def test_full_sqr_forms_prefer_the_published_run_then_the_store(tmp_path):
    from calibtut.run.store import SweepStore

    tasks = rs.sqr_form_tasks(rs.SQR_FORM_DATASETS, range(rs.STUDY_RUNS), epochs=5000)
    assert {(t["base"], t["lambdas"], t["regularizers"]) for t in tasks} == {("sqr", "", ""), ("sqr-affine", "", "")}
    per_run = len(tasks) // rs.STUDY_RUNS
    assert per_run == 2 * len(rs.SQR_FORM_DATASETS) and set(rs.SQR_FORM_DATASETS) <= set(rs.OFFLINE_DATASETS)
    published = tmp_path / "results" / "regression_study" / "06_paper_vs_ours"
    store = SweepStore(published / "sweeps" / "sqr_forms.jsonl")
    for i, task in enumerate(tasks[: 2 * per_run + 1]):
        store.append({"key": str(i), "status": "ok", "task": task, "seconds": 1.0,
                      "records": [{"method": "SQR-CRPS", "test_pce": 0.1}]})
    found = rs.full_sqr_forms(root=tmp_path)
    assert found.label == "full, 2 of 5 runs" and len(found.rows) == 2 * per_run
    assert f"{2 * per_run + 1} of 110 tasks stored" in found.note
    assert rs.full_sqr_forms(min_runs=3, root=tmp_path).rows is None
    found.rows.to_csv(published / "sqr_forms.csv", index=False)
    (published / "provenance.json").write_text('{"finished": "2026-11-24T00:00:00+00:00"}')
    assert rs.full_sqr_forms(root=tmp_path).label == "full"
    with pytest.raises(ValueError, match="datasets must be"):
        rs.sqr_form_tasks(["nowhere"], [0])


@needs_mirror
def test_sqr_forms_run_both_networks():
    from calibtut.run import sweep

    rows = sweep(rs.sqr_form_tasks(["Yacht"], [0], epochs=3), rs.run_study_task, progress=False,
                 seconds="seconds")
    assert set(rows["base"]) == set(rs.SQR_FORMS) and (rows["regularizer"] == "none").all()
    table = rs.sqr_form_table(rows)
    assert table.shape[0] == 1 and table.notna().all().all()


def test_claim_verdicts_take_a_precomputed_pce_test(tmp_path):
    rows = _claim_rows({})
    table = rs.calibration_test_table(rows, n_sim=300, seed=1)
    given = rs.claim_verdicts(rows, test_table=table, n_sim=300, seed=1, n_boot=10)
    assert given.equals(rs.claim_verdicts(rows, n_sim=300, seed=1, n_boot=10))
    # C1 reads the given table: all rejected there, the verdict's evidence says so
    forced = rs.claim_verdicts(rows, test_table=table.assign(reject_paper=True), n_sim=300, n_boot=10)
    assert f"for {len(table)} of {len(table)} datasets" in forced.set_index("claim").loc["C1", "evidence"]
    with pytest.raises(ValueError, match="test_table must test the datasets"):
        rs.claim_verdicts(rows, test_table=table.iloc[1:])
    with pytest.raises(ValueError, match="reject_paper"):
        rs.claim_verdicts(rows, test_table=table.drop(columns="reject_paper"))


def test_full_calibration_test_reads_the_published_table_only_for_the_full_run(tmp_path):
    rows = _claim_rows({}, n_datasets=3)
    computed = rs.calibration_test_table(rows, seed=0)
    full = rs.FullStudy(rows, "full", "")
    pd.testing.assert_frame_equal(rs.full_calibration_test(full, root=tmp_path), computed)
    published = tmp_path / "results" / "regression_study" / "06_paper_vs_ours"
    published.mkdir(parents=True)
    computed.assign(pvalue=0.5).to_csv(published / "full_calibration_test.csv", index=False)
    (published / "provenance.json").write_text('{"finished": "2026-11-24", "parameters": {"seed": 0}}')
    assert (rs.full_calibration_test(full, root=tmp_path)["pvalue"] == 0.5).all()
    # drawn with another seed: computed with this one
    other = rs.full_calibration_test(full, seed=1, root=tmp_path)
    pd.testing.assert_frame_equal(other, rs.calibration_test_table(rows, seed=1))
    # recomputed on request, and always for an interim run
    pd.testing.assert_frame_equal(rs.full_calibration_test(full, recompute=True, root=tmp_path), computed)
    interim = rs.FullStudy(rows, "full, 2 of 5 runs", "")
    pd.testing.assert_frame_equal(rs.full_calibration_test(interim, root=tmp_path), computed)
    with pytest.raises(TypeError, match="full must be"):
        rs.full_calibration_test(rows)
    with pytest.raises(TypeError, match="recompute"):
        rs.full_calibration_test(full, recompute="yes")


def test_full_claim_parts_reads_the_published_parts_only_for_the_full_run(tmp_path):
    rows = _claim_rows({}, n_datasets=3)
    table = rs.calibration_test_table(rows, n_sim=300, seed=0)
    full = rs.FullStudy(rows, "full", "")
    computed = rs.full_claim_parts(full, test_table=table, root=tmp_path)
    assert computed.equals(rs.claim_verdicts(rows, test_table=table, seed=0, parts=True))
    published = tmp_path / "results" / "regression_study" / "06_paper_vs_ours"
    published.mkdir(parents=True)
    computed.assign(verdict="holds").to_csv(published / "claim_parts.csv", index=False)
    (published / "provenance.json").write_text('{"finished": "2026-11-27", "parameters": {"seed": 0}}')
    assert (rs.full_claim_parts(full, test_table=table, root=tmp_path)["verdict"] == "holds").all()
    # another seed, a recompute or an interim run: computed
    for kwargs, study in (({"seed": 1}, full), ({"recompute": True}, full), ({}, rs.FullStudy(rows, "interim", ""))):
        assert not (rs.full_claim_parts(study, test_table=table, root=tmp_path, **kwargs)["verdict"] == "holds").all()
    with pytest.raises(TypeError, match="full must be"):
        rs.full_claim_parts(rows)
    with pytest.raises(TypeError, match="recompute"):
        rs.full_claim_parts(full, recompute=1)


def test_published_calibration_test_needs_the_same_seed(tmp_path):
    published = tmp_path / "results" / "regression_study" / "06_paper_vs_ours"
    published.mkdir(parents=True)
    pd.DataFrame({"dataset": ["a"], "pvalue": [0.5]}).to_csv(published / "full_calibration_test.csv", index=False)
    (published / "provenance.json").write_text('{"finished": "2026-11-24", "parameters": {"seed": 3}}')
    assert rs.published_calibration_test(seed=3, root=tmp_path)["pvalue"].tolist() == [0.5]
    assert rs.published_calibration_test(seed=0, root=tmp_path) is None
    with pytest.raises(ValueError, match="seed"):
        rs.published_calibration_test(seed=-1, root=tmp_path)


def test_method_family_reads_the_label_and_refuses_others():
    from calibtut.experiments.regression_study import method_family

    assert method_family("SQR-CRPS (affine) + CQR") == "post-hoc"
    assert method_family("MIX-CRPS + Rec-LIN (train)") == "post-hoc"
    assert method_family("SQR-CRPS + Trunc") == "regularizer"
    assert method_family("SQR-CRPS (affine)") == "base"
    with pytest.raises(ValueError, match="not a method label"):
        method_family("MIX-NLL + Dropout")
    with pytest.raises(TypeError, match="label must be a str"):
        method_family(3)


def test_letter_value_plot_colours_by_family_and_names_missing_methods():
    import matplotlib

    matplotlib.use("Agg")
    from calibtut.stats import letter_value_plot

    rng = np.random.default_rng(0)
    d = pd.DataFrame({"A": rng.normal(-2, 1, 20), "B": rng.normal(0, 1, 20), "C": rng.normal(1, 1, 20)})
    palette = {"x": "tab:blue", "y": "tab:orange"}
    ax = letter_value_plot(d, families={"A": "x", "B": "y", "C": "x"}, palette=palette, saturation=1)
    from matplotlib.colors import to_rgb

    legend = ax.get_legend()
    shown = {t.get_text(): np.round(to_rgb(h.get_facecolor()), 2)
             for t, h in zip(legend.get_texts(), legend.legend_handles)}
    assert list(shown) == ["x", "y"]  # in the order of the medians
    for family, colour in palette.items():  # each family in its palette colour
        assert np.allclose(shown[family], np.round(to_rgb(colour), 2), atol=0.02), (family, shown)
    with pytest.raises(ValueError, match=r"no family for the methods \['C'\]"):
        letter_value_plot(d, families={"A": "x", "B": "y"})


# ----------------------------------------------------------------------------- map rerun (C11, Rec-LIN ties)


@needs_mirror
def test_map_rerun_task_trains_only_the_posthoc_base_and_both_kde_fits():
    kwargs = {"lambdas": "", "regularizers": "", "epochs": 3}
    both = rs.run_study_task("Yacht", 0, "mix-crps", **kwargs)
    rerun = rs.run_study_task("Yacht", 0, "mix-crps", fit_full=False, kde_resampled=True, **kwargs)
    assert (rerun["train_fraction"] == 0.65).all()
    assert rerun["posthoc"].tolist() == ["none", "emp", "lin", "kde", "kde-resampled"]
    assert rerun["method"].iloc[-1] == "MIX-CRPS + Rec-KDE (resampled)"
    # skipping the 80% models leaves the 65% base and its maps exactly as they were
    metrics = ["test_wis", "test_nll", "test_pce"]
    same = both[both["train_fraction"] == 0.65].reset_index(drop=True)
    pd.testing.assert_frame_equal(same[metrics], rerun[metrics].iloc[:4])
    # the resample is a different fit of the same map on 46 calibration PITs
    assert rerun["test_wis"].iloc[4] != rerun["test_wis"].iloc[3]


@pytest.mark.parametrize("kwargs, error, match", [
    ({"fit_full": False, "map_on_train": True}, ValueError, "fit_full=False"),
    ({"fit_full": False, "fit_posthoc": False}, ValueError, "fit_full=False"),
    ({"fit_full": 0}, TypeError, "fit_full"),
    ({"kde_resampled": "yes"}, TypeError, "kde_resampled"),
    ({"base": "sqr-affine", "kde_resampled": True}, ValueError, "kde_resampled"),
])
def test_map_rerun_options_are_checked(kwargs, error, match):
    args = {"base": "mix-crps", **kwargs}
    with pytest.raises(error, match=match):
        rs.run_study_task("Yacht", 0, args.pop("base"), lambdas="", regularizers="", epochs=1, **args)


def _rerun_rows(wis):
    """Map rerun rows: ``wis[dataset] = (emp, lin, kde, kde-resampled)``, two runs offset by +-0.01."""
    rows = []
    for d, values in wis.items():
        for run, shift in ((0, -0.01), (1, 0.01)):
            for posthoc, value in zip(("emp", "lin", "kde", "kde-resampled"), values):
                rows.append({"dataset": d, "run": run, "base": "mix-crps", "regularizer": "none", "lam": 0.0,
                             "posthoc": posthoc, "train_fraction": 0.65, "map_split": "calibration",
                             "test_wis": value + shift, "test_nll": 1.0})
    return pd.DataFrame(rows)


def test_kde_resampling_table_and_summary_by_hand():
    wis = {"a": (1.0, 1.0, 0.9, 1.2), "b": (2.0, 2.2, 2.1, 2.3), "c": (3.0, 2.9, 2.8, 2.7)}
    table = rs.kde_resampling_table(_rerun_rows(wis))
    assert table.index.tolist() == ["a", "b", "c"] and (table["runs"] == 2).all()
    assert np.allclose(table[("wis", "Rec-KDE (resampled)")], [1.2, 2.3, 2.7])
    summary = rs.kde_resampling_summary(table)
    # all PITs: worse than EMP on b only, than LIN on none; resampled: EMP on a, b; LIN on a, b
    assert summary["worse than Rec-EMP"].tolist() == [1, 2]
    assert summary["worse than Rec-LIN"].tolist() == [0, 2]
    assert summary["datasets"].tolist() == [3, 3]
    assert np.isclose(summary.loc["Rec-KDE (resampled)", "median ratio to Rec-EMP"], np.median([1.2, 2.3 / 2, 0.9]))
    with pytest.raises(ValueError, match="no resampled"):
        rs.kde_resampling_table(_rerun_rows(wis).query("posthoc != 'kde-resampled'"))
    with pytest.raises(ValueError, match="base"):
        rs.kde_resampling_table(_rerun_rows(wis), base="sqr")
    with pytest.raises(ValueError, match="mix-nll"):
        rs.kde_resampling_table(_rerun_rows(wis), base="mix-nll")
    with pytest.raises(TypeError, match="kde_resampling_table"):
        rs.kde_resampling_summary(_rerun_rows(wis))


def test_with_rerun_maps_replaces_only_the_vanilla_posthoc_rows():
    rerun = _rerun_rows({"a": (1.0, 1.1, 1.2, 1.3)})
    keys = {"dataset": "a", "base": "mix-crps", "test_nll": 0.0}
    full = pd.DataFrame([
        {**keys, "run": 0, "regularizer": "none", "lam": 0.0, "posthoc": "none", "train_fraction": 0.8,
         "map_split": "none", "test_wis": 5.0},
        {**keys, "run": 0, "regularizer": "none", "lam": 0.0, "posthoc": "kde", "train_fraction": 0.65,
         "map_split": "calibration", "test_wis": 6.0},
        {**keys, "run": 0, "regularizer": "qr", "lam": 1.0, "posthoc": "kde", "train_fraction": 0.65,
         "map_split": "calibration", "test_wis": 7.0},
        {**keys, "run": 0, "regularizer": "none", "lam": 0.0, "posthoc": "kde", "train_fraction": 0.8,
         "map_split": "train", "test_wis": 8.0},
        {**keys, "run": 2, "regularizer": "none", "lam": 0.0, "posthoc": "kde", "train_fraction": 0.65,
         "map_split": "calibration", "test_wis": 9.0},  # a run the rerun does not hold
    ])
    ours = rs.with_rerun_maps(full, rerun)
    assert sorted(ours.loc[ours["test_wis"] > 4, "test_wis"]) == [5.0, 7.0, 8.0, 9.0]
    kde = ours[(ours["posthoc"] == "kde") & (ours["regularizer"] == "none") & (ours["map_split"] == "calibration")]
    assert sorted(kde["test_wis"].round(2)) == [1.19, 1.21, 9.0]
    authors = rs.with_rerun_maps(full, rerun, kde="kde-resampled")
    kde = authors[(authors["posthoc"] == "kde") & (authors["run"] < 2) & (authors["regularizer"] == "none")
                  & (authors["map_split"] == "calibration")]
    assert sorted(kde["test_wis"].round(2)) == [1.29, 1.31]
    assert set(kde["method"]) == {"MIX-CRPS + Rec-KDE"} and "kde-resampled" not in set(authors["posthoc"])
    # the stored Rec-KDE of the regularized model and of the training split (all PITs) go
    assert sorted(authors.loc[authors["test_wis"] > 4, "test_wis"]) == [5.0, 9.0]
    with pytest.raises(ValueError, match="kde must be"):
        rs.with_rerun_maps(full, rerun, kde="lin")
    with pytest.raises(ValueError, match="full_rows"):
        rs.with_rerun_maps(full.drop(columns="map_split"), rerun)


def test_map_rerun_tasks_and_store(tmp_path):
    from calibtut.run.store import SweepStore

    tasks = rs.map_rerun_tasks(rs.OFFLINE_DATASETS, range(rs.STUDY_RUNS), epochs=5000)
    assert len(tasks) == 2 * 5 * len(rs.OFFLINE_DATASETS)
    assert {(t["fit_full"], t["kde_resampled"], t["lambdas"]) for t in tasks} == {(False, True, "")}
    published = tmp_path / "results" / "regression_study" / "06_paper_vs_ours"
    store = SweepStore(published / "sweeps" / "map_rerun.jsonl")
    per_run = len(tasks) // rs.STUDY_RUNS
    for i, task in enumerate(tasks[: 2 * per_run]):
        store.append({"key": str(i), "status": "ok", "task": task, "seconds": 1.0, "records": [{"test_wis": 1.0}]})
    found = rs.full_map_rerun(root=tmp_path)
    assert found.label == "full, 2 of 5 runs" and len(found.rows) == 2 * per_run
    with pytest.raises(ValueError, match="bases"):
        rs.map_rerun_tasks(["Yacht"], [0], bases=["sqr"])


@needs_mirror
def test_calibration_ties_match_pandas_duplicates():
    ties = rs.calibration_ties(["wine_quality", "Yacht"], [0])
    for row in ties.itertuples():
        split = rs.study_split(row.dataset, row.run)
        frame = pd.DataFrame(split.X[split.cal]).assign(y=split.y[split.cal])
        assert row.n_cal == len(split.cal) and row.tied == frame.duplicated(keep=False).sum()
    assert ties.set_index("dataset").loc["wine_quality", "tied"] > 0
    with pytest.raises(ValueError, match="runs"):
        rs.calibration_ties(["Yacht"], [-1])


def test_rerun_claim_parts_read_c11_with_each_kde_fit(tmp_path):
    full_rows = _claim_rows({}, n_datasets=15)
    crps = full_rows[(full_rows["base"] == "mix-crps") & (full_rows["train_fraction"] == 0.65)]
    rng = np.random.default_rng(5)
    # refitted maps: EMP, LIN and our KDE alike; the resampled KDE worse on every dataset
    refit = crps.assign(test_wis=1.0 + 0.01 * rng.normal(size=len(crps)))
    kde = refit[refit["posthoc"] == "kde"]
    resampled = kde.assign(posthoc="kde-resampled", test_wis=kde["test_wis"] + 0.2)
    rerun = rs.FullStudy(pd.concat([refit, resampled], ignore_index=True), "full", "")
    full = rs.FullStudy(full_rows, "full", "")
    table = rs.calibration_test_table(full_rows, n_sim=300, seed=0)
    parts = rs.rerun_claim_parts(full, rerun, test_table=table, root=tmp_path)
    assert set(parts["maps"]) == set(rs.REFIT_LABELS)
    c11 = parts[parts["claim"] == "C11"].groupby("maps")["verdict"].agg(set)
    assert c11["kde-resampled"] == {"holds"} and "holds" not in c11["kde"]
    stored = rs.claim_verdicts(full_rows, test_table=table, n_boot=10, parts=True)
    verdicts = rs.rerun_claims_table(stored, parts).set_index("claim")
    assert verdicts.loc["C11", "maps refitted, authors' Rec-KDE"] == "holds"
    assert verdicts.loc["C11", "changed"] and not verdicts.loc["C1", "changed"]
    resampled = parts[parts["maps"] == "kde-resampled"]
    assert resampled.loc[resampled["claim"].isin(["C13", "C14"]), "verdict"].tolist() == ["not run"] * 2
    assert list(dict.fromkeys(resampled["claim"])) == [f"C{i}" for i in range(1, 18)]
    # published parts are read back for the full runs only
    published = tmp_path / "results" / "regression_study" / "06_paper_vs_ours"
    published.mkdir(parents=True)
    parts.assign(verdict="holds").to_csv(published / "rerun_claim_parts.csv", index=False)
    (published / "provenance.json").write_text('{"finished": "2026-11-27", "parameters": {"seed": 0}}')
    assert (rs.rerun_claim_parts(full, rerun, root=tmp_path)["verdict"] == "holds").all()
    interim = rs.FullStudy(rerun.rows, "full, 2 of 5 runs", "")
    assert rs.rerun_claim_parts(full, interim, test_table=table, root=tmp_path).equals(parts)
    with pytest.raises(TypeError, match="full must be"):
        rs.rerun_claim_parts(full, rerun.rows)
    with pytest.raises(ValueError, match="rerun_parts lack"):
        rs.rerun_claims_table(stored, parts[parts["maps"] == "kde"])


def test_lin_refit_table_subtracts_the_base_change_by_hand():
    def rows(lin, base, dataset, run, extra=()):
        keys = {"dataset": dataset, "run": run, "base": "mix-crps", "regularizer": "none",
                "train_fraction": 0.65, "map_split": "calibration", "test_wis": 1.0}
        return [{**keys, "posthoc": "none", "test_nll": base}, {**keys, "posthoc": "lin", "test_nll": lin},
                *({**keys, "posthoc": p, "test_nll": 0.0} for p in extra)]

    full = pd.DataFrame(rows(2.0, 1.0, "a", 0) + rows(3.0, 2.0, "b", 0) + rows(9.0, 9.0, "c", 0))
    rerun = pd.DataFrame(rows(1.5, 1.1, "a", 0, ["kde-resampled"]) + rows(3.2, 2.1, "b", 0, ["kde-resampled"]))
    ties = pd.DataFrame({"dataset": ["a", "b", "c"], "run": 0, "n_cal": 10, "tied": [4, 0, 0]})
    table = rs.lin_refit_table(full, rerun, ties)
    # a: (1.5 - 2.0) - (1.1 - 1.0) = -0.6; b: (3.2 - 3.0) - (2.1 - 2.0) = 0.1; c is not rerun
    assert table.index.get_level_values("dataset").tolist() == ["a", "b"]
    assert np.allclose(table["excess"], [-0.6, 0.1]) and table["tied"].tolist() == [4.0, 0.0]
    summary = rs.lin_refit_summary(table)
    assert summary.loc[("mix-crps", "tied"), "lowered"] == 1
    assert summary.loc[("mix-crps", "no ties"), "lowered"] == 0
    with pytest.raises(ValueError, match="share no"):
        rs.lin_refit_table(full[full["dataset"] == "c"], rerun, ties)
    with pytest.raises(ValueError, match="ties"):
        rs.lin_refit_table(full, rerun, ties.drop(columns="tied"))
    with pytest.raises(TypeError, match="lin_refit_table"):
        rs.lin_refit_summary(table.reset_index())
