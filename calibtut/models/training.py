"""A small, seeded training loop with early stopping for ``x -> prediction`` models."""

from __future__ import annotations

import contextlib
import copy
from dataclasses import dataclass, field

import numpy as np
import torch
from tqdm.auto import tqdm

from calibtut._torch import resolve_device, to_tensor
from calibtut._validation import check_int, check_real
from calibtut.metrics.torch import nll_gaussian
from calibtut.models.adversarial import feature_range_eps, fgsm_perturb

__all__ = ["FitHistory", "fit", "gaussian_nll_loss", "predict"]

@dataclass
class FitHistory:
    """What :func:`fit` did: per-epoch losses and the epoch whose weights were kept.

    Attributes
    ----------
    train_loss : list of float
        Mean training loss of each epoch.
    val_loss : list of float
        Validation loss after each epoch (empty without validation data).
    best_epoch : int
        0-based epoch whose weights the model holds on return.
    best_loss : float
        The monitored loss at ``best_epoch``.
    stopped_early : bool
        Whether patience ran out before ``epochs`` (or training diverged).
    diverged : bool
        Whether an optimizer step left a non-finite parameter; training then
        stops and the best weights so far (the initial ones before the first
        validation) are restored, as an early stop on a non-finite monitor
        would.
    lr : list of float
        Learning rate of each epoch (:func:`fit` fills it; constant unless
        ``lr_step`` is given).
    """

    train_loss: list = field(default_factory=list)
    val_loss: list = field(default_factory=list)
    best_epoch: int = -1
    best_loss: float = float("inf")
    stopped_early: bool = False
    diverged: bool = False
    lr: list = field(default_factory=list)


def gaussian_nll_loss(output, y):
    """Mean Gaussian NLL of a ``(mean, std)`` output: the default loss of :func:`fit`.

    The loss of each training step: it checks the form of ``output`` but reads
    no value (that would synchronise with the device at every step);
    :func:`calibtut.metrics.torch.nll_gaussian` is the checked function.

    Parameters
    ----------
    output : tuple of torch.Tensor
        ``(mean, std)``, each of shape ``(n,)``.
    y : torch.Tensor, shape (n,)

    Returns
    -------
    torch.Tensor
        A scalar.

    Examples
    --------
    >>> float(gaussian_nll_loss((torch.zeros(2), torch.ones(2)), torch.zeros(2)))  # doctest: +ELLIPSIS
    0.918938...
    """
    if not isinstance(output, (tuple, list)) or len(output) != 2:
        raise TypeError("output must be a (mean, std) pair of tensors for the default Gaussian loss")
    mean, std = output
    # the loss of a training step: the loop checked its data once, so no check reads the device here
    return nll_gaussian(y, mean, std, validate_args=False)


