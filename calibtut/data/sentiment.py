"""Sentiment data of the Venn-ADMIT paper (Schmaltz & Rasooly): IMDb reviews and SemEval-2017 tweets.

The paper's Sentiment and SentimentOOD tasks share one training and one
calibration set and differ in the test set:

* **train**: the 3,414 counterfactually-augmented IMDb reviews of Kaushik et
  al. (2020) (1,707 original reviews and their 1,707 revisions, CAD
  ``combined/train.tsv``);
* **calibration**: reviews of the Maas et al. (2011) training split that are
  not among the 2,440 reviews CAD was built from, a seeded random sample of
  ``n_calibration`` (the paper: 16,000; it does not say how they were drawn).
  A Maas review is the same as a CAD original when the first 120 characters of
  its text, lower-cased, without ``<br />`` and kept to ``[a-z0-9]``, agree;
* **test**: the 488 original CAD test reviews (the Sentiment test set);
* **ood**: SemEval-2017 Task 4A English test tweets, every positive one and as
  many negative ones drawn at random (neutral tweets dropped): 2,375 + 2,375
  = 4,750 tweets, the paper's SentimentOOD test set.

Labels are 1 for positive and 0 for negative sentiment.
"""

from __future__ import annotations

import functools
import re

import numpy as np
import pandas as pd

from calibtut._validation import check_int, check_rng
from calibtut.data.fetching import fetch

__all__ = ["SENTIMENT_PARTS", "load_sentiment", "normalized_review_key", "sentiment_pool"]

#: The parts of :func:`load_sentiment`.
SENTIMENT_PARTS = ("train", "calibration", "test", "ood")

_CAD = "imdb_cad/sentiment/{variant}/{split}.tsv"
_MAAS = "imdb_maas/imdb_maas2011.csv.gz"
_SEMEVAL = "semeval2017_4a/Subtask_A/SemEval2017-task4-test.subtask-A.english.txt"
_KEY_CHARS = re.compile(r"[^a-z0-9]")


def normalized_review_key(text):
    """The key that matches a CAD original review with its Maas et al. source text.

    Lower-cased, ``<br />`` removed, only ``[a-z0-9]`` kept, first 120 characters.

    Parameters
    ----------
    text : str

    Returns
    -------
    str

    Examples
    --------
    >>> normalized_review_key("Great film!<br /><br />A 10/10.")
    'greatfilma1010'
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return _KEY_CHARS.sub("", text.lower().replace("<br />", ""))[:120]


def _cad(variant, split):
    frame = pd.read_csv(fetch(_CAD.format(variant=variant, split=split)), sep="\t", dtype=str,
                        keep_default_na=False)
    labels = frame["Sentiment"].map({"Positive": 1, "Negative": 0})
    if labels.isna().any():
        raise ValueError(f"CAD {variant}/{split}: unexpected labels {sorted(set(frame['Sentiment']))}")
    return frame["Text"].tolist(), labels.to_numpy(np.int64)


@functools.lru_cache(maxsize=1)
def _maas_disjoint():
    """Maas training reviews whose normalised text is not a CAD original (texts, labels)."""
    maas = pd.read_csv(fetch(_MAAS), dtype={"text": str, "label": str, "split": str})
    maas = maas[maas["split"] == "train"]
    cad = set()
    for split in ("train", "dev", "test"):
        cad.update(normalized_review_key(t) for t in _cad("orig", split)[0])
    # normalized_review_key, vectorised over the 25,000 reviews
    keys = maas["text"].str.lower().str.replace("<br />", "", regex=False)
    keys = keys.str.replace(_KEY_CHARS.pattern, "", regex=True).str[:120]
    keep = ~keys.isin(cad)
    maas = maas[keep.to_numpy()]
    return tuple(maas["text"]), (maas["label"] == "pos").to_numpy(np.int64)


def _semeval():
    with open(fetch(_SEMEVAL), encoding="utf-8", newline="") as fh:
        rows = [line.rstrip("\n").split("\t") for line in fh if line.strip()]
    rows = [r for r in rows if len(r) >= 3]
    labels = np.array([r[1] for r in rows])
    texts = np.array(["\t".join(r[2:]).strip() for r in rows], dtype=object)
    return texts, labels


def load_sentiment(part="train", *, seed=0, n_calibration=16000):
    """One part of the Sentiment / SentimentOOD data (Kaushik et al. 2020; Maas et al. 2011; SemEval-2017).

    Parameters
    ----------
    part : {"train", "calibration", "test", "ood"}, default "train"
        Which set (see the module's description).
    seed : int, numpy.random.Generator or None, default 0
        Draws the calibration sample and the negative tweets of ``"ood"``.
    n_calibration : int or None, default 16000
        Size of the calibration sample (at least 1; None: all 22,541
        disjoint Maas training reviews). Only used for ``"calibration"``.

    Returns
    -------
    texts : list of str
    labels : numpy.ndarray of int64
        1 positive, 0 negative.

    Examples
    --------
    >>> texts, labels = load_sentiment("test")  # doctest: +SKIP
    >>> len(texts), int(labels.sum())  # doctest: +SKIP
    (488, 245)
    """
    if part not in SENTIMENT_PARTS:
        raise ValueError(f"part must be one of {SENTIMENT_PARTS}, got {part!r}")
    if n_calibration is not None:
        n_calibration = check_int(n_calibration, "n_calibration", minimum=1)
    rng = check_rng(seed)
    if part == "train":
        return _cad("combined", "train")
    if part == "test":
        return _cad("orig", "test")
    if part == "calibration":
        texts, labels = _maas_disjoint()
        if n_calibration is None or n_calibration >= len(texts):
            if n_calibration is not None and n_calibration > len(texts):
                raise ValueError(f"n_calibration must be at most {len(texts)} (the disjoint Maas reviews), "
                                 f"got {n_calibration}")
            return list(texts), labels.copy()
        chosen = np.sort(rng.choice(len(texts), size=n_calibration, replace=False))
        return [texts[i] for i in chosen], labels[chosen]
    texts, labels = _semeval()
    positive = np.flatnonzero(labels == "positive")
    negative = np.flatnonzero(labels == "negative")
    chosen = np.sort(np.concatenate([positive, rng.choice(negative, size=positive.size, replace=False)]))
    return texts[chosen].tolist(), (labels[chosen] == "positive").astype(np.int64)


def sentiment_pool(part):
    """Every text that :func:`load_sentiment` can return for ``part``, whatever its seed.

    The calibration reviews and the negative tweets are seeded samples; their
    pools are all 22,541 disjoint Maas training reviews and every positive or
    negative SemEval-2017 test tweet. Encoding a pool once lets every seed's
    sample be looked up in it (``pool=`` of
    :func:`calibtut.models.sentence_embeddings.cached_embeddings`).

    Parameters
    ----------
    part : {"train", "calibration", "test", "ood"}

    Returns
    -------
    list of str

    Examples
    --------
    >>> len(sentiment_pool("calibration"))  # doctest: +SKIP
    22541
    """
    if part not in SENTIMENT_PARTS:
        raise ValueError(f"part must be one of {SENTIMENT_PARTS}, got {part!r}")
    if part == "calibration":
        return list(_maas_disjoint()[0])
    if part == "ood":
        texts, labels = _semeval()
        return texts[np.isin(labels, ["positive", "negative"])].tolist()
    return load_sentiment(part)[0]
