"""Paper 002, chapter 6: the paper's seventeen claims, each checked on our rows.

:func:`claim_verdicts` reads every directional claim of the paper (the list in
``paper_table("regression_study", "claims")``) as a set of parts, each a test
on the study's rows (and, for Appendix C, on the ablation rows) with a rule
that follows the paper's wording, and gives each part and each claim one
verdict (a :class:`calibtut.run.Verdict`) with its evidence; :func:`claims_table` puts
the verdicts at ``ci`` and on the full run beside the paper's statements;
:func:`claims_overview` and :func:`plot_claim_verdicts` show them compactly.

The rules, by the words of the claim:

* a plain direction ("lower", "less sharp", "improves"): a majority of the
  datasets where the two methods differ. Ties, datasets where the run means
  are equal (a regularized method whose selected lambda is 0 *is* the vanilla
  model; two infinite NLLs), are left out of the count and reported beside it;
* "significantly": the direction, then the paper's test, read off the
  critical-difference diagram of the claim's figure (Friedman, then the
  pair's Wilcoxon p-value with Holm over every pair of the figure), or the
  pair's one-sided Wilcoxon test where no figure draws the comparison. A part
  whose direction holds but whose test does not reach ``alpha`` is "direction
  holds, not significant", with the power of the same test at the paper's 57
  datasets, estimated by drawing 57 datasets with replacement from ours
  (seeded);
* "tend to": the direction pooled over the claim's pairs (every pair and
  dataset where the two differ), with the median Cohen's d beside it;
* "little effect", "without much harm", "without a large increase": the
  median Cohen's d (authors' form) against the paper's large effect;
* "without a significant difference", "not significantly worse": the test
  must not separate the two in the excluded direction.

With fewer than ``min_datasets`` datasets a part is "not testable at this
size" (never "does not hold"): a majority of two datasets says nothing, and
no Wilcoxon p-value can reach 0.05. A claim is the weakest of its parts, in
the order "does not hold", "not run", "not testable at this size",
"direction holds, not significant", "holds".
"""

from __future__ import annotations

import math
from typing import NamedTuple

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from calibtut._validation import check_frame, check_int, check_real
from calibtut.experiments.regression_study._common import check_full_arguments, published_table
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
from calibtut.plots import MIN_FONT_PT, column_subplots
from calibtut.run import VERDICT_COLOURS, Verdict, verdict_table
from calibtut.stats import friedman_wilcoxon, paired_wilcoxon

__all__ = [
    "CLAIM_SHORT",
    "claim_verdicts",
    "claims_from_parts",
    "claims_overview",
    "claims_table",
    "full_calibration_test",
    "full_claim_parts",
    "plot_claim_verdicts",
    "published_calibration_test",
]


#: Datasets of the paper's study: the size at which the power of a test is estimated.
_PAPER_DATASETS = 57

# a claim takes the first of these among its parts' verdicts
_WEAKEST_FIRST = (Verdict.DOES_NOT_HOLD, Verdict.NOT_RUN, Verdict.NOT_TESTABLE, Verdict.DIRECTION_ONLY, Verdict.HOLDS)


def _large_d(n_runs, threshold=0.8):
    """The paper's "large" Cohen's d (0.8 in the authors' form at 5 runs) for ``n_runs`` runs.

    The authors' d is sqrt(n_runs) times the textbook one, so the same
    textbook effect (0.8 / sqrt(5)) is ``threshold * sqrt(n_runs / 5)`` in
    the authors' form.
    """
    return threshold * math.sqrt(n_runs / 5)


class _Part(NamedTuple):
    """One part of a claim: its verdict, evidence and rule, and the numbers behind them."""

    verdict: str
    evidence: str
    rule: str
    agree: float = math.nan  # datasets (or pairs x datasets) in the claimed direction
    differ: float = math.nan  # datasets where the two differ (ties left out)
    ties: float = math.nan
    pvalue: float = math.nan
    power: float = math.nan


def _missing(methods):
    return _Part(Verdict.NOT_RUN, f"no rows of {', '.join(methods)}", "not run")


def _directions(a, b):
    """``(a < b, a > b, ties)`` counts of two aligned run-mean Series; NaN pairs dropped, equal values tied."""
    pair = pd.concat([a, b], axis=1, keys=["a", "b"]).dropna()
    x, y = pair["a"].to_numpy(), pair["b"].to_numpy()
    return int(np.sum(x < y)), int(np.sum(x > y)), int(np.sum(x == y))


