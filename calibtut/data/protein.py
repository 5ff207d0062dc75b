"""Protein secondary structure (CB513, TS115) for the Venn-ADMIT paper's Protein task, small scale.

The paper (Schmaltz & Rasooly) trains on TAPE's secondary-structure data and
tests on TS115 and CASP12; only CB513 (511 proteins, 144,011 residues) and
TS115 (115 proteins, 29,704 residues, the paper's N exactly) are available
offline, without alignment profiles. :func:`load_protein_ss` reads one of them
as amino-acid sequences and three-state (DSSP3) labels per residue.
"""

from __future__ import annotations

import csv

import numpy as np

from calibtut.data.fetching import fetch

__all__ = ["PROTEIN_SETS", "SS3_CLASSES", "load_protein_ss"]

#: The offline sets: name -> registered file.
PROTEIN_SETS = {"cb513": "protein_ss/CB513_HHblits.csv", "ts115": "protein_ss/TS115_HHblits.csv"}

#: The three states in label order: Helix (DSSP3 ``H``), Strand (``E``), Other (``C``).
SS3_CLASSES = ("H", "E", "C")


def load_protein_ss(name="ts115"):
    """One protein secondary-structure set: sequences and per-residue three-state labels.

    Parameters
    ----------
    name : {"cb513", "ts115"}, default "ts115"

    Returns
    -------
    sequences : list of str
        One amino-acid sequence per protein (one-letter codes).
    labels : list of numpy.ndarray of int64
        Per residue, 0 Helix, 1 Strand, 2 Other (:data:`SS3_CLASSES`).

    Examples
    --------
    >>> seqs, labels = load_protein_ss("ts115")  # doctest: +SKIP
    >>> len(seqs), sum(len(s) for s in seqs)  # doctest: +SKIP
    (115, 29704)
    """
    if name not in PROTEIN_SETS:
        raise ValueError(f"name must be one of {tuple(PROTEIN_SETS)}, got {name!r}")
    code = {c: i for i, c in enumerate(SS3_CLASSES)}
    sequences, labels = [], []
    with open(fetch(PROTEIN_SETS[name]), encoding="utf-8", newline="") as fh:
        rows = csv.reader(fh)
        header = [h.strip() for h in next(rows)]
        seq_col, ss_col = header.index("input"), header.index("dssp3")
        for row in rows:
            residues, states = row[seq_col].split(), row[ss_col].split()
            if len(residues) != len(states) or set(states) - set(code):
                raise ValueError(f"{name}: a protein has {len(residues)} residues, {len(states)} states "
                                 f"({sorted(set(states))})")
            sequences.append("".join(residues))
            labels.append(np.array([code[s] for s in states], dtype=np.int64))
    return sequences, labels
