"""The spread over random splits of one pool (admissions_by_run and mean_lower_bound of calibtut.experiments.venn_admit.tables)."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from calibtut.experiments.venn_admit import (
    admissions_by_run,
    mean_lower_bound,
    synthetic_knn_pipeline,
    venn_admit_runs,
)


def test_admissions_by_run_sums_the_classes_of_each_run():
    pool = synthetic_knn_pipeline(0, n_train=300, n_pool=600, n_knn=60, epochs=2)
    runs = venn_admit_runs(pool, 3, 200, 200, 0.2)
    for method in ("Venn-ADMIT-w", "Venn-ADMIT_qK"):
        table = admissions_by_run(runs, method)
        rows = runs[(runs["method"] == method) & (runs["by"] == "true")]
        assert table.index.tolist() == [0, 1, 2]
        for run in range(3):
            assert table.loc[run, "admitted"] == rows.loc[rows["run"] == run, "admitted"].sum()
            assert table.loc[run, "correct"] == rows.loc[rows["run"] == run, "correct"].sum()
        # the "predicted" rows count the same points: summing them instead changes nothing
        predicted = runs[(runs["method"] == method) & (runs["by"] == "predicted")].drop(columns="by")
        assert admissions_by_run(predicted, method).equals(table)
    # a run that admits nothing has no accuracy; the others their ratio
    toy = pd.DataFrame({"run": [0, 0, 1, 2], "method": ["a", "a", "a", "b"], "admitted": [3, 1, 0, 5],
                        "correct": [3, 0, 0, 5]})
    table = admissions_by_run(toy, "a")
    assert table["accuracy"].iloc[0] == 0.75 and np.isnan(table["accuracy"].iloc[1])
    with pytest.raises(ValueError, match="method must be one of"):
        admissions_by_run(toy, "c")
    with pytest.raises(ValueError, match="runs"):
        admissions_by_run(toy.drop(columns="correct"), "a")


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