class _Checks:
    """Directional and significance checks on run means per dataset (lower is better); see the module docstring."""

    def __init__(self, results, alpha, min_datasets, sqr, n_boot, seed):
        self.results, self.alpha, self.min_datasets, self.sqr = results, alpha, min_datasets, sqr
        self.n_boot, self.seed = n_boot, seed
        self.tables, self.diagrams, self.draws = {}, {}, {}

    def means(self, metric):
        if metric not in self.tables:
            self.tables[metric] = run_mean_table(self.results, metric)
        return self.tables[metric]

    def missing(self, *methods):
        have = set(self.results["method"])
        return [m for m in methods if m not in have]

    def need(self, *methods):
        missing = self.missing(*methods)
        return _missing(missing) if missing else None

    def series(self, a, metric):
        return self.means(metric)[a] if isinstance(a, str) else a

    def compare(self, a, b, metric, alternative="less"):
        """``(a lower, a higher, ties, Wilcoxon p of a - b)`` over datasets; a, b labels or Series.

        Equal run means (infinite ones included) are ties, as in
        :func:`calibtut.stats.paired_wilcoxon`, which gives the p-value.
        """
        left, right = self.series(a, metric), self.series(b, metric)
        lower, higher, ties = _directions(left, right)
        pair = pd.concat([left, right], axis=1, keys=["a", "b"]).dropna()
        p = paired_wilcoxon(pair["a"], pair["b"], alternative) if len(pair) else math.nan
        return lower, higher, ties, p

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

    def _in_diagram(self, a, b, metric, figure):
        diagram = None if figure is None or not isinstance(a, str) else self._diagram(figure, metric)
        if diagram is None or a not in diagram.pvalues.index or b not in diagram.pvalues.index:
            return None
        return diagram

    def significant(self, a, b, metric, figure, pair_p, sides="one-sided"):
        """``(significant, text)``: a and b apart in the figure's CD diagram, else by the pair's own p-value."""
        diagram = self._in_diagram(a, b, metric, figure)
        if diagram is None:
            return bool(pair_p < self.alpha), f"{sides} Wilcoxon p = {pair_p:.3g}"
        p = float(diagram.pvalues.loc[a, b])
        text = f"Figure {figure} CD: Friedman p = {diagram.friedman_pvalue:.3g}, Holm p = {p:.3g}"
        return bool(diagram.significant and p < self.alpha), text

    def _figure_draws(self, figure, metric):
        """Bootstrap CD diagrams of a figure at the paper's number of datasets: ``[(rows drawn, result)]``."""
        key = (figure, metric)
        if key not in self.draws:
            diagram = self._diagram(figure, metric)
            table = self.means(metric)[list(diagram.pvalues.index)].dropna()
            rng = np.random.default_rng(self.seed)
            draws = []
            for _ in range(self.n_boot):
                rows = rng.integers(0, len(table), _PAPER_DATASETS)
                draws.append((table.iloc[rows], friedman_wilcoxon(table.iloc[rows], self.alpha)))
            self.draws[key] = draws
        return self.draws[key]

    def power(self, a, b, metric, figure):
        """Share of 57-dataset bootstrap draws where ``a < b`` holds in direction and is significant."""
        if self._in_diagram(a, b, metric, figure) is not None:
            hits = 0
            for table, result in self._figure_draws(figure, metric):
                lower, higher, _ = _directions(table[a], table[b])
                hits += lower > higher and result.significant and result.pvalues.loc[a, b] < self.alpha
            return hits / self.n_boot
        pair = pd.concat([self.series(a, metric), self.series(b, metric)], axis=1, keys=["a", "b"]).dropna()
        rng = np.random.default_rng(self.seed)
        hits = 0
        for _ in range(self.n_boot):
            draw = pair.iloc[rng.integers(0, len(pair), _PAPER_DATASETS)]
            lower, higher, _ = _directions(draw["a"], draw["b"])
            hits += lower > higher and paired_wilcoxon(draw["a"], draw["b"], "less") < self.alpha
        return hits / self.n_boot

    def too_few(self, n):
        return n < self.min_datasets

    def lower(self, a, b, metric, significant=False, name=None, figure=None):
        """``a`` below ``b`` on most datasets where they differ; with ``significant``, also by the paper's test."""
        lower, higher, ties, p = self.compare(a, b, metric)
        differ = lower + higher
        text = f"{name or f'{a} < {b}'} on {metric}: {lower}/{differ} datasets where they differ ({ties} tied)"
        numbers = {"agree": lower, "differ": differ, "ties": ties, "pvalue": p}
        rule = "significantly" if significant else "direction"
        if differ + ties == 0:
            return _Part(Verdict.NOT_RUN, text, rule, **numbers)
        if self.too_few(differ + ties):
            return _Part(Verdict.NOT_TESTABLE, text, rule, **numbers)
        if lower <= higher:
            return _Part(Verdict.DOES_NOT_HOLD, text, rule, **numbers)
        if not significant:
            return _Part(Verdict.HOLDS, text, rule, **numbers)
        sig, detail = self.significant(a, b, metric, figure, p)
        if sig:
            return _Part(Verdict.HOLDS, f"{text}, {detail}", rule, **numbers)
        power = self.power(a, b, metric, figure)
        return _Part(Verdict.DIRECTION_ONLY, f"{text}, {detail}; power at {_PAPER_DATASETS} datasets {power:.2f} "
                                      f"({self.n_boot} bootstrap draws, seed {self.seed})", rule,
                     **numbers, power=power)

    def tend(self, pairs, metric, name):
        """"Tend to": ``a < b`` pooled over ``pairs`` and the datasets where they differ, median d beside it."""
        lower = higher = ties = 0
        effects = []
        for a, b in pairs:
            lo, hi, ti = _directions(self.series(a, metric), self.series(b, metric))
            lower, higher, ties = lower + lo, higher + hi, ties + ti
            d = cohens_d_table(self.results[self.results["method"].isin([a, b])], metric, b)[a]
            effects.append(d.replace([np.inf, -np.inf], np.nan))
        median = float(pd.concat(effects).median()) if effects else math.nan
        differ = lower + higher
        text = (f"{name} on {metric}: {lower}/{differ} (pair, dataset) where they differ, pooled over "
                f"{len(pairs)} pairs ({ties} tied); median Cohen's d {median:.2f}")
        numbers = {"agree": lower, "differ": differ, "ties": ties}
        n_datasets = (differ + ties) / max(len(pairs), 1)
        if differ + ties == 0:
            return _Part(Verdict.NOT_RUN, text, "tend to", **numbers)
        if self.too_few(n_datasets):
            return _Part(Verdict.NOT_TESTABLE, text, "tend to", **numbers)
        return _Part(Verdict.HOLDS if lower > higher else Verdict.DOES_NOT_HOLD, text, "tend to", **numbers)

    def not_worse(self, a, b, metric, figure=None):
        lower, higher, ties, p = self.compare(b, a, metric)
        text = (f"{a} not significantly above {b} on {metric}: lower on {higher}/{lower + higher} datasets where "
                f"they differ ({ties} tied)")
        numbers = {"agree": higher, "differ": lower + higher, "ties": ties, "pvalue": p}
        if self.too_few(lower + higher + ties):
            return _Part(Verdict.NOT_TESTABLE, text, "not significantly worse", **numbers)
        sig, detail = self.significant(b, a, metric, figure, p)
        worse = lower > higher and sig
        return _Part(Verdict.DOES_NOT_HOLD if worse else Verdict.HOLDS, f"{text}, {detail}", "not significantly worse",
                     **numbers)

    def same(self, a, b, metric, figure=None):
        lower, higher, ties, p = self.compare(a, b, metric, alternative="two-sided")
        text = f"{a} vs {b} on {metric}: lower on {lower}/{lower + higher} datasets where they differ ({ties} tied)"
        numbers = {"agree": lower, "differ": lower + higher, "ties": ties, "pvalue": p}
        if self.too_few(lower + higher + ties):
            return _Part(Verdict.NOT_TESTABLE, text, "no significant difference", **numbers)
        apart, detail = self.significant(a, b, metric, figure, p, sides="two-sided")
        return _Part(Verdict.DOES_NOT_HOLD if apart else Verdict.HOLDS, f"{text}, {detail}",
                     "no significant difference",
                     **numbers)

    def small_effect(self, a, b, metric, increase_only=False):
        """Median authors' d of a against b below the paper's "large" (scaled to the runs), or only its increase."""
        d = cohens_d_table(self.results[self.results["method"].isin([a, b])], metric, b)[a]
        d = d.replace([np.inf, -np.inf], np.nan)
        median = float(d.median())
        large = _large_d(self.results["run"].nunique())
        kind = "an increase below" if increase_only else "|d| below"
        rule = "no large increase" if increase_only else "little effect"
        text = f"median Cohen's d of {a} against {b} on {metric}: {median:.2f} ({kind} {large:.2f} is small)"
        if math.isnan(median):
            return _Part(Verdict.NOT_RUN, text, rule)
        if self.too_few(int(d.notna().sum())):
            return _Part(Verdict.NOT_TESTABLE, text, rule)
        small = median < large if increase_only else abs(median) < large
        return _Part(Verdict.HOLDS if small else Verdict.DOES_NOT_HOLD, text, rule)


