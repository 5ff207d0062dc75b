"""The experiments layer: one package per part of the book (Foundations, drift, quantile regularization, regression study, covariate shift, Venn-ADMIT).

One rule for the files of a package: a file is named for its role, and a
sub-study earns a file of its own only when it has a sweep of its own. The
roles, each file created when the part needs it:

* ``tasks.py``: the part's main grid: **task lists** (plain, JSON-able dicts,
  one per configuration), the **one-configuration runners** that
  :func:`calibtut.run.sweep` calls on each task, so that a long grid resumes
  where it stopped, and the readers of their stores;
* ``tables.py``: **every table built from rows**, tested functions named for
  the table they build, which turn the raw rows into what a chapter shows and
  put them beside the paper's numbers from :mod:`calibtut.papers`;
* ``figures.py``: the part's figures;
* ``chapters.py``: the set-ups of the teaching chapters (a model, a data
  set, or a synthetic data-generating process and its simulation loop);
* ``claims.py``: the paper-vs-ours verdicts, in the words and shape of
  :mod:`calibtut.run.claims`;
* ``_common.py``: helpers private to the part.

A sub-study (an experiment beside the main grid, with its own task list,
runner and sweep store) is one file named for it, holding its tasks, runner,
store reader, tables and figures: paper 002's ``ablations.py``,
``sqr_forms.py`` and ``map_rerun.py``, paper 001's ``protection.py``. Any
other analysis goes to ``tables.py`` or ``figures.py``.

Library-grade helpers do not live here: a function that a chapter uses but
that is not about one paper's experiment belongs to its layer below
(:mod:`calibtut.stats`, :mod:`calibtut.metrics`, :mod:`calibtut.data`), and
the chapters import it from there: a part does not re-export library names.

A package re-exports its public names, and the chapters import from it
only (``from calibtut.experiments.drift import table1_summary``).

Packages
--------
foundations
    The Foundations chapters' shared set-ups: the MNIST classifier of
    Foundations 4 and 5 and Foundations 7's simulation (``chapters.py``).
drift
    Paper 000 (online calibration under drift): the drifted regression
    benchmark, the decision task and the hyper-parameter search of Section 5.
quantile_regularization
    Paper 003 (quantile regularization): the UCI experiments of Tables 1, 2,
    4-7 and the ablations of Figures 5-12.
regression_study
    Paper 002 (the large-scale study of calibration in neural regression):
    one task per dataset, run and base model, its tables, Figures 3-10, the
    Appendix C ablations, the seventeen claims and the study's cost.
covariate_shift
    Paper 004 (calibration under covariate shift): Table 1's digit shifts,
    their stand-ins for SVHN and Office-31, the rotation sweep, and the
    set-ups of the teaching chapters.
venn_admit
    Paper 001 (Venn-ADMIT): the experiments of its tables, and the set-ups
    of its theory chapters.
"""

__all__: list[str] = []
