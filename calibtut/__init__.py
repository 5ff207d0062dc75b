"""calibtut: calibration methods, their metrics and the experiments of the book's papers.

One subpackage per method family, named by what it produces; shared tools as
flat modules; the experiments of each part of the book above them
(CONTRIBUTING.md, "Package layout", gives the layers).

Packages and modules
--------------------
metrics
    Calibration errors, proper scores, sharpness, coverage and calibration tests.
conformal
    Prediction sets and intervals with a coverage guarantee, and the law of that coverage.
recalibration
    Post-hoc recalibration: a prediction in, a recalibrated prediction of the same type out.
regularizers
    Training-time calibration losses (torch).
online
    Online calibration under drift.
selective
    Paper 001's selective classification: nearest neighbours, ADMIT and Venn-ADMIT (torch).
shift
    Calibration under covariate shift: discriminator weights, Theorem 1's terms, DANN (torch).
models
    Torch networks and their seeded training loops.
data
    Datasets: registry, cache -> mirror -> download, loaders and seeded splits.
papers
    The numbers the papers print, one table a file.
run
    The notebook runner: profiles, sweeps, result artifacts with provenance.
numerics
    Numerics profiles: every library's CPU kernels and threads, set before numpy or torch loads.
plots
    Figures in the house style.
stats
    Statistical tests and summaries of repeated runs.
experiments
    One package per part of the book: its task lists, runners, tables and figures.
"""

from importlib.metadata import version

__version__ = version("calibtut")