def _combine(parts):
    """A claim's verdict and evidence: the weakest of its judged parts' verdicts."""
    verdicts = {p.verdict for p in parts}
    judged = [p.evidence for p in parts if p.verdict != Verdict.NOT_JUDGED]
    reported = [p.evidence for p in parts if p.verdict == Verdict.NOT_JUDGED]
    return next(v for v in _WEAKEST_FIRST if v in verdicts or v == Verdict.HOLDS), "; ".join(judged + reported)


def claims_from_parts(parts):
    """One verdict per claim from :func:`claim_verdicts`'s per-part table: the weakest of its judged parts.

    Parameters
    ----------
    parts : pandas.DataFrame
        ``claim_verdicts(..., parts=True)``.

    Returns
    -------
    pandas.DataFrame
        As ``claim_verdicts(..., parts=False)``: ``verdict``, ``claim``,
        ``statement``, ``evidence``, ``datasets``; "does not hold" before "not
        run", "not testable at this size", "direction holds, not
        significant" and "holds"; parts "not judged" (reported beside a
        claim) only add their evidence.

    Examples
    --------
    >>> parts = pd.DataFrame({"claim": ["C1", "C2", "C2"], "verdict": ["holds", "holds", Verdict.DIRECTION_ONLY],
    ...                       "evidence": ["a", "b", "c"], "datasets": 23})
    >>> claims_from_parts(parts)[["claim", "verdict"]].values.tolist()
    [['C1', 'holds'], ['C2', 'direction holds, not significant']]
    """
    check_frame(parts, "parts", ["claim", "verdict", "evidence", "datasets"])
    statements = paper_table("regression_study", "claims").set_index("claim")["statement"]
    out = []
    for claim, group in parts.groupby("claim", sort=False):
        verdict, evidence = _combine([_Part(v, e, "") for v, e in zip(group["verdict"], group["evidence"])])
        out.append({"claim": claim, "statement": statements.get(claim, ""), "verdict": verdict,
                    "evidence": evidence, "datasets": group["datasets"].iloc[0]})
    return verdict_table(out)


