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

__all__ = ["LeNet5"]


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
