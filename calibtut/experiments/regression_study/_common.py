"""Helpers private to paper 002's experiments: argument checks and the full-run reader.

The public files of :mod:`calibtut.experiments.regression_study` share these;
nothing outside the package imports them.
"""

from __future__ import annotations

import typing

import pandas as pd

from calibtut._validation import check_choice, check_int
from calibtut.models.study_training import BASE_MODEL_NAMES
from calibtut.run import read_published, stored_rows

#: Runs per dataset and base model, in the paper and in the full run.
STUDY_RUNS = 5


def check_base(base):
    """``base`` if it names a base model of the study, else a ValueError."""
    check_choice(base, "base", tuple(BASE_MODEL_NAMES))
    return base


def base_family(base):
    """``"mixture"`` or ``"sqr"``: the family of networks of a base model."""
    return "mixture" if BASE_MODEL_NAMES[base][0] == "mixture" else "sqr"


class FullStudy(typing.NamedTuple):
    """What a reader of a full run found: the rows, the label of their column, and a line for the reader."""

    rows: pd.DataFrame | None
    label: str | None
    note: str


class FullRun(typing.NamedTuple):
    """Where a full run of the study is published and stored, and how its complete runs are told apart.

    ``notebook`` and ``table`` name its published table, ``store`` its sweep
    store; ``keys`` are the task columns that count a stored task once;
    ``complete`` keeps the complete runs of the stored rows, ``total`` is the
    number of tasks of the whole run; ``what`` names the run in the note and
    ``covers`` says what a complete run covers.
    """

    notebook: str
    table: str
    store: str
    keys: tuple
    complete: typing.Callable
    total: int
    what: str
    covers: str


def read_full_run(run, *, min_runs=2, root=None):
    """The :class:`FullStudy` of a full run: its published table, else the complete runs of its store.

    ``run`` is a :class:`FullRun`; ``min_runs`` the fewest complete runs worth
    showing (at least 2, as Cohen's d needs two) and ``root`` the repository
    root; see :func:`~calibtut.experiments.regression_study.full_study`.
    """
    min_runs = check_int(min_runs, "min_runs", minimum=2)
    part = "regression_study"
    published = read_published(part, run.notebook, run.table, root=root)
    if published.found:
        rows = published.rows
        return FullStudy(rows, "full", (f"The full {run.what} of {published.provenance['finished']}: "
                                        f"{rows['dataset'].nunique()} datasets, {rows['run'].nunique()} runs."))
    stored = stored_rows(part, run.notebook, run.store, seconds="seconds", root=root)
    done = 0 if stored.empty else len(stored.reindex(columns=list(run.keys)).drop_duplicates())
    rows = run.complete(stored)
    runs = sorted(rows["run"].unique()) if not rows.empty else []
    if len(runs) < min_runs:
        have = f"{len(runs)} complete run" + ("" if len(runs) == 1 else "s") if runs else "no complete runs"
        return FullStudy(None, None, (f"The full {run.what} is not yet published and its store holds {have} "
                                      f"({done} of {run.total} tasks stored)."))
    label = f"full, {len(runs)} of {STUDY_RUNS} runs"
    return FullStudy(rows, label, (f"The full {run.what} is not yet published: shown are the {len(runs)} runs "
                                   f"complete in its store (runs {', '.join(map(str, runs))} of {run.covers}; "
                                   f"{done} of {run.total} tasks stored), an interim result."))


def check_full_arguments(full, recompute, seed):
    """The checked ``seed`` of a reader of the full run, after refusing a bad ``full`` or ``recompute``."""
    if not hasattr(full, "rows") or not hasattr(full, "label") or not isinstance(full.rows, pd.DataFrame):
        raise TypeError(f"full must be a FullStudy with rows, got {full!r}")
    if not isinstance(recompute, bool):
        raise TypeError(f"recompute must be True or False, got {recompute!r}")
    return check_int(seed, "seed", minimum=0)


def published_table(table, seed, root):
    """A table chapter 6 published, if its run used ``seed``; else None."""
    seed = check_int(seed, "seed", minimum=0)
    published = read_published("regression_study", "06_paper_vs_ours", table, root=root)
    if published.found and published.provenance.get("parameters", {}).get("seed") == seed:
        return published.rows
    return None
