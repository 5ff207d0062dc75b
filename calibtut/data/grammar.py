"""FCE grammatical error detection (token level) for the Venn-ADMIT paper's Grammar task, in domain only.

The paper's GrammarOOD task trains on the FCE learner essays and tests on the
FCE test set joined with 2,000 newswire sentences. The offline mirror holds
the FCE training and test files of Rei & Yannakoudakis's release (one token
and its label ``c`` correct or ``i`` incorrect per line, sentences separated
by blank lines), not the FCE development set nor the news sentences.
:func:`load_fce` reads one split as sentences of tokens with per-token labels.
"""

from __future__ import annotations

import numpy as np

from calibtut.data.fetching import fetch

__all__ = ["FCE_SPLITS", "load_fce"]

#: The offline splits: name -> registered file.
FCE_SPLITS = {"train": "fce/fce-public.train.original.tsv", "test": "fce/fce-public.test.original.tsv"}


def load_fce(split="test"):
    """One FCE split: sentences as token lists and per-token error labels.

    Parameters
    ----------
    split : {"train", "test"}, default "test"

    Returns
    -------
    sentences : list of list of str
    labels : list of numpy.ndarray of int64
        Per token, 1 when the token is part of a grammatical error (``i``), else 0.

    Examples
    --------
    >>> sentences, labels = load_fce("test")  # doctest: +SKIP
    >>> len(sentences), sum(len(s) for s in sentences)  # doctest: +SKIP
    (2720, 41477)
    """
    if split not in FCE_SPLITS:
        raise ValueError(f"split must be one of {tuple(FCE_SPLITS)}, got {split!r}")
    sentences, labels, tokens, tags = [], [], [], []
    with open(fetch(FCE_SPLITS[split]), encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            line = line.rstrip("\n")
            if not line.strip():
                if tokens:
                    sentences.append(tokens)
                    labels.append(np.array(tags, dtype=np.int64))
                tokens, tags = [], []
                continue
            word, _, tag = line.rpartition("\t")
            if tag not in ("c", "i") or not word:
                raise ValueError(f"FCE {split}, line {number}: expected 'token<TAB>c|i', got {line!r}")
            tokens.append(word)
            tags.append(1 if tag == "i" else 0)
    if tokens:
        sentences.append(tokens)
        labels.append(np.array(tags, dtype=np.int64))
    return sentences, labels
