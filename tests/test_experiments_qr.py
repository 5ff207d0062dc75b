"""Tests of calibtut.experiments.quantile_regularization (paper 003's UCI experiments).

The end-to-end tests read yacht from the offline data mirror and are skipped
unless ``CALIBTUT_DATA_MIRROR`` points at it; they use tiny networks and two
epochs, so they check the plumbing (splits, units, determinism, ranges), not
the paper's numbers, which the notebooks check.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from calibtut.data import MIRROR_ENV
from calibtut.experiments.quantile_regularization import (
    METRIC_LABELS,
    PAPER_TABLES,
    ablation_tables,
    fold_order_summary,
    fold_order_tasks,
    mean_pm_std,
    paper_numbers,
    paper_setting,
    paper_vs_ours_cells,
    paper_vs_ours_view,
    qr_effect,
    recalibration_raises_error,
    run_qr_config,
    spacing_share_below,
)
from calibtut.stats import summarize_runs

MIRROR = os.environ.get(MIRROR_ENV)
needs_mirror = pytest.mark.skipif(
    not MIRROR or not Path(MIRROR).is_dir(),
    reason=f"{MIRROR_ENV} is not set to the offline data mirror (e.g. ../shared/data)",
)
TINY = {"epochs": 2, "width": 16, "n_mc": 4, "n_members": 2, "batch_size": 128}


@needs_mirror
@pytest.mark.parametrize("model, lam", [("dropout", 1.0), ("ensemble", 5.0)])
def test_run_is_deterministic_and_sane(model, lam):
    first = run_qr_config("yacht", 1, model=model, lam=lam, seed=3, kfold_iso=2, **TINY)
    second = run_qr_config("yacht", 1, model=model, lam=lam, seed=3, kfold_iso=2, **TINY)
    assert first == second
    assert (first["n_train"], first["n_test"]) == (246, 62)
    assert first["spacing_k"] == round(math.sqrt(128))
    assert set(METRIC_LABELS) <= set(first)
    for name in ("calib_error", "calib_error_iso", "calib_error_kfold", "calib_error_kfold_iso"):
        # 100 * sum_j (F_hat(j/10) - j/10)^2 lies in [0, 285] (285 when every PIT is below 0.1).
        assert 0 <= first[name] <= 285, (name, first[name])
    # yacht's residuary resistance spans about 0-62: an RMSE in original units is in (0, 62).
    for name in ("rmse", "rmse_iso", "rmse_kfold", "rmse_kfold_iso"):
        assert 0 < first[name] < 62, (name, first[name])
    assert math.isfinite(first["nll"]) and math.isfinite(first["nll_kfold"])
    assert 0 <= first["zero_lik_frac_iso"] <= 1
    assert (first["zero_lik_frac_iso"] > 0) == math.isinf(first["nll_iso"])
    assert first["max_lik"] > 0 and first["max_lik_iso"] >= 0


@needs_mirror
def test_base_model_and_seed_change_the_result():
    base = run_qr_config("yacht", 0, lam=0.0, seed=0, **TINY)
    other = run_qr_config("yacht", 0, lam=0.0, seed=1, **TINY)
    assert base["spacing_k"] == 0 and "calib_error_kfold" not in base
    assert base["rmse"] != other["rmse"]


@needs_mirror
def test_rmse_is_in_original_units():
    # yacht's target has std ~15: a trained model beats the constant predictor (RMSE < std) but,
    # in original units, not by a factor 15 (an RMSE in standardised units would be below 1).
    from calibtut.data import load_regression

    y = load_regression("yacht").y
    result = run_qr_config("yacht", 0, lam=0.0, seed=0, epochs=30, width=32, n_mc=8)
    assert 1 < result["rmse"] < np.std(y)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"model": "gp"}, ValueError, "model must be one of"),
        ({"lam": -1.0}, ValueError, "lam must be"),
        ({"spacing": "log"}, ValueError, "spacing must be"),
        ({"spacing": 64, "spacing_mult": 2.0}, ValueError, "spacing_mult"),
        ({"spacing_mult": 0.0}, ValueError, "spacing_mult"),
        ({"kfold_iso": 1}, ValueError, "kfold_iso"),
        ({"shuffle": 1}, TypeError, "shuffle"),
        ({"device": "tpu"}, ValueError, "device"),
        ({"num_threads": 0}, ValueError, "num_threads"),
    ],
)
def test_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        run_qr_config("yacht", **kwargs)


def test_dataset_must_be_a_string():
    with pytest.raises(TypeError, match="dataset"):
        run_qr_config(["yacht"])


def test_paper_setting_after_csv_round_trip():
    runs = pd.DataFrame({"model": ["dropout", "ensemble", "ensemble", "dropout"], "lam": [1.0, 5.0, 1.0, 1.0],
                         "spacing": ["sqrt", "sqrt", "sqrt", "64"], "spacing_mult": [1.0, 1.0, 1.0, 1.0]})
    assert paper_setting(runs).tolist() == [True, True, False, False]
    with pytest.raises(ValueError, match="lacks"):
        paper_setting(runs.drop(columns="lam"))


# ------------------------------------------------------------------ paper versus ours

def _runs(seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame([
        {"model": model, "dataset": d, "method": m, "fold": f,
         **{c: rng.uniform(1, 30) for c in ("calib_error", "calib_error_iso", "calib_error_kfold",
                                             "calib_error_kfold_iso", "rmse")}}
        for model in ("dropout", "ensemble") for d in ("yacht", "boston", "concrete") for m in ("base", "QR")
        for f in range(3)])


def test_paper_numbers_hold_every_table():
    paper = paper_numbers()
    assert sorted(paper["table"].unique()) == sorted(PAPER_TABLES)
    assert not paper.duplicated(["table", "model", "dataset", "method", "metric"]).any()
    assert set(paper["metric"]) <= set(METRIC_LABELS)


def test_paper_vs_ours_cells_means_and_spread():
    runs = _runs()
    paper = paper_numbers().query("table in ['table1', 'table2']")
    cells = paper_vs_ours_cells(paper, runs, ["calib_error", "rmse"], full=runs, datasets=["yacht", "boston"])
    assert list(cells.columns) == ["paper", "paper std", "ours (ci)", "ours (full)", "ours (full) std", "difference"]
    assert len(cells) == 2 * 2 * 2 * 2  # metrics x models x datasets x methods
    key = ("rmse", "ensemble", "boston", "QR")
    mine = runs.query("model == 'ensemble' and dataset == 'boston' and method == 'QR'")["rmse"]
    assert cells.loc[key, "ours (ci)"] == round(mine.mean(), 2)
    assert cells.loc[key, "ours (full) std"] == round(mine.std(), 2)
    assert (cells.loc[key, "paper"], cells.loc[key, "paper std"]) == (4.49, 0.11)
    with pytest.raises(ValueError, match="no cell"):
        paper_vs_ours_cells(paper, runs, ["calib_error_iso"])
    with pytest.raises(ValueError, match="lacks"):
        paper_vs_ours_cells(paper, runs.drop(columns="rmse"), ["rmse"])


def test_qr_effect_and_recalibration_share():
    runs = _runs(1)
    paper = paper_numbers()
    cells = paper_vs_ours_cells(paper.query("table in ['table1', 'table2']"), runs, ["calib_error", "rmse"])
    effect = qr_effect(cells, "paper")
    assert effect.loc[("ensemble", "yacht"), "qr_lowers_ce"] == (26.81 < 24.18)
    assert effect.loc[("dropout", "boston"), "rmse_ratio"] == pytest.approx(4.58 / 4.59)
    raised = recalibration_raises_error(runs, paper)
    base = runs[runs["method"] == "base"].groupby(["model", "dataset"]).mean(numeric_only=True)
    expected = (base["calib_error_iso"] > base["calib_error"]).groupby("model").mean()
    assert raised["ours: train PITs"].to_dict() == pytest.approx(expected.to_dict())
    # held-out maps are judged against the K-fold average before its maps, not the single model
    held_out = (base["calib_error_kfold_iso"] > base["calib_error_kfold"]).groupby("model").mean()
    assert raised["ours: held-out folds"].to_dict() == pytest.approx(held_out.to_dict())
    # the paper's Tables 4-5 against 1-2 on yacht, boston, concrete: dropout 2 of 3 raised, ensemble 3 of 3
    assert raised["paper: train PITs"].to_dict() == pytest.approx({"dropout": 2 / 3, "ensemble": 1.0})


def test_fold_order_tasks_and_summary():
    tasks = fold_order_tasks(["concrete", "boston"], 2, epochs=3)
    assert len(tasks) == 20 and {t["fold"] for t in tasks} == set(range(5))
    assert sum(t["shuffle"] for t in tasks) == 10 and all(t["lam"] == 0.0 and t["epochs"] == 3 for t in tasks)
    order = pd.DataFrame([{**t, "calib_error": 10.0 * (not t["shuffle"]) + t["fold"]} for t in tasks])
    summary = fold_order_summary(order)
    assert summary.loc["concrete", "CE mean, contiguous folds"] == 12.0
    assert summary.loc["boston", "CE mean, shuffled folds"] == 2.0
    assert summary.loc["boston", "CE std, shuffled folds"] == pytest.approx(np.std(range(5), ddof=1))


def test_paper_vs_ours_view_joins_mean_and_spread():
    runs = _runs(2)
    paper = paper_numbers().query("table in ['table4', 'table5']")
    cells = paper_vs_ours_cells(paper, runs, ["calib_error_iso"], full=runs, datasets=["yacht"])
    view = paper_vs_ours_view(cells)
    assert list(view.columns) == ["paper", "ours (ci)", "ours (full)", "difference"]
    key = ("CE iso (%)", "ensemble", "yacht", "base")
    assert view.loc[key, "paper"] == "81.48 ± 10.89"
    full = cells.loc[("calib_error_iso", "ensemble", "yacht", "base")]
    assert view.loc[key, "ours (full)"] == f"{full['ours (full)']:.2f} ± {full['ours (full) std']:.2f}"
    lik = paper_vs_ours_view(paper_vs_ours_cells(paper, runs.assign(max_lik_iso=1.0), ["max_lik_iso"]))
    assert lik.loc[("max lik. iso", "dropout", "airfoil", "base"), "paper"] == "917.33"  # no std printed
    assert lik.loc[("max lik. iso", "dropout", "kin8nm", "base"), "ours (ci)"] == ""  # not run


def test_mean_pm_std_layout_and_errors():
    runs = _runs(3)
    table = summarize_runs(runs, ["model", "dataset", "method"], ["calib_error", "rmse"])
    view = mean_pm_std(table, ["calib_error", "rmse"])
    assert list(view.columns) == ["CE (%)", "RMSE"] and len(view) == 12
    rows = runs.query("model == 'dropout' and dataset == 'boston' and method == 'QR'")["rmse"]
    assert view.loc[("dropout", "boston", "QR"), "RMSE"] == f"{rows.mean():.2f} ± {rows.std():.2f}"
    with pytest.raises(ValueError, match="metrics must be"):
        mean_pm_std(table.assign(foo_mean=1.0, foo_std=0.0), ["foo"])
    with pytest.raises(ValueError, match="lacks"):
        mean_pm_std(table, ["nll"])


def test_ablation_tables_ratio_to_the_same_fold():
    rows = []
    for fold, base in ((0, 2.0), (1, 4.0)):
        rows.append({"model": "ensemble", "dataset": "yacht", "fold": fold, "lam": 0.0, "spacing": "sqrt",
                     "spacing_mult": 1.0, "calib_error": 30.0, "rmse": base})
        for lam in (1.0, 5.0):
            rows.append({"model": "ensemble", "dataset": "yacht", "fold": fold, "lam": lam, "spacing": "sqrt",
                         "spacing_mult": 1.0, "calib_error": 30.0 - lam, "rmse": base * (1 + lam / 10)})
        rows.append({"model": "ensemble", "dataset": "yacht", "fold": fold, "lam": 5.0, "spacing": "sqrt",
                     "spacing_mult": 3.0, "calib_error": 20.0, "rmse": base})
        rows.append({"model": "ensemble", "dataset": "yacht", "fold": fold, "lam": 5.0, "spacing": 64,
                     "spacing_mult": 1.0, "calib_error": 22.0, "rmse": 2 * base})
    by_lam, by_mult, fixed64 = ablation_tables(pd.DataFrame(rows))
    assert by_lam["lam"].tolist() == [0.0, 1.0, 5.0]
    assert by_lam["rmse_ratio"].tolist() == pytest.approx([1.0, 1.1, 1.5])
    # the paper's L for ensembles is 5: spacing multipliers 1 and 3
    assert by_mult["spacing_mult"].tolist() == [1.0, 3.0]
    assert fixed64[["calib_error", "rmse_ratio"]].values.tolist() == [[22.0, 2.0]]


def test_spacing_share_below_is_per_model_against_its_own_base():
    by_lam = pd.DataFrame({"model": ["dropout", "dropout", "ensemble"], "dataset": ["yacht", "boston", "yacht"],
                           "lam": [0.0, 0.0, 0.0], "calib_error": [10.0, 5.0, 20.0]})
    by_mult = pd.DataFrame({"model": ["dropout"] * 4 + ["ensemble"] * 2,
                            "dataset": ["yacht", "yacht", "boston", "boston", "yacht", "yacht"],
                            "calib_error": [9.0, 11.0, 4.0, 6.0, 19.0, 20.0]})
    # dropout: 9 < 10, 11 > 10, 4 < 5, 6 > 5 -> 1/2; ensemble: 19 < 20, and an equal
    # error does not count as below -> 1/2
    assert spacing_share_below(by_lam, by_mult).to_dict() == {"dropout": 0.5, "ensemble": 0.5}
    with pytest.raises(ValueError, match="without a base row"):
        spacing_share_below(by_lam[by_lam["dataset"] == "yacht"], by_mult)
    with pytest.raises(ValueError, match="several base rows"):
        spacing_share_below(pd.concat([by_lam, by_lam]), by_mult)
    with pytest.raises(ValueError, match="by_mult"):
        spacing_share_below(by_lam, by_mult.drop(columns="calib_error"))
