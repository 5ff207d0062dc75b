"""The set-ups of the Foundations chapters: the classifier whose scores they recalibrate and turn into sets."""

from __future__ import annotations

from sklearn.decomposition import PCA
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from calibtut._validation import check_int

__all__ = ["mnist_network"]


def mnist_network(seed):
    """The unfitted MNIST classifier of Foundations 4 and 5: 40 principal components into an MLP(32).

    The images are projected on their first 40 principal components,
    standardised, and classified by a multilayer perceptron with one hidden
    layer of 32 units (weight decay ``1e-5``), trained until its loss stops
    improving by ``1e-4`` for 10 epochs (at most 1,000).

    Parameters
    ----------
    seed : int
        Seed of the PCA's randomized solver and of the MLP's initialisation
        and shuffling; non-negative.

    Returns
    -------
    sklearn.pipeline.Pipeline
        Unfitted; ``fit(images, digits)`` trains it.

    Examples
    --------
    >>> net = mnist_network(0)
    >>> [name for name, _ in net.steps]
    ['pca', 'standardscaler', 'mlpclassifier']
    """
    seed = check_int(seed, "seed", minimum=0)
    return make_pipeline(
        PCA(n_components=40, random_state=seed),
        StandardScaler(),
        MLPClassifier(hidden_layer_sizes=(32,), alpha=1e-5, max_iter=1_000, tol=1e-4,
                      n_iter_no_change=10, random_state=seed),
    )
