"""Domain-adversarial feature learning (DANN, Ganin et al. 2016) on frozen features.

As in paper 004's code, the source network stays fixed: a new feature map
``psi`` (one hidden layer) is learned on top of its frozen features ``phi``,
with a classification head ``F`` and a domain discriminator ``D`` behind a
gradient-reversal layer. Each iteration takes ``b`` source and ``b`` target
points (the shorter set is cycled) and minimises

``head_weight * mean ||softmax(F(psi(z_i))) - y_i||^2 + lambda_d * mean_j (D(psi(z_j)) - s_j)^2``

(the second mean over all ``2 b`` points, ``s = 1`` for source). The
gradient-reversal coefficient follows ``c_t = 2 / (1 + exp(-gamma t / T)) - 1``
with ``t`` the iteration count (Ganin et al.'s ``gamma``, ``alpha = 10`` in the
code, which is ``gamma`` here since ``alpha`` names a miscoverage level
throughout the package; ``T = 10^4``). Training stops once the discriminator
wins, i.e. when its loss on the training sets, ``mean_source (D - 1)^2 +
mean_target D^2`` (two times a balanced mean squared error), falls below
``stop_disc_loss`` (0.2 in the code); the weights of the previous epoch are kept.
Torch in, torch out.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field

import torch
from torch import nn
from tqdm.auto import tqdm

from calibtut._torch import check_features, resolve_device, seeded_rng, to_tensor
from calibtut._validation import check_int, check_labels, check_real

__all__ = ["DANNHead", "DANNHistory", "GradientReversal", "fit_dann", "grad_reverse", "grl_coefficient"]


class GradientReversal(torch.autograd.Function):
    """Identity forward; the backward pass multiplies the gradient by ``-coeff``.

    Examples
    --------
    >>> x = torch.ones(2, requires_grad=True)
    >>> GradientReversal.apply(x, 0.5).sum().backward()
    >>> x.grad
    tensor([-0.5000, -0.5000])
    """

    @staticmethod
    def forward(ctx, x, coeff):
        ctx.coeff = float(coeff)
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_output):
        return -ctx.coeff * grad_output, None


def grad_reverse(x, coeff=1.0):
    """Apply :class:`GradientReversal` with coefficient ``coeff >= 0``.

    Examples
    --------
    >>> grad_reverse(torch.tensor([1.0, 2.0]), 0.3)
    tensor([1., 2.])
    """
    return GradientReversal.apply(x, check_real(coeff, "coeff", low=0))


def grl_coefficient(step, *, gamma=10.0, max_steps=10_000):
    """Ganin et al.'s schedule ``2 / (1 + exp(-gamma * step / max_steps)) - 1``.

    Parameters
    ----------
    step : int
        Iterations done so far (>= 0).
    gamma : float, default 10.0
        Steepness of the schedule (> 0; Ganin et al.'s ``gamma``, the code's ``alpha``).
    max_steps : int, default 10000
        Iterations over which the coefficient rises (>= 1).

    Returns
    -------
    float
        In ``[0, 1)``: 0 at the start, about 0.462 after 1,000 steps and 0.987
        after 5,000 with the defaults.

    Examples
    --------
    >>> grl_coefficient(0), round(grl_coefficient(1000), 3), round(grl_coefficient(5000), 3)
    (0.0, 0.462, 0.987)
    """
    step = check_int(step, "step", minimum=0)
    max_steps = check_int(max_steps, "max_steps", minimum=1)
    gamma = check_real(gamma, "gamma", low=0, low_open=True)
    return float(2.0 / (1.0 + math.exp(-gamma * step / max_steps)) - 1.0)


class DANNHead(nn.Module):
    """``psi``, the class head ``F`` and the domain discriminator ``D`` on frozen features.

    ``psi = ReLU(Linear(n_in, hidden))``; ``F = Linear(hidden, n_classes)``
    after dropout; ``D = Linear(hidden_d, 1)(Dropout(ReLU(Linear(hidden, hidden_d))))``
    returning a logit of the source domain.

    Parameters
    ----------
    n_in : int
        Dimension of the frozen features.
    n_classes : int
    hidden : int, default 84
    hidden_d : int, default 84
    dropout : float, default 0.5
        In ``[0, 1)``.
    seed : int or None
        Seeds the initialisation.

    Examples
    --------
    >>> head = DANNHead(4, 3, hidden=8, hidden_d=8, seed=0)
    >>> head(torch.zeros(5, 4)).shape, head.discriminate(torch.zeros(5, 4)).shape
    (torch.Size([5, 3]), torch.Size([5]))
    """

    def __init__(self, n_in, n_classes, *, hidden=84, hidden_d=84, dropout=0.5, seed=None):
        super().__init__()
        self.n_in = n_in = check_int(n_in, "n_in", minimum=1)
        n_classes = check_int(n_classes, "n_classes", minimum=2)
        hidden = check_int(hidden, "hidden", minimum=1)
        hidden_d = check_int(hidden_d, "hidden_d", minimum=1)
        dropout = check_real(dropout, "dropout", low=0, high=1, high_open=True)
        with seeded_rng(seed):
            self.psi = nn.Sequential(nn.Linear(n_in, hidden), nn.ReLU())
            self.head = nn.Sequential(nn.Dropout(dropout), nn.Linear(hidden, n_classes))
            self.disc = nn.Sequential(
                nn.Linear(hidden, hidden_d), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden_d, 1)
            )

    def features(self, z):
        """The learned features ``psi(z)``."""
        return self.psi(check_features(z, "z", self.n_in))

    def forward(self, z):
        """Class logits ``F(psi(z))``."""
        return self.head(self.features(z))

    def discriminate(self, z, coeff=0.0):
        """Source logit ``D(GRL(psi(z)))``; the reversal only acts on gradients."""
        return self.disc(grad_reverse(self.features(z), coeff)).squeeze(-1)


@dataclass
class DANNHistory:
    """What :func:`fit_dann` did: a result record, returned and never built by users.

    Its fields are filled in by :func:`fit_dann`, so it validates nothing (the
    API walker of ``tests/test_api_validation.py`` lists it in
    ``RESULT_RECORDS``).

    Attributes
    ----------
    train_loss : list of float
        Mean total loss per epoch.
    disc_loss : list of float
        End-of-epoch discriminator loss on the training sets (the stopping statistic).
    coefficient : list of float
        Gradient-reversal coefficient at the end of each epoch.
    steps : int
        Iterations done.
    kept_epoch : int
        0-based epoch whose weights the model holds.
    stopped : bool
        Whether the stopping rule fired.
    """

    train_loss: list = field(default_factory=list)
    disc_loss: list = field(default_factory=list)
    coefficient: list = field(default_factory=list)
    steps: int = 0
    kept_epoch: int = -1
    stopped: bool = False


class _Cycler:
    """Endless shuffled passes over ``range(n)``, reshuffled after each pass."""

    def __init__(self, n, generator):
        self.n, self.generator = n, generator
        self.order, self.pos = torch.randperm(n, generator=generator), 0

    def take(self, k):
        parts = []
        while k > 0:
            chunk = self.order[self.pos : self.pos + k]
            parts.append(chunk)
            k -= len(chunk)
            self.pos += len(chunk)
            if self.pos >= self.n:
                self.order, self.pos = torch.randperm(self.n, generator=self.generator), 0
        return torch.cat(parts)


def _disc_loss(model, Zs, Zt):
    with torch.no_grad():
        ds = torch.sigmoid(model.discriminate(Zs))
        dt = torch.sigmoid(model.discriminate(Zt))
    return float(torch.mean((ds - 1) ** 2) + torch.mean(dt**2))


def fit_dann(
    model,
    Z_source,
    y_source,
    Z_target,
    *,
    epochs=500,
    batch_size=200,
    lr=1e-3,
    momentum=0.9,
    weight_decay=5e-4,
    lr_step=100,
    lr_gamma=0.5,
    lambda_d=1.0,
    head_weight=1.5,
    stop_disc_loss=0.2,
    grl_gamma=10.0,
    grl_max_steps=10_000,
    seed=None,
    device="cpu",
    progress=True,
):
    """Train a :class:`DANNHead` on frozen source and target features (paper 004's FL step).

    Parameters
    ----------
    model : DANNHead
    Z_source : array_like or torch.Tensor of shape (n, d)
        Frozen features of labelled source points.
    y_source : array_like of int, shape (n,)
    Z_target : array_like or torch.Tensor of shape (m, d)
        Frozen features of unlabelled target points.
    epochs : int, default 500
        At most this many epochs of ``ceil(max(n, m) / batch_size)`` iterations.
    batch_size : int, default 200
        Points per domain and iteration.
    lr : float, default 1e-3
        SGD learning rate (> 0) of the code, for all three networks.
    momentum : float, default 0.9
        SGD momentum, in ``[0, 1)``.
    weight_decay : float, default 5e-4
        SGD weight decay (>= 0).
    lr_step : int, default 100
    lr_gamma : float, default 0.5
        StepLR: the learning rate is multiplied by ``lr_gamma`` (> 0) every
        ``lr_step`` epochs.
    lambda_d : float, default 1.0
        Weight of the discriminator loss (>= 0).
    head_weight : float, default 1.5
        Weight of the head's Brier loss (>= 0; the code's default sample weight).
    stop_disc_loss : float or None, default 0.2
        Stop once the training discriminator loss is below this (> 0), keeping the
        previous epoch's weights (the first epoch's weights if it fires at once);
        ``None`` trains all epochs.
    grl_gamma : float, default 10.0
        ``gamma`` of :func:`grl_coefficient` (the code's ``alpha``).
    grl_max_steps : int, default 10000
        ``max_steps`` of :func:`grl_coefficient`.
    seed : int or None
        Seeds dropout and batch order inside a forked RNG.
    device : {"cpu", "cuda"}, default "cpu"
    progress : bool, default True

    Returns
    -------
    DANNHistory
        The model is trained in place and left in eval mode on the CPU.

    Examples
    --------
    >>> g = torch.Generator().manual_seed(0)
    >>> Zs, Zt = torch.randn(100, 3, generator=g), torch.randn(80, 3, generator=g) + 1
    >>> ys = (Zs[:, 0] > 0).long()
    >>> model = DANNHead(3, 2, hidden=8, hidden_d=8, seed=0)
    >>> hist = fit_dann(model, Zs, ys, Zt, epochs=3, batch_size=50, lr=0.05, seed=0, progress=False)
    >>> hist.steps, len(hist.disc_loss)
    (6, 3)
    """
    if not isinstance(model, DANNHead):
        raise TypeError(f"model must be a DANNHead, got {type(model).__name__}")
    Zs = to_tensor(Z_source, "Z_source", ndim=2)
    Zt = to_tensor(Z_target, "Z_target", ndim=2)
    if Zt.shape[1] != Zs.shape[1]:
        raise ValueError(f"Z_target has {Zt.shape[1]} features but Z_source has {Zs.shape[1]}")
    n_classes = model.head[-1].out_features
    ys = torch.as_tensor(check_labels(y_source, "y_source", n_classes=n_classes, n=len(Zs)))
    epochs = check_int(epochs, "epochs", minimum=1)
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    lr_step = check_int(lr_step, "lr_step", minimum=1)
    lr = check_real(lr, "lr", low=0, low_open=True)
    momentum = check_real(momentum, "momentum", low=0, high=1, high_open=True)
    weight_decay = check_real(weight_decay, "weight_decay", low=0)
    lr_gamma = check_real(lr_gamma, "lr_gamma", low=0, low_open=True)
    lambda_d = check_real(lambda_d, "lambda_d", low=0)
    head_weight = check_real(head_weight, "head_weight", low=0)
    if stop_disc_loss is not None:
        stop_disc_loss = check_real(stop_disc_loss, "stop_disc_loss", low=0, low_open=True)
    grl_gamma = check_real(grl_gamma, "grl_gamma", low=0, low_open=True)
    grl_max_steps = check_int(grl_max_steps, "grl_max_steps", minimum=1)
    if seed is not None:
        seed = check_int(seed, "seed", minimum=0)
    dev = resolve_device(device)
    model.to(dev)
    Zs_d, ys_d, Zt_d = Zs.to(dev), ys.to(dev), Zt.to(dev)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum, weight_decay=weight_decay)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=lr_step, gamma=lr_gamma)
    n_s, n_t = len(Zs), len(Zt)
    per_epoch = math.ceil(max(n_s, n_t) / batch_size)
    history = DANNHistory()
    previous = copy.deepcopy(model.state_dict())
    fork_devices = [dev.index if dev.index is not None else torch.cuda.current_device()] if dev.type == "cuda" else []
    with torch.random.fork_rng(devices=fork_devices, enabled=seed is not None):
        gen = torch.Generator()
        if seed is not None:
            torch.manual_seed(seed)
            gen.manual_seed(seed)
        else:
            gen.seed()
        source, target = _Cycler(n_s, gen), _Cycler(n_t, gen)
        b = min(batch_size, n_s, n_t)
        bar = tqdm(range(epochs), desc="dann", disable=not progress, leave=False)
        for epoch in bar:
            model.train()
            running = 0.0
            for _ in range(per_epoch):
                bs, bt = source.take(b).to(dev), target.take(b).to(dev)
                coeff = grl_coefficient(history.steps, gamma=grl_gamma, max_steps=grl_max_steps)
                zb = torch.cat([Zs_d[bs], Zt_d[bt]])
                probs = torch.softmax(model(Zs_d[bs]), dim=1)
                onehot = nn.functional.one_hot(ys_d[bs], n_classes).to(probs.dtype)
                head_loss = torch.mean(torch.sum((probs - onehot) ** 2, dim=1))
                s = torch.cat([torch.ones(b, device=dev), torch.zeros(b, device=dev)])
                disc_loss = torch.mean((torch.sigmoid(model.discriminate(zb, coeff)) - s) ** 2)
                loss = head_weight * head_loss + lambda_d * disc_loss
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                history.steps += 1
                running += float(loss.detach())
            scheduler.step()
            model.eval()
            history.train_loss.append(running / per_epoch)
            history.disc_loss.append(_disc_loss(model, Zs_d, Zt_d))
            history.coefficient.append(coeff)
            bar.set_postfix(loss=f"{history.train_loss[-1]:.4g}", disc=f"{history.disc_loss[-1]:.4g}")
            if stop_disc_loss is not None and history.disc_loss[-1] < stop_disc_loss:
                history.stopped = True
                if epoch > 0:
                    model.load_state_dict(previous)
                    history.kept_epoch = epoch - 1
                else:
                    history.kept_epoch = 0
                break
            previous = copy.deepcopy(model.state_dict())
            history.kept_epoch = epoch
        bar.close()
    model.cpu().eval()
    return history
