"""Paper 002, chapter 6: the paper's seventeen claims, each checked on our rows.

:func:`claim_verdicts` reads every directional claim of the paper (the list in
``paper_table("regression_study", "claims")``) as a test on the study's rows
(and, for Appendix C, on the ablation rows) and gives one verdict from
:data:`VERDICTS` with its evidence; :func:`claims_table` puts the verdicts at
``ci`` and on the full run beside the paper's statements.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy.stats import wilcoxon as sps_wilcoxon

from calibtut._validation import check_int, check_real
from calibtut.experiments.regression_study._common import check_rows
from calibtut.experiments.regression_study.ablations import ABLATIONS, ablation_effects
from calibtut.experiments.regression_study.figures import combined_results, figure_methods
from calibtut.experiments.regression_study.tables import (
    calibration_test_table,
    cohens_d_table,
    rejection_counts,
    run_mean_table,
    study_results,
)
from calibtut.experiments.regression_study.tasks import STUDY_RUNS, method_label
from calibtut.papers import paper_table
from calibtut.run import load_result
from calibtut.stats import friedman_wilcoxon

__all__ = [
    "claim_verdicts",
    "claims_table",
    "full_calibration_test",
    "published_calibration_test",
    "VERDICTS",
]


#: Verdicts of :func:`claim_verdicts`.
VERDICTS = ("holds", "does not hold", "not testable at this size", "not run")


def _large_d(n_runs, threshold=0.8):
    """The paper's "large" Cohen's d (0.8 in the authors' form at 5 runs) for ``n_runs`` runs.

    The authors' d is sqrt(n_runs) times the textbook one, so the same
    textbook effect (0.8 / sqrt(5)) is ``threshold * sqrt(n_runs / 5)`` in
    the authors' form.
    """
    return threshold * math.sqrt(n_runs / 5)


class _Checks:
    """Directional and significance checks on run means per dataset (lower is better).

    A direction is a majority of datasets. "Significantly" is read off the
    critical-difference diagram of the claim's figure, as the paper does:
    Friedman's test over the figure's methods, then the pair's Holm-adjusted
    Wilcoxon p-value (:func:`calibtut.stats.friedman_wilcoxon`). A comparison
    that no figure holds (a difference of gains, a combination against its
    map) uses the one-sided Wilcoxon test of the pair in the claimed direction.
    """

    def __init__(self, results, alpha, min_datasets, sqr):
        self.results, self.alpha, self.min_datasets, self.sqr = results, alpha, min_datasets, sqr
        self.tables, self.diagrams = {}, {}

    def means(self, metric):
        if metric not in self.tables:
            self.tables[metric] = run_mean_table(self.results, metric)
        return self.tables[metric]

    def missing(self, *methods):
        have = set(self.results["method"])
        return [m for m in methods if m not in have]

    def compare(self, a, b, metric, alternative="less"):
        """``(share of datasets where a < b, n, Wilcoxon p of a - b)`` of run means; a, b labels or Series."""
        table = self.means(metric)
        left = table[a] if isinstance(a, str) else a
        right = table[b] if isinstance(b, str) else b
        pair = pd.concat([left, right], axis=1, keys=["a", "b"]).dropna()
        pair = pair[np.isfinite(pair).all(axis=1)]
        diff = (pair["a"] - pair["b"]).to_numpy()
        n = len(diff)
        if n == 0:
            return math.nan, 0, math.nan
        p = math.nan if np.all(diff == 0) else float(
            sps_wilcoxon(diff, zero_method="pratt", alternative=alternative).pvalue)
        return float(np.mean(diff < 0)), n, p

    def _diagram(self, figure, metric):
        key = (figure, metric)
        if key not in self.diagrams:
            table = self.means(metric)
            methods = [m for m in figure_methods(figure, self.sqr) if m in table.columns]
            try:
                self.diagrams[key] = friedman_wilcoxon(table[methods], self.alpha)
            except ValueError:  # fewer than 3 methods or 2 complete datasets
                self.diagrams[key] = None
        return self.diagrams[key]

    def significant(self, a, b, metric, figure, pair_p, sides="one-sided"):
        """``(significant, text)``: a and b apart in the figure's CD diagram, else by the pair's own p-value."""
        diagram = None if figure is None or not isinstance(a, str) else self._diagram(figure, metric)
        if diagram is None or a not in diagram.pvalues.index or b not in diagram.pvalues.index:
            return bool(pair_p < self.alpha), f"{sides} Wilcoxon p = {pair_p:.3g}"
        p = float(diagram.pvalues.loc[a, b])
        text = f"Figure {figure} CD: Friedman p = {diagram.friedman_pvalue:.3g}, Holm p = {p:.3g}"
        return bool(diagram.significant and p < self.alpha), text

    def lower(self, a, b, metric, significant=False, name=None, figure=None):
        share, n, p = self.compare(a, b, metric)
        text = f"{name or f'{a} < {b}'} on {metric}: {share * n:.0f}/{n} datasets"
        if n == 0:
            return "not run", text
        if share <= 0.5:
            return "does not hold", text
        if not significant:
            return "holds", text
        if n < self.min_datasets:
            return "not testable at this size", text
        sig, detail = self.significant(a, b, metric, figure, p)
        return ("holds" if sig else "does not hold"), f"{text}, {detail}"

    def not_worse(self, a, b, metric, figure=None):
        share, n, p = self.compare(b, a, metric)
        text = f"{a} not significantly above {b} on {metric}: lower on {(1 - share) * n:.0f}/{n}"
        if n < self.min_datasets:
            return "not testable at this size", text
        sig, detail = self.significant(b, a, metric, figure, p)
        worse = share > 0.5 and sig
        return ("does not hold" if worse else "holds"), f"{text}, {detail}"

    def same(self, a, b, metric, figure=None):
        share, n, p = self.compare(a, b, metric, alternative="two-sided")
        text = f"{a} vs {b} on {metric}: lower on {share * n:.0f}/{n}"
        if n < self.min_datasets:
            return "not testable at this size", text
        apart, detail = self.significant(a, b, metric, figure, p, sides="two-sided")
        return ("does not hold" if apart else "holds"), f"{text}, {detail}"

    def small_effect(self, a, b, metric, increase_only=False):
        """Median authors' d of a against b below the paper's "large" (scaled to the runs), or only its increase."""
        d = cohens_d_table(self.results[self.results["method"].isin([a, b])], metric, b)[a]
        median = float(d.replace([np.inf, -np.inf], np.nan).median())
        large = _large_d(self.results["run"].nunique())
        kind = "an increase below" if increase_only else "|d| below"
        text = f"median Cohen's d of {a} against {b} on {metric}: {median:.2f} ({kind} {large:.2f} is small)"
        if math.isnan(median):
            return "not run", text
        small = median < large if increase_only else abs(median) < large
        return ("holds" if small else "does not hold"), text


def _combine(checks, notes=()):
    verdicts = [v for v, _ in checks]
    evidence = "; ".join([t for _, t in checks] + list(notes))
    for verdict in ("does not hold", "not run", "not testable at this size"):
        if verdict in verdicts:
            return verdict, evidence
    return "holds", evidence


def claim_verdicts(rows, *, ablations=None, test_table=None, sqr="sqr-affine", alpha=0.05, min_datasets=6,
                   n_sim=10_000, seed=0):
    """Each of paper 002's 17 directional claims checked on our rows, with a verdict and its evidence.

    Methods are compared on their run means per dataset (lower is better),
    regularized methods at the lambda of the paper's rule
    (:func:`~calibtut.experiments.regression_study.study_results`,
    :func:`~calibtut.experiments.regression_study.combined_results`).
    A direction needs a majority of datasets. "Significantly" is read, as in the paper, off the
    critical-difference diagram of the claim's figure: Friedman's test over
    the figure's methods, then the pair's Wilcoxon signed-rank p-value
    (``zero_method="pratt"``) with Holm's correction over every pair of the
    figure, at ``alpha``; a comparison that no figure holds uses the pair's
    one-sided Wilcoxon test. "Small" and "large" effects compare the median
    authors' Cohen's d with 0.8 at five runs, scaled to the number of runs
    (the authors' d grows with the square root of it). A claim holds when
    every part of it does.

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of :func:`~calibtut.experiments.regression_study.run_study_task` with ``dataset`` and ``run`` (several
        datasets; Figures 9-10 need ``combine=True`` and ``map_on_train=True``).
    ablations : pandas.DataFrame, optional
        Rows of :func:`~calibtut.experiments.regression_study.ablation_tasks`
        (claim C16, "not run" without them),
        read on the metrics each sentence of Appendix C names: one component
        is "much worse" when its median authors' d is above the large effect
        (0.8 at five runs, scaled to the runs) on WIS, NLL and STD, and more
        components differ less than one does; fewer quantiles per step are
        worse (median d above 0) on PCE, WIS and STD; the depth of lowest
        median d on WIS and on NLL is 2, 3 or 5.
    test_table : pandas.DataFrame, optional
        The per-dataset PCE test of ``rows`` (claim C1) when already computed:
        :func:`~calibtut.experiments.regression_study.calibration_test_table`
        of the MIX-NLL rows, e.g. as :func:`full_calibration_test` reads it;
        computed with ``n_sim`` and ``seed`` otherwise. It must cover the same
        datasets as the rows' MIX-NLL models.
    sqr : {"sqr", "sqr-affine"}, default "sqr-affine"
        Which SQR stands for SQR-CRPS.
    alpha : float, default 0.05
        Level of the Wilcoxon tests, in (0, 1).
    min_datasets : int, default 6
        Fewest datasets on which a significance claim is tested (with fewer,
        no two-sided Wilcoxon p-value can fall below 0.05, let alone a
        Holm-adjusted one), >= 1.
    n_sim : int, default 10000
        Null draws of the per-dataset PCE test (claim C1), >= 1.
    seed : int, default 0
        Seed of the PCE test, >= 0.

    Returns
    -------
    pandas.DataFrame
        One row per claim of ``paper_table("regression_study", "claims")``:
        ``claim``, ``statement``, ``verdict`` (one of :data:`VERDICTS`),
        ``evidence``, ``datasets``.

    Examples
    --------
    >>> rows = pd.DataFrame({"dataset": ["a", "a", "b", "b"], "run": [0, 1, 0, 1], "base": "mix-nll",
    ...     "method": "MIX-NLL", "regularizer": "none", "lam": 0.0, "posthoc": "none", "map_split": "none",
    ...     "train_fraction": 0.8, "n_test": 100, "val_wis": 1.0, "val_pce": 0.1,
    ...     **{f"test_{m}": 0.1 for m in ("pce", "wis", "nll", "std")}})
    >>> claim_verdicts(rows, n_sim=100)["verdict"].value_counts().to_dict()
    {'not run': 16, 'holds': 1}
    """
    alpha = check_real(alpha, "alpha", low=0, high=1, low_open=True, high_open=True)
    min_datasets = check_int(min_datasets, "min_datasets", minimum=1)
    n_sim, seed = check_int(n_sim, "n_sim", minimum=1), check_int(seed, "seed", minimum=0)
    if sqr not in ("sqr", "sqr-affine"):
        raise ValueError(f"sqr must be 'sqr' or 'sqr-affine', got {sqr!r}")
    check_rows(rows, ["dataset", "run", "base", "method", "regularizer", "posthoc", "train_fraction", "map_split"])
    results = study_results(rows)
    checks = _Checks(results, alpha, min_datasets, sqr)
    nll, crps, sq = (method_label(b) for b in ("mix-nll", "mix-crps", sqr))
    lab = method_label
    verdicts = {}

    def need(*methods):
        missing = checks.missing(*methods)
        return ("not run", f"no rows of {', '.join(missing)}") if missing else None

    # C1: the per-dataset PCE test
    if test_table is None:
        table = calibration_test_table(rows, n_sim=n_sim, seed=seed)
    else:
        check_rows(test_table, ["dataset", "reject_paper", "pvalue_paper", "pvalue"])
        tested = set(rows.loc[rows["base"] == "mix-nll", "dataset"])
        if set(test_table["dataset"]) != tested:
            raise ValueError(f"test_table must test the datasets of the rows' MIX-NLL models {sorted(tested)}, "
                             f"got {sorted(test_table['dataset'])}")
        table = test_table
    k, n = int(table["reject_paper"].sum()), len(table)
    readings = rejection_counts(table)  # the printed reading first, then "not rejected for 11"
    verdict = ["holds" if r.ours_share >= r.paper_share else "does not hold" for r in readings.itertuples()]
    verdicts["C1"] = (verdict[0], f"rejected at 0.01 with Holm for {k} of {n} datasets; " + "; ".join(
        f"reading '{r.reading}' of 57: {v}" for r, v in zip(readings.itertuples(), verdict)))
    verdicts["C2"] = need(nll, sq) or checks.lower(nll, sq, "pce")
    parts = []
    for base, posthocs, regs in (("mix-nll", ("emp", "lin", "kde"), ("pce-kde", "qr")),
                                 ("mix-crps", ("emp", "lin", "kde"), ("pce-kde", "qr")),
                                 (sqr, ("cqr",), ("pce-kde", "trunc"))):
        for p in posthocs:
            for r in regs:
                parts.append(need(lab(base, posthoc=p), lab(base, r))
                             or checks.lower(lab(base, posthoc=p), lab(base, r), "pce", significant=True,
                                             figure="3"))
    verdicts["C3"] = _combine(parts)
    c4 = need(lab("mix-crps", "pce-kde"), lab("mix-crps", "qr"), lab("mix-nll", "pce-kde"), lab("mix-nll", "qr"))
    if c4 is None:
        pce_means = checks.means("pce")
        gain_crps = pce_means[lab("mix-crps", "pce-kde")] - pce_means[lab("mix-crps", "qr")]
        gain_nll = pce_means[lab("mix-nll", "pce-kde")] - pce_means[lab("mix-nll", "qr")]
        c4 = checks.lower(gain_crps, gain_nll, "pce", significant=True,
                          name="PCE(PCE-KDE) - PCE(QR), MIX-CRPS against MIX-NLL,")
    verdicts["C4"] = c4
    kde_sq, trunc_sq = lab(sqr, "pce-kde"), lab(sqr, "trunc")
    verdicts["C5"] = need(sq, kde_sq, trunc_sq) or _combine(
        [checks.lower(kde_sq, sq, "pce"), checks.lower(trunc_sq, sq, "pce"),
         checks.same(kde_sq, trunc_sq, "pce", figure="3")])
    parts = []
    for base in ("mix-nll", "mix-crps"):
        for p in ("emp", "lin", "kde"):
            for r in ("pce-kde", "qr"):
                parts.append(need(lab(base, posthoc=p), lab(base, r))
                             or checks.lower(lab(base, r), lab(base, posthoc=p), "wis"))
    for r in ("pce-kde", "trunc"):
        parts.append(need(lab(sqr, posthoc="cqr"), lab(sqr, r)) or checks.lower(lab(sqr, posthoc="cqr"), lab(sqr, r),
                                                                                "wis"))
    verdicts["C6"] = _combine(parts)
    parts = []
    for base in ("mix-nll", "mix-crps"):
        emp, lin, kde = (lab(base, posthoc=p) for p in ("emp", "lin", "kde"))
        vanilla = lab(base)
        missing = need(emp, lin, kde, vanilla)
        if missing:
            parts.append(missing)
            continue
        emp_nll = results.loc[results["method"] == emp, "test_nll"]
        parts.append(("holds" if np.isposinf(emp_nll).all() else "does not hold",
                      f"{emp} NLL infinite in {int(np.isposinf(emp_nll).sum())} of {len(emp_nll)} runs "
                      f"(by construction: the map's CDF is a step function, with no density)"))
        parts += [checks.lower(vanilla, lin, "nll", significant=True, figure="5"),
                  checks.lower(kde, vanilla, "pce"), checks.small_effect(kde, vanilla, "nll", increase_only=True)]
    verdicts["C7"] = _combine(parts)
    parts = []
    for r in ("pce-kde", "pce-sort", "qr"):
        reg = lab("mix-nll", r)
        missing = need(reg, nll)
        parts += [missing] if missing else [checks.lower(reg, nll, "pce", significant=True, figure="6")] + [
            checks.not_worse(reg, nll, m, figure="6") for m in ("wis", "nll", "std")]
    verdicts["C8"] = _combine(parts)
    qr_crps = lab("mix-crps", "qr")
    verdicts["C9"] = need(qr_crps, crps) or _combine(
        [checks.lower(qr_crps, crps, "pce"), checks.small_effect(qr_crps, crps, "wis"),
         checks.small_effect(qr_crps, crps, "nll")])
    cqr_sq = lab(sqr, posthoc="cqr")
    verdicts["C10"] = need(cqr_sq, kde_sq, trunc_sq) or _combine(
        [checks.lower(cqr_sq, other, m, significant=True, figure="8") for other in (kde_sq, trunc_sq)
         for m in ("pce", "wis")])
    kde_crps = lab("mix-crps", posthoc="kde")
    verdicts["C11"] = need(kde_crps, lab("mix-crps", posthoc="emp"), lab("mix-crps", posthoc="lin")) or _combine(
        [checks.lower(lab("mix-crps", posthoc=p), kde_crps, "wis", significant=True, figure="7")
         for p in ("emp", "lin")])
    # A map's STD is that of its 19 quantiles, an unmapped mixture's the exact one (the authors'
    # code); 19 quantiles of a Gaussian spread 0.89 sigma, so the comparison uses the quantile STD
    # of every model, and the authors' STD is only reported.
    parts, notes = [], []
    for r in ("pce-kde", "pce-sort"):
        for p in ("emp", "lin", "kde"):
            a, b = lab("mix-crps", posthoc=p), lab("mix-crps", r)
            missing = need(a, b)
            parts.append(missing or checks.lower(a, b, "std_quantile"))
            if not missing:
                notes.append("authors' STD: " + checks.lower(a, b, "std")[1])
    parts += [need(sq, cqr_sq) or checks.lower(sq, cqr_sq, "std"),
              need(trunc_sq, sq) or checks.lower(trunc_sq, sq, "std")]
    verdicts["C12"] = _combine(parts, notes)
    combined = combined_results(rows)
    combos = [m for m in figure_methods("9", sqr)[1::2]]
    if not set(combos) & set(combined["method"]):
        verdicts["C13"] = ("not run", "no regularization + post-hoc rows (run_study_task(..., combine=True))")
    else:
        combo_checks = _Checks(combined, alpha, min_datasets, sqr)
        parts, skipped = [], []
        for alone, combo in zip(figure_methods("9", sqr)[::2], combos):
            missing = combo_checks.missing(alone, combo)
            if missing:
                skipped.append(combo)
                continue
            better, text = combo_checks.lower(combo, alone, "pce", significant=True)
            # "does not improve the PCE": the negation of a significant improvement
            parts.append(({"holds": "does not hold", "does not hold": "holds"}.get(better, better), "not: " + text))
            parts += [combo_checks.lower(alone, combo, m) for m in ("wis", "nll", "std")
                      if not (m == "nll" and combo.startswith("SQR"))]
        verdicts["C13"] = _combine(parts, [f"not trained: {', '.join(skipped)}"] if skipped else [])
    trained = [lab("mix-nll", posthoc=p, map_split="train") for p in ("lin", "kde")]
    if checks.missing(*trained):
        verdicts["C14"] = ("not run", "no maps fitted on the training split (run_study_task(..., map_on_train=True))")
    else:
        parts = []
        for p in ("lin", "kde"):
            cal, train = lab("mix-nll", posthoc=p), lab("mix-nll", posthoc=p, map_split="train")
            parts += [checks.lower(cal, train, "pce", significant=True, figure="10"),
                      checks.lower(train, cal, "wis"), checks.lower(train, cal, "nll"),
                      checks.lower(train, cal, "std", significant=True, figure="10")]
        cal, train = lab(sqr, posthoc="cqr"), lab(sqr, posthoc="cqr", map_split="train")
        if not checks.missing(sq):  # the SQR half, when the SQR base was trained
            missing = need(cal, train)
            parts += [missing] if missing else [
                checks.lower(cal, train, "pce"), checks.lower(train, cal, "wis"),
                checks.lower(train, cal, "std", significant=True, figure="10")]
        verdicts["C14"] = _combine(parts)
    # Figure 14's five models: is MIX-NLL + Rec-EMP the lowest PCE on most datasets?
    emp_nll = lab("mix-nll", posthoc="emp")
    five = [nll, lab("mix-nll", "pce-kde"), emp_nll, crps, sq]
    missing = need(*five)
    if missing:
        verdicts["C15"] = missing
    else:
        table = checks.means("pce")[five].dropna()
        wins = table.idxmin(axis=1).value_counts()
        won = int(wins.get(emp_nll, 0))
        verdicts["C15"] = ("holds" if won > len(table) / 2 else "does not hold",
                           f"lowest PCE among Figure 14's five models on {won}/{len(table)} datasets; "
                           + ", ".join(f"{m}: {c}" for m, c in wins.items()))
    verdicts["C16"] = _ablation_verdict(ablations)
    parts = []
    for method, vanilla in ((lab("mix-nll", "pce-kde"), nll), (qr_crps, crps), (cqr_sq, sq)):
        missing = need(method, vanilla)
        if missing:
            parts.append(missing)
            continue
        metrics = ("wis", "std") if method.startswith("SQR") else ("wis", "nll", "std")
        parts += [checks.lower(method, vanilla, "pce")] + [
            checks.small_effect(method, vanilla, m, increase_only=True) for m in metrics]
    verdicts["C17"] = _combine(parts)
    claims = paper_table("regression_study", "claims")
    out = claims[["claim", "statement"]].copy()
    out["verdict"] = [verdicts[c][0] for c in out["claim"]]
    out["evidence"] = [verdicts[c][1] for c in out["claim"]]
    out["datasets"] = rows["dataset"].nunique()
    return out


def full_calibration_test(full, *, recompute=False, seed=0, root=None):
    """The per-dataset PCE test of the full run's MIX-NLL (claim C1), 10,000 null draws.

    Chapter 6 publishes it with its full profile (table ``full_calibration_test``);
    reading it back saves the about 25 s of the simulation whenever the
    chapter runs at ``ci``. Chapter 1 computes the same table from the same
    rows and seed at every profile and checks that it equals the published
    one, so a stale table fails there.

    Parameters
    ----------
    full : FullStudy
        As :func:`~calibtut.experiments.regression_study.full_study` returns it (with rows).
    recompute : bool, default False
        Compute the table even when it is published.
    seed : int, default 0
        Seed of the test, >= 0.
    root : str or path-like, optional
        Repository root; found from the working directory by default.

    Returns
    -------
    pandas.DataFrame
        As :func:`~calibtut.experiments.regression_study.calibration_test_table`
        returns it. Only the published full run (label ``"full"``) reads the
        published table, and only when it was drawn with ``seed``; an interim
        run's, or another seed's, is computed.

    Examples
    --------
    >>> import tempfile
    >>> from calibtut.experiments.regression_study import FullStudy
    >>> rows = pd.DataFrame({"dataset": "a", "run": [0, 1], "base": "mix-nll", "method": "MIX-NLL",
    ...     "regularizer": "none", "posthoc": "none", "train_fraction": 0.8, "n_test": 50, "test_pce": 0.2})
    >>> table = full_calibration_test(FullStudy(rows, "full", ""), root=tempfile.mkdtemp())
    >>> table[["dataset", "reject_paper"]].values.tolist()
    [['a', True]]
    """
    if not hasattr(full, "rows") or not hasattr(full, "label") or not isinstance(full.rows, pd.DataFrame):
        raise TypeError(f"full must be a FullStudy with rows, got {full!r}")
    if not isinstance(recompute, bool):
        raise TypeError(f"recompute must be True or False, got {recompute!r}")
    seed = check_int(seed, "seed", minimum=0)
    if full.label == "full" and not recompute:
        table = published_calibration_test(seed=seed, root=root)
        if table is not None:
            return table
    return calibration_test_table(full.rows, "mix-nll", seed=seed)


def published_calibration_test(*, seed=0, root=None):
    """The full run's PCE test as chapter 6 published it, if drawn with ``seed``; else None.

    Parameters
    ----------
    seed : int, default 0
        Seed the published table must have been drawn with, >= 0.
    root : str or path-like, optional
        Repository root; found from the working directory by default.

    Returns
    -------
    pandas.DataFrame or None

    Examples
    --------
    >>> import tempfile
    >>> published_calibration_test(root=tempfile.mkdtemp()) is None
    True
    """
    seed = check_int(seed, "seed", minimum=0)
    try:
        table, provenance = load_result("regression_study", "06_paper_vs_ours", "full_calibration_test", root=root)
    except FileNotFoundError:
        return None
    return table if provenance.get("parameters", {}).get("seed") == seed else None


def claims_table(ci, full=None, label="full"):
    """The paper's claims beside our verdicts at ``ci`` and on the full run (long, one row per claim).

    Parameters
    ----------
    ci : pandas.DataFrame
        :func:`claim_verdicts` of the live run.
    full : pandas.DataFrame, optional
        :func:`claim_verdicts` of the full run (published, or its interim; see
        :func:`~calibtut.experiments.regression_study.full_study`).
    label : str, default "full"
        What the full run is (the ``label`` of
        :func:`~calibtut.experiments.regression_study.full_study`), named in its column.

    Returns
    -------
    pandas.DataFrame
        ``claim``, ``paper`` (the statement), ``ours (ci)``, ``ours (<label>)``
        (when ``full`` is given), ``evidence`` (of the full run when given,
        else of ``ci``), ``difference`` (whether the two verdicts differ).

    Examples
    --------
    >>> v = pd.DataFrame({"claim": ["C1"], "statement": ["s"], "verdict": ["holds"], "evidence": ["e"]})
    >>> table = claims_table(v, v.assign(verdict="not run"), label="full, 2 of 5 runs")
    >>> table.columns.tolist()[2:4], table["difference"].tolist()
    (['ours (ci)', 'ours (full, 2 of 5 runs)'], [True])
    """
    if not isinstance(label, str) or not label.strip():
        raise TypeError(f"label must be a non-empty string, got {label!r}")
    for table in (ci, full):
        if table is not None:
            check_rows(table, ["claim", "statement", "verdict", "evidence"])
    out = pd.DataFrame({"claim": ci["claim"], "paper": ci["statement"], "ours (ci)": ci["verdict"]})
    if full is None:
        out["evidence"] = ci["evidence"].to_numpy()
        return out.reset_index(drop=True)
    full = full.set_index("claim").reindex(ci["claim"])
    out[f"ours ({label})"] = full["verdict"].to_numpy()
    out["evidence"] = full["evidence"].to_numpy()
    out["difference"] = out["ours (ci)"] != out[f"ours ({label})"]
    return out.reset_index(drop=True)


# the sentence of Appendix C on each factor, as the evidence names it
_ABLATION_SENTENCES = {"n_components": "one component much worse, more differ less",
                       "n_levels": "fewer levels worse", "n_hidden": "best depth 2, 3 or 5"}
# the metrics that each sentence of Appendix C names, by factor (Figures 17-19)
_ABLATION_METRICS = {"n_components": ("wis", "nll", "std"), "n_levels": ("pce", "wis", "std"),
                     "n_hidden": ("wis", "nll")}


def _ablation_medians(ablations, factor):
    """{metric: {value: median d against the default}} of one factor, on the metrics its sentence names."""
    medians = {}
    for metric in _ABLATION_METRICS[factor]:
        if factor in ablations.columns and f"test_{metric}" in ablations.columns:
            d = ablation_effects(ablations, factor, metric).replace([np.inf, -np.inf], np.nan)
            if not d.empty:
                medians[metric] = {int(c.split(" = ")[1]): m for c, m in d.median().items()}
    return medians


def _ablation_verdict(ablations):
    """Claim C16 from ablation rows (see :func:`claim_verdicts`).

    The rows are those of
    :func:`~calibtut.experiments.regression_study.ablation_tasks`.

    Each part reads its sentence of Appendix C on the metrics the sentence
    names, by the median d of each value against the default: one component
    is much worse (d above the run-scaled large effect on CRPS, NLL and STD)
    and more components differ less than one does; fewer quantiles per step
    than 64 are worse on PCE, CRPS and STD; the best depth on CRPS and on NLL
    is 2, 3 or 5 layers.
    """
    if ablations is None:
        return "not run", "the appendix ablations (mixture size, quantiles per step, depth) are not trained"
    parts = []
    n_runs = ablations["run"].nunique() if "run" in ablations.columns else STUDY_RUNS
    large = _large_d(n_runs)
    for factor, metrics in _ABLATION_METRICS.items():
        default = ABLATIONS[factor][0]
        medians = _ablation_medians(ablations, factor)
        if len(medians) < len(metrics):
            parts.append(("not run", f"no {factor} ablation on {', '.join(m for m in metrics if m not in medians)}"))
            continue
        shown = "; ".join(f"{metric} " + ", ".join(f"{v}: {m:.2f}" for v, m in sorted(values.items()))
                          for metric, values in medians.items())
        text = f"median d against {factor} = {default} over {n_runs} runs ({shown})"
        if factor == "n_components":
            if any(1 not in values for values in medians.values()):
                parts.append(("not run", f"{text}; no single-component model"))
                continue
            ok = all(values[1] > large and all(abs(m) < values[1] for v, m in values.items() if v > default)
                     for values in medians.values())
        elif factor == "n_levels":
            ok = all(m > 0 for values in medians.values() for m in values.values())
        else:
            best = {metric: min(values | {default: 0.0}, key=(values | {default: 0.0}).get)
                    for metric, values in medians.items()}
            ok = all(b in (2, 3, 5) for b in best.values())
            text += "; best: " + ", ".join(f"{b} layers on {metric}" for metric, b in best.items())
        verdict = "holds" if ok else "does not hold"
        parts.append((verdict, f"{_ABLATION_SENTENCES[factor]} ({verdict}): {text}"))
    return _combine(parts)
