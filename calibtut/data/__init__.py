"""Datasets: registry, cache -> mirror -> download, loaders and seeded splits.

Every data file is registered with its public URL, sha256, size, license and
citation keys (:mod:`calibtut.data.registry`). :func:`fetch` finds a verified
copy in the cache (``CALIBTUT_CACHE``, default ``~/.cache/calibtut``), then in
the offline mirror named by ``CALIBTUT_DATA_MIRROR`` (used in place), then
downloads it. :func:`load_regression` returns any regression dataset as
float64 arrays; :func:`uci_split` gives the fixed benchmark splits and
:func:`train_val_cal_test_split` seeded random ones.
"""

from .fetching import (
    CACHE_ENV,
    MIRROR_ENV,
    DataIntegrityWarning,
    DataUnavailableError,
    cache_dir,
    fetch,
    mirror_dir,
    sha256_of,
)
from .forecasts import (
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
from .images import load_mnist_test
from .registry import Collection, DataFile, all_files, get_collection, get_file, list_collections
from .regression import SOURCES, RegressionData, dataset_table, list_datasets, load_regression
from .regression_study import STUDY_DATASETS, load_study_dataset
from .splits import Standardizer, train_val_cal_test_split
from .uci import uci_n_splits, uci_split

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
    "Standardizer",
    "all_files",
    "bins_to_quantiles",
    "covid_quantile_arrays",
    "cache_dir",
    "dataset_table",
    "fetch",
    "get_collection",
    "get_file",
    "list_collections",
    "list_datasets",
    "load_covid_forecasts",
    "load_mnist_test",
    "load_regression",
    "load_spf_mean",
    "load_study_dataset",
    "load_spf_probabilities",
    "mirror_dir",
    "sha256_of",
    "spf_quantile_streams",
    "spf_realized",
    "train_val_cal_test_split",
    "uci_n_splits",
    "uci_split",
]
