"""The Foundations chapters' shared set-up.

Modules
-------
chapters
    :func:`mnist_network`, the classifier that Foundations 4 (recalibration
    maps) and Foundations 5 (conformal prediction sets) train on MNIST.
"""

from calibtut.experiments.foundations.chapters import mnist_network

__all__ = ["mnist_network"]
