"""Tests of calibtut.stats: paper 002's comparison, clustered proportions, summaries of repeated runs."""

import itertools

import matplotlib
import numpy as np
import pandas as pd
import pytest
from scipy import stats
import statsmodels.api as sm
from statsmodels.stats.multitest import multipletests

from calibtut.metrics import pce_null_distribution
from calibtut.stats import (
    LAMBDA_GRID,
    accuracy_gap_sd,
    clustered_proportion_se,
    cohens_d,
    critical_difference_diagram,
    friedman_wilcoxon,
    holm,
    mean_lower_bound,
    mean_with_sem,
    paired_wilcoxon,
    pce_study_test,
    select_lambda,
    summarize_runs,
)

matplotlib.use("Agg")


def _step_down(p, alpha):
    order = np.argsort(p)
    reject = np.zeros(p.size, bool)
    for i, j in enumerate(order):
        if p[j] > alpha / (p.size - i):
            break
        reject[j] = True
    return reject


def test_holm_matches_the_authors_step_down():
    rng = np.random.default_rng(0)
    for _ in range(20):
        p = rng.uniform(0, 0.05, size=12) ** 1.5
        assert holm(p, 0.01)[0].tolist() == _step_down(p, 0.01).tolist()


def test_holm_matches_statsmodels():
    rng = np.random.default_rng(10)
    for size in (1, 2, 7, 120):
        p = np.round(rng.uniform(0, 1, size=size) ** 3, 3)  # ties, and values whose k p exceed 1
        p[: size // 3] = 1.0
        for alpha in (0.01, 0.05):
            reject, adjusted, _, _ = multipletests(p, alpha=alpha, method="holm")
            ours = holm(p, alpha)
            np.testing.assert_allclose(ours[1], adjusted, rtol=1e-12)
            assert ours[0].tolist() == reject.tolist()


def test_pce_study_test_pvalues_and_holm():
    rng = np.random.default_rng(1)
    pits = {f"d{i}": [rng.random(100), rng.random(120)] for i in range(8)}
    pits["bad"] = [rng.random(100) ** 1.5, rng.random(120) ** 1.5]
    table = pce_study_test(pits, n_sim=3000, seed=4)
    # the paper's p-value is the fraction of null draws strictly above the statistic
    null = pce_null_distribution([100, 120], 3000, seed=4 + 8)
    stat = np.mean([np.mean(np.abs(np.sort(r) - np.arange(1, r.size + 1) / (r.size + 1))) for r in pits["bad"]])
    assert table.loc["bad", "statistic"] == pytest.approx(stat)
    assert table.loc["bad", "pvalue_paper"] == np.mean(null > stat)
    assert table.loc["bad", "pvalue"] == (1 + np.sum(null >= stat)) / 3001
    assert table["reject"].tolist() == [False] * 8 + [True]
    assert table["reject_paper"].tolist() == multipletests(table["pvalue_paper"], 0.01, "holm")[0].tolist()


def test_holm_and_pce_study_test_refuse_bad_arrays_by_name():
    with pytest.raises(ValueError, match=r"pvalues must lie in \[0, 1\], got 1.5"):
        holm([0.01, 1.5])
    with pytest.raises(TypeError, match="pvalues must hold numbers, got strings"):
        holm(np.array(["0.01", "0.2"]))
    rng = np.random.default_rng(2)
    with pytest.raises(ValueError, match=r"pits\['b'\]\[1\] must lie in \[0, 1\], got 1.2"):
        pce_study_test({"a": [rng.random(50)], "b": [rng.random(50), np.full(50, 1.2)]}, n_sim=10)


def test_pce_test_level_over_seeds():
    # under calibration, the per-dataset p-values are uniform: about 10% fall below 0.1
    rng = np.random.default_rng(2)
    pits = {i: [rng.random(50)] for i in range(200)}
    table = pce_study_test(pits, n_sim=500, seed=0)
    assert 0.05 < np.mean(table["pvalue"] < 0.1) < 0.15


def test_cohens_d_forms():
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=5), rng.normal(1, size=5)
    textbook = cohens_d(a, b, "textbook")
    pooled = np.sqrt((a.var(ddof=1) + b.var(ddof=1)) / 2)
    assert textbook == pytest.approx((a.mean() - b.mean()) / pooled)
    assert cohens_d(a, b, "authors") == pytest.approx(np.sqrt(5) * textbook)
    # unequal sizes: textbook pooled variance with its weights
    c = rng.normal(size=8)
    s = np.sqrt((4 * a.var(ddof=1) + 7 * c.var(ddof=1)) / 11)
    assert cohens_d(a, c, "textbook") == pytest.approx((a.mean() - c.mean()) / s)
    assert cohens_d(a, c) == pytest.approx((a.mean() - c.mean()) / np.sqrt((a.var() + c.var()) / 11))
    with pytest.raises(ValueError, match="form"):
        cohens_d(a, b, "hedges")


