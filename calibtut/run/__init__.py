"""Run notebooks at a profile, keep their results with provenance, and show them: sweeps, full runs, claims.

Inside a notebook:

- :func:`settings` picks the sizes of the ``ci`` or ``full`` profile;
- :func:`sweep` runs a resumable grid of tasks, serially or on Dask workers
  (:mod:`calibtut.run.engine`), storing each finished task as one line of a
  committable store (:mod:`calibtut.run.store`);
- :func:`save_table` saves a tidy table of the run (at :func:`table_path`);
- :func:`load_result` shows a published full-scale table, and
  :func:`stored_tasks` and :func:`stored_rows` how far an unpublished
  full run has got and what it holds so far;
- :func:`read_published` (and :func:`read_published_with`, for a run in a
  layout of its own) finds a chapter's full run: published, interim (its
  store so far) or absent, with one note the book shows alike, and
  :func:`glue_unpublished` glues the one placeholder (:data:`NOT_PUBLISHED`)
  where a check cell finds no run;
- :func:`paper_vs_ours` builds the comparison table, and
  :class:`Verdict` and :func:`verdict_table` give every claims table its
  words and its shape;
- :func:`glue` pastes values into the text of the book, and the book's
  table and figure display (``display`` below) is switched on by
  :func:`settings`.

From a shell, ``python -m calibtut.run notebooks/<part>/<nb>.md --profile full``
executes a notebook into ``_build/runs/<part>/<nb>/<profile>-<hash>/``,
``--workers N`` or ``--scheduler ADDRESS`` runs its sweeps in parallel, and
``--publish`` copies its tables and provenance into ``results/<part>/<nb>/``.

Modules
-------
artifacts
    Result tables, their provenance, publishing to ``results/`` and loading
    back.
claims
    The verdicts of every paper-versus-ours claims table, their colours, and
    the table's shape.
compare
    The side-by-side table of every "paper versus ours" section.
display
    How a notebook shows a table (a missing value as "–", no running row
    number) and a figure of side-by-side panels (stacked on a phone).
engine
    Where the tasks of a sweep run: in this process, or on a Dask cluster.
execute
    Execute a notebook with papermill at a profile, into its own run
    directory.
glue
    Glue values into the book with only IPython (no myst-nb needed at run
    time).
kernel
    The kernel manager of the runner: a kernel is shut down only once its
    running cell has answered.
profiles
    Run profiles: every size in a notebook derives from ``ci`` or ``full``.
progress
    One progress report per sweep: a bar in a notebook, text lines in the
    runner's log.
provenance
    What a run records about where and how it ran.
published
    A chapter's full run as the book shows it: published, interim or
    absent.
recheck
    Recompute a sample of a stored sweep and compare it with what the store
    holds.
store
    The store of a sweep: one JSON line per finished task, appended as it
    finishes.
sweep
    Resumable, parallel sweeps: every finished task is one line of a
    committable store.
"""

from calibtut.run._paths import RUN_DIR_ENV, current_run_dir, find_root, stored_path
from calibtut.run.artifacts import (
    load_result,
    publish,
    read_provenance,
    save_table,
    stored_rows,
    table_path,
    stored_tasks,
)
from calibtut.run.claims import VERDICT_COLOURS, Verdict, verdict_table
from calibtut.run.compare import paper_vs_ours
from calibtut.run.execute import NotebookFailed, parse_value, run_notebook
from calibtut.run.glue import glue
from calibtut.run.profiles import PROFILES, Settings, settings
from calibtut.run.published import (
    NOT_PUBLISHED,
    PUBLICATION_STATUSES,
    Publication,
    glue_unpublished,
    read_published,
    read_published_with,
)
from calibtut.run.store import SweepStore
from calibtut.run.sweep import SweepFailed, sweep

__all__ = [
    "NOT_PUBLISHED",
    "PROFILES",
    "PUBLICATION_STATUSES",
    "RUN_DIR_ENV",
    "VERDICT_COLOURS",
    "NotebookFailed",
    "Publication",
    "Settings",
    "SweepFailed",
    "SweepStore",
    "Verdict",
    "current_run_dir",
    "find_root",
    "glue",
    "glue_unpublished",
    "load_result",
    "paper_vs_ours",
    "parse_value",
    "publish",
    "read_provenance",
    "read_published",
    "read_published_with",
    "run_notebook",
    "save_table",
    "settings",
    "stored_path",
    "stored_rows",
    "stored_tasks",
    "sweep",
    "table_path",
    "verdict_table",
]
