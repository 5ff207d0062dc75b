"""Train several study models on the same data at once, each exactly as :func:`fit_study` would.

Models that share a dataset and a split (the lambda grid, the regularizers,
the runs' seeds) have the same architecture, so their parameters can be
stacked (:func:`torch.func.stack_module_state`) and one
:func:`torch.func.vmap` of :func:`torch.func.functional_call` runs all of them
in one pass of batched matrix products. Everything random is reproduced per
model in the order :func:`calibtut.models.fit` consumes it: each model has
its own shuffling generator and its own copy of torch's global generator,
from which its SQR levels and then its dropout masks are drawn (dropout is
``bernoulli_(1 - p) / (1 - p)`` noise on CPU, which is what ``nn.Dropout``
draws there). Adam is elementwise, so one optimizer over the stacked
parameters updates each slice as the model's own optimizer would. Each model
keeps its own early stopping on its validation base loss (the regularizer
left out, the authors' rule, as in :func:`calibtut.models.fit_study`): when
its patience runs out its slice leaves the stack (parameters and Adam
moments), and its best weights are restored.

On CPU the result equals :func:`calibtut.models.fit_study` model by model,
up to the rounding of batched against single matrix products (tested). On a
GPU the masks and levels are still drawn on CPU, model by model, and then
moved, so a batched GPU training is reproducible and uses the same masks as
on CPU; sequential GPU training differs in its dropout masks, because
``nn.Dropout`` there draws from the CUDA generator through a fused kernel.
"""

from __future__ import annotations

import copy

import torch
from torch import nn
from torch.func import functional_call, stack_module_state, vmap

from calibtut._torch import resolve_device, to_tensor
from calibtut._validation import check_int
from calibtut.models.mixture import MixtureMLP
from calibtut.models.sqr import SQRNet
from calibtut.models.training import FitHistory
from calibtut.regularizers.calibration_penalties import StudyLoss

__all__ = ["fit_study_batched"]


class _GivenNoise(nn.Module):
    """Dropout whose multiplicative noise is passed in as the buffer ``noise``."""

    def __init__(self, width):
        super().__init__()
        self.width = width
        self.register_buffer("noise", torch.ones(1, width))

    def forward(self, x):
        return x * self.noise


class _Quantiles(nn.Module):
    """``(x, levels) -> net.quantiles(x, levels)`` as a module call, for functional_call."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x, levels):
        return self.net.quantiles(x, levels)


def _template(model):
    """A copy of ``model`` whose dropout takes given noise; the noise buffer's key and width."""
    twin = copy.deepcopy(model).to("meta")
    body = twin.body
    for i, layer in enumerate(body):
        if isinstance(layer, nn.Dropout):
            # the features the dropout multiplies: the next Linear's inputs (the data's, with no Linear before)
            width = next(m.in_features for m in list(body)[i:] if isinstance(m, nn.Linear)) \
                if any(isinstance(m, nn.Linear) for m in list(body)[i:]) else twin.head.in_features
            body[i] = _GivenNoise(width)
            key = f"body.{i}.noise"
            break
    if isinstance(twin, SQRNet):
        return _Quantiles(twin), "net." + key, width
    return twin, key, width


def _check_models(models, losses):
    if not isinstance(models, (list, tuple)) or len(models) == 0:
        raise TypeError("models must be a non-empty list of MixtureMLP or SQRNet models")
    if not isinstance(losses, (list, tuple)) or len(losses) != len(models):
        raise TypeError("losses must be a list of StudyLoss, one per model")
    first = models[0]
    if not isinstance(first, (MixtureMLP, SQRNet)):
        raise TypeError(f"models must be MixtureMLP or SQRNet, got {type(first).__name__}")
    shapes = [(k, v.shape) for k, v in first.state_dict().items()]
    for model, loss in zip(models, losses):
        if type(model) is not type(first) or getattr(model, "form", None) != getattr(first, "form", None):
            raise TypeError("models must all be of one class (and one SQR form)")
        if [(k, v.shape) for k, v in model.state_dict().items()] != shapes:
            raise ValueError("models must share one architecture (same parameter names and shapes)")
        if not isinstance(loss, StudyLoss):
            raise TypeError(f"losses must be StudyLoss objects, got {type(loss).__name__}")
        if (loss.model == "sqr") != isinstance(model, SQRNet):
            raise ValueError(f"loss {loss!r} does not fit a {type(model).__name__}")