def test_select_lambda_rule():
    lams = list(LAMBDA_GRID)
    score = np.array([[1.0, 1.0], [1.0, 1.04], [1.1, 1.1], [1.11, 1.11], [1.3, 1.3], [2.0, 2.0]])
    pce = np.array([[0.05] * 2, [0.04] * 2, [0.03] * 2, [0.02] * 2, [0.01] * 2, [0.0] * 2])
    assert select_lambda(lams, score, pce) == 0.05  # 1.1 <= 1.1 x 1.0 at 0.05; 1.11 (at 0.2) is not
    assert select_lambda(lams, score, pce, tolerance=0.5) == 1.0
    assert select_lambda(lams, score, pce[::-1]) == 0.0  # lambda = 0 has the lowest PCE
    # a negative score (an NLL): "at most 10 % worse" is an increase of at most 0.1 |s0|
    neg = -score
    neg[1] = [-1.05, -1.05]  # better than lambda = 0: admissible (the ratio rule, <= 1.1 x -1, refused it)
    neg[2] = [-0.9, -0.9]  # exactly 10 % worse: admissible
    neg[3:] = -0.89  # 11 % worse
    assert select_lambda(lams, neg, pce) == 0.05
    neg[2] = [-0.89, -0.89]
    assert select_lambda(lams, neg, pce) == 0.01
    assert select_lambda(lams, neg, pce, tolerance=0.0) == 0.01
    # a zero reference admits only scores <= 0
    assert select_lambda([0, 1, 5], [0.0, 0.0, 1e-9], [0.1, 0.05, 0.01]) == 1.0
    with pytest.raises(ValueError, match="contain 0"):
        select_lambda([0.1, 1], [1, 1], [1, 1])
    with pytest.raises(ValueError, match=">= 0"):
        select_lambda([0, -1], [1, 1], [1, 1])
    with pytest.raises(ValueError, match="rows"):
        select_lambda([0, 1], [1, 1, 1], [1, 1, 1])
    with pytest.raises(ValueError, match="tolerance must be a finite real number, got inf"):
        select_lambda(lams, score, pce, tolerance=np.inf)  # would make every strength admissible


def test_friedman_wilcoxon_matches_scipy_and_statsmodels():
    rng = np.random.default_rng(4)
    base = rng.normal(size=25)
    table = pd.DataFrame({m: base + shift + 0.5 * rng.normal(size=25) for m, shift in zip("abcd", (0, 0.1, 0.5, 1))})
    table.iloc[3, 1] = table.iloc[3, 0]  # a zero difference: pratt keeps it in the ranking
    res = friedman_wilcoxon(table)
    assert res.friedman_pvalue == pytest.approx(stats.friedmanchisquare(*table.T.to_numpy()).pvalue)
    pairs = list(itertools.combinations("abcd", 2))
    raw = [stats.wilcoxon(table[x], table[y], zero_method="pratt").pvalue for x, y in pairs]
    adjusted = multipletests(raw, method="holm")[1]
    for (x, y), p in zip(pairs, adjusted):
        assert res.pvalues.loc[x, y] == pytest.approx(p, rel=1e-10)
    want_ranks = np.mean([stats.rankdata(row) for row in table.to_numpy()], axis=0)
    np.testing.assert_allclose(res.ranks.to_numpy(), want_ranks)


def test_friedman_wilcoxon_drops_nan_keeps_inf_and_draws():
    rng = np.random.default_rng(5)
    table = pd.DataFrame(rng.normal(size=(12, 3)) + [0, 1, 2], columns=["x", "y", "emp"])
    table.loc[0, "x"] = np.nan
    table["emp"] = np.inf  # Rec-EMP's NLL: always ranked last
    res = friedman_wilcoxon(table)
    assert res.ranks["emp"] == 3.0
    assert critical_difference_diagram(res)
    with pytest.raises(ValueError, match="at least 3 methods"):
        friedman_wilcoxon(table[["x", "y"]])
    with pytest.raises(TypeError, match="DataFrame"):
        friedman_wilcoxon(table.to_numpy())
    assert isinstance(res, tuple) and res.alpha == 0.05  # a result record (named tuple)