def _evaluate(model, loss, X, y, batch_size, device):
    """Size-weighted mean loss over nearly equal chunks of at least ``batch_size``."""
    n_chunks = max(1, len(X) // batch_size)
    total = 0.0
    with torch.no_grad():
        for xb, yb in zip(torch.tensor_split(X, n_chunks), torch.tensor_split(y, n_chunks)):
            total += float(loss(model(xb.to(device)), yb.to(device))) * len(xb)
    return total / len(X)


@contextlib.contextmanager
def _mc_passes(model, n_samples):
    """Set ``model.n_samples`` (MC passes of an MC-dropout model) inside the block; ``None`` leaves it."""
    if n_samples is None:
        yield
        return
    previous = model.n_samples
    model.n_samples = n_samples
    try:
        yield
    finally:
        model.n_samples = previous


#: The optimizers of :func:`fit`; each takes ``(params, lr, weight_decay, momentum)``.
_OPTIMIZERS = {
    "adam": lambda params, lr, weight_decay, momentum: torch.optim.Adam(params, lr=lr, weight_decay=weight_decay),
    "sgd": lambda params, lr, weight_decay, momentum: torch.optim.SGD(
        params, lr=lr, momentum=momentum, weight_decay=weight_decay
    ),
}


def _epoch_batches(n, batch_size, drop_last, batches, generator):
    """One epoch's minibatch indices: ``batches(generator)``, else a permutation cut into ``batch_size``."""
    if batches is not None:
        return batches(generator)
    order = torch.randperm(n, generator=generator)
    stop = n - n % batch_size if drop_last else n
    return [order[start : start + batch_size] for start in range(0, stop, batch_size)]


def _seed_int(seed):
    if isinstance(seed, np.random.Generator):
        return int(seed.integers(2**63 - 1))
    return check_int(seed, "seed", minimum=0)


def fit(
    model,
    X,
    y,
    *,
    loss=None,
    epochs=100,
    batch_size=128,
    lr=1e-2,
    weight_decay=0.0,
    patience=None,
    val=None,
    val_loss=None,
    val_samples=None,
    seed=None,
    device="cpu",
    progress=True,
    adversarial_eps=None,
    drop_last=False,
    optimizer="adam",
    momentum=0.0,
    lr_step=None,
    lr_gamma=0.5,
    batches=None,
):
    """Train ``model`` with Adam (or SGD) on minibatches, keeping the best weights.

    Parameters
    ----------
    model : torch.nn.Module
        Maps a batch ``(b, d)`` to whatever ``loss`` takes (``(mean, std)`` for the
        Gaussian models of this package).
    X : array_like or torch.Tensor, shape (n, d)
    y : array_like or torch.Tensor, shape (n,)
    loss : callable, optional
        ``loss(model(xb), yb) -> scalar``; default: :func:`gaussian_nll_loss`,
        the mean Gaussian NLL of a ``(mean, std)`` output.
    epochs : int, default 100
    batch_size : int, default 128
    lr : float, default 1e-2
        Initial learning rate (paper 003 uses 1e-2 with Adam).
    weight_decay : float, default 0.0
    patience : int, optional
        Stop after this many epochs without improvement of the monitored loss
        (validation loss if ``val`` is given, else the epoch's training loss).
        The weights of the best epoch are restored in every case.
    val : tuple (X_val, y_val), optional
        Validation data, evaluated in eval mode after each epoch.
    val_loss : callable, optional
        Loss monitored on ``val``; default ``loss``.
    val_samples : int, optional
        For models with an ``n_samples`` attribute (MC passes at prediction,
        :class:`calibtut.models.MCDropoutGaussian`): the number of passes of
        the validation predictions, e.g. 8 instead of the 64 used at test
        time, which makes each epoch's validation that much cheaper. The
        model's own ``n_samples`` is restored afterwards. ``None`` (default)
        validates with the model as it is.
    seed : int or numpy.random.Generator, optional
        Seeds torch (dropout masks) and the shuffling ``torch.Generator`` inside a
        forked RNG state, so the global state is untouched and runs are
        reproducible on CPU. ``None`` uses torch's global generator.
    device : {"cpu", "cuda"} or torch.device, default "cpu"
    progress : bool, default True
        Show a tqdm bar over epochs.
    adversarial_eps : float, optional
        If given, adversarial training (FGSM, Lakshminarayanan et al. 2017): each
        batch's loss becomes ``loss(x) + loss(x_adv)`` with step
        ``adversarial_eps * (per-feature range of X)``.
    drop_last : bool, default False
        Drop the last incomplete batch (useful with a fixed QR spacing).
    optimizer : {"adam", "sgd"}, default "adam"
        Adam, or SGD with ``momentum`` (paper 004's discriminators and DANN).
    momentum : float, default 0.0
        SGD momentum in ``[0, 1)``; only ``optimizer="sgd"`` takes a non-zero one.
    lr_step : int, optional
        StepLR: multiply the learning rate by ``lr_gamma`` every ``lr_step``
        epochs (>= 1; paper 004's code: 100). ``None`` keeps it constant.
    lr_gamma : float, default 0.5
        The StepLR factor (> 0), used with ``lr_step``.
    batches : callable, optional
        ``batches(generator)`` gives the index tensors of one epoch's
        minibatches (rows of ``X``), drawn with the seeded ``torch.Generator``
        it is passed (for example equal source and target halves, as
        :class:`calibtut.shift.MLPDiscriminator` draws them). Default: a
        fresh permutation cut into batches of ``batch_size``, which still sets
        the chunks of the validation pass. Not with ``drop_last``.

    Returns
    -------
    FitHistory
        The model itself is trained in place, left on ``device`` in eval mode.

    Examples
    --------
    >>> import numpy as np
    >>> from calibtut.models import GaussianMLP
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(64, 1)); y = 2 * X[:, 0] + rng.normal(size=64)
    >>> model = GaussianMLP(1, hidden=(8,), seed=0)
    >>> hist = fit(model, X, y, epochs=5, batch_size=32, seed=0, progress=False)
    >>> len(hist.train_loss)
    5

    SGD with momentum, the learning rate halved every two epochs:

    >>> hist = fit(GaussianMLP(1, hidden=(8,), seed=0), X, y, epochs=5, batch_size=32, lr=1e-3,
    ...            optimizer="sgd", momentum=0.9, lr_step=2, seed=0, progress=False)
    >>> hist.lr
    [0.001, 0.001, 0.0005, 0.0005, 0.00025]
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    loss = gaussian_nll_loss if loss is None else loss
    if not callable(loss):
        raise TypeError(f"loss must be callable, got {type(loss).__name__}")
    val_loss = loss if val_loss is None else val_loss
    if not callable(val_loss):
        raise TypeError(f"val_loss must be callable, got {type(val_loss).__name__}")
    if val_samples is not None:
        val_samples = check_int(val_samples, "val_samples", minimum=1)
        if not hasattr(model, "n_samples"):
            raise TypeError(
                f"val_samples needs a model with MC passes (an n_samples attribute), got {type(model).__name__}"
            )
    epochs = check_int(epochs, "epochs", minimum=1)
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    if patience is not None:
        patience = check_int(patience, "patience", minimum=1)
    lr = check_real(lr, "lr", low=0)
    weight_decay = check_real(weight_decay, "weight_decay", low=0)
    if adversarial_eps is not None:
        adversarial_eps = check_real(adversarial_eps, "adversarial_eps", low=0, low_open=True)
    if not isinstance(optimizer, str) or optimizer not in _OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {tuple(_OPTIMIZERS)}, got {optimizer!r}")
    momentum = check_real(momentum, "momentum", low=0, high=1, high_open=True)
    if momentum and optimizer != "sgd":
        raise ValueError(f"momentum={momentum} needs optimizer='sgd', got optimizer={optimizer!r}")
    if lr_step is not None:
        lr_step = check_int(lr_step, "lr_step", minimum=1)
    lr_gamma = check_real(lr_gamma, "lr_gamma", low=0, low_open=True)
    if batches is not None:
        if not callable(batches):
            raise TypeError(f"batches must be callable, got {type(batches).__name__}")
        if drop_last:
            raise ValueError("drop_last cuts the default batches: give batches or drop_last=True, not both")
    dev = resolve_device(device)
    params = list(model.parameters())
    dtype = params[0].dtype if params else torch.float32
    X_t = to_tensor(X, "X", ndim=2, dtype=dtype)
    y_t = to_tensor(y, "y", ndim=1, dtype=dtype)
    if len(X_t) != len(y_t):
        raise ValueError(f"X and y must have the same length, got {len(X_t)} and {len(y_t)}")
    if val is not None:
        if not isinstance(val, (tuple, list)) or len(val) != 2:
            raise TypeError("val must be a pair (X_val, y_val)")
        Xv = to_tensor(val[0], "val[0]", ndim=2, dtype=dtype)
        yv = to_tensor(val[1], "val[1]", ndim=1, dtype=dtype)
        if len(Xv) != len(yv):
            raise ValueError(f"val[0] and val[1] must have the same length, got {len(Xv)} and {len(yv)}")
        if Xv.shape[1] != X_t.shape[1]:
            raise ValueError(f"val[0] has {Xv.shape[1]} features, X has {X_t.shape[1]}")
    eps_vec = None
    if adversarial_eps is not None:
        eps_vec = feature_range_eps(X_t, adversarial_eps).to(dev)
    n = len(X_t)
    if drop_last and n < batch_size:
        raise ValueError(f"drop_last=True with batch_size ({batch_size}) larger than the data ({n}) leaves no batch")

    model.to(dev)
    opt = _OPTIMIZERS[optimizer](model.parameters(), lr=lr, weight_decay=weight_decay, momentum=momentum)
    scheduler = None if lr_step is None else torch.optim.lr_scheduler.StepLR(opt, step_size=lr_step, gamma=lr_gamma)
    history = FitHistory()
    best_state = copy.deepcopy(model.state_dict())
    stale = 0
    fork_devices = [dev.index if dev.index is not None else torch.cuda.current_device()] if dev.type == "cuda" else []
    with torch.random.fork_rng(devices=fork_devices, enabled=seed is not None):
        shuffler = torch.Generator()
        if seed is not None:
            seed_int = _seed_int(seed)
            torch.manual_seed(seed_int)
            shuffler.manual_seed(seed_int)
        else:
            shuffler.seed()
        bar = tqdm(range(epochs), desc="fit", disable=not progress, leave=False)
        for epoch in bar:
            model.train()
            history.lr.append(opt.param_groups[0]["lr"])
            running, seen = 0.0, 0
            for idx in _epoch_batches(n, batch_size, drop_last, batches, shuffler):
                xb, yb = X_t[idx].to(dev), y_t[idx].to(dev)
                if eps_vec is not None:
                    x_adv = fgsm_perturb(model, loss, xb, yb, eps_vec)
                    value = loss(model(xb), yb) + loss(model(x_adv), yb)
                else:
                    value = loss(model(xb), yb)
                opt.zero_grad(set_to_none=True)
                value.backward()
                opt.step()
                if not all(bool(torch.isfinite(p).all()) for p in params):
                    history.diverged = history.stopped_early = True
                    break
                running += float(value.detach()) * len(idx)
                seen += len(idx)
            if history.diverged:
                break
            if scheduler is not None:
                scheduler.step()
            history.train_loss.append(running / seen)
            if val is not None:
                model.eval()
                with _mc_passes(model, val_samples):
                    history.val_loss.append(_evaluate(model, val_loss, Xv, yv, batch_size, dev))
                monitored = history.val_loss[-1]
            else:
                monitored = history.train_loss[-1]
            if monitored < history.best_loss:
                history.best_loss, history.best_epoch, stale = monitored, epoch, 0
                best_state = copy.deepcopy(model.state_dict())
            else:
                stale += 1
            bar.set_postfix(loss=f"{history.train_loss[-1]:.4g}", best=f"{history.best_loss:.4g}")
            if patience is not None and stale >= patience:
                history.stopped_early = True
                break
        bar.close()
    model.load_state_dict(best_state)
    model.eval()
    return history


def predict(model, X, *, batch_size=4096, device="cpu"):
    """Eval-mode predictions of a ``x -> (mean, std)`` model as numpy arrays.

    Parameters
    ----------
    model : torch.nn.Module
    X : array_like or torch.Tensor, shape (n, d)
    batch_size : int, default 4096
        Rows per forward pass (bounds memory; MC dropout makes one pass per sample).
    device : {"cpu", "cuda"} or torch.device, default "cpu"

    Returns
    -------
    tuple of numpy.ndarray
        ``(mean, std)``, each of shape ``(n,)``, float64.

    Examples
    --------
    >>> from calibtut.models import GaussianMLP
    >>> mean, std = predict(GaussianMLP(2, hidden=(4,), seed=0), [[0.0, 1.0], [2.0, 3.0]])
    >>> mean.shape, std.dtype
    ((2,), dtype('float64'))
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    dev = resolve_device(device)
    params = list(model.parameters())
    X_t = to_tensor(X, "X", ndim=2, dtype=params[0].dtype if params else torch.float32)
    model.to(dev).eval()
    means, stds = [], []
    with torch.no_grad():
        for xb in torch.split(X_t, batch_size):
            mean, std = model(xb.to(dev))
            means.append(mean.cpu())
            stds.append(std.cpu())
    return torch.cat(means).double().numpy(), torch.cat(stds).double().numpy()
