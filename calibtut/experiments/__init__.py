"""The experiments layer: one module per part of the book that reproduces a paper.

Every module has the same shape:

* a **task list**: plain, JSON-able dicts, one per configuration
  (``benchmark_tasks`` / ``qr_tasks``);
* a **one-configuration runner** that :func:`calibtut.run.sweep` calls on each
  task, so a long grid resumes where it stopped (``run_benchmark_task`` /
  ``run_qr_config``);
* **summary tables**: tested functions named for the table they build, which
  turn the raw rows into what a chapter shows and put them beside the paper's
  numbers from :mod:`calibtut.papers` (``table1_summary``,
  ``table1_vs_paper`` / ``paper_vs_ours_cells``).

Modules
-------
drift
    Paper 000 (online calibration under drift): the drifted regression
    benchmark, the decision task and the hyper-parameter search of Section 5.
regression_study
    Paper 002 (the large-scale study of calibration in neural regression):
    one task per dataset, run and base model, its lambda grid trained batched.
regression_study_tables, regression_study_figures, regression_study_ablations, regression_study_claims
    Paper 002: the tables of chapters 1-3, Figures 3-10, the Appendix C
    ablations and the seventeen claims, each from the study's rows.
penalty_optima
    Paper 002, chapter 3: where the QR and Trunc penalties alone lead a
    forecast (both towards over-confidence at the authors' settings).
study_cost
    Paper 002, chapter 6: trainings and task-hours of the full run, measured
    on its stored tasks and projected to the whole run.
quantile_regularization
    Paper 003 (quantile regularization): the UCI experiments of Tables 1, 2,
    4-7 and the ablations of Figures 5-12.
covariate_shift
    Paper 004 (calibration under covariate shift): Table 1's digit shifts, their
    stand-ins for SVHN and Office-31, and the rotation sweep.
covariate_shift_chapters
    Paper 004: what the teaching chapters of its part share.
venn_admit, venn_admit_theory
    Paper 001 (Venn-ADMIT): the experiments of its tables, and the synthetic
    set-ups of its theory chapters.
"""
