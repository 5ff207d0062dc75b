"""The tables of paper 003's UCI experiments: our runs summarized as the paper prints them and beside its numbers.

:func:`mean_pm_std` writes the paper's "mean ± std" cells from
:func:`calibtut.stats.summarize_runs` of our folds and repeats; :func:`paper_numbers` reads Tables 1, 2 and 4-7
from :mod:`calibtut.papers`, and :func:`paper_vs_ours_cells` /
:func:`paper_vs_ours_view` put every cell beside ours. :func:`qr_effect`,
:func:`recalibration_raises_error` and :func:`fold_order_summary` are the
comparisons behind the chapters' claims; :func:`ablation_tables` and
:func:`spacing_share_below` the tables behind the ablation figures (Figures 5-12);
:func:`uci_claims` checks the paper's claims about its UCI tables, each with a verdict.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from calibtut._validation import check_choices, check_frame, check_real
from calibtut.experiments.quantile_regularization.tasks import PAPER_LAMBDA
from calibtut.papers import paper_table
from calibtut.run import Verdict, paper_vs_ours, verdict_table

__all__ = [
    "PAPER_TABLES",
    "SHORT_METRIC_LABELS",
    "ablation_tables",
    "fold_order_summary",
    "mean_pm_std",
    "paper_numbers",
    "paper_setting",
    "paper_vs_ours_cells",
    "paper_vs_ours_view",
    "qr_effect",
    "recalibration_raises_error",
    "spacing_share_below",
    "uci_claims",
]


def paper_setting(runs):
    """Boolean mask of the runs in the setting of Tables 1-2: base or the paper's ``L``, ``k = sqrt(n)``.

    Parameters
    ----------
    runs : pandas.DataFrame
        Rows of a sweep of :func:`run_qr_config` with the columns ``model``,
        ``lam``, ``spacing`` and ``spacing_mult`` (``spacing`` may hold
        ``"sqrt"`` and integers, or their text after a round trip through CSV).

    Returns
    -------
    pandas.Series of bool

    Examples
    --------
    >>> runs = pd.DataFrame({"model": ["dropout"] * 3, "lam": [0.0, 1.0, 3.0], "spacing": ["sqrt"] * 3,
    ...                      "spacing_mult": [1.0] * 3})
    >>> paper_setting(runs).tolist()
    [True, True, False]
    """
    check_frame(runs, "runs", ["model", "lam", "spacing", "spacing_mult"])
    paper_lam = runs["model"].map(PAPER_LAMBDA)
    return ((runs["spacing"].astype(str) == "sqrt") & (runs["spacing_mult"] == 1.0)
            & ((runs["lam"] == 0) | (runs["lam"] == paper_lam)))


#: The paper's UCI tables shipped in :mod:`calibtut.papers`: Tables 1-2 (base vs QR), 4-5 (after isotonic),
#: 6-7 (K-fold).
PAPER_TABLES = ("table1", "table2", "table4", "table5", "table6", "table7")

_CELL = ["model", "dataset", "method"]


def paper_numbers():
    """The paper's Tables 1, 2 and 4-7 in one long frame, read from :mod:`calibtut.papers`.

    Returns
    -------
    pandas.DataFrame
        Columns ``table`` (``"table1"``, ...), ``model``, ``dataset``,
        ``method``, ``metric`` (a :data:`METRIC_LABELS` key), ``mean`` and
        ``std`` as printed.

    Examples
    --------
    >>> paper = paper_numbers()
    >>> sorted(paper["table"].unique()) == sorted(PAPER_TABLES)
    True
    >>> paper.query("table == 'table2' and dataset == 'yacht' and metric == 'calib_error'")["mean"].tolist()
    [24.18, 26.81]
    """
    frames = [paper_table("quantile_regularization", t).assign(table=t) for t in PAPER_TABLES]
    return pd.concat(frames, ignore_index=True)[["table", *_CELL, "metric", "mean", "std"]]


def paper_vs_ours_cells(paper, ours, metrics, *, full=None, methods=("base", "QR"), datasets=None):
    """Every cell of some of the paper's tables beside ours, one line per (metric, model, dataset, method).

    Parameters
    ----------
    paper : pandas.DataFrame
        Rows of :func:`paper_numbers`, one per cell (select the tables first:
        Tables 1-2 and 6-7 both hold ``calib_error``).
    ours : pandas.DataFrame
        Our ``ci`` runs with the columns ``model``, ``dataset``, ``method``
        (``"base"`` or ``"QR"``) and the ``metrics``; folds are averaged.
    metrics : list of str
        Metric columns, in display order.
    full : pandas.DataFrame, optional
        The full run, laid out like ``ours``.
    methods : sequence of str, default ("base", "QR")
    datasets : sequence of str, optional
        Keep only these datasets (default: all of the paper's).

    Returns
    -------
    pandas.DataFrame
        Index ``(metric, model, dataset, method)`` in the paper's order;
        columns ``paper``, ``paper std``, ``ours (ci)``, then with ``full``
        ``ours (full)`` and ``ours (full) std`` (the spread over the full
        run's folds), and ``difference`` (ours minus paper, the full run
        where given). Rounded to 2 decimals.

    Examples
    --------
    >>> paper = paper_numbers().query("table == 'table1'")
    >>> ours = pd.DataFrame({"model": "dropout", "dataset": "yacht", "method": ["base", "QR"],
    ...                      "calib_error": [10.0, 8.0]})
    >>> cells = paper_vs_ours_cells(paper, ours, ["calib_error"], datasets=["yacht"])
    >>> cells.index.tolist()
    [('calib_error', 'dropout', 'yacht', 'base'), ('calib_error', 'dropout', 'yacht', 'QR')]
    >>> cells.to_dict("list")
    {'paper': [29.52, 29.0], 'paper std': [3.36, 2.7], 'ours (ci)': [10.0, 8.0], 'difference': [-19.52, -21.0]}
    """
    check_frame(paper, "paper", [*_CELL, "metric", "mean", "std"])
    metrics = [metrics] if isinstance(metrics, str) else list(metrics)
    check_frame(ours, "ours", [*_CELL, *metrics])
    if full is not None:
        check_frame(full, "full", [*_CELL, *metrics])
    parts = []
    for metric in metrics:
        want = paper[(paper["metric"] == metric) & paper["method"].isin(methods)]
        if datasets is not None:
            want = want[want["dataset"].isin(list(datasets))]
        if want.empty:
            raise ValueError(f"paper has no cell of metric {metric!r} for methods {list(methods)}")
        runs = None if full is None else full[[*_CELL, metric]]
        table = paper_vs_ours(want.rename(columns={"mean": metric})[[*_CELL, metric]], ours[[*_CELL, metric]],
                              on=_CELL, value=metric, full=runs, decimals=2)
        table.insert(len(_CELL) + 1, "paper std", want["std"].round(2).to_numpy())
        if runs is not None:
            spread = runs.groupby(_CELL)[metric].std().round(2).rename("ours (full) std").reset_index()
            table = table.merge(spread, on=_CELL, how="left")
            table.insert(table.columns.get_loc("ours (full)") + 1, "ours (full) std", table.pop("ours (full) std"))
        parts.append(table.assign(metric=metric))
    return pd.concat(parts, ignore_index=True).set_index(["metric", *_CELL])


def qr_effect(cells, source):
    """Per (model, dataset): does QR lower the calibration error, and the QR / base RMSE ratio, for one source.

    Parameters
    ----------
    cells : pandas.DataFrame
        What :func:`paper_vs_ours_cells` returns for ``calib_error`` and ``rmse``.
    source : str
        One of its columns: ``"paper"``, ``"ours (ci)"`` or ``"ours (full)"``.

    Returns
    -------
    pandas.DataFrame
        Index ``(model, dataset)``; columns ``qr_lowers_ce`` (bool) and
        ``rmse_ratio``.

    Examples
    --------
    >>> paper = paper_numbers().query("table == 'table1' and dataset == 'yacht'")
    >>> ours = pd.DataFrame({"model": "dropout", "dataset": "yacht", "method": ["base", "QR"],
    ...                      "calib_error": [10.0, 8.0], "rmse": [4.0, 5.0]})
    >>> qr_effect(paper_vs_ours_cells(paper, ours, ["calib_error", "rmse"]), "ours (ci)").values.tolist()
    [[True, 1.25]]
    """
    check_frame(cells, "cells", [source])
    wide = cells[source].unstack("method")
    return pd.DataFrame({
        "qr_lowers_ce": wide.loc["calib_error", "QR"] < wide.loc["calib_error", "base"],
        "rmse_ratio": wide.loc["rmse", "QR"] / wide.loc["rmse", "base"],
    })


def _share_raised(after, before):
    raised = (after > before).where(after.notna() & before.notna())
    return raised.groupby("model").mean()


def recalibration_raises_error(runs, paper):
    """Share of datasets, per model, on which isotonic recalibration raises the base model's calibration error.

    Three columns: the paper (Tables 1-2 against 4-5), our runs with the map
    fitted on the training PITs, and our runs with the K-fold variant, whose
    maps are fitted on held-out folds (against the K-fold average before its
    maps). A dataset enters a column only where
    both numbers exist.

    Parameters
    ----------
    runs : pandas.DataFrame
        Rows of :func:`run_qr_config` with a ``method`` column; the ``"base"``
        rows are averaged over folds.
    paper : pandas.DataFrame
        :func:`paper_numbers`.

    Returns
    -------
    pandas.DataFrame
        Index ``model``; columns ``paper: train PITs``, ``ours: train PITs``,
        ``ours: held-out folds``, shares in [0, 1].

    Examples
    --------
    >>> runs = pd.DataFrame({"model": "ensemble", "dataset": ["yacht", "boston"], "method": "base",
    ...                      "calib_error": [5.0, 5.0], "calib_error_iso": [7.0, 4.0],
    ...                      "calib_error_kfold": [4.5, 4.5], "calib_error_kfold_iso": [4.0, 4.0]})
    >>> recalibration_raises_error(runs, paper_numbers()).round(2).to_dict("records")
    [{'paper: train PITs': 1.0, 'ours: train PITs': 0.5, 'ours: held-out folds': 0.0}]
    """
    columns = ["calib_error", "calib_error_iso", "calib_error_kfold", "calib_error_kfold_iso"]
    check_frame(runs, "runs", ["model", "dataset", "method", *columns])
    check_frame(paper, "paper", ["table", *_CELL, "metric", "mean"])
    ours = runs[runs["method"] == "base"].groupby(["model", "dataset"])[columns].mean()
    printed = paper[paper["table"].isin(["table1", "table2", "table4", "table5"]) & (paper["method"] == "base")]
    printed = printed.pivot(index=["model", "dataset"], columns="metric", values="mean").reindex(ours.index)
    return pd.DataFrame({
        "paper: train PITs": _share_raised(printed["calib_error_iso"], printed["calib_error"]),
        "ours: train PITs": _share_raised(ours["calib_error_iso"], ours["calib_error"]),
        "ours: held-out folds": _share_raised(ours["calib_error_kfold_iso"], ours["calib_error_kfold"]),
    })


def fold_order_summary(order):
    """Mean and spread of the calibration error over contiguous and over shuffled folds, one row per dataset.

    Parameters
    ----------
    order : pandas.DataFrame
        Rows of a sweep of :func:`fold_order_tasks`.

    Returns
    -------
    pandas.DataFrame
        Index ``dataset``; columns ``CE mean, contiguous folds``,
        ``CE mean, shuffled folds``, ``CE std, contiguous folds`` and
        ``CE std, shuffled folds``.

    Examples
    --------
    >>> order = pd.DataFrame({"dataset": "concrete", "shuffle": [False, False, True, True],
    ...                       "calib_error": [9.0, 11.0, 2.0, 4.0]})
    >>> fold_order_summary(order).iloc[0].tolist()
    [10.0, 3.0, 1.4142135623730951, 1.4142135623730951]
    """
    check_frame(order, "order", ["dataset", "shuffle", "calib_error"])
    table = order.pivot_table(index="dataset", columns="shuffle", values="calib_error", aggfunc=["mean", "std"])
    table.columns = [f"CE {stat}, {'shuffled' if shuffled else 'contiguous'} folds" for stat, shuffled in
                     table.columns]
    return table


#: Short metric names for the book's comparison tables (the full names are :data:`METRIC_LABELS`).
SHORT_METRIC_LABELS = {
    "calib_error": "CE (%)",
    "rmse": "RMSE",
    "nll": "NLL",
    "calib_error_iso": "CE iso (%)",
    "rmse_iso": "RMSE iso",
    "max_lik_iso": "max lik. iso",
    "calib_error_kfold": "CE K-fold (%)",
    "calib_error_kfold_iso": "CE K-fold iso (%)",
}


def _plus_minus(mean, std):
    if pd.isna(mean):
        return ""
    return f"{mean:.2f}" if pd.isna(std) else f"{mean:.2f} ± {std:.2f}"


def paper_vs_ours_view(cells):
    """The comparison of :func:`paper_vs_ours_cells` as the book shows it: paper, ours (ci), ours (full), difference.

    Means and standard deviations share a cell (``"29.52 ± 3.36"``), and
    metrics get their short names (:data:`SHORT_METRIC_LABELS`), so the table
    fits the page; the numbers stay in ``cells``.

    Parameters
    ----------
    cells : pandas.DataFrame
        What :func:`paper_vs_ours_cells` returns.

    Returns
    -------
    pandas.DataFrame
        Same index, text columns ``paper``, ``ours (ci)``, ``ours (full)``
        (when ``cells`` has it) and ``difference``; blank where a number is missing.

    Examples
    --------
    >>> paper = paper_numbers().query("table == 'table1'")
    >>> ours = pd.DataFrame({"model": "dropout", "dataset": "yacht", "method": ["base", "QR"],
    ...                      "calib_error": [10.0, 8.0]})
    >>> view = paper_vs_ours_view(paper_vs_ours_cells(paper, ours, ["calib_error"], datasets=["yacht"]))
    >>> view.values.tolist()
    [['29.52 ± 3.36', '10.00', '-19.52'], ['29.00 ± 2.70', '8.00', '-21.00']]
    >>> view.index[0]
    ('CE (%)', 'dropout', 'yacht', 'base')
    """
    check_frame(cells, "cells", ["paper", "paper std", "ours (ci)", "difference"])
    nothing = pd.Series(float("nan"), index=cells.index)
    view = pd.DataFrame(index=cells.index)
    view["paper"] = [_plus_minus(m, s) for m, s in zip(cells["paper"], cells["paper std"])]
    view["ours (ci)"] = [_plus_minus(m, None) for m in cells["ours (ci)"]]
    if "ours (full)" in cells:
        spread = cells.get("ours (full) std", nothing)
        view["ours (full)"] = [_plus_minus(m, s) for m, s in zip(cells["ours (full)"], spread)]
    view["difference"] = [_plus_minus(m, None) for m in cells["difference"]]
    return view.rename(index=SHORT_METRIC_LABELS, level="metric")


def mean_pm_std(table, metrics):
    """The paper's "mean ± std" cells of a summary of runs, one row per (model, dataset, method).

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`~calibtut.stats.summarize_runs` by ``["model", "dataset", "method"]``.
    metrics : list of str
        Metrics summarized in ``table`` (its ``<metric>_mean`` and
        ``<metric>_std`` columns).

    Returns
    -------
    pandas.DataFrame
        Index ``(model, dataset, method)``; one text column per metric, named
        by :data:`SHORT_METRIC_LABELS`; a single run's missing spread reads ``NA``.

    Examples
    --------
    >>> runs = pd.DataFrame({"model": "dropout", "dataset": "yacht", "method": ["base", "base", "QR"],
    ...                      "rmse": [1.0, 3.0, 2.0]})
    >>> from calibtut.stats import summarize_runs
    >>> mean_pm_std(summarize_runs(runs, ["model", "dataset", "method"], ["rmse"]), ["rmse"])["RMSE"].tolist()
    ['2.00 ± 1.41', '2.00 ± NA']
    """
    metrics = [metrics] if isinstance(metrics, str) else list(metrics)
    columns = [f"{m}_{stat}" for m in metrics for stat in ("mean", "std")]
    check_frame(table, "table", [*_CELL, *columns])
    check_choices(metrics, "metrics", SHORT_METRIC_LABELS)
    view = table.set_index(_CELL)[[]].copy()
    for m in metrics:
        view[SHORT_METRIC_LABELS[m]] = [
            f"{mean:.2f} ± {'NA' if pd.isna(std) else f'{std:.2f}'}"
            for mean, std in zip(table[f"{m}_mean"], table[f"{m}_std"])
        ]
    return view


def ablation_tables(runs):
    """The three tables behind the ablation figures (Figures 5-12), from the rows of the ablation runs.

    Every run's RMSE is divided by the RMSE of the base model (``lam == 0``)
    of the same model, dataset and fold, then calibration error and RMSE
    ratio are averaged per setting.

    Parameters
    ----------
    runs : pandas.DataFrame
        Rows of :func:`run_qr_config` for the ablation grid (one seed), with
        the base model's runs among them.

    Returns
    -------
    by_lam : pandas.DataFrame
        ``k = sqrt(n)``, per ``(model, dataset, lam)``: ``calib_error``, ``rmse_ratio``.
    by_mult : pandas.DataFrame
        At the paper's ``L``, per ``(model, dataset, spacing_mult)``.
    fixed64 : pandas.DataFrame
        The authors' fixed spacing ``k = 64``, per ``(model, dataset)``.

    Examples
    --------
    >>> runs = pd.DataFrame({"model": "dropout", "dataset": "yacht", "fold": 0, "lam": [0.0, 1.0, 1.0, 1.0],
    ...                      "spacing": ["sqrt", "sqrt", "sqrt", "64"], "spacing_mult": [1.0, 1.0, 2.0, 1.0],
    ...                      "calib_error": [20.0, 10.0, 12.0, 15.0], "rmse": [2.0, 2.5, 3.0, 2.2]})
    >>> by_lam, by_mult, fixed64 = ablation_tables(runs)
    >>> by_lam["rmse_ratio"].tolist(), by_mult["spacing_mult"].tolist(), fixed64["calib_error"].tolist()
    ([1.0, 1.25], [1.0, 2.0], [15.0])
    """
    check_frame(runs, "runs", ["model", "dataset", "fold", "lam", "spacing", "spacing_mult", "calib_error", "rmse"])
    keys = ["model", "dataset", "fold"]
    base_rmse = runs[runs["lam"] == 0].set_index(keys)["rmse"]
    runs = runs.assign(rmse_ratio=runs["rmse"].to_numpy()
                       / base_rmse.reindex(pd.MultiIndex.from_frame(runs[keys])).to_numpy())
    sqrt_rule = runs["spacing"].astype(str) == "sqrt"
    values = ["calib_error", "rmse_ratio"]

    def mean_by(rows, by):
        return rows.groupby(by)[values].mean().reset_index()

    by_lam = mean_by(runs[sqrt_rule & (runs["spacing_mult"] == 1.0)], ["model", "dataset", "lam"])
    by_mult = mean_by(runs[sqrt_rule & (runs["lam"] == runs["model"].map(PAPER_LAMBDA))],
                      ["model", "dataset", "spacing_mult"])
    fixed64 = mean_by(runs[runs["spacing"].astype(str) == "64"], ["model", "dataset"])
    return by_lam, by_mult, fixed64


def spacing_share_below(by_lam, by_mult):
    """Per model, the share of the spacing ablation's settings whose calibration error is below the base model's.

    Parameters
    ----------
    by_lam, by_mult : pandas.DataFrame
        The first two tables of :func:`ablation_tables`; the base model is the
        row of ``by_lam`` with ``lam == 0`` of the same model and dataset.

    Returns
    -------
    pandas.Series
        Indexed by model: the share of ``(dataset, spacing_mult)`` rows of
        ``by_mult`` below the base model's calibration error.

    Examples
    --------
    >>> by_lam = pd.DataFrame({"model": "dropout", "dataset": "yacht", "lam": [0.0, 1.0],
    ...                        "calib_error": [20.0, 10.0], "rmse_ratio": [1.0, 1.1]})
    >>> by_mult = pd.DataFrame({"model": "dropout", "dataset": "yacht", "spacing_mult": [1.0, 2.0, 3.0],
    ...                         "calib_error": [10.0, 25.0, 15.0], "rmse_ratio": 1.1})
    >>> spacing_share_below(by_lam, by_mult).round(3).to_dict()
    {'dropout': 0.667}
    """
    check_frame(by_lam, "by_lam", ["model", "dataset", "lam", "calib_error"])
    check_frame(by_mult, "by_mult", ["model", "dataset", "calib_error"])
    base = by_lam[by_lam["lam"] == 0].set_index(["model", "dataset"])["calib_error"]
    if base.index.has_duplicates:
        raise ValueError("by_lam has several base rows (lam == 0) for one model and dataset")
    base_ce = base.reindex(pd.MultiIndex.from_frame(by_mult[["model", "dataset"]])).to_numpy()
    if np.isnan(base_ce).any():
        raise ValueError("by_mult has a model and dataset without a base row (lam == 0) in by_lam")
    below = pd.Series(by_mult["calib_error"].to_numpy() < base_ce, index=by_mult["model"].to_numpy())
    return below.groupby(level=0).mean().rename("share_below_base")


#: The metrics the claims read: Tables 1-2 (before recalibration) and 4-5 (after isotonic recalibration).
_CLAIM_METRICS = ("calib_error", "rmse", "calib_error_iso", "max_lik_iso")


def _claim_cells(means):
    """(model, dataset) x (metric, method) means, with the claims' metrics as columns even where absent."""
    columns = pd.MultiIndex.from_product([_CLAIM_METRICS, ["base", "QR"]], names=["metric", "method"])
    return means.reindex(columns=columns)


def _paper_claim_cells(paper):
    printed = paper[paper["table"].isin(["table1", "table2", "table4", "table5"])]
    return _claim_cells(printed.pivot_table(index=["model", "dataset"], columns=["metric", "method"], values="mean"))


def _our_claim_cells(runs, name):
    check_frame(runs, name, [*_CELL, *_CLAIM_METRICS])
    means = runs.groupby(_CELL)[list(_CLAIM_METRICS)].mean().unstack("method")
    return _claim_cells(means.rename_axis(columns=["metric", "method"]))


def _tally(holds, rule="majority"):
    """``("k of n pairs", verdict)``: ``rule`` "majority" needs more than half, "some" one pair."""
    holds = holds.dropna().astype(bool)
    if holds.empty:
        return "not run", Verdict.NOT_RUN
    enough = holds.sum() > len(holds) / 2 if rule == "majority" else holds.any()
    return f"{int(holds.sum())} of {len(holds)} pairs", Verdict.HOLDS if enough else Verdict.DOES_NOT_HOLD


def _lower(cells, metric, a, b):
    """Per (model, dataset): is ``cells[metric, a]`` below ``cells[metric, b]`` (NaN where one is missing)."""
    x, y = cells[(metric, a)], cells[(metric, b)]
    return (x < y).where(x.notna() & y.notna())


def _qr_lowers_ce(c):
    return _tally(_lower(c, "calib_error", "QR", "base"))


def _small_rmse_cost(c, limit):
    ratio = (c[("rmse", "QR")] / c[("rmse", "base")]).dropna().groupby("model").median()
    if ratio.empty:
        return "not run", Verdict.NOT_RUN
    return (", ".join(f"{model} {r:.2f}" for model, r in ratio.items()),
            Verdict.HOLDS if (ratio <= limit).all() else Verdict.DOES_NOT_HOLD)


def _qr_lowers_iso(c):
    return _tally(_lower(c, "calib_error_iso", "QR", "base"))


def _iso_raises(c):
    before, after = c[("calib_error", "base")], c[("calib_error_iso", "base")]
    return _tally((after > before).where(before.notna() & after.notna()), rule="some")


def _one_dataset(c, dataset, before, after):
    """Per model: ``before -> after`` on one dataset; holds where ``after`` is below ``before`` for every model."""
    rows = c.xs(dataset, level="dataset") if dataset in c.index.get_level_values("dataset") else c.iloc[:0]
    rows = rows[rows[before].notna() & rows[after].notna()]
    if rows.empty:
        return "not run", Verdict.NOT_RUN
    text = ", ".join(f"{model} {b:.2f} → {a:.2f}" for model, b, a in zip(rows.index, rows[before], rows[after]))
    return text, Verdict.HOLDS if (rows[after] < rows[before]).all() else Verdict.DOES_NOT_HOLD


def _iso_on_protein(c):
    return _one_dataset(c, "protein", ("calib_error", "base"), ("calib_error_iso", "base"))


def _qr_on_year(c):
    return _one_dataset(c, "year-msd", ("calib_error", "base"), ("calib_error", "QR"))


def _spiky_likelihood(c):
    lik = c["max_lik_iso"].stack().dropna()
    if lik.empty:
        return "not run", Verdict.NOT_RUN
    verdict = Verdict.HOLDS if (lik >= 100).any() else Verdict.DOES_NOT_HOLD
    return f"{int((lik >= 100).sum())} of {len(lik)} cells", verdict


#: (claim as the paper words it, what is checked, reader): the claims of Section 5.4 and Section 3 on the
#: UCI Tables 1-2 and 4-5. A plain direction holds on a majority of the (model, dataset) pairs where both
#: numbers exist; "in some cases" and "sometimes" need one.
_UCI_CLAIMS = (
    ("calibration error improves when trained with QR", "CE: QR below base, per model and dataset",
     _qr_lowers_ce),
    ("a small, in many cases negligible, increase in RMSE", "median RMSE ratio QR / base ≤ {limit:g}, each model",
     _small_rmse_cost),
    ("QR works better than base in the post-hoc setting too", "CE after isotonic: QR below base",
     _qr_lowers_iso),
    ("in some cases isotonic calibration increases the error", "base CE after isotonic above before, somewhere",
     _iso_raises),
    ("isotonic offers better improvements on protein (large m)", "protein base CE: after isotonic below before",
     _iso_on_protein),
    ("QR works well on very large datasets (YearPredictionMSD)", "year-msd CE: QR below base", _qr_on_year),
    ("after isotonic, one likelihood can grow by 10²-10⁵", "max test likelihood after isotonic ≥ 100",
     _spiky_likelihood),
)


def uci_claims(paper, ours, *, full=None, rmse_ratio=1.05):
    """The paper's claims about its UCI tables, each checked on the paper's numbers and on ours, with a verdict.

    One row per claim of the paper's discussion of Tables 1-2 and 4-5 (and
    of Section 3 on the likelihood after isotonic recalibration), worded as
    the paper words it (shortened). Each claim compares means over folds per
    (model, dataset); a plain direction ("improves", "works better") holds on
    a majority of the pairs where both numbers exist, ties counting against
    it; "in some cases" and "sometimes" need one pair; "negligible" means a
    median RMSE ratio QR / base of at most ``rmse_ratio`` for each model.

    Parameters
    ----------
    paper : pandas.DataFrame
        :func:`paper_numbers` (Tables 1, 2, 4 and 5 are read).
    ours : pandas.DataFrame
        Our ``ci`` runs of :func:`run_qr_config` with a ``method`` column
        (``"base"`` or ``"QR"``); folds are averaged.
    full : pandas.DataFrame, optional
        The full run in the paper's setting (:func:`paper_setting`), laid out like ``ours``.
    rmse_ratio : float, default 1.05
        The largest median RMSE ratio QR / base that counts as a "negligible"
        increase (at least 1).

    Returns
    -------
    pandas.DataFrame
        Columns ``claim``, ``test`` (what is compared), ``paper`` (the
        paper's own numbers), ``ours (ci)``, ``ours (full)`` (with ``full``)
        and ``verdict`` (a :class:`~calibtut.run.Verdict`, first, from the full run
        when given, else from ``ours``).

    Examples
    --------
    >>> ours = pd.DataFrame({"model": "dropout", "dataset": "protein", "method": ["base", "QR"],
    ...                      "calib_error": [3.0, 1.0], "rmse": [4.0, 4.1], "calib_error_iso": [0.5, 0.4],
    ...                      "max_lik_iso": [50.0, 200.0]})
    >>> t = uci_claims(paper_numbers(), ours).set_index("claim")
    >>> t.loc["calibration error improves when trained with QR", ["paper", "ours (ci)", "verdict"]].tolist()
    ['18 of 20 pairs', '1 of 1 pairs', 'holds']
    >>> t.loc["isotonic offers better improvements on protein (large m)", ["ours (ci)", "verdict"]].tolist()
    ['dropout 3.00 → 0.50', 'holds']
    """
    rmse_ratio = check_real(rmse_ratio, "rmse_ratio", low=1.0)
    check_frame(paper, "paper", ["table", *_CELL, "metric", "mean"])
    cells = {"paper": _paper_claim_cells(paper), "ours (ci)": _our_claim_cells(ours, "ours")}
    if full is not None:
        cells["ours (full)"] = _our_claim_cells(full, "full")
    rows = []
    for claim, test, read in _UCI_CLAIMS:
        if read is _small_rmse_cost:
            read, test = functools.partial(read, limit=rmse_ratio), test.format(limit=rmse_ratio)
        found = {name: read(c) for name, c in cells.items()}
        rows.append({"claim": claim, "test": test, **{name: text for name, (text, _) in found.items()},
                     "verdict": found[list(cells)[-1]][1]})
    return verdict_table(rows)