def claim_verdicts(rows, *, ablations=None, test_table=None, sqr="sqr-affine", alpha=0.05, min_datasets=6,
                   n_sim=10_000, seed=0, n_boot=200, parts=False):
    """Each of paper 002's 17 directional claims checked on our rows, part by part, with a verdict and its evidence.

    Methods are compared on their run means per dataset (lower is better),
    regularized methods at the lambda of the paper's rule
    (:func:`~calibtut.experiments.regression_study.study_results`,
    :func:`~calibtut.experiments.regression_study.combined_results`). Each
    claim is split into the parts its sentence joins, and each part is read
    by the rule its words call for (see
    :mod:`~calibtut.experiments.regression_study.claims`): a plain
    direction is a majority of the datasets where the two methods differ,
    ties reported beside it; "significantly" adds the paper's test, read off
    the critical-difference diagram of the claim's figure (Friedman's test
    over the figure's methods, then the pair's Wilcoxon signed-rank p-value,
    ``zero_method="pratt"``, with Holm's correction over every pair of the
    figure, at ``alpha``), or the pair's one-sided Wilcoxon test where no
    figure holds the comparison; a direction that holds without
    significance is "direction holds, not significant", with the test's
    bootstrap power at the paper's 57 datasets; "tend to" pools the
    directions of the claim's pairs; "small" and "large" effects compare the
    median authors' Cohen's d with 0.8 at five runs, scaled to the number
    of runs (the authors' d grows with the square root of it). A claim is
    the weakest of its parts.

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
        Fewest datasets on which a part is judged (with fewer, no two-sided
        Wilcoxon p-value can fall below 0.05, let alone a Holm-adjusted one,
        and a majority says little); a part on fewer is "not testable at
        this size", >= 1.
    n_sim : int, default 10000
        Null draws of the per-dataset PCE test (claim C1), >= 1.
    seed : int, default 0
        Seed of the PCE test and of the bootstrap draws of the power, >= 0.
    n_boot : int, default 200
        Bootstrap draws of the paper's 57 datasets for the power of
        a test whose direction holds without significance, >= 1.
    parts : bool, default False
        Return one row per part instead of one per claim
        (:func:`claims_from_parts` turns it into the claims' table).

    Returns
    -------
    pandas.DataFrame
        One row per claim of ``paper_table("regression_study", "claims")``:
        ``verdict`` (a :class:`~calibtut.run.Verdict`), ``claim``,
        ``statement``, ``evidence``, ``datasets``. With ``parts=True``, one
        row per part: ``verdict``, ``claim``, ``part`` (its number within the
        claim), ``rule``, ``agree`` and ``differ`` (datasets, or pairs x datasets
        for "tend to", in the claimed direction and where the two differ),
        ``ties``, ``pvalue`` (the pair's own Wilcoxon p-value), ``power``,
        ``evidence``, ``datasets``.

    Examples
    --------
    >>> rows = pd.DataFrame({"dataset": ["a", "a", "b", "b"], "run": [0, 1, 0, 1], "base": "mix-nll",
    ...     "method": "MIX-NLL", "regularizer": "none", "lam": 0.0, "posthoc": "none", "map_split": "none",
    ...     "train_fraction": 0.8, "n_test": 100, "val_wis": 1.0, "val_pce": 0.1,
    ...     **{f"test_{m}": 0.1 for m in ("pce", "wis", "nll", "std")}})
    >>> claim_verdicts(rows, n_sim=100)["verdict"].value_counts().to_dict()
    {'not run': 16, 'not testable at this size': 1}
    """
    alpha = check_real(alpha, "alpha", low=0, high=1, low_open=True, high_open=True)
    min_datasets = check_int(min_datasets, "min_datasets", minimum=1)
    n_sim, seed = check_int(n_sim, "n_sim", minimum=1), check_int(seed, "seed", minimum=0)
    n_boot = check_int(n_boot, "n_boot", minimum=1)
    if sqr not in ("sqr", "sqr-affine"):
        raise ValueError(f"sqr must be 'sqr' or 'sqr-affine', got {sqr!r}")
    if not isinstance(parts, bool):
        raise TypeError(f"parts must be True or False, got {parts!r}")
    check_frame(rows, "rows", ["dataset", "run", "base", "method", "regularizer", "posthoc", "train_fraction",
                               "map_split"])
    results = study_results(rows)
    checks = _Checks(results, alpha, min_datasets, sqr, n_boot, seed)
    found = {"C1": [_pce_test_part(rows, test_table, n_sim, seed, min_datasets)]}
    found.update(_study_parts(checks, sqr))
    found["C13"] = _combination_parts(rows, alpha, min_datasets, sqr, n_boot, seed)
    found["C14"] = _where_to_fit_parts(checks, sqr)
    found["C15"] = _best_calibrated_parts(checks, sqr)
    found["C16"] = [_ablation_verdict(ablations)]
    found["C12"] += _authors_std_notes(checks)
    found["C17"] += _harm_notes(checks, sqr)
    claims = paper_table("regression_study", "claims")
    long = pd.DataFrame([{"claim": c, "part": i + 1, **p._asdict()} for c in claims["claim"]
                         for i, p in enumerate(found[c])])
    long["datasets"] = rows["dataset"].nunique()
    long = long[["claim", "part", "rule", "verdict", "agree", "differ", "ties", "pvalue", "power", "evidence",
                 "datasets"]]
    return verdict_table(long) if parts else claims_from_parts(long)


def _pce_test_part(rows, test_table, n_sim, seed, min_datasets):
    """C1: the per-dataset PCE test against the paper's count of rejections, in both of its readings."""
    if test_table is None:
        table = calibration_test_table(rows, n_sim=n_sim, seed=seed)
    else:
        check_frame(test_table, "test_table", ["dataset", "reject_paper", "pvalue_paper", "pvalue"])
        tested = set(rows.loc[rows["base"] == "mix-nll", "dataset"])
        if set(test_table["dataset"]) != tested:
            raise ValueError(f"test_table must test the datasets of the rows' MIX-NLL models {sorted(tested)}, "
                             f"got {sorted(test_table['dataset'])}")
        table = test_table
    k, n = int(table["reject_paper"].sum()), len(table)
    readings = rejection_counts(table)  # the printed reading first, then "not rejected for 11"
    verdict = [Verdict.HOLDS if r.ours_share >= r.paper_share else Verdict.DOES_NOT_HOLD for r in readings.itertuples()]
    text = f"rejected at 0.01 with Holm for {k} of {n} datasets; " + "; ".join(
        f"reading '{r.reading}' of 57: {v}" for r, v in zip(readings.itertuples(), verdict))
    if n < min_datasets:
        return _Part(Verdict.NOT_TESTABLE, text, "share rejected", agree=k, differ=n)
    return _Part(verdict[0], text, "share rejected", agree=k, differ=n)


