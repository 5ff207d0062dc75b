"""Paper 002, Figures 2-10: which methods each figure compares, their effect sizes, and the plots.

:func:`plot_calibration_test` and :func:`plot_reliability` draw Figure 2
(the per-dataset PCE test and the PIT reliability diagrams);
:func:`figure_methods` names the methods of one figure; :func:`figure_effects`
and :func:`median_effects` give Cohen's d per dataset against the figure's
baseline and its medians; :func:`figure_comparisons` runs the Friedman and
Wilcoxon-Holm comparisons behind the CD diagrams; :func:`per_base_effects`
summarises Figures 6-8; :func:`combined_results` and
:func:`combination_effects` give Figure 9 (regularization followed by a
post-hoc map) and Figure 10 (the map fitted on the training split).
:func:`plot_main_figures` and :func:`plot_cd_diagrams` draw them.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from calibtut._validation import check_frame, check_real
from calibtut.experiments.regression_study.tables import cohens_d_table, run_mean_table
from calibtut.experiments.regression_study.tasks import (
    BASE_LABELS,
    POSTHOC_LABELS,
    REGULARIZER_LABELS,
    method_label,
)
from calibtut.metrics import consistency_band
from calibtut.plots import COLUMN_WIDTH_IN, column_subplots
from calibtut.stats import critical_difference_diagram, friedman_wilcoxon, letter_value_plot, select_lambda

__all__ = [
    "FAMILY_COLOURS",
    "method_family",
    "combination_effects",
    "combined_results",
    "figure_comparisons",
    "figure_effects",
    "figure_methods",
    "MAIN_FIGURES",
    "median_effects",
    "per_base_effects",
    "PER_BASE_FIGURES",
    "plot_calibration_test",
    "plot_cd_diagrams",
    "plot_main_figures",
    "plot_reliability",
]


_FIGURE_BASES = {"6": "mix-nll", "7": "mix-crps", "8": "sqr"}


def figure_methods(figure, sqr="sqr-affine"):
    """The methods a figure of paper 002 compares, as ``method_label`` labels.

    See :func:`~calibtut.experiments.regression_study.method_label`.

    Parameters
    ----------
    figure : {"3", "5", "6", "7", "8", "9", "10"}
        Figures 3-4 (PCE, CRPS: 16 methods), 5 (NLL: the 12 mixture
        methods), 6-8 (one base against its vanilla model), 9 (regularization
        + post-hoc) and 10 (maps fitted on the calibration or training split).
    sqr : {"sqr", "sqr-affine"}, default "sqr-affine"
        Which SQR stands for SQR-CRPS (the authors' code is affine in the level).

    Returns
    -------
    list of str
        The baseline first (MIX-NLL, or the vanilla base in Figures 6-8; in
        Figure 9 each combination follows the post-hoc method it extends).

    Examples
    --------
    >>> figure_methods("8")
    ['SQR-CRPS (affine)', 'SQR-CRPS (affine) + CQR', 'SQR-CRPS (affine) + PCE-KDE', 'SQR-CRPS (affine) + Trunc']
    >>> len(figure_methods("3")), len(figure_methods("5"))
    (16, 12)
    """
    if sqr not in ("sqr", "sqr-affine"):
        raise ValueError(f"sqr must be 'sqr' or 'sqr-affine', got {sqr!r}")
    figure = str(figure)
    mixtures = ("mix-nll", "mix-crps")
    if figure in ("3", "4", "5"):
        labels = [method_label(b) for b in (*mixtures, sqr)]
        labels += [method_label(b, posthoc=p) for b in mixtures for p in ("emp", "lin", "kde")]
        labels += [method_label(sqr, posthoc="cqr")]
        labels += [method_label(b, r) for b in mixtures for r in ("pce-kde", "qr")]
        labels += [method_label(sqr, r) for r in ("pce-kde", "trunc")]
        return [m for m in labels if figure != "5" or not m.startswith("SQR")]
    if figure in _FIGURE_BASES:
        base = sqr if figure == "8" else _FIGURE_BASES[figure]
        if base in mixtures:
            return [method_label(base)] + [method_label(base, posthoc=p) for p in ("emp", "lin", "kde")] + [
                method_label(base, r) for r in ("pce-kde", "pce-sort", "qr")]
        return [method_label(base), method_label(base, posthoc="cqr")] + [
            method_label(base, r) for r in ("pce-kde", "trunc")]
    if figure == "9":
        pairs = [(b, r, p) for b in mixtures for r, p in (("pce-kde", "kde"), ("qr", "kde"), ("pce-kde", "lin"))]
        pairs.append((sqr, "trunc", "cqr"))
        return [label for b, r, p in pairs for label in (method_label(b, posthoc=p), method_label(b, r, p))]
    if figure == "10":
        return [method_label("mix-nll"), method_label(sqr)] + [
            method_label("mix-nll", posthoc=p, map_split=s) for p in ("lin", "kde") for s in ("calibration", "train")
        ] + [method_label(sqr, posthoc="cqr", map_split=s) for s in ("calibration", "train")] + [
            method_label("mix-nll", "pce-kde"), method_label(sqr, "pce-kde")]
    raise ValueError(f"figure must be one of '3', '4', '5', '6', '7', '8', '9', '10', got {figure!r}")


def combined_results(rows, tolerance=0.1, score="val_wis"):
    """Regularization + post-hoc (Figure 9): each combination at its selected lambda.

    For each (dataset, base, regularizer, post-hoc map), lambda = 0 is the
    post-hoc method alone (the same network trained on 65%) and the others
    are the regularized networks of ``run_study_task(..., combine=True)``
    with the same map; the rule of :func:`~calibtut.experiments.regression_study.selected_lambdas` picks one.

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of :func:`~calibtut.experiments.regression_study.run_study_task` with ``dataset`` and ``run``.
    tolerance : float, default 0.1
        >= 0.
    score : {"val_wis", "val_crps"}, default "val_wis"

    Returns
    -------
    pandas.DataFrame
        The post-hoc rows alone and the selected combined rows, labelled
        ``"<base> + <regularizer> + <map>"``, with ``selected_lam``.

    Examples
    --------
    >>> rows = pd.DataFrame({"dataset": "a", "run": 0, "base": "mix-nll", "train_fraction": 0.65,
    ...     "map_split": "calibration", "posthoc": "kde", "regularizer": ["none", "qr", "qr"],
    ...     "lam": [0.0, 1.0, 5.0], "val_wis": [1.0, 1.05, 1.5], "val_pce": [0.1, 0.05, 0.01],
    ...     "method": ["MIX-NLL + Rec-KDE", "MIX-NLL + QR + Rec-KDE", "MIX-NLL + QR + Rec-KDE"]})
    >>> combined_results(rows)[["method", "lam"]].values.tolist()
    [['MIX-NLL + Rec-KDE', 0.0], ['MIX-NLL + QR + Rec-KDE', 1.0]]
    """
    tolerance = check_real(tolerance, "tolerance", low=0)
    if score not in ("val_wis", "val_crps"):
        raise ValueError(f"score must be 'val_wis' or 'val_crps', got {score!r}")
    check_frame(rows, "rows", ["dataset", "run", "base", "train_fraction", "map_split", "posthoc", "regularizer", "lam",
                               "val_pce", "method", score])
    mapped = rows[(rows["train_fraction"] == 0.65) & (rows["posthoc"] != "none") & (rows["map_split"] == "calibration")]
    alone = mapped[mapped["regularizer"] == "none"]
    parts = [alone.assign(selected_lam=math.nan)]
    for (dataset, base, posthoc), group in mapped.groupby(["dataset", "base", "posthoc"], sort=True):
        ref = group[group["regularizer"] == "none"]
        for reg, sub in group[group["regularizer"] != "none"].groupby("regularizer", sort=True):
            means = pd.concat([ref, sub]).groupby("lam")[[score, "val_pce"]].mean()
            lam = select_lambda(means.index.to_numpy(), means[score].to_numpy(), means["val_pce"].to_numpy(),
                                tolerance)
            pick = ref if lam == 0 else sub[sub["lam"] == lam]
            parts.append(pick.assign(method=method_label(base, reg, posthoc), regularizer=reg, selected_lam=lam))
    return pd.concat(parts, ignore_index=True)


def combination_effects(results, metric, form="authors"):
    """Cohen's d of each regularization + post-hoc method against the post-hoc method alone (Figure 9a).

    Parameters
    ----------
    results : pandas.DataFrame
        From :func:`combined_results`.
    metric : str
        E.g. ``"pce"``.
    form : {"authors", "textbook"}, default "authors"

    Returns
    -------
    pandas.DataFrame
        Datasets x combined methods.

    Examples
    --------
    >>> r = pd.DataFrame({"dataset": "a", "run": [0, 1, 0, 1], "train_fraction": 0.65, "posthoc": "kde",
    ...     "method": ["M + Rec-KDE"] * 2 + ["M + QR + Rec-KDE"] * 2, "regularizer": ["none"] * 2 + ["qr"] * 2,
    ...     "test_pce": [0.1, 0.2, 0.2, 0.3]})
    >>> combination_effects(r, "pce", form="textbook").round(3).values.tolist()
    [[1.414]]
    """
    check_frame(results, "results", ["dataset", "method", "regularizer", "posthoc", f"test_{metric}"])
    tables = []
    for method, sub in results[results["regularizer"] != "none"].groupby("method", sort=True):
        reg_label = " + " + REGULARIZER_LABELS[sub["regularizer"].iloc[0]]
        baseline = method.replace(reg_label, "", 1)
        pair = results[results["method"].isin([method, baseline])]
        tables.append(cohens_d_table(pair, metric, baseline, form)[[method]])
    if not tables:
        raise ValueError("results holds no regularization + post-hoc method")
    return pd.concat(tables, axis=1)

def figure_effects(results, figure, metric, *, sqr="sqr-affine", form="authors"):
    """Cohen's d per dataset of the methods of one figure against its baseline (Figures 3-8, 10).

    Parameters
    ----------
    results : pandas.DataFrame
        From :func:`~calibtut.experiments.regression_study.study_results`.
    figure : {"3", "4", "5", "6", "7", "8", "10"}
        See :func:`figure_methods` (Figure 9: :func:`combination_effects`).
    metric : str
        E.g. ``"pce"``, ``"wis"``, ``"nll"``, ``"std"``.
    sqr : {"sqr", "sqr-affine"}, default "sqr-affine"
    form : {"authors", "textbook"}, default "authors"

    Returns
    -------
    pandas.DataFrame
        Datasets x the figure's methods present in ``results`` (baseline left out).

    Examples
    --------
    >>> r = pd.DataFrame({"dataset": "a", "run": [0, 1] * 3, "train_fraction": 0.8, "posthoc": "none",
    ...     "method": ["MIX-NLL"] * 2 + ["MIX-NLL + QR"] * 2 + ["MIX-CRPS"] * 2,
    ...     "test_pce": [0.1, 0.2, 0.0, 0.1, 0.1, 0.2]})
    >>> figure_effects(r, "6", "pce", form="textbook").round(3).to_dict("list")
    {'MIX-NLL + QR': [-1.414]}
    """
    figure = str(figure)
    if figure == "9":
        raise ValueError("figure '9' compares each combination with its own post-hoc method: use combination_effects")
    methods = figure_methods(figure, sqr)
    check_frame(results, "results", ["method"])
    chosen = results[results["method"].isin(methods)]
    table = cohens_d_table(chosen, metric, methods[0], form)
    return table[[m for m in methods[1:] if m in table.columns]]


#: The main comparison figures: (figure, metric), every method against MIX-NLL.
MAIN_FIGURES = (("3", "pce"), ("4", "wis"), ("5", "nll"))
#: The per-base-model figures: (figure, base model), each method against its own vanilla model.
PER_BASE_FIGURES = (("6", "mix-nll"), ("7", "mix-crps"), ("8", "sqr-affine"))


def figure_comparisons(results, figures=MAIN_FIGURES):
    """Friedman's test and the pairwise Wilcoxon tests of each main figure's methods, per metric.

    Parameters
    ----------
    results : pandas.DataFrame
        From :func:`~calibtut.experiments.regression_study.study_results`.
    figures : sequence of (figure, metric), default :data:`MAIN_FIGURES`

    Returns
    -------
    dict
        ``{metric: ComparisonResult}`` of :func:`calibtut.stats.friedman_wilcoxon`
        over the run-mean table (:func:`~calibtut.experiments.regression_study.run_mean_table`) of the figure's
        methods present in ``results``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> r = pd.DataFrame([{"dataset": f"d{i}", "run": k, "train_fraction": 0.8, "posthoc": "none",
    ...                    "method": m, "test_pce": v + rng.normal(0, 0.01)}
    ...                   for i in range(8) for k in range(2)
    ...                   for m, v in (("MIX-NLL", 0.1), ("MIX-NLL + QR", 0.05), ("MIX-CRPS", 0.2))])
    >>> result = figure_comparisons(r, [("3", "pce")])["pce"]
    >>> result.significant, result.ranks.to_dict()
    (True, {'MIX-NLL': 2.0, 'MIX-CRPS': 3.0, 'MIX-NLL + QR': 1.0})
    """
    out = {}
    for figure, metric in figures:
        table = run_mean_table(results, metric)
        out[metric] = friedman_wilcoxon(table[[m for m in figure_methods(figure) if m in table]])
    return out


def per_base_effects(results, metrics=("pce", "wis", "nll", "std")):
    """Figures 6-8 as one long table: median Cohen's d of each method against its vanilla model.

    Parameters
    ----------
    results : pandas.DataFrame
        From :func:`~calibtut.experiments.regression_study.study_results`.
    metrics : sequence of str, default ("pce", "wis", "nll", "std")
        Metrics without any finite d (the NLL of quantile models) are left out.

    Returns
    -------
    pandas.DataFrame
        The columns of :func:`median_effects`, then ``figure`` and ``base``;
        a base model missing from ``results`` has no rows.

    Examples
    --------
    >>> r = pd.DataFrame({"dataset": "a", "run": [0, 1] * 2, "train_fraction": 0.8, "posthoc": "none",
    ...     "method": ["MIX-NLL"] * 2 + ["MIX-NLL + QR"] * 2, "test_pce": [0.1, 0.2, 0.0, 0.1]})
    >>> per_base_effects(r, ["pce"])[["figure", "method", "median_d"]].round(3).values.tolist()
    [['6', 'MIX-NLL + QR', -2.0]]
    """
    if not isinstance(results, pd.DataFrame):
        raise TypeError(f"results must be a pandas DataFrame, got {type(results).__name__}")
    check_frame(results, "results", ["method"])
    out = []
    for figure, base in PER_BASE_FIGURES:
        if BASE_LABELS[base] not in set(results["method"]):
            continue
        effects = {m: figure_effects(results, figure, m) for m in metrics}
        effects = {m: t for m, t in effects.items() if t.notna().any().any()}
        if effects:
            out.append(median_effects(effects).assign(figure=figure, base=BASE_LABELS[base]))
    if not out:
        raise ValueError("results hold none of the base models of Figures 6-8")
    return pd.concat(out, ignore_index=True)


def plot_calibration_test(table, label="MIX-NLL"):
    """Figure 2, top: each dataset's run-mean test PCE beside that of a calibrated model.

    Parameters
    ----------
    table : pandas.DataFrame
        From :func:`calibration_test_table`.
    label : str, default "MIX-NLL"
        The model's name in the legend.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> t = pd.DataFrame({"dataset": ["a", "b"], "pce": [0.1, 0.05], "pce_se": 0.01,
    ...                   "calibrated_pce": [0.04, 0.03]})
    >>> [float(bar.get_height()) for bar in plot_calibration_test(t).axes[0].patches]
    [0.1, 0.05, 0.04, 0.03]
    """
    check_frame(table, "table", ["dataset", "pce", "pce_se", "calibrated_pce"])
    fig, ax = plt.subplots(figsize=(COLUMN_WIDTH_IN, 3.6), layout="constrained")
    x = np.arange(len(table))
    ax.bar(x - 0.2, table["pce"], 0.4, yerr=table["pce_se"], label=label)
    ax.bar(x + 0.2, table["calibrated_pce"], 0.4, color="tab:orange", label="calibrated model")
    ax.set_xticks(x, table["dataset"], rotation=90)
    ax.set_ylabel("mean test PCE")
    ax.legend()
    return fig


def plot_reliability(curves, datasets):
    """Figure 2, bottom: PIT reliability curves, one line per run, over a calibrated model's 90% band.

    Parameters
    ----------
    curves : pandas.DataFrame
        From :func:`reliability_table`.
    datasets : sequence of str
        The datasets to draw, one panel each.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> c = pd.DataFrame({"dataset": "a", "run": [0, 0, 1, 1], "level": [0.25, 0.75] * 2,
    ...                   "frequency": [0.2, 0.7, 0.3, 0.8], "n_test": 40})
    >>> [len(ax.lines) for ax in plot_reliability(c, ["a"]).axes]  # the diagonal and two runs
    [3]
    """
    check_frame(curves, "curves", ["dataset", "run", "level", "frequency", "n_test"])
    datasets = list(datasets)
    missing = sorted(set(datasets) - set(curves["dataset"]))
    if not datasets or missing:
        raise ValueError(f"datasets must be a non-empty list of datasets of curves; missing: {missing}")
    fig, axes = column_subplots(len(datasets), sharey=True)
    for ax, name in zip(axes, datasets):
        sub = curves[curves["dataset"] == name]
        levels = np.sort(sub["level"].unique())
        n = int(sub["n_test"].min())
        lo, hi = consistency_band(np.full(levels.size, n), levels, alpha=0.1)
        ax.fill_between(levels, lo, hi, color="0.85", label="90% band")
        ax.plot([0, 1], [0, 1], color="0.4", lw=0.8)
        for _, line in sub.groupby("run"):
            ax.plot(line["level"], line["frequency"], marker=".", lw=1)
        ax.set_title(f"{name} (n = {n})", fontsize=9)
        ax.set_xlabel("level")
    axes[0].set_ylabel("observed frequency")
    return fig


#: The colour of each method family in the letter-value figures (the same in every panel).
FAMILY_COLOURS = {"base": "0.6", "regularizer": "tab:orange", "post-hoc": "tab:blue"}


def method_family(label):
    """The family of a figure label: "base", "regularizer" or "post-hoc" (a map, with or without a penalty).

    Parameters
    ----------
    label : str
        A label of :func:`~calibtut.experiments.regression_study.method_label`.

    Returns
    -------
    str

    Examples
    --------
    >>> [method_family(m) for m in ("MIX-NLL", "MIX-NLL + QR", "MIX-NLL + Rec-KDE", "MIX-NLL + QR + Rec-KDE")]
    ['base', 'regularizer', 'post-hoc', 'post-hoc']
    """
    if not isinstance(label, str):
        raise TypeError(f"label must be a str, got {type(label).__name__}")
    parts = [p.strip() for p in label.replace(" (train)", "").split("+")]
    if parts[-1] in POSTHOC_LABELS.values():
        return "post-hoc"
    if len(parts) > 1 and parts[-1] in REGULARIZER_LABELS.values():
        return "regularizer"
    if len(parts) == 1 and parts[0] in BASE_LABELS.values():
        return "base"
    raise ValueError(f"label {label!r} is not a method label of the study")


def plot_main_figures(results, title=""):
    """Figures 3-5: letter-value plots of every method's Cohen's d against MIX-NLL.

    An infinite d (Rec-EMP's NLL) is left out of the plot, as it must be of
    any boxplot.

    Parameters
    ----------
    results : pandas.DataFrame
        From :func:`~calibtut.experiments.regression_study.study_results`.
    title : str, default ""
        Added to each panel's title, e.g. ``" (full)"``.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> r = pd.DataFrame({"dataset": np.repeat(["a", "b"], 4), "run": [0, 1] * 4,
    ...                   "train_fraction": 0.8, "posthoc": "none",
    ...                   "method": ["MIX-NLL"] * 2 + ["MIX-NLL + QR"] * 2 + ["MIX-NLL"] * 2
    ...                   + ["MIX-NLL + QR"] * 2, "test_pce": [0.1, 0.2, 0.0, 0.1] * 2,
    ...                   "test_wis": 1.0, "test_nll": 1.0})
    >>> [ax.get_title() for ax in plot_main_figures(r, " (demo)").axes]
    ['Figure 3 (demo): PCE', 'Figure 4 (demo): CRPS (19-level WIS)', 'Figure 5 (demo): NLL']
    """
    fig, axes = column_subplots(len(MAIN_FIGURES), ncols=1, panel_height=3.8)
    for ax, (figure, metric) in zip(axes, MAIN_FIGURES):
        effects = figure_effects(results, figure, metric).replace(np.inf, np.nan).dropna(axis=1, how="all")
        name = "CRPS (19-level WIS)" if metric == "wis" else metric.upper()
        ax.set_title(f"Figure {figure}{title}: {name}")
        if effects.empty:
            ax.text(0.5, 0.5, "no finite d", ha="center", va="center", transform=ax.transAxes)
            ax.set_axis_off()
        else:
            letter_value_plot(effects, ax=ax, families={m: method_family(m) for m in effects.columns},
                              palette=FAMILY_COLOURS)
    return fig


def plot_cd_diagrams(comparisons, title=""):
    """The critical-difference diagrams of :func:`figure_comparisons`, one panel per metric.

    As in the authors' code, a metric whose Friedman test does not reject
    gets no diagram.

    Parameters
    ----------
    comparisons : dict
        From :func:`figure_comparisons`.
    title : str, default ""
        Added to each panel's title.

    Returns
    -------
    matplotlib.figure.Figure or None
        ``None`` when no metric has a diagram.

    Examples
    --------
    >>> plot_cd_diagrams({}) is None
    True
    """
    drawn = {m: r for m, r in comparisons.items() if r.significant}
    if not drawn:
        return None
    fig, axes = plt.subplots(len(drawn), 1, figsize=(COLUMN_WIDTH_IN, 2.6 * len(drawn)), squeeze=False,
                             constrained_layout=True)
    for ax, (metric, result) in zip(axes[:, 0], drawn.items()):
        critical_difference_diagram(result, ax=ax)
        ax.set_title(f"CD diagram{title}: {metric.upper()}")
    return fig


def median_effects(effects):
    """Long table of the median Cohen's d of each method over datasets, from several effect tables.

    Parameters
    ----------
    effects : dict
        ``{metric: datasets x methods table}``, e.g. of :func:`figure_effects`.

    Returns
    -------
    pandas.DataFrame
        ``method``, ``metric``, ``median_d``, ``share_negative`` (datasets
        where the method improves on the baseline), ``datasets``; an infinite
        d counts as the largest (or smallest) value, so the median of
        Rec-EMP's NLL is infinite.

    Examples
    --------
    >>> d = pd.DataFrame({"M": [-1.0, -3.0, 2.0], "EMP": [np.inf, np.inf, 1.0]})
    >>> median_effects({"nll": d}).round(3).values.tolist()
    [['M', 'nll', -1.0, 0.667, 3], ['EMP', 'nll', inf, 0.0, 3]]
    """
    if not isinstance(effects, dict) or not effects:
        raise TypeError("effects must be a non-empty dict {metric: DataFrame}")
    out = []
    for metric, table in effects.items():
        if not isinstance(table, pd.DataFrame):
            raise TypeError(f"effects[{metric!r}] must be a DataFrame, got {type(table).__name__}")
        for method in table.columns:
            values = table[method].dropna().to_numpy(dtype=float)
            with np.errstate(invalid="ignore"):  # -inf and +inf in the middle: NaN
                median = float(np.median(values)) if values.size else math.nan
            out.append({"method": method, "metric": metric, "median_d": median,
                        "share_negative": float(np.mean(values < 0)) if values.size else math.nan,
                        "datasets": int(values.size)})
    return pd.DataFrame(out, columns=["method", "metric", "median_d", "share_negative", "datasets"])
