"""Temperature scaling fitted by minibatch SGD, the way paper 004's code fits it.

:class:`calibtut.recalibration.TemperatureScaling` finds the exact minimiser
of the (weighted) NLL or Brier score by a bounded Brent search.
:class:`SGDTemperatureScaling` is the same estimator fitted as paper 004's
code does, by minibatch SGD on ``logits / beta``; it lives here, beside the
rest of paper 004's methods, because it needs torch and the recalibration
package does not.
"""

from __future__ import annotations

import numpy as np
import torch

from calibtut._estimator import rule
from calibtut._torch import seeded_rng
from calibtut._validation import check_int, check_real, check_rng
from calibtut.recalibration.temperature import TemperatureScaling

__all__ = ["SGDTemperatureScaling"]


def _check_seed(seed, name="seed"):
    """The minibatch seed: a non-negative int as given, else an int drawn from a Generator (or fresh, for None)."""
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        return check_int(seed, name, minimum=0)
    return int(check_rng(seed).integers(2**31))


class SGDTemperatureScaling(TemperatureScaling):
    """Temperature scaling fitted by minibatch SGD, the way paper 004's code does.

    The code divides the logits by ``beta`` (initialised at 1) and minimises
    the weighted mean loss ``mean_i w_i loss_i`` by SGD with momentum and
    StepLR, keeping the ``beta`` with the best full-data objective after each
    epoch and stopping after ``patience`` epochs without improvement. Its
    learning rates are 1.0 (Temp.), 0.1 (IW+Temp., FL+Temp.) and 0.01
    (FL+IW+Temp.), with 1000 epochs and batches of 200; every temperature of
    the paper's Table 1 is fitted this way on the **Brier** score
    (``loss="brier"``), with weights ``1/g_hat - 1/2`` for the IW variants
    (constant weights for Temp.), whereas Guo et al. (2017) minimise the NLL.
    :meth:`fit` first runs the exact (Brent) fit of the parent class, keeps
    it as ``exact_temperature_``, then sets ``temperature_`` to the SGD
    solution. One difference from the code: the weights are rescaled to mean
    one (the code uses them as they come, 1.5 for Temp. and ``1/g_hat - 1/2``
    for the IW variants), which leaves the minimiser unchanged but changes the
    effective step of ``lr``.

    Parameters
    ----------
    loss, bounds
        As for :class:`~calibtut.recalibration.TemperatureScaling`.
    epochs : int, default 1000
    lr : float, default 0.1
    batch_size : int, default 200
    momentum : float, default 0.9
        SGD momentum, in [0, 1).
    lr_step : int, default 200
    lr_gamma : float, default 0.5
    patience : int, default 100
    seed : int, numpy.random.Generator or None, default 0
        Seeds the minibatch order (a Generator, or None for fresh entropy,
        gives the int seed once per fit).

    Attributes
    ----------
    temperature_ : float
        The SGD solution.
    exact_temperature_ : float
        The exact minimiser of the same objective.
    loss_ : float
        The objective at ``temperature_``.

    See Also
    --------
    calibtut.recalibration.TemperatureScaling : the exact minimiser of the same objective.

    References
    ----------
    - Park, Bastani, Weimer & Lee (2020), "Calibrated prediction with covariate shift via
      unsupervised domain adaptation", Proceedings of the 23rd International Conference on
      Artificial Intelligence and Statistics (AISTATS).
    - Guo, Pleiss, Sun & Weinberger (2017), "On calibration of modern neural networks", Proceedings
      of the 34th International Conference on Machine Learning (ICML), 1321-1330.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> logits = 3 * rng.normal(size=(600, 3))
    >>> p_true = np.exp(logits / 2) / np.exp(logits / 2).sum(1, keepdims=True)
    >>> labels = (rng.random((600, 1)) > p_true.cumsum(1)).sum(1)
    >>> ts = SGDTemperatureScaling(loss="brier", epochs=50, lr=1.0).fit(logits, labels)
    >>> bool(abs(ts.temperature_ - ts.exact_temperature_) < 1e-2 * ts.exact_temperature_)
    True
    """

    _parameter_constraints = {
        **TemperatureScaling._parameter_constraints,
        "epochs": rule(check_int, minimum=1),
        "lr": rule(check_real, low=0, low_open=True),
        "batch_size": rule(check_int, minimum=1),
        "momentum": rule(check_real, low=0, high=1, high_open=True),
        "lr_step": rule(check_int, minimum=1),
        "lr_gamma": rule(check_real, low=0, low_open=True),
        "patience": rule(check_int, minimum=1),
        "seed": _check_seed,
    }

    def __init__(self, *, loss="nll", bounds=(1e-2, 1e2), epochs=1000, lr=0.1, batch_size=200, momentum=0.9,
                 lr_step=200, lr_gamma=0.5, patience=100, seed=0):
        self.loss = loss
        self.bounds = bounds
        self.epochs = epochs
        self.lr = lr
        self.batch_size = batch_size
        self.momentum = momentum
        self.lr_step = lr_step
        self.lr_gamma = lr_gamma
        self.patience = patience
        self.seed = seed

    def fit(self, cal_logits, cal_y, *, cal_weight=None):
        """Fit the temperature by minibatch SGD (after the exact fit, kept as ``exact_temperature_``).

        Parameters
        ----------
        cal_logits : array_like of shape (n, n_classes)
            Pre-softmax scores of the model on the calibration set.
        cal_y : array_like of int, shape (n,)
            True classes in ``0, ..., n_classes - 1``.
        cal_weight : array_like of shape (n,), optional
            Non-negative weights, not all zero (e.g. importance weights).

        Returns
        -------
        SGDTemperatureScaling
            ``self``.
        """
        super().fit(cal_logits, cal_y, cal_weight=cal_weight)
        p = self.params_
        logits, labels, weights = self._fit_arguments(cal_logits, cal_y, cal_weight)
        if cal_weight is None:
            # the uniform weights 1/n renormalised, as the stored runs of chapter 5 were fitted (the
            # sum of n copies of 1/n can miss 1 in the last bit, and SGD carries that through)
            weights = weights / weights.sum()
        self.exact_temperature_ = self.temperature_
        self.temperature_ = _sgd_temperature(
            logits, labels, weights, p.loss, epochs=p.epochs, lr=p.lr, batch_size=p.batch_size, momentum=p.momentum,
            lr_step=p.lr_step, lr_gamma=p.lr_gamma, patience=p.patience, seed=p.seed,
        )
        self.loss_ = self._objective(np.log(self.temperature_), logits, labels, weights)
        return self


