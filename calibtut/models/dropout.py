"""Heteroscedastic MC-dropout (Dropout-VI) regression network.

Paper 003 trains "heteroscedastic Dropout VI" (Gal, 2016) with two hidden layers
of 128 ReLU units and Adam at learning rate 1e-2 (Sec. 5.2); it states nothing
else about the network. The remaining choices follow the authors' public code:
dropout p = 0.5 after each hidden layer, always on (also at prediction),
``std = 0.1 + 0.9 * softplus(raw)``, and 64 Monte Carlo passes.

The predictive distribution of the MC passes is the equal-weight mixture of
``N(mu_s, sigma_s^2)``; it is summarized by a Gaussian with the mixture's mean and
one of two standard deviations (``predictive_std``):

- ``"mixture"`` (default): the law of total variance,
  ``sqrt(mean(sigma^2) + var(mu))``, the moment-matched Gaussian of Gal (2016) and
  Kendall & Gal (2017), which the paper cites for Dropout-VI;
- ``"authors"``: ``sqrt(mean(sigma)^2 + var(mu))``, what the authors' code computes
  (never larger than the mixture's, by Jensen).

``var`` is the population variance over passes (ddof = 0).
"""

from __future__ import annotations

import torch

from calibtut._torch import check_features
from calibtut._validation import check_int, check_real
from calibtut.models.mlp import GaussianMLP

__all__ = ["MCDropoutGaussian"]

_COMBINE = ("mixture", "authors")


class MCDropoutGaussian(GaussianMLP):
    """Gaussian MLP with dropout after every hidden layer, averaged over MC passes.

    In training mode ``forward`` is one stochastic pass (what the loss is fitted
    on). In eval mode it returns the moment summary of ``n_samples`` passes whose
    dropout masks come from a generator seeded with ``mc_seed``, so predictions
    are reproducible.

    Parameters
    ----------
    in_features : int
    hidden : sequence of int, default (128, 128)
        The paper's architecture.
    p : float, default 0.5
        Dropout probability (authors' code).
    n_samples : int, default 64
        MC passes at prediction (authors' code). Validation during training
        can use fewer: ``fit(..., val_samples=8)``.
    min_std, std_scale : float, default 0.1, 0.9
        ``std = min_std + std_scale * softplus(raw)`` (authors' code).
    predictive_std : {"mixture", "authors"}, default "mixture"
        How passes combine into one standard deviation (see module docstring).
    mc_seed : int, default 0
        Seed of the prediction-time dropout masks.
    seed : int, optional
        Seed of the weight initialization.

    Examples
    --------
    >>> import torch
    >>> model = MCDropoutGaussian(2, hidden=(16, 16), n_samples=8, seed=0).eval()
    >>> mean, std = model(torch.zeros(4, 2))
    >>> bool(torch.equal(mean, model(torch.zeros(4, 2))[0]))  # seeded masks
    True
    """

    def __init__(
        self,
        in_features,
        hidden=(128, 128),
        *,
        p=0.5,
        n_samples=64,
        min_std=0.1,
        std_scale=0.9,
        predictive_std="mixture",
        mc_seed=0,
        seed=None,
    ):
        super().__init__(in_features, hidden, min_std=min_std, std_scale=std_scale, seed=seed)
        p = check_real(p, "p", low=0, high=1, high_open=True)
        if predictive_std not in _COMBINE:
            raise ValueError(f"predictive_std must be one of {_COMBINE}, got {predictive_std!r}")
        self.p = float(p)
        self.n_samples = check_int(n_samples, "n_samples", minimum=1)
        self.predictive_std = predictive_std
        self.mc_seed = check_int(mc_seed, "mc_seed", minimum=0)

    def _stochastic_pass(self, x, generator):
        h = check_features(x, "x", self.in_features)
        keep = 1.0 - self.p
        for layer in self.hidden_layers:
            h = torch.relu(layer(h))
            if self.p > 0:
                mask = torch.bernoulli(torch.full_like(h, keep), generator=generator)
                h = h * mask / keep
        return self.gaussian_head(h)

    def sample_passes(self, x, n_samples=None, *, generator=None):
        """Means and stds of ``n_samples`` dropout passes, each ``(n_samples, n)``.

        Examples
        --------
        >>> import torch
        >>> model = MCDropoutGaussian(2, hidden=(8,), seed=0)
        >>> means, stds = model.sample_passes(torch.zeros(3, 2), 5)
        >>> tuple(means.shape)
        (5, 3)
        """
        n_samples = self.n_samples if n_samples is None else check_int(n_samples, "n_samples", minimum=1)
        outs = [self._stochastic_pass(x, generator) for _ in range(n_samples)]
        return torch.stack([m for m, _ in outs]), torch.stack([s for _, s in outs])

    def forward(self, x):
        if self.training:
            return self._stochastic_pass(x, None)
        generator = torch.Generator(device=x.device).manual_seed(self.mc_seed)
        means, stds = self.sample_passes(x, generator=generator)
        mean = means.mean(dim=0)
        spread = means.var(dim=0, unbiased=False)
        if self.predictive_std == "mixture":
            var = (stds**2).mean(dim=0) + spread
        else:
            var = stds.mean(dim=0) ** 2 + spread
        return mean, torch.sqrt(var)