def test_letter_value_plot_orders_by_median_and_uses_symlog():
    from calibtut.stats import letter_value_plot

    rng = np.random.default_rng(6)
    effects = pd.DataFrame({"b": rng.normal(1, 1, 40), "a": rng.normal(-3, 1, 40), "c": rng.normal(0, 1, 40)})
    effects.iloc[0, 0] = np.nan
    ax = letter_value_plot(effects)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "c", "b"]
    assert ax.get_xscale() == "symlog"
    # effects inside the linear part get round linear ticks, not ticks at the two limits
    small = letter_value_plot(pd.DataFrame({"a": np.linspace(-0.0314, 0.66, 23)}))
    ticks = [t for t in small.get_xticks() if small.get_xlim()[0] <= t <= small.get_xlim()[1]]
    steps = np.asarray(ticks) / np.diff(ticks).min()
    assert len(ticks) >= 3 and np.allclose(steps, np.round(steps)), ticks  # evenly spaced
    with pytest.raises(ValueError, match="linthresh"):
        letter_value_plot(effects, linthresh=0)
    with pytest.raises(TypeError, match="DataFrame"):
        letter_value_plot(effects.to_numpy())


def test_friedman_wilcoxon_identical_methods_are_not_different():
    import warnings

    rng = np.random.default_rng(3)
    base = rng.normal(size=12)
    table = pd.DataFrame({"a": base, "a copy": base, "b": base + 1 + 0.1 * rng.normal(size=12)})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = friedman_wilcoxon(table)
    assert res.pvalues.loc["a", "a copy"] == 1.0 and res.pvalues.loc["a", "b"] < 0.05


def test_paired_wilcoxon_reads_equal_infinities_as_a_tie():
    # Rec-EMP's NLL is +inf on every dataset; another map's is +inf on a few of them
    rng = np.random.default_rng(7)
    a = rng.normal(size=14)
    b = a + 0.4 + 0.3 * rng.normal(size=14)
    a[:3] = b[:3] = np.inf
    finite_a, finite_b = a.copy(), b.copy()
    finite_a[:3] = finite_b[:3] = 50.0  # the same table with the ties at a finite value
    want = stats.wilcoxon(finite_a, finite_b, zero_method="pratt").pvalue
    assert paired_wilcoxon(a, b) == pytest.approx(want, rel=1e-12)
    # the symptom: scipy drops the tied datasets (inf - inf = nan) and gets another p-value
    with np.errstate(invalid="ignore"):
        dropped = stats.wilcoxon(a, b, zero_method="pratt", nan_policy="omit").pvalue
    assert dropped == pytest.approx(stats.wilcoxon(a[3:], b[3:], zero_method="pratt").pvalue)
    assert abs(dropped - want) > 1e-3
    # an infinite value against a finite one is the largest difference, in its direction
    c = b.copy()
    c[:3] = 1.0
    assert paired_wilcoxon(a, c, "greater") == pytest.approx(
        stats.wilcoxon(np.where(np.isinf(a), 1e6, a), c, zero_method="pratt", alternative="greater").pvalue)
    # NaN drops the pair; no nonzero difference is no evidence of a difference
    assert paired_wilcoxon(np.append(a, np.nan), np.append(b, 0.0)) == pytest.approx(want, rel=1e-12)
    assert paired_wilcoxon(a, a) == 1.0
    with pytest.raises(ValueError, match="same length"):
        paired_wilcoxon(a, b[:-1])
    with pytest.raises(ValueError, match="alternative"):
        paired_wilcoxon(a, b, "lower")


def test_friedman_wilcoxon_treats_infinities_alike_in_both_tests():
    rng = np.random.default_rng(8)
    base = rng.normal(size=16)
    table = pd.DataFrame({"vanilla": base, "lin": base + 0.3 + 0.3 * rng.normal(size=16),
                          "kde": base + 0.1 + 0.3 * rng.normal(size=16), "emp": np.inf})
    table.loc[:3, "lin"] = np.inf  # the tied rows: lin and emp both +inf
    table.loc[:1, "kde"] = np.inf  # and kde, lin and emp on the first two
    res = friedman_wilcoxon(table)
    finite = table.replace(np.inf, 1e3)  # a monotone relabelling: the same ranks and the same ties
    assert res.friedman_pvalue == pytest.approx(stats.friedmanchisquare(*finite.T.to_numpy()).pvalue)
    assert res.ranks["emp"] > res.ranks["lin"]
    pairs = list(itertools.combinations(table.columns, 2))
    with np.errstate(invalid="ignore"):  # inf - inf: the tie, written as a zero difference
        diffs = [np.where(table[x] == table[y], 0.0, table[x] - table[y]) for x, y in pairs]
    raw = [stats.wilcoxon(d, zero_method="pratt").pvalue for d in diffs]
    adjusted = dict(zip(pairs, multipletests(raw, method="holm")[1]))
    for (x, y), p in adjusted.items():
        assert res.pvalues.loc[x, y] == pytest.approx(p, rel=1e-10), (x, y)
    # scikit-posthocs (scipy inside) drops the two tied datasets of (kde, lin)
    import scikit_posthocs as sp

    long = table.melt(var_name="method", value_name="value", ignore_index=False).reset_index(names="dataset")
    with np.errstate(invalid="ignore"):
        theirs = sp.posthoc_wilcoxon(long, val_col="value", group_col="method", zero_method="pratt",
                                     p_adjust="holm", sort=False)
    assert abs(theirs.loc["kde", "lin"] - res.pvalues.loc["kde", "lin"]) > 1e-3


