"""Fast-gradient-sign (FGSM) adversarial examples for adversarial training.

Lakshminarayanan et al. (2017) train each ensemble member on
``loss(x, y) + loss(x_adv, y)`` with ``x_adv = x + eps * sign(grad_x loss(x, y))``
and ``eps`` one percent of each input feature's range.
"""

from __future__ import annotations

import torch

from calibtut._validation import check_real

__all__ = ["feature_range_eps", "fgsm_perturb"]


def feature_range_eps(X, fraction=0.01):
    """Per-feature FGSM step: ``fraction * (max - min)`` of each column of ``X``.

    Parameters
    ----------
    X : torch.Tensor, shape (n, d)
        Training inputs.
    fraction : float, default 0.01
        Fraction of the range (Lakshminarayanan et al. use 0.01).

    Returns
    -------
    torch.Tensor, shape (d,)

    Examples
    --------
    >>> import torch
    >>> feature_range_eps(torch.tensor([[0.0, 1.0], [2.0, 5.0]]))
    tensor([0.0200, 0.0400])
    """
    if not isinstance(X, torch.Tensor) or X.ndim != 2:
        raise ValueError("X must be a 2-d torch.Tensor (n, d)")
    fraction = check_real(fraction, "fraction", low=0, low_open=True)
    return fraction * (X.max(dim=0).values - X.min(dim=0).values)


def fgsm_perturb(model, loss, x, y, eps):
    """Adversarial inputs ``x + eps * sign(grad_x loss(model(x), y))`` (detached).

    Only the input gradient is computed; the model's parameter gradients are left
    untouched.

    Parameters
    ----------
    model : torch.nn.Module
    loss : callable
        ``loss(model(x), y) -> scalar``.
    x : torch.Tensor, shape (n, d)
    y : torch.Tensor, shape (n,)
    eps : float or torch.Tensor of shape (d,)
        Step per feature.

    Returns
    -------
    torch.Tensor, shape (n, d)

    Examples
    --------
    >>> import torch
    >>> model = torch.nn.Linear(2, 1)
    >>> mse = lambda out, y: ((out.squeeze(-1) - y) ** 2).mean()
    >>> x_adv = fgsm_perturb(model, mse, torch.zeros(3, 2), torch.ones(3), 0.1)
    >>> bool((x_adv.abs() <= 0.1 + 1e-7).all())
    True
    """
    if isinstance(eps, torch.Tensor):
        if not torch.isfinite(eps).all() or (eps < 0).any():
            raise ValueError(f"eps must be finite and non-negative, got {eps.tolist()}")
    else:
        eps = check_real(eps, "eps", low=0)
    x_req = x.detach().requires_grad_(True)
    value = loss(model(x_req), y)
    (grad,) = torch.autograd.grad(value, x_req)
    return (x + eps * grad.sign()).detach()