class _Stack:
    """The active models' stacked parameters, Adam state and random streams."""

    def __init__(self, models, lr, seeds):
        params, _ = stack_module_state(list(models))
        self.params = {k: v.detach().clone().requires_grad_(True) for k, v in params.items()}
        self.optimizer = torch.optim.Adam(self.params.values(), lr=lr)
        self.active = list(range(len(models)))
        self.rng = []
        self.shufflers = []
        for seed in seeds:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                self.rng.append(torch.get_rng_state())
            self.shufflers.append(torch.Generator().manual_seed(seed))

    def draw(self, m, fn):
        """Run ``fn()`` on model ``m``'s copy of the global generator."""
        with torch.random.fork_rng(devices=[]):
            torch.set_rng_state(self.rng[m])
            out = fn()
            self.rng[m] = torch.get_rng_state()
        return out

    def keep(self, rows):
        """Keep the stacked rows ``rows`` (positions in ``active``), with their Adam moments."""
        index = torch.as_tensor(rows)
        old = self.optimizer
        new_params = {k: v.detach()[index].clone().requires_grad_(True) for k, v in self.params.items()}
        new = torch.optim.Adam(new_params.values(), lr=old.defaults["lr"])
        for (k, p_old), p_new in zip(self.params.items(), new_params.values()):
            state = old.state.get(p_old)
            if state:
                new.state[p_new] = {
                    "step": state["step"].clone(),
                    "exp_avg": state["exp_avg"][index].clone(),
                    "exp_avg_sq": state["exp_avg_sq"][index].clone(),
                }
        self.params, self.optimizer = new_params, new
        self.active = [self.active[r] for r in rows]


def _check_study_inputs(models, X, y, val, seeds, epochs, patience, batch_size, device):
    """The arguments both batched trainers share, checked: seeds, sizes, device, data as tensors.

    Returns ``(seeds, epochs, patience, batch_size, device, (X, y), (X_val, y_val))``, the
    tensors on the device in the models' dtype and ``batch_size`` capped at the data's length.
    """
    if not isinstance(seeds, (list, tuple)) or len(seeds) != len(models):
        raise TypeError(f"seeds must be a list of ints, one per model, got {seeds!r}")
    seeds = [check_int(s, "seeds", minimum=0) for s in seeds]
    epochs = check_int(epochs, "epochs", minimum=1)
    patience = check_int(patience, "patience", minimum=1)
    dev = resolve_device(device)
    dtype = next(models[0].parameters()).dtype
    X_t, y_t = to_tensor(X, "X", ndim=2, dtype=dtype).to(dev), to_tensor(y, "y", ndim=1, dtype=dtype).to(dev)
    if len(X_t) != len(y_t):
        raise ValueError(f"X and y must have the same length, got {len(X_t)} and {len(y_t)}")
    if not isinstance(val, (tuple, list)) or len(val) != 2:
        raise TypeError("val must be a pair (X_val, y_val)")
    Xv = to_tensor(val[0], "val[0]", ndim=2, dtype=dtype).to(dev)
    yv = to_tensor(val[1], "val[1]", ndim=1, dtype=dtype).to(dev)
    batch_size = min(check_int(batch_size, "batch_size", minimum=1), len(X_t))
    return seeds, epochs, patience, batch_size, dev, (X_t, y_t), (Xv, yv)