def _study_parts(checks, sqr):
    """Parts of the claims on the main study's rows: C2-C12 and C17."""
    lab, need = method_label, checks.need
    nll, crps, sq = (lab(b) for b in ("mix-nll", "mix-crps", sqr))
    found = {"C2": [need(nll, sq) or checks.lower(nll, sq, "pce")]}
    parts = []
    for base, posthocs, regs in (("mix-nll", ("emp", "lin", "kde"), ("pce-kde", "qr")),
                                 ("mix-crps", ("emp", "lin", "kde"), ("pce-kde", "qr")),
                                 (sqr, ("cqr",), ("pce-kde", "trunc"))):
        for p in posthocs:
            for r in regs:
                parts.append(need(lab(base, posthoc=p), lab(base, r))
                             or checks.lower(lab(base, posthoc=p), lab(base, r), "pce", significant=True,
                                             figure="3"))
    found["C3"] = parts
    c4 = need(lab("mix-crps", "pce-kde"), lab("mix-crps", "qr"), lab("mix-nll", "pce-kde"), lab("mix-nll", "qr"))
    if c4 is None:
        pce_means = checks.means("pce")
        gain_crps = pce_means[lab("mix-crps", "pce-kde")] - pce_means[lab("mix-crps", "qr")]
        gain_nll = pce_means[lab("mix-nll", "pce-kde")] - pce_means[lab("mix-nll", "qr")]
        c4 = checks.lower(gain_crps, gain_nll, "pce", significant=True,
                          name="PCE(PCE-KDE) - PCE(QR), MIX-CRPS against MIX-NLL,")
    found["C4"] = [c4]
    kde_sq, trunc_sq = lab(sqr, "pce-kde"), lab(sqr, "trunc")
    found["C5"] = [need(sq, kde_sq, trunc_sq)] if need(sq, kde_sq, trunc_sq) else [
        checks.lower(kde_sq, sq, "pce"), checks.lower(trunc_sq, sq, "pce"),
        checks.same(kde_sq, trunc_sq, "pce", figure="3")]
    parts = []
    for base in ("mix-nll", "mix-crps"):
        for p in ("emp", "lin", "kde"):
            for r in ("pce-kde", "qr"):
                parts.append(need(lab(base, posthoc=p), lab(base, r))
                             or checks.lower(lab(base, r), lab(base, posthoc=p), "wis"))
    for r in ("pce-kde", "trunc"):
        parts.append(need(lab(sqr, posthoc="cqr"), lab(sqr, r))
                     or checks.lower(lab(sqr, posthoc="cqr"), lab(sqr, r), "wis"))
    found["C6"] = parts
    parts = []
    for base in ("mix-nll", "mix-crps"):
        emp, lin, kde = (lab(base, posthoc=p) for p in ("emp", "lin", "kde"))
        vanilla = lab(base)
        missing = need(emp, lin, kde, vanilla)
        if missing:
            parts.append(missing)
            continue
        emp_nll = checks.results.loc[checks.results["method"] == emp, "test_nll"]
        infinite = int(np.isposinf(emp_nll).sum())
        parts.append(_Part(Verdict.HOLDS if infinite == len(emp_nll) else Verdict.DOES_NOT_HOLD,
                           f"{emp} NLL infinite in {infinite} of {len(emp_nll)} runs (by construction: the map's "
                           f"CDF is a step function, with no density)", "by construction", agree=infinite,
                           differ=len(emp_nll)))
        parts += [checks.lower(vanilla, lin, "nll", significant=True, figure="5"),
                  checks.lower(kde, vanilla, "pce"), checks.small_effect(kde, vanilla, "nll", increase_only=True)]
    found["C7"] = parts
    parts = []
    for r in ("pce-kde", "pce-sort", "qr"):
        reg = lab("mix-nll", r)
        missing = need(reg, nll)
        parts += [missing] if missing else [checks.lower(reg, nll, "pce", significant=True, figure="6")] + [
            checks.not_worse(reg, nll, m, figure="6") for m in ("wis", "nll", "std")]
    found["C8"] = parts
    qr_crps = lab("mix-crps", "qr")
    found["C9"] = [need(qr_crps, crps)] if need(qr_crps, crps) else [
        checks.lower(qr_crps, crps, "pce"), checks.small_effect(qr_crps, crps, "wis"),
        checks.small_effect(qr_crps, crps, "nll")]
    cqr_sq = lab(sqr, posthoc="cqr")
    found["C10"] = [need(cqr_sq, kde_sq, trunc_sq)] if need(cqr_sq, kde_sq, trunc_sq) else [
        checks.lower(cqr_sq, other, m, significant=True, figure="8") for other in (kde_sq, trunc_sq)
        for m in ("pce", "wis")]
    kde_crps = lab("mix-crps", posthoc="kde")
    others = (lab("mix-crps", posthoc="emp"), lab("mix-crps", posthoc="lin"))
    found["C11"] = [need(kde_crps, *others)] if need(kde_crps, *others) else [
        checks.lower(p, kde_crps, "wis", significant=True, figure="7") for p in others]
    # A map's STD is that of its 19 quantiles, an unmapped mixture's the exact one (the authors'
    # code); 19 quantiles of a Gaussian spread 0.89 sigma, so the comparison uses the quantile STD
    # of every model, and the authors' STD is only reported (_authors_std_notes).
    parts = []
    for r in ("pce-kde", "pce-sort"):
        for p in ("emp", "lin", "kde"):
            a, b = lab("mix-crps", posthoc=p), lab("mix-crps", r)
            parts.append(need(a, b) or checks.lower(a, b, "std_quantile"))
    parts += [need(sq, cqr_sq) or checks.lower(sq, cqr_sq, "std"),
              need(trunc_sq, sq) or checks.lower(trunc_sq, sq, "std")]
    found["C12"] = parts
    # C17: "improve the PCE without much harm to the rest of the distribution": the PCE in
    # direction, the harm on the proper scores (CRPS, and the NLL of the mixtures); the
    # sharpness is not harm here: the paper itself finds CQR less sharp (C12)
    parts = []
    for method, vanilla in ((lab("mix-nll", "pce-kde"), nll), (qr_crps, crps), (cqr_sq, sq)):
        missing = need(method, vanilla)
        if missing:
            parts.append(missing)
            continue
        metrics = ("wis",) if method.startswith("SQR") else ("wis", "nll")
        parts += [checks.lower(method, vanilla, "pce")] + [
            checks.small_effect(method, vanilla, m, increase_only=True) for m in metrics]
    found["C17"] = parts
    return found


def _authors_std_notes(checks):
    """C12 in the authors' STD (closed form for unmapped mixtures, 19 quantiles for maps), reported only."""
    notes = []
    for r in ("pce-kde", "pce-sort"):
        for p in ("emp", "lin", "kde"):
            a, b = method_label("mix-crps", posthoc=p), method_label("mix-crps", r)
            if not checks.missing(a, b):
                part = checks.lower(a, b, "std")
                notes.append(part._replace(verdict=Verdict.NOT_JUDGED, evidence="authors' STD: " + part.evidence,
                                           rule="reported"))
    return notes


