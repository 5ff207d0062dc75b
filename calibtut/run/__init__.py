"""Run notebooks at a profile and keep their results with provenance.

Inside a notebook:

- :func:`settings` picks the sizes of the ``ci`` or ``full`` profile;
- :func:`sweep` runs a resumable grid of tasks, serially or on Dask workers
  (:mod:`calibtut.run.engine`), storing each finished task as one line of a
  committable store (:mod:`calibtut.run.store`);
- :func:`save_table` saves a tidy table of the run;
- :func:`load_result` shows a published full-scale table, and
  :func:`stored_tasks` and :func:`stored_rows` how far an unpublished
  full run has got and what it holds so far;
- :func:`paper_vs_ours` builds the comparison table;
- :func:`glue` pastes values into the text of the book.

From a shell, ``python -m calibtut.run notebooks/<part>/<nb>.md --profile full``
executes a notebook into ``_build/runs/<part>/<nb>/<profile>-<hash>/``,
``--workers N`` or ``--scheduler ADDRESS`` runs its sweeps in parallel, and
``--publish`` copies its tables and provenance into ``results/<part>/<nb>/``.
"""

from calibtut.run._paths import RUN_DIR_ENV, current_run_dir, find_root, stored_path
from calibtut.run.artifacts import (
    load_result,
    publish,
    read_provenance,
    save_table,
    stored_rows,
    stored_tasks,
)
from calibtut.run.compare import paper_vs_ours
from calibtut.run.execute import NotebookFailed, parse_value, run_notebook
from calibtut.run.glue import glue
from calibtut.run.profiles import PROFILES, Settings, settings
from calibtut.run.store import SweepStore
from calibtut.run.sweep import SweepFailed, sweep

__all__ = [
    "PROFILES",
    "RUN_DIR_ENV",
    "NotebookFailed",
    "Settings",
    "SweepFailed",
    "SweepStore",
    "current_run_dir",
    "find_root",
    "glue",
    "load_result",
    "paper_vs_ours",
    "parse_value",
    "publish",
    "read_provenance",
    "run_notebook",
    "save_table",
    "settings",
    "stored_path",
    "stored_rows",
    "stored_tasks",
    "sweep",
]
