"""The spread over random splits of one pool (admissions_by_run of calibtut.experiments.venn_admit.tables; its
mean's lower bound, calibtut.stats.mean_lower_bound, is tested in test_stats.py)."""

import numpy as np
import pandas as pd
import pytest

from calibtut.experiments.venn_admit import (
    admissions_by_run,
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