def _sgd_temperature(logits, labels, weights, loss, *, epochs, lr, batch_size, momentum, lr_step, lr_gamma,
                     patience, seed):
    """Paper 004's temperature fit: ``logits / beta`` by minibatch SGD, keeping the best full-data ``beta``."""
    z = torch.as_tensor(logits, dtype=torch.float64)
    y = torch.as_tensor(labels, dtype=torch.int64)
    w = torch.as_tensor(weights * len(weights), dtype=torch.float64)
    onehot = torch.nn.functional.one_hot(y, z.shape[1]).to(z.dtype)

    def objective(beta, idx=slice(None)):
        scaled = z[idx] / beta
        if loss == "nll":
            per_point = -torch.log_softmax(scaled, dim=1)[torch.arange(len(scaled)), y[idx]]
        else:
            per_point = torch.sum((torch.softmax(scaled, dim=1) - onehot[idx]) ** 2, dim=1)
        return torch.mean(w[idx] * per_point)

    beta = torch.ones((), dtype=torch.float64, requires_grad=True)
    optimizer = torch.optim.SGD([beta], lr=lr, momentum=momentum)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=lr_step, gamma=lr_gamma)
    generator = torch.Generator()
    with seeded_rng(seed):
        generator.manual_seed(int(torch.randint(2**62, ())))
    best, best_value, stale = 1.0, float(objective(beta.detach())), 0
    for _ in range(epochs):
        order = torch.randperm(len(z), generator=generator)
        for start in range(0, len(z), batch_size):
            optimizer.zero_grad()
            objective(beta, order[start : start + batch_size]).backward()
            optimizer.step()
        scheduler.step()
        with torch.no_grad():
            value = float(objective(beta))
        if value < best_value and float(beta.detach()) > 0:
            best, best_value, stale = float(beta.detach()), value, 0
        else:
            stale += 1
            if stale >= patience:
                break
    return best