def fit_study_batched(models, X, y, *, losses, val, seeds, epochs=5000, patience=30, batch_size=512, device="cpu"):
    """Train models of one architecture on the same data together (see the module docstring).

    Parameters
    ----------
    models : list of MixtureMLP or list of SQRNet
        Same class, form and sizes; trained in place.
    X, y : array_like
        Training data, shared.
    losses : list of StudyLoss
        One per model (e.g. the lambda grid of one regularizer).
    val : tuple (X_val, y_val)
    seeds : sequence of int
        One training seed per model (as ``seed`` of :func:`fit_study`), each >= 0.
    epochs, patience, batch_size : int
        As in :func:`calibtut.models.fit_study`, each >= 1.
    device : {"cpu", "cuda"} or torch.device, default "cpu"

    Returns
    -------
    list of FitHistory
        One per model, as :func:`calibtut.models.fit` returns.

    Examples
    --------
    >>> import numpy as np
    >>> from calibtut.models import make_study_model
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.normal(size=(64, 2)), rng.normal(size=64)
    >>> pairs = [make_study_model("mix-nll", 2, regularizer="pce-kde", lam=lam, seed=0) for lam in (0.0, 1.0)]
    >>> hists = fit_study_batched([m for m, _ in pairs], X, y, losses=[l for _, l in pairs],
    ...                           val=(X[:16], y[:16]), seeds=[0, 0], epochs=3)
    >>> [len(h.val_loss) for h in hists]
    [3, 3]
    """
    _check_models(models, losses)
    seeds, epochs, patience, batch_size, dev, (X_t, y_t), (Xv, yv) = _check_study_inputs(
        models, X, y, val, seeds, epochs, patience, batch_size, device)
    dtype, n = X_t.dtype, len(X_t)

    for model in models:
        model.to(dev)
    template, noise_key, width = _template(models[0])
    p_drop = next(m.p for m in models[0].modules() if isinstance(m, nn.Dropout))
    is_sqr = isinstance(models[0], SQRNet)
    rows_per_x = lambda n_levels: n_levels if is_sqr and models[0].form == "paper" else 1  # noqa: E731
    prefix = "net." if is_sqr else ""
    cpu_like = torch.empty(0, dtype=dtype)  # random draws are made on CPU, per model, then moved

    def forward(params, noise, x, levels):
        state = {prefix + k: v for k, v in params.items()}
        state[noise_key] = noise
        return functional_call(template, state, (x, levels) if is_sqr else (x,))

    batched = vmap(forward, in_dims=(0, 0, 0, 0 if is_sqr else None))

    def step_inputs(stack, xb, yb, training):
        levels, noise = [], []
        for pos, m in enumerate(stack.active):
            def draws():
                lv = losses[m].draw_levels(cpu_like) if is_sqr else None
                rows = len(xb[pos]) * (rows_per_x(len(lv)) if is_sqr else 1)
                if training:
                    z = torch.empty(rows, width, dtype=dtype).bernoulli_(1 - p_drop).div_(1 - p_drop)
                else:
                    z = torch.ones(rows, width, dtype=dtype)
                return (None if lv is None else lv.to(dev)), z.to(dev)

            lv, z = stack.draw(m, draws)
            levels.append(lv)
            noise.append(z)
        lv_stack = torch.stack(levels) if is_sqr else None
        return lv_stack, torch.stack(noise)

    monitored = [loss.base_loss() for loss in losses]

    def model_losses(stack, out, yb, levels, chosen):
        values = []
        for pos, m in enumerate(stack.active):
            if is_sqr:
                values.append(chosen[m].quantile_loss(out[pos], yb[pos], levels[pos]))
            else:
                values.append(chosen[m](tuple(o[pos] for o in out), yb[pos]))
        return values

    stack = _Stack(models, 1e-2, seeds)
    histories = [FitHistory() for _ in models]
    best = [{k: v.detach().clone() for k, v in model.state_dict().items()} for model in models]
    stale = [0] * len(models)
    n_chunks = max(1, len(Xv) // batch_size)
    for epoch in range(epochs):
        orders = [torch.randperm(n, generator=stack.shufflers[m]) for m in range(len(models))]
        running = [0.0] * len(models)
        stop = n - n % batch_size
        for start in range(0, stop, batch_size):
            idx = torch.stack([orders[m][start : start + batch_size] for m in stack.active]).to(dev)
            xb, yb = X_t[idx], y_t[idx]
            levels, noise = step_inputs(stack, xb, yb, training=True)
            values = model_losses(stack, batched(stack.params, noise, xb, levels), yb, levels, losses)
            stack.optimizer.zero_grad(set_to_none=True)
            torch.stack(values).sum().backward()
            stack.optimizer.step()
            finite = torch.stack([torch.isfinite(v.detach()).flatten(1).all(1) for v in stack.params.values()]).all(0)
            for pos, m in enumerate(stack.active):
                running[m] += float(values[pos].detach()) * batch_size
                if not finite[pos]:  # as fit: a diverged model stops, its best weights restored
                    histories[m].diverged = histories[m].stopped_early = True
            if not finite.all():
                kept = [pos for pos in range(len(stack.active)) if finite[pos]]
                if not kept:
                    stack.active = []
                    break
                stack.keep(kept)
        if not stack.active:
            break
        val_total = [0.0] * len(models)
        with torch.no_grad():
            for xc, yc in zip(torch.tensor_split(Xv, n_chunks), torch.tensor_split(yv, n_chunks)):
                k = len(stack.active)
                xs, ys = xc.expand(k, *xc.shape), yc.expand(k, *yc.shape)
                levels, noise = step_inputs(stack, xs, ys, training=False)
                values = model_losses(stack, batched(stack.params, noise, xs, levels), ys, levels, monitored)
                for pos, m in enumerate(stack.active):
                    val_total[m] += float(values[pos]) * len(xc)
        keep = []
        for pos, m in enumerate(stack.active):
            hist = histories[m]
            hist.train_loss.append(running[m] / stop)
            hist.val_loss.append(val_total[m] / len(Xv))
            if hist.val_loss[-1] < hist.best_loss:
                hist.best_loss, hist.best_epoch, stale[m] = hist.val_loss[-1], epoch, 0
                best[m] = {k: v.detach()[pos].clone() for k, v in stack.params.items()}
            else:
                stale[m] += 1
            if stale[m] >= patience:
                hist.stopped_early = True
            else:
                keep.append(pos)
        if not keep:
            break
        if len(keep) < len(stack.active):
            stack.keep(keep)
    for model, state in zip(models, best):
        model.load_state_dict(state)
        model.eval()
    return histories
