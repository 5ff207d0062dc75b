"""Tests of calibtut.experiments.drift: the drifted regression benchmark, the decision task, the search helpers.

Loader-based tests read the offline mirror and are skipped unless
``CALIBTUT_DATA_MIRROR`` points at it.
"""

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from calibtut.experiments import drift as bm
from calibtut.online import PRESETS, ACICalibrator, ConformalCalibrator, DriftCalibrator, OriginalForecast
from calibtut.online.metrics import mixed_loss

MIRROR = os.environ.get("CALIBTUT_DATA_MIRROR")
needs_mirror = pytest.mark.skipif(not MIRROR or not Path(MIRROR).is_dir(),
                                  reason="CALIBTUT_DATA_MIRROR is not set to the offline data mirror")
LEVELS = np.arange(1, 10) / 10


def _linear_data(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = 2 * X[:, 0] - X[:, 1] + 0.5 * rng.normal(size=n)
    return X, y


def test_base_forecasts_are_deterministic_and_shaped():
    X, y = _linear_data(600)
    a = bm.gaussian_base_forecasts(X, y, LEVELS, n_steps=30, n_sequences=3, seed=4)
    b = bm.gaussian_base_forecasts(X, y, LEVELS, n_steps=30, n_sequences=3, seed=4)
    c = bm.gaussian_base_forecasts(X, y, LEVELS, n_steps=30, n_sequences=3, seed=5)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert not np.array_equal(a[1], c[1])
    assert a[0].shape == (3, 30, 9) and a[1].shape == (3, 30)
    assert np.all(np.diff(a[0], axis=-1) > 0)


def test_base_forecasts_are_calibrated_without_drift():
    # Gaussian noise and a well-fitted mean: the frequencies of the base quantiles are close to the levels
    # (binomial law over 10 x 100 labels per level; 4 standard errors plus the model's own error).
    X, y = _linear_data(4000, seed=1)
    f, lab = bm.gaussian_base_forecasts(X, y, LEVELS, n_steps=100, n_sequences=10, seed=0)
    freq = np.mean(lab[..., None] <= f, axis=(0, 1))
    se = np.sqrt(LEVELS * (1 - LEVELS) / lab.size)
    assert np.all(np.abs(freq - LEVELS) <= 4 * se + 0.05), freq


def test_base_forecasts_reject_small_data():
    X, y = _linear_data(50)
    with pytest.raises(ValueError, match="too small"):
        bm.gaussian_base_forecasts(X, y, LEVELS, n_steps=45)
    with pytest.raises(ValueError, match="X must be"):
        bm.gaussian_base_forecasts(X[:10], y, LEVELS)


@pytest.mark.parametrize("name, cls", [("original", OriginalForecast), ("conformal", ConformalCalibrator),
                                       ("ours", DriftCalibrator), ("aci", ACICalibrator)])
def test_make_method(name, cls):
    assert type(bm.make_method(name, LEVELS, 5.0)) is cls


def test_make_method_rejects_unknown():
    with pytest.raises(ValueError, match="method"):
        bm.make_method("oracle", LEVELS, 5.0)


def test_score_stream_matches_metrics():
    rng = np.random.default_rng(0)
    q = np.sort(rng.normal(size=(3, 20, 9)), axis=-1)
    y = rng.normal(size=(3, 20))
    table = bm.score_stream(y, q, LEVELS)
    manual = [np.mean([np.mean(np.maximum(a * (y[i] - q[i, :, k]), (a - 1) * (y[i] - q[i, :, k])))
                       for k, a in enumerate(LEVELS)]) for i in range(3)]
    np.testing.assert_allclose(table["pinball"], manual)
    np.testing.assert_allclose(0.4 * table["ece"] + 0.6 * table["pinball"], mixed_loss(y, q, LEVELS))


def test_decision_loss_table():
    # Appendix C.1: rows z <= 4, (4, 6], (6, 8], > 8; shut-down losses 0, .3, .7, 1.
    z = np.array([4.0, 4.5, 6.0, 6.5, 8.0, 8.5])
    expected = {0: [0, 1, 1, 3, 3, 6], 1: [0.3, 0.3, 0.3, 2.3, 2.3, 5.3], 2: [0.7, 0.7, 0.7, 0.7, 0.7, 3.7],
                3: [1, 1, 1, 1, 1, 1]}
    for a, values in expected.items():
        np.testing.assert_allclose(bm.decision_loss(np.full(6, a), z), values)
    np.testing.assert_array_equal(bm.best_action(z), [0, 1, 1, 2, 2, 3])
    with pytest.raises(ValueError, match="action"):
        bm.decision_loss([4], [1.0])
    with pytest.raises(ValueError, match="action"):
        bm.decision_loss([1.5], [1.0])
    with pytest.raises(TypeError, match="z_forecast"):
        bm.best_action(["high"])


def test_random_params_are_seeded_and_in_range():
    a = bm.random_drift_params(20, seed=3)
    b = bm.random_drift_params(20, seed=3)
    assert a == b
    for p in a:
        for name, (_, lo, hi) in bm.SEARCH_SPACE.items():
            assert lo <= getattr(p, name) <= hi
        assert 0 <= p.ki_min <= p.ki_max
    # log-uniform beta: its log is uniform on [log lo, log hi] (Kolmogorov-Smirnov, 1% level)
    lo, hi = bm.SEARCH_SPACE["beta"][1:]
    u = (np.log([p.beta for p in bm.random_drift_params(200, seed=0)]) - np.log(lo)) / np.log(hi / lo)
    assert stats.kstest(u, "uniform").pvalue > 0.01


def test_stack_streams_checks_drift():
    a = bm.BenchmarkStream(np.zeros((1, 3, 2)), np.ones((1, 3)), np.array([0.25, 0.75]), 1.0, "a", "jump")
    b = bm.BenchmarkStream(np.zeros((1, 3, 2)), np.ones((1, 3)), np.array([0.25, 0.75]), 1.0, "b", "cycle")
    with pytest.raises(ValueError, match="drift"):
        bm.stack_streams([a, b])


def test_evaluate_params_mix():
    from calibtut.online import synthetic_tasks

    s = synthetic_tasks(5, 15, seed=0)
    out = bm.evaluate_params(PRESETS["paper"], s.forecasts, s.labels, s.levels, s.B, w_mix=0.25)
    assert out["mix"] == pytest.approx(0.25 * out["ece"] + 0.75 * out["pinball"])
    with pytest.raises(ValueError, match="w_mix"):
        bm.evaluate_params("paper", s.forecasts, s.labels, s.levels, s.B, w_mix=2)


@needs_mirror
def test_streams_share_forecasts_and_drift_labels():
    st = bm.benchmark_streams("yacht", seed=1, n_steps=40, n_sequences=2)
    assert set(st) == set(bm.BENCHMARK_DRIFTS)
    base = st["linear_shift"]
    np.testing.assert_array_equal(base.forecasts, st["jump"].forecasts)
    undrifted = base.labels - 0.1 * np.arange(1, 41)
    np.testing.assert_allclose(st["jump"].labels - undrifted, np.where(np.arange(1, 41) >= 20, 3.0, 0.0)[None, :]
                               * np.ones((2, 1)), atol=1e-12)
    for s in st.values():
        assert np.all(np.abs(s.labels) <= s.B) and np.all(np.abs(s.forecasts) <= s.B) and s.B == int(s.B)


@needs_mirror
def test_benchmark_table_is_deterministic_and_resumable(tmp_path):
    kwargs = dict(n_steps=25, drifts="jump,cycle", methods="original,conformal,ours,regret")
    first = bm.benchmark_table(["yacht"], [0], store=tmp_path, **kwargs)
    assert len((tmp_path / "drift_benchmark.jsonl").read_text().splitlines()) == 1  # one finished task stored
    again = bm.benchmark_table(["yacht"], [0], store=tmp_path, **kwargs)
    fresh = bm.benchmark_table(["yacht"], [0], **kwargs)
    pd.testing.assert_frame_equal(first, again)
    pd.testing.assert_frame_equal(first, fresh)
    assert set(first.method) == {"original", "conformal", "ours", "regret"}
    assert not first[["pinball", "ece", "sharpness"]].isna().any().any()
    # the original forecast ignores the jump of +3 from t = 13 on: its ECE is large
    orig = first[(first.method == "original") & (first.drift == "jump")]
    assert float(orig.ece.iloc[0]) > 0.15


@needs_mirror
def test_unknown_dataset_is_named():
    with pytest.raises(ValueError, match="dataset"):
        bm.benchmark_streams("mnist")


# ------------------------------------------------------------------ Table 1's summary tables

def _random_rows(seed=0, n_seq=6):
    rng = np.random.default_rng(seed)
    rows = [{"dataset": d, "seed": 0, "drift": drift, "method": m, "sequence": q,
             "pinball": rng.uniform(0, 3), "ece": rng.uniform(0, 0.5), "sharpness": rng.uniform(0, 5)}
            for d in ("yacht", "energy") for drift in bm.BENCHMARK_DRIFTS for m in bm.BENCHMARK_METHODS
            for q in range(n_seq)]
    return pd.DataFrame(rows)


def test_benchmark_tasks_are_the_sweep_grid():
    tasks = bm.benchmark_tasks(["yacht", "energy"], [3, 4], n_steps=50, methods="ours")
    assert [(t["dataset"], t["seed"]) for t in tasks] == [("yacht", 3), ("yacht", 4), ("energy", 3), ("energy", 4)]
    assert all(t["n_steps"] == 50 and t["methods"] == "ours" and isinstance(t["aci_gamma"], float) for t in tasks)
    with pytest.raises(ValueError, match="datasets"):
        bm.benchmark_tasks(["atlantis"], [0])
    with pytest.raises(ValueError, match="seeds"):
        bm.benchmark_tasks(["yacht"], [-1])


def test_table1_rows_labels_and_rejects():
    rows = bm.table1_rows(_random_rows().assign(n_steps=100))
    assert list(rows.columns) == ["dataset", "seed", "drift", "method", "sequence", "pinball", "ece", "sharpness"]
    assert set(rows["method"]) == set(bm.METHOD_LABELS.values())
    with pytest.raises(ValueError, match="outside"):
        bm.table1_rows(_random_rows().replace({"method": {"ours": "mine"}}))
    with pytest.raises(ValueError, match="lacks"):
        bm.table1_rows(_random_rows().drop(columns="ece"))
    with pytest.raises(TypeError, match="bench"):
        bm.table1_rows([1, 2])


def test_table1_summary_is_the_groupby_mean():
    rows = bm.table1_rows(_random_rows())
    summary = bm.table1_summary(rows)
    assert list(summary.columns) == list(bm.METHOD_LABELS.values())
    assert len(summary) == len(bm.BENCHMARK_DRIFTS) * 3
    for drift, metric, method in [("jump", "ece", "ours"), ("cycle", "pinball", "regret"),
                                  ("scale_shift", "sharpness", "ACI")]:
        expected = rows.loc[(rows["drift"] == drift) & (rows["method"] == method), metric].mean()
        assert summary.loc[(drift, metric), method] == pytest.approx(expected, rel=1e-12)


def test_paired_difference_is_a_paired_t_test_over_base_models():
    # 2 datasets x 3 seeds = 6 base models, 6 sequences each
    rows = bm.table1_rows(pd.concat([_random_rows(seed=3 + k).assign(seed=k) for k in range(3)]))
    out = bm.paired_difference(rows, "ece", "conf.", "ours")
    assert (out["n"] == 6).all()
    for drift in bm.BENCHMARK_DRIFTS:
        per = {m: rows[(rows["drift"] == drift) & (rows["method"] == m)].groupby(["dataset", "seed"])["ece"].mean()
               for m in ("conf.", "ours")}
        t = stats.ttest_rel(per["conf."].to_numpy(), per["ours"].to_numpy())
        assert out.loc[drift, "mean"] / out.loc[drift, "se"] == pytest.approx(t.statistic, rel=1e-9)
        assert out.loc[drift, "p"] == pytest.approx(t.pvalue, rel=1e-9)
        one_sided = stats.ttest_rel(per["conf."].to_numpy(), per["ours"].to_numpy(), alternative="greater")
        assert bm.paired_difference(rows, "ece", "conf.", "ours", alternative="greater").loc[drift, "p"] == (
            pytest.approx(one_sided.pvalue, rel=1e-9))
    with pytest.raises(ValueError, match="metric"):
        bm.paired_difference(rows, "crps", "conf.", "ours")
    with pytest.raises(ValueError, match="b must be a method"):
        bm.paired_difference(rows, "ece", "conf.", "mine")
    with pytest.raises(ValueError, match="two different methods"):
        bm.paired_difference(rows, "ece", "ours", "ours")
    with pytest.raises(ValueError, match="alternative"):
        bm.paired_difference(rows, "ece", "conf.", "ours", alternative="bigger")


def test_paired_difference_does_not_count_sequences_of_one_model_as_independent():
    # a base-model effect shared by all its sequences: per-sequence pairs would give
    # n = 48 and a tiny standard error; over the 2 base models the evidence is weak
    rng = np.random.default_rng(1)
    rows = bm.table1_rows(_random_rows(seed=5, n_seq=24))
    shift = {"yacht": 0.2, "energy": -0.1}
    ours = rows["method"] == "ours"
    rows.loc[ours, "ece"] = rows.loc[ours, "dataset"].map(shift) + rng.normal(0, 0.01, ours.sum())
    rows.loc[~ours, "ece"] = rng.normal(0, 0.01, (~ours).sum())
    out = bm.paired_difference(rows, "ece", "ours", "conf.")
    assert (out["n"] == 2).all()
    assert (out["p"] > 0.1).all() and (out["se"] > 0.1).all()


def test_table1_vs_paper_reads_the_paper_file():
    rows = bm.table1_rows(_random_rows())
    table = bm.table1_vs_paper(rows, rows=bm.BENCHMARK_DRIFTS, full=rows)
    assert list(table.columns) == ["row", "metric", "method", "paper", "ours (ci)", "ours (full)", "difference"]
    # 4 drifts x 3 metrics x 4 methods, less the unreadable Bench-shift regret pinball loss
    assert len(table) == 47
    cell = table.set_index(["row", "metric", "method"]).loc[("jump", "ece", "ours")]
    assert cell["paper"] == 0.073
    mean = rows.loc[(rows["drift"] == "jump") & (rows["method"] == "ours"), "ece"].mean()
    assert cell["ours (ci)"] == round(mean, 3)
    assert cell["difference"] == pytest.approx(cell["ours (full)"] - cell["paper"], abs=1.5e-3)
    series = rows.rename(columns={"drift": "row"}).replace({"row": {"jump": "COVID"}})
    covid = bm.table1_vs_paper(series, rows=["COVID"], by="row")
    assert len(covid) == 11 and covid["ours (ci)"].notna().all()
    with pytest.raises(ValueError, match="rows"):
        bm.table1_vs_paper(rows, rows=["Bench-shift"])


def test_table2_vs_paper_reads_the_paper_file():
    rng = np.random.default_rng(0)
    weights = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    table2 = pd.DataFrame({"candidate": [f"c{i}" for i in range(6)], "pinball": rng.uniform(0.1, 0.2, 6),
                           "ece": rng.uniform(0, 0.03, 6), "sharpness": rng.uniform(0.7, 1.0, 6)},
                          index=pd.Index(weights, name="w_mix"))
    table = bm.table2_vs_paper(table2)
    assert len(table) == 18 and table["ours (ci)"].notna().all()
    cell = table.set_index(["w_mix", "metric"]).loc[(0.4, "ece")]
    assert cell["paper"] == 0.009 and cell["ours (ci)"] == round(table2.loc[0.4, "ece"], 3)
    with pytest.raises(ValueError, match="w_mix"):
        bm.table2_vs_paper(table2.reset_index(drop=True))


def test_the_drift_part_does_not_load_torch():
    """The drift chapters never import torch; the quantile-regularization part does."""
    import subprocess
    import sys

    code = ("import sys, calibtut.experiments.drift; assert 'torch' not in sys.modules; "
            "import calibtut.experiments.quantile_regularization; assert 'torch' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_search_tasks_and_candidates():
    tasks = bm.search_tasks(3, n_candidates=2, syn_series=10, syn_steps=20, datasets=["yacht", "energy"])
    assert [t["candidate"] for t in tasks] == ["paper", "torchuq", "random 0", "random 1"]
    assert all(t["datasets"] == "yacht,energy" and t["seed"] == 3 for t in tasks)
    cands = bm.search_candidates(2, 3)
    assert cands["paper"] == PRESETS["paper"] and cands["random 1"] == bm.random_drift_params(2, seed=3)[1]
    with pytest.raises(ValueError, match="datasets"):
        bm.search_tasks(0, n_candidates=1, syn_series=10, syn_steps=20, datasets=["atlantis"])
    with pytest.raises(ValueError, match="n_candidates"):
        bm.search_tasks(0, n_candidates=0, syn_series=10, syn_steps=20, datasets=["yacht"])


@needs_mirror
def test_run_search_task_matches_evaluate_params():
    kwargs = dict(n_candidates=1, syn_series=8, syn_steps=15, datasets="yacht", n_sequences=1, n_steps=20)
    row = bm.run_search_task("random 0", 0, **kwargs)
    tuning, _, real = bm.search_streams(0, syn_series=8, syn_steps=15, datasets=["yacht"], n_sequences=1,
                                        n_steps=20)
    p = bm.search_candidates(1, 0)["random 0"]
    expected = bm.evaluate_params(p, real["jump"].forecasts, real["jump"].labels, real["jump"].levels, real["jump"].B)
    assert row["jump mix"] == expected["mix"]
    assert row["synthetic ece"] == bm.evaluate_params(p, tuning.forecasts, tuning.labels, tuning.levels,
                                                      tuning.B)["ece"]
    with pytest.raises(ValueError, match="candidate"):
        bm.run_search_task("random 7", 0, **kwargs)