def _harm_notes(checks, sqr):
    """C17's STD, reported beside the verdict (sharpness is not harm in the claim; see C12)."""
    notes = []
    for method, vanilla in ((method_label("mix-nll", "pce-kde"), method_label("mix-nll")),
                            (method_label("mix-crps", "qr"), method_label("mix-crps")),
                            (method_label(sqr, posthoc="cqr"), method_label(sqr))):
        if not checks.missing(method, vanilla):
            part = checks.small_effect(method, vanilla, "std", increase_only=True)
            notes.append(part._replace(verdict=Verdict.NOT_JUDGED, evidence="sharpness, not judged: " + part.evidence,
                                       rule="reported"))
    return notes


def _combination_parts(rows, alpha, min_datasets, sqr, n_boot, seed):
    """C13 (Appendix B.2): no combination significantly improves the PCE; they tend to worsen CRPS, NLL, STD."""
    combined = combined_results(rows)
    methods = figure_methods("9", sqr)
    if not set(methods[1::2]) & set(combined["method"]):
        return [_Part(Verdict.NOT_RUN, "no regularization + post-hoc rows (run_study_task(..., combine=True))",
                      "not run")]
    checks = _Checks(combined, alpha, min_datasets, sqr, n_boot, seed)
    pairs = [(alone, combo) for alone, combo in zip(methods[::2], methods[1::2]) if not checks.missing(alone, combo)]
    skipped = [combo for alone, combo in zip(methods[::2], methods[1::2]) if checks.missing(alone, combo)]
    parts = []
    for alone, combo in pairs:
        # "no regularization method significantly improves probabilistic calibration"
        lower, higher, ties, p = checks.compare(combo, alone, "pce")
        sig, detail = checks.significant(combo, alone, "pce", "9", p)
        text = (f"{combo} not significantly below {alone} on pce: lower on {lower}/{lower + higher} datasets where "
                f"they differ ({ties} tied), {detail}")
        numbers = {"agree": higher, "differ": lower + higher, "ties": ties, "pvalue": p}
        if checks.too_few(lower + higher + ties):
            parts.append(_Part(Verdict.NOT_TESTABLE, text, "no significant improvement", **numbers))
        else:
            improves = lower > higher and sig
            parts.append(_Part(Verdict.DOES_NOT_HOLD if improves else Verdict.HOLDS, text, "no significant improvement",
                               **numbers))
    # "they tend to negatively affect CRPS, NLL, and STD metrics"
    for metric in ("wis", "nll", "std"):
        scored = [(a, c) for a, c in pairs if not (metric == "nll" and c.startswith("SQR"))]
        parts.append(checks.tend(scored, metric, "the post-hoc map alone < with regularization"))
    if skipped:
        parts.append(_Part(Verdict.NOT_JUDGED, f"not trained: {', '.join(skipped)}", "reported"))
    return parts


def _where_to_fit_parts(checks, sqr):
    """C14 (Appendix B.3): maps fitted on the calibration split against maps fitted on the training split."""
    lab = method_label
    trained = [lab("mix-nll", posthoc=p, map_split="train") for p in ("lin", "kde")]
    if checks.missing(*trained):
        return [_Part(Verdict.NOT_RUN, "no maps fitted on the training split (run_study_task(..., map_on_train=True))",
                      "not run")]
    pairs = [(lab("mix-nll", posthoc=p), lab("mix-nll", posthoc=p, map_split="train")) for p in ("lin", "kde")]
    cqr = (lab(sqr, posthoc="cqr"), lab(sqr, posthoc="cqr", map_split="train"))
    with_sqr = not checks.missing(lab(sqr), *cqr)
    # "MIX-NLL + Rec-LIN and MIX-NLL + Rec-KDE achieve significantly better calibration" on the
    # calibration split; "SQR-CRPS + CQR tends to improve calibration"
    parts = [checks.lower(cal, train, "pce", significant=True, figure="10") for cal, train in pairs]
    if with_sqr:
        parts.append(checks.lower(*cqr, "pce"))
    # "tend to achieve better CRPS and NLL scores, although not significantly"; "significantly sharper"
    both = [*pairs, cqr] if with_sqr else pairs
    parts.append(checks.tend([(train, cal) for cal, train in both], "wis", "training split < calibration split"))
    parts.append(checks.tend([(train, cal) for cal, train in pairs], "nll", "training split < calibration split"))
    parts += [checks.lower(train, cal, "std", significant=True, figure="10") for cal, train in both]
    return parts


def _best_calibrated_parts(checks, sqr):
    """C15: is MIX-NLL + Rec-EMP the lowest PCE of Figure 14's five models on most datasets?"""
    lab = method_label
    emp_nll = lab("mix-nll", posthoc="emp")
    five = [lab("mix-nll"), lab("mix-nll", "pce-kde"), emp_nll, lab("mix-crps"), lab(sqr)]
    missing = checks.need(*five)
    if missing:
        return [missing]
    table = checks.means("pce")[five].dropna()
    wins = table.idxmin(axis=1).value_counts()
    won = int(wins.get(emp_nll, 0))
    text = (f"lowest PCE among Figure 14's five models on {won}/{len(table)} datasets; "
            + ", ".join(f"{m}: {c}" for m, c in wins.items()))
    if checks.too_few(len(table)):
        return [_Part(Verdict.NOT_TESTABLE, text, "most cases", agree=won, differ=len(table))]
    return [_Part(Verdict.HOLDS if won > len(table) / 2 else Verdict.DOES_NOT_HOLD, text, "most cases", agree=won,
                  differ=len(table))]


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
    seed = check_full_arguments(full, recompute, seed)
    if full.label == "full" and not recompute:
        table = published_calibration_test(seed=seed, root=root)
        if table is not None:
            return table
    return calibration_test_table(full.rows, "mix-nll", seed=seed)