def test_clustered_proportion_se_matches_statsmodels_cluster_robust_mean():
    # the mean of per-point indicators regressed on a constant, errors clustered by group
    rng = np.random.default_rng(3)
    trials = rng.integers(1, 12, size=15)
    successes = rng.binomial(trials, rng.uniform(0.5, 0.95, size=15))
    y = np.concatenate([np.r_[np.ones(k), np.zeros(m - k)] for k, m in zip(successes, trials)])
    groups = np.repeat(np.arange(15), trials)
    fit = sm.OLS(y, np.ones((y.size, 1))).fit(cov_type="cluster", cov_kwds={"groups": groups})
    assert clustered_proportion_se(successes, trials) == pytest.approx(fit.bse[0], rel=1e-10)
    # clusters without points do not count
    padded = clustered_proportion_se(np.r_[successes, 0], np.r_[trials, 0])
    assert padded == pytest.approx(fit.bse[0], rel=1e-12)


def test_clustered_proportion_se_hand_cases():
    # 3 of 4 and 1 of 4: p = 1/2, residuals +1 and -1, V = 2 / (2 - 1) * 2 / 8^2
    assert clustered_proportion_se([3, 1], [4, 4]) == pytest.approx(0.25)
    # one point per cluster: the binomial variance times N / (N - 1)
    k = np.r_[np.ones(7), np.zeros(3)]
    assert clustered_proportion_se(k, np.ones(10)) == pytest.approx(np.sqrt(0.7 * 0.3 / 10 * 10 / 9))
    # fewer than two clusters with points: no spread between clusters to estimate
    assert np.isnan(clustered_proportion_se([3], [4]))
    assert np.isnan(clustered_proportion_se([3, 0], [4, 0]))


def test_clustered_proportion_se_covers_correlated_clusters_where_the_binomial_does_not():
    # clusters of 10 points sharing a success probability drawn per cluster (intra-cluster
    # correlation 0.1): the clustered standard error tracks the spread of the pooled proportion
    # over repetitions, the binomial one understates it by about sqrt(1 + 9 * 0.1)
    rng = np.random.default_rng(11)
    n_rep, n_clusters, size = 2000, 40, 10
    a = b = (1 / 0.1 - 1) / 2  # beta(a, b) with mean 0.5: ICC 1 / (a + b + 1) = 0.1
    p = rng.beta(a, b, size=(n_rep, n_clusters))
    k = rng.binomial(size, p)
    pooled = k.sum(axis=1) / (n_clusters * size)
    se = np.array([clustered_proportion_se(row, np.full(n_clusters, size)) for row in k])
    truth = pooled.std()
    binomial = np.sqrt(0.25 / (n_clusters * size))
    # the mean clustered SE is within 5 % of the spread it estimates (CR1 with 40 clusters;
    # the spread itself is known to about 1.6 % from 2,000 repetitions)
    assert abs(np.mean(se) / truth - 1) < 0.05, (np.mean(se), truth)
    assert binomial < 0.8 * truth, (binomial, truth)  # 1 / sqrt(1.9) = 0.73
    # and 3-se intervals cover about as a normal law says (99.7 %; 2,000 repetitions)
    assert np.mean(np.abs(pooled - 0.5) <= 3 * se) > 0.99


@pytest.mark.parametrize(("successes", "trials", "match"), [
    ([1, 2], [2], "same length"),
    ([3, 1], [2, 4], "at most trials"),
    ([-1, 1], [2, 4], "non-negative"),
    ([1, np.nan], [2, 4], "successes"),
])
def test_clustered_proportion_se_refuses_bad_counts(successes, trials, match):
    with pytest.raises((TypeError, ValueError), match=match):
        clustered_proportion_se(successes, trials)


