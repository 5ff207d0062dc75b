"""Selective classification of paper 001 (Venn-ADMIT).

* :mod:`calibtut.selective.neighbors`: exact k-nearest neighbours and
  pairwise distances in torch.
* :mod:`calibtut.selective.knn_approximation`: the KNN approximation of a
  network, the localizer, and the features q and d.
* :mod:`calibtut.selective.features`: :class:`KNNFeatures`, the bundle of a
  split's KNN probabilities, labels, q and d that the methods take.
* :mod:`calibtut.selective.pipeline`: :class:`KNNFeaturePipeline`, the
  steps every experiment runs on a network (neighbours, KNN approximation,
  ``q`` and ``d``, localizer) as one object.
* :mod:`calibtut.selective.admit`: ADMIT sets and Venn-ADMIT
  (:class:`ADMIT`, :class:`VennADMIT` and their one-call forms).
"""

# first: where torch is not installed, calibtut._torch raises an ImportError that says how to
# install it (pip install "calibtut[torch]")
from calibtut import _torch  # noqa: F401

from calibtut.selective.admit import (
    ADMIT,
    VennADMIT,
    admit_sets,
    admitted_accuracy_by_class,
    venn_admit,
)
from calibtut.selective.features import KNNFeatures
from calibtut.selective.knn_approximation import (
    KNNApproximation,
    KNNFitHistory,
    Localizer,
    band_width,
    consecutive_agreement,
    fit_knn_approximation,
    fit_localizer,
)
from calibtut.selective.neighbors import nearest_neighbors, pairwise_distances
from calibtut.selective.pipeline import KNNFeaturePipeline

__all__ = [
    "nearest_neighbors",
    "pairwise_distances",
    "KNNApproximation",
    "KNNFitHistory",
    "fit_knn_approximation",
    "Localizer",
    "fit_localizer",
    "consecutive_agreement",
    "band_width",
    "KNNFeaturePipeline",
    "KNNFeatures",
    "ADMIT",
    "VennADMIT",
    "admit_sets",
    "venn_admit",
    "admitted_accuracy_by_class",
]
