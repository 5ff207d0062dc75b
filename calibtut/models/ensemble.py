"""Deep ensembles of Gaussian MLPs with adversarial training (Lakshminarayanan et al., 2017).

Each member is a :class:`~calibtut.models.GaussianMLP` trained on its own from its
own initialization and shuffling; with ``adversarial_eps`` each batch's loss is
``loss(x) + loss(x_adv)``, ``x_adv`` an FGSM step of ``adversarial_eps`` times each
feature's range (0.01 in Lakshminarayanan et al. and in paper 003's code). The
ensemble predicts the moments of the equal-weight mixture of its members:
``mean = mean_m(mu_m)`` and ``var = mean_m(sigma_m^2 + mu_m^2) - mean^2``. Paper 003
uses 5 members of two hidden layers of 128 units.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from calibtut._validation import check_int, check_real
from calibtut.models.mlp import GaussianMLP
from calibtut.models.training import fit

__all__ = ["DeepEnsemble", "fit_ensemble"]


def _member_seeds(seed, count):
    if seed is None:
        return [None] * count
    if isinstance(seed, np.random.Generator):
        return [int(s) for s in seed.integers(2**31 - 1, size=count)]
    seed = check_int(seed, "seed", minimum=0)
    return [int(s) for s in np.random.SeedSequence(seed).generate_state(count)]


class DeepEnsemble(nn.Module):
    """Equal-weight ensemble of Gaussian MLPs, predicting the mixture's moments.

    Parameters
    ----------
    in_features : int
    n_members : int, default 5
    hidden : sequence of int, default (128, 128)
    min_std, std_scale : float
        Standard-deviation map of every member (see :class:`GaussianMLP`).
    seed : int or numpy.random.Generator, optional
        Seeds the members' initializations (one derived seed each).

    Examples
    --------
    >>> import torch
    >>> ens = DeepEnsemble(2, n_members=3, hidden=(8,), seed=0)
    >>> means, stds = ens.member_outputs(torch.zeros(4, 2))
    >>> tuple(means.shape)
    (3, 4)
    """

    def __init__(self, in_features, n_members=5, hidden=(128, 128), *, min_std=1e-3, std_scale=1.0, seed=None):
        super().__init__()
        n_members = check_int(n_members, "n_members", minimum=1)
        self.members = nn.ModuleList(
            GaussianMLP(in_features, hidden, min_std=min_std, std_scale=std_scale, seed=s)
            for s in _member_seeds(seed, n_members)
        )

    def member_outputs(self, x):
        """Means and stds of every member, each of shape ``(n_members, n)``."""
        outs = [member(x) for member in self.members]
        return torch.stack([m for m, _ in outs]), torch.stack([s for _, s in outs])

    def forward(self, x):
        means, stds = self.member_outputs(x)
        mean = means.mean(dim=0)
        var = (stds**2 + means**2).mean(dim=0) - mean**2
        return mean, torch.sqrt(var.clamp_min(torch.finfo(var.dtype).tiny))


def fit_ensemble(ensemble, X, y, *, adversarial_eps=0.01, seed=None, **fit_kwargs):
    """Train every member of ``ensemble`` with :func:`fit`, each with its own seed.

    Parameters
    ----------
    ensemble : DeepEnsemble
    X, y : array_like
        Training data.
    adversarial_eps : float or None, default 0.01
        FGSM step as a fraction of each feature's range; ``None`` turns
        adversarial training off.
    seed : int or numpy.random.Generator, optional
        Member ``i`` is trained with the ``i``-th seed derived from it.
    **fit_kwargs
        Passed to :func:`fit` (``loss``, ``epochs``, ``batch_size``, ``lr``,
        ``patience``, ``val``, ``device``, ``progress``, ...).

    Returns
    -------
    list of FitHistory
        One per member.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 2)); y = X.sum(axis=1)
    >>> ens = DeepEnsemble(2, n_members=2, hidden=(8,), seed=0)
    >>> hists = fit_ensemble(ens, X, y, epochs=2, batch_size=20, seed=0, progress=False)
    >>> len(hists)
    2
    """
    if not isinstance(ensemble, DeepEnsemble):
        raise TypeError(f"ensemble must be a DeepEnsemble, got {type(ensemble).__name__}")
    if adversarial_eps is not None:
        adversarial_eps = check_real(adversarial_eps, "adversarial_eps", low=0, low_open=True)
    seeds = _member_seeds(seed, len(ensemble.members))
    histories = [
        fit(member, X, y, adversarial_eps=adversarial_eps, seed=s, **fit_kwargs)
        for member, s in zip(ensemble.members, seeds)
    ]
    ensemble.eval()
    return histories
