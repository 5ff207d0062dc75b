"""Every committed sweep store can still be read and recomputed by the code at HEAD.

A published run is only as reproducible as its store: ``python -m
calibtut.run.recheck`` imports each line's ``fn`` and calls it with the line's
``task``. A renamed function, a renamed or removed argument, or a line whose
key no longer matches its task (a store edited by hand) would break that
silently, until someone rechecks. These tests read every store under
``results/`` and fail on any of the three.
"""

from __future__ import annotations

import inspect
from functools import cache
from pathlib import Path

import pytest

from calibtut.run.recheck import resolve_function
from calibtut.run.store import SweepStore
from calibtut.run.sweep import task_key

ROOT = Path(__file__).resolve().parents[1]
STORES = sorted(p for p in (ROOT / "results").glob("*/*/sweeps/*") if p.name.endswith((".jsonl", ".jsonl.gz")))


def _lines(path):
    return SweepStore(path).entries(repair=False)  # read only: a test never writes results/


@cache
def _signature(reference):
    return inspect.signature(resolve_function(reference))


def test_the_book_has_published_stores():
    assert len(STORES) >= 15, STORES


@pytest.mark.parametrize("path", STORES, ids=lambda p: str(p.relative_to(ROOT / "results")))
def test_every_stored_task_matches_its_key_and_binds_to_its_function(path):
    lines = _lines(path)
    assert lines, path
    for line in lines:
        assert line["key"] == task_key(line["task"]), (path.name, line["key"], line["task"])
        _signature(line["fn"]).bind(**line["task"])  # TypeError on an argument the function lost


def test_the_regression_study_stores_record_the_trainer_that_made_them():
    # the published study was trained by the vmapped stack; the engine is run_study_task's default,
    # so a line without its trainer would be rechecked with the wrong one
    study = [p for p in STORES if p.parts[-4] == "regression_study"]
    assert study
    for path in study:
        trainers = {line["task"].get("trainer") for line in _lines(path)
                    if line["fn"].endswith(":run_study_task")}
        assert trainers == {"vmapped"}, (path.name, trainers)


def test_a_task_with_an_unknown_argument_does_not_bind():
    with pytest.raises(TypeError):
        _signature("calibtut.experiments.regression_study:run_study_task").bind(dataset="Yacht", batched=True)
