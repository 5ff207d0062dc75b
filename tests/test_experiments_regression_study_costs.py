"""Trainings and task-hours of the study's stored tasks (study_cost, trainings_per_task: regression_study.tables)."""

import pandas as pd
import pytest

from calibtut.experiments.regression_study import run_study_task, study_cost, trainings_per_task


def _rows(seconds=(600.0, 1200.0, 1800.0)):
    """Three tasks: two mix-nll runs of dataset A (2 trainings each) and one sqr-affine task of B (1)."""
    tasks = [("A", 0, "mix-nll", seconds[0]), ("A", 1, "mix-nll", seconds[1]), ("B", 0, "sqr-affine", seconds[2])]
    rows = []
    for dataset, run, base, s in tasks:
        models = [("none", 0.0, 0.8), ("none", 0.0, 0.8)]  # a map reuses the vanilla model
        if base == "mix-nll":
            models.append(("qr", 1.0, 0.8))
        rows += [{"dataset": dataset, "run": run, "base": base, "regularizer": r, "lam": lam,
                  "train_fraction": f, "seconds": s} for r, lam, f in models]
    return pd.DataFrame(rows)


def test_trainings_per_task_counts_distinct_models():
    counts = trainings_per_task(_rows())
    assert counts.to_dict() == {("A", 0, "mix-nll"): 2, ("A", 1, "mix-nll"): 2, ("B", 0, "sqr-affine"): 1}


def test_study_cost_by_hand():
    cost = study_cost(_rows(), n_runs=5, workers=2)
    assert list(cost.index) == ["mix-nll", "sqr-affine", "all"]
    nll, sqr, total = cost.loc["mix-nll"], cost.loc["sqr-affine"], cost.loc["all"]
    assert (nll["tasks"], nll["trainings"], nll["task_hours"]) == (2, 4, 0.5)
    assert nll["minutes_per_task"] == pytest.approx(15.0)
    assert nll["trainings_per_task_hour"] == pytest.approx(8.0)
    # A's mean task is 900 s; five runs of it
    assert nll["projected_task_hours"] == pytest.approx(5 * 900 / 3600)
    assert sqr["projected_task_hours"] == pytest.approx(5 * 0.5)
    assert total["tasks"] == 3 and total["trainings"] == 5 and total["task_hours"] == pytest.approx(1.0)
    assert total["projected_task_hours"] == pytest.approx(1.25 + 2.5)
    assert total["projected_wall_hours"] == pytest.approx(3.75 / 2)


@pytest.mark.parametrize(("base", "expected"), [("mix-nll", 32), ("sqr-affine", 22)])
def test_a_full_run_task_trains_what_chapter_6_says(base, expected):
    # the full profile's task (lambda grid, post-hoc base, Appendix B extras) at two epochs
    rows = run_study_task("Yacht", 0, base, epochs=2, combine=True, map_on_train=True)
    rows = rows.assign(dataset="Yacht", run=0, base=base)  # the sweep adds the task's keys
    assert trainings_per_task(rows).tolist() == [expected]


def test_bad_rows_are_refused():
    with pytest.raises(TypeError, match="rows"):
        study_cost(_rows().to_dict())
    with pytest.raises(ValueError, match="seconds"):
        study_cost(_rows().drop(columns="seconds"))
    with pytest.raises(ValueError, match="rows"):
        trainings_per_task(_rows().iloc[:0])
    split = _rows()
    split.loc[0, "seconds"] = 1.0
    with pytest.raises(ValueError, match="one seconds value per task"):
        study_cost(split)
    with pytest.raises(ValueError, match="finite and non-negative"):
        study_cost(_rows(seconds=(-1.0, 1.0, 1.0)))


@pytest.mark.parametrize("name", ["n_runs", "workers"])
@pytest.mark.parametrize("value", [0, 1.5, "2"])
def test_bad_counts_are_refused(name, value):
    with pytest.raises((TypeError, ValueError), match=name):
        study_cost(_rows(), **{name: value})