def test_accuracy_gap_sd_is_a_standardized_binomial_gap():
    # calibrated singletons (accuracy 1 - alpha in expectation): the gap is about N(0, 1)
    rng = np.random.default_rng(0)
    n = rng.integers(50, 500, size=4000)
    pooled = pd.DataFrame({"n": n, "accuracy": rng.binomial(n, 0.9) / n})
    gap = accuracy_gap_sd(pooled, 0.1)
    assert abs(gap.mean()) < 0.1 and abs(gap.std() - 1) < 0.05
    assert (gap < -3).mean() < 0.005  # Corollary 1's "below 1 - alpha" is rarely read into noise
    # under-covering singletons (accuracy 0.8 on 400 points) are 6.7 deviations short
    short = accuracy_gap_sd(pd.DataFrame({"n": [400], "accuracy": [0.8]}), 0.1)
    assert short.iloc[0] == pytest.approx(-0.1 / np.sqrt(0.09 / 400))
    with pytest.raises(ValueError, match="pooled lacks"):
        accuracy_gap_sd(pd.DataFrame({"n": [10]}), 0.1)
    with pytest.raises(ValueError, match="alpha"):
        accuracy_gap_sd(pooled, 1.0)
    with pytest.raises(ValueError, match="non-negative"):
        accuracy_gap_sd(pd.DataFrame({"n": [-1], "accuracy": [0.5]}), 0.1)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        accuracy_gap_sd(pd.DataFrame({"n": [10], "accuracy": [1.5]}), 0.1)


def test_mean_with_sem_matches_scipy():
    rng = np.random.default_rng(0)
    runs = pd.DataFrame(rng.normal(size=(30, 3)), columns=["a", "b", "c"])
    table = mean_with_sem(runs)
    assert np.allclose(table["mean"], runs.mean())
    assert np.allclose(table["std. error"], stats.sem(runs.to_numpy(), axis=0, ddof=1))
    with pytest.raises(ValueError, match="two rows"):
        mean_with_sem(runs.iloc[:1])
    with pytest.raises(TypeError, match="DataFrame"):
        mean_with_sem(runs.to_numpy())
    with pytest.raises(ValueError, match="at least one row"):
        mean_with_sem(runs.iloc[:0])


def test_mean_lower_bound_is_the_one_sided_t_interval():
    rng = np.random.default_rng(3)
    for n in (2, 5, 10, 40):
        values = rng.normal(0.95, 0.02, size=n)
        for level in (0.9, 0.99):
            scipy_low = stats.ttest_1samp(values, 0.0, alternative="greater").confidence_interval(level).low
            assert mean_lower_bound(values, level) == pytest.approx(scipy_low, rel=1e-12)
    # equal values: no spread, the bound is the mean
    assert mean_lower_bound([0.9, 0.9, 0.9]) == pytest.approx(0.9)


def test_mean_lower_bound_covers_the_mean_at_its_level():
    # 4000 samples of 10 normal values: the bound is below the true mean in a share of about 0.99
    # (binomial s.d. sqrt(0.99 * 0.01 / 4000) = 0.0016; 4 s.d.)
    rng = np.random.default_rng(11)
    below = [mean_lower_bound(rng.normal(2.0, 3.0, size=10)) < 2.0 for _ in range(4000)]
    assert abs(np.mean(below) - 0.99) < 4 * np.sqrt(0.99 * 0.01 / 4000)


def test_mean_lower_bound_checks_its_arguments():
    with pytest.raises(ValueError, match="at least 2 runs"):
        mean_lower_bound([0.9])
    with pytest.raises(ValueError, match="values"):
        mean_lower_bound([0.9, np.nan])
    with pytest.raises(ValueError, match="level"):
        mean_lower_bound([0.9, 0.8], level=1.0)


def test_summarize_runs_mean_and_sample_std():
    runs = pd.DataFrame({"model": ["a", "a", "a", "b"], "ce": [1.0, 2.0, 6.0, 4.0]})
    table = summarize_runs(runs, "model", ["ce"])
    assert table["n_runs"].tolist() == [3, 1]
    assert table["ce_mean"].tolist() == [3.0, 4.0]
    assert np.isclose(table["ce_std"].iloc[0], np.std([1.0, 2.0, 6.0], ddof=1))
    assert np.isnan(table["ce_std"].iloc[1])
    # rounding for display, and a missing column named
    rounded = summarize_runs(runs, ["model"], "ce", decimals=1)
    assert rounded["ce_std"].iloc[0] == round(np.std([1.0, 2.0, 6.0], ddof=1), 1)
    with pytest.raises(ValueError, match="runs"):
        summarize_runs(runs, "model", ["nll"])
    with pytest.raises(ValueError, match="decimals"):
        summarize_runs(runs, "model", ["ce"], decimals=-1)
