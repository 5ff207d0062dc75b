"""LeNet-5 for 28 x 28 grey images (LeCun et al. 1998), as in paper 004's code.

conv 1->6 (5x5), ReLU, max-pool 2 -> conv 6->16 (5x5), ReLU, max-pool 2 ->
fc 256->120, ReLU -> fc 120->84, ReLU (the 84-d features ``phi``) -> fc 84->K.
Inputs are rows of 784 pixels (or ``(n, 1, 28, 28)`` / ``(n, 28, 28)``
tensors); flattened rows let the package's training loop handle images.
"""

from __future__ import annotations

import torch
from torch import nn

from calibtut._torch import seeded_rng
from calibtut._validation import check_int
from calibtut.data import fetch

__all__ = ["AUTHORS_NETWORKS", "LeNet5", "authors_network"]

#: Park et al.'s trained source networks, by shift, as the data registry names their files
#: (collection ``covshift_authors_networks``: their public repository at a pinned commit, Apache-2.0).
AUTHORS_NETWORKS = {
    "USPS2MNIST": "covshift_authors_networks/USPS2MNIST/USPS_model_params",
    "MNIST2USPS": "covshift_authors_networks/MNIST2USPS/MNIST_model_params",
}
# their LeNet-5's parameter names -> ours
_AUTHORS_NAMES = {"conv1": "conv.0", "conv2": "conv.3", "lin1": "fc.0", "lin2": "fc.2", "lin3": "head"}


class LeNet5(nn.Module):
    """LeNet-5 classifier with a ``features`` method returning the 84-d penultimate layer.

    Parameters
    ----------
    n_classes : int, default 10
    seed : int or None
        Seeds the initialisation (global torch state untouched).

    Examples
    --------
    >>> model = LeNet5(seed=0)
    >>> model(torch.zeros(2, 784)).shape, model.features(torch.zeros(2, 1, 28, 28)).shape
    (torch.Size([2, 10]), torch.Size([2, 84]))
    """

    def __init__(self, n_classes=10, *, seed=None):
        super().__init__()
        self.n_classes = check_int(n_classes, "n_classes", minimum=2)
        with seeded_rng(seed):
            self.conv = nn.Sequential(
                nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2)
            )
            self.fc = nn.Sequential(nn.Linear(256, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU())
            self.head = nn.Linear(84, self.n_classes)

    @staticmethod
    def _images(x):
        if x.ndim == 2 and x.shape[1] == 784:
            return x.view(-1, 1, 28, 28)
        if x.ndim == 3 and x.shape[1:] == (28, 28):
            return x.unsqueeze(1)
        if x.ndim == 4 and x.shape[1:] == (1, 28, 28):
            return x
        raise ValueError(f"x must be (n, 784), (n, 28, 28) or (n, 1, 28, 28) images, got shape {tuple(x.shape)}")

    def features(self, x):
        """The 84-d features ``phi(x)`` (after the last ReLU)."""
        return self.fc(self.conv(self._images(x)).flatten(1))

    def forward(self, x):
        """Class logits."""
        return self.head(self.features(x))


def authors_network(shift="USPS2MNIST", *, download=True):
    """Park et al.'s own trained source network of a digits shift, as a ready :class:`LeNet5`.

    The authors' public code (sangdon/calibration-under-covariateshift,
    Apache-2.0) ships the LeNet-5 they trained on USPS for the U->M
    experiments and on MNIST for M->U. The file comes through the data layer
    like any data set (cache, then ``CALIBTUT_DATA_MIRROR``, then the public
    repository at its pinned commit), checked against its sha256; its
    parameters, named ``conv1``, ``conv2``, ``lin1``, ``lin2``, ``lin3`` there,
    are loaded into ours strictly. The network expects the authors' inputs:
    28 x 28 images with pixels in [0, 1].

    Parameters
    ----------
    shift : {"USPS2MNIST", "MNIST2USPS"}, default "USPS2MNIST"
        Whose source network: USPS's (source of U->M) or MNIST's (source of M->U).
    download : bool, default True
        Whether to try the public repository when neither cache nor mirror has the file.

    Returns
    -------
    LeNet5
        In evaluation mode.

    Raises
    ------
    calibtut.data.DataUnavailableError
        When no verified copy can be found; the message names each source tried.

    Examples
    --------
    >>> import os
    >>> net = authors_network("USPS2MNIST") if os.environ.get("CALIBTUT_DATA_MIRROR") else LeNet5()
    >>> net(torch.zeros(2, 784)).shape
    torch.Size([2, 10])
    """
    if not isinstance(shift, str) or shift not in AUTHORS_NETWORKS:
        raise ValueError(f"shift must be one of {sorted(AUTHORS_NETWORKS)}, got {shift!r}")
    state = torch.load(fetch(AUTHORS_NETWORKS[shift], download=download), map_location="cpu", weights_only=True)
    renamed = {}
    for name, value in state.items():
        layer, _, kind = name.partition(".")
        if layer not in _AUTHORS_NAMES:
            raise ValueError(f"the authors' {shift} network has an unexpected parameter {name!r}")
        renamed[f"{_AUTHORS_NAMES[layer]}.{kind}"] = value
    net = LeNet5(n_classes=renamed["head.weight"].shape[0])
    net.load_state_dict(renamed, strict=True)
    return net.eval()