def full_claim_parts(full, *, ablations=None, test_table=None, recompute=False, seed=0, root=None):
    """The per-part verdicts of the full run (:func:`claim_verdicts` with ``parts=True``).

    They cost tens of CPU-seconds (the bootstrap power of every part that
    falls short of its test). Chapter 6 publishes them with its full profile
    (table ``claim_parts``), and reads them back at ``ci``, as
    :func:`full_calibration_test` does for claim C1's test.

    Parameters
    ----------
    full : FullStudy
        As :func:`~calibtut.experiments.regression_study.full_study` returns it (with rows).
    ablations, test_table : pandas.DataFrame, optional
        As for :func:`claim_verdicts`.
    recompute : bool, default False
        Compute the verdicts even when they are published.
    seed : int, default 0
        Seed of the bootstrap, >= 0.
    root : str or path-like, optional
        Repository root; found from the working directory by default.

    Returns
    -------
    pandas.DataFrame
        For :func:`claims_from_parts`. Only the published full run (label
        ``"full"``) reads the published table, and only when it was drawn with
        ``seed``; an interim run's, or another seed's, is computed.

    Examples
    --------
    >>> import tempfile
    >>> from calibtut.experiments.regression_study import FullStudy
    >>> full_claim_parts(FullStudy(None, "full", ""), root=tempfile.mkdtemp())
    Traceback (most recent call last):
    ...
    TypeError: full must be a FullStudy with rows, got FullStudy(rows=None, label='full', note='')
    """
    seed = check_full_arguments(full, recompute, seed)
    if full.label == "full" and not recompute:
        parts = published_table("claim_parts", seed, root)
        if parts is not None:
            return parts
    return claim_verdicts(full.rows, ablations=ablations, test_table=test_table, seed=seed, parts=True)


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
    return published_table("full_calibration_test", seed, root)


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
        The verdicts first (:func:`calibtut.run.verdict_table`): ``ours (ci)``
        and ``ours (<label>)`` (when ``full`` is given); then ``claim``,
        ``paper`` (the statement), ``evidence`` (of the full run when given,
        else of ``ci``), ``difference`` (whether the two verdicts differ).

    Examples
    --------
    >>> v = pd.DataFrame({"claim": ["C1"], "statement": ["s"], "verdict": ["holds"], "evidence": ["e"]})
    >>> table = claims_table(v, v.assign(verdict="not run"), label="full, 2 of 5 runs")
    >>> table.columns.tolist()[:2], table["difference"].tolist()
    (['ours (ci)', 'ours (full, 2 of 5 runs)'], [True])
    """
    if not isinstance(label, str) or not label.strip():
        raise TypeError(f"label must be a non-empty string, got {label!r}")
    for name, table in (("ci", ci), ("full", full)):
        if table is not None:
            check_frame(table, name, ["claim", "statement", "verdict", "evidence"])
    out = pd.DataFrame({"claim": ci["claim"], "paper": ci["statement"], "ours (ci)": ci["verdict"]})
    if full is None:
        out["evidence"] = ci["evidence"].to_numpy()
        return verdict_table(out, verdicts=("ours (ci)",))
    full = full.set_index("claim").reindex(ci["claim"])
    out[f"ours ({label})"] = full["verdict"].to_numpy()
    out["evidence"] = full["evidence"].to_numpy()
    out["difference"] = out["ours (ci)"] != out[f"ours ({label})"]
    return verdict_table(out, verdicts=("ours (ci)", f"ours ({label})"))


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
        return _Part(Verdict.NOT_RUN,
                     "the appendix ablations (mixture size, quantiles per step, depth) are not trained",
                     "not run")
    parts = []
    n_runs = ablations["run"].nunique() if "run" in ablations.columns else STUDY_RUNS
    large = _large_d(n_runs)
    for factor, metrics in _ABLATION_METRICS.items():
        default = ABLATIONS[factor][0]
        medians = _ablation_medians(ablations, factor)
        if len(medians) < len(metrics):
            absent = ", ".join(m for m in metrics if m not in medians)
            parts.append(_Part(Verdict.NOT_RUN, f"no {factor} ablation on {absent}",
                               "not run"))
            continue
        shown = "; ".join(f"{metric} " + ", ".join(f"{v}: {m:.2f}" for v, m in sorted(values.items()))
                          for metric, values in medians.items())
        text = f"median d against {factor} = {default} over {n_runs} runs ({shown})"
        if factor == "n_components":
            if any(1 not in values for values in medians.values()):
                parts.append(_Part(Verdict.NOT_RUN, f"{text}; no single-component model", "not run"))
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
        verdict = Verdict.HOLDS if ok else Verdict.DOES_NOT_HOLD
        parts.append(_Part(verdict, f"{_ABLATION_SENTENCES[factor]} ({verdict}): {text}", "median effect size"))
    return _Part(*_combine(parts), "median effect size")


#: Each claim in a few words of our own (the full statement is ``paper_table("regression_study", "claims")``).
CLAIM_SHORT = {
    "C1": "vanilla MIX-NLL miscalibrated on many datasets",
    "C2": "SQR-CRPS less calibrated than MIX-NLL",
    "C3": "post-hoc PCE significantly below regularization",
    "C4": "PCE-KDE gains more over QR with MIX-CRPS",
    "C5": "PCE-KDE and Trunc lower SQR's PCE alike",
    "C6": "post-hoc CRPS above regularization (not SQR)",
    "C7": "Rec-EMP NLL infinite, Rec-LIN raises it, Rec-KDE not much",
    "C8": "MIX-NLL: each regularizer improves PCE, no harm",
    "C9": "MIX-CRPS + QR: better PCE, little effect else",
    "C10": "SQR + CQR significantly beats Trunc and PCE-KDE",
    "C11": "MIX-CRPS: Rec-KDE significantly worse CRPS",
    "C12": "sharpness: PCE-KDE/Sort vs maps, reversed for SQR",
    "C13": "regularizing before a map does not help",
    "C14": "maps fitted on calibration split better calibrated",
    "C15": "MIX-NLL + Rec-EMP best calibrated of Figure 14",
    "C16": "ablations: components, quantiles per step, depth",
    "C17": "three good choices improve PCE without harm",
}

# the part rules whose agree / differ counts a share in the claimed direction (the others read effect sizes
# or the absence of a significant difference)
_DIRECTIONAL_RULES = ("direction", "significantly", "tend to", "most cases", "share rejected", "by construction")


def claims_overview(table):
    """The compact verdict table: each claim in a few words and our verdicts, without the evidence.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`claims_table` (columns ``claim``, ``ours (ci)`` and any other
        ``ours (...)`` columns).

    Returns
    -------
    pandas.DataFrame
        The ``ours (...)`` columns, then ``claim`` and ``in short``
        (:data:`CLAIM_SHORT`), one row per claim of ``table``.

    Examples
    --------
    >>> v = pd.DataFrame({"claim": ["C2"], "statement": ["s"], "verdict": ["holds"], "evidence": ["e"]})
    >>> claims_overview(claims_table(v)).values.tolist()
    [['holds', 'C2', 'SQR-CRPS less calibrated than MIX-NLL']]
    """
    check_frame(table, "table", ["claim", "ours (ci)"])
    unknown = sorted(set(table["claim"]) - set(CLAIM_SHORT))
    if unknown:
        raise ValueError(f"table names claims {unknown} that paper 002 does not make")
    ours = [c for c in table.columns if c.startswith("ours (")]
    out = table[["claim"]].assign(**{"in short": table["claim"].map(CLAIM_SHORT)})
    return verdict_table(pd.concat([table[ours], out], axis=1), verdicts=tuple(ours))


def plot_claim_verdicts(table, parts=None):
    """The claims' verdicts as a grid (claims x our runs) and, with ``parts``, each part's share of agreeing datasets.

    Left: one row per claim, one column per ``ours (...)`` column of
    ``table``, coloured by verdict (:data:`~calibtut.run.VERDICT_COLOURS`). Right (with
    ``parts``): for every part read as a direction (a plain direction,
    "significantly", "tend to", "most cases", a share of rejections, "by
    construction"), the share of the datasets
    where the two methods differ (of pairs x datasets for "tend to") that go
    the claimed way, coloured by the part's verdict; a direction holds above
    the dotted line at one half. Parts read on effect sizes or on the absence
    of a significant difference are left out of this panel.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`claims_table`.
    parts : pandas.DataFrame, optional
        ``claim_verdicts(..., parts=True)`` of the run whose parts are shown
        (columns ``claim``, ``rule``, ``verdict``, ``agree``, ``differ``).

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> v = pd.DataFrame({"claim": ["C1", "C2"], "statement": "s", "verdict": ["holds", "not run"],
    ...                   "evidence": "e"})
    >>> parts = pd.DataFrame({"claim": ["C1", "C2"], "rule": "direction", "verdict": ["holds", "not run"],
    ...                       "agree": [15, np.nan], "differ": [23, np.nan]})
    >>> fig = plot_claim_verdicts(claims_table(v, v, label="full"), parts)
    >>> len(fig.axes), [t.get_text() for t in fig.axes[0].get_yticklabels()]
    (2, ['C1', 'C2'])
    """
    check_frame(table, "table", ["claim", "ours (ci)"])
    ours = [c for c in table.columns if c.startswith("ours (")]
    unknown = sorted(set(table[ours].stack()) - set(VERDICT_COLOURS))
    if unknown:
        raise ValueError(f"table holds verdicts {unknown}; known: {list(VERDICT_COLOURS)}")
    if parts is not None:
        check_frame(parts, "parts", ["claim", "rule", "verdict", "agree", "differ"])
    claims = list(table["claim"])
    y = np.arange(len(claims))
    fig, axes = column_subplots(1 if parts is None else 2, panel_height=0.3 * len(claims) + 1.6, sharey=True,
                                gridspec_kw={} if parts is None else {"width_ratios": [1, 2]})
    grid = axes[0]
    present = set(table[ours].stack())
    for j, column in enumerate(ours):
        grid.barh(y, 1, left=j, height=0.9, color=table[column].map(VERDICT_COLOURS), edgecolor="white")
    grid.set(xticks=np.arange(len(ours)) + 0.5, xlim=(0, len(ours)), yticks=y, ylim=(len(claims) - 0.5, -0.5))
    grid.set_xticklabels([c[len("ours ("):-1] for c in ours], fontsize=MIN_FONT_PT + 1)
    grid.set_yticklabels(claims, fontsize=MIN_FONT_PT + 1)
    grid.tick_params(length=0)
    grid.set_title("verdict", fontsize=MIN_FONT_PT + 2)
    if parts is not None:
        ax = axes[1]
        shown = parts[parts["rule"].isin(_DIRECTIONAL_RULES) & (parts["differ"] > 0)]
        rank = {c: i for i, c in enumerate(claims)}
        shown = shown[shown["claim"].isin(rank)]
        present |= set(shown["verdict"])
        ax.scatter(shown["agree"] / shown["differ"], shown["claim"].map(rank), s=22, zorder=3,
                   c=shown["verdict"].map(VERDICT_COLOURS), edgecolors="k", linewidths=0.4)
        ax.axvline(0.5, color="k", ls=":", lw=1)
        ax.set(xlim=(0, 1.02))
        ax.set_xlabel("share of datasets in the claimed direction", fontsize=MIN_FONT_PT + 1)
        ax.set_title("parts read as a direction", fontsize=MIN_FONT_PT + 2)
        ax.grid(axis="y", color="0.9", lw=0.6)
    legend = [v for v in Verdict if v in present]
    handles = [plt.Rectangle((0, 0), 1, 1, color=VERDICT_COLOURS[v]) for v in legend]
    fig.legend(handles, [str(v) for v in legend], loc="outside lower center", ncol=3, fontsize=MIN_FONT_PT,
               frameon=False)
    return fig
