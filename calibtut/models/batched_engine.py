"""The study engine: many study models trained as one program, with no host read inside an epoch.

:func:`fit_study_engine` trains models of one architecture on the same data
(every regularizer and lambda of a dataset and run, or several runs' seeds)
as one batched program:

* **stacked parameters** with a model axis in every weight tensor; each layer
  is one :func:`torch.baddbmm` over the models (faster on CPU than
  :func:`torch.func.vmap` of the module for these small networks, see
  ``benchmarks/bench_batched_engine.py``);
* **one draw per seed**: models that share a training seed share their batch
  order, their SQR levels and their dropout masks, exactly as
  :func:`calibtut.models.fit_study` gives them to each model alone (the same
  seed seeds the same streams there). Each seed has two generators on the
  device, one for the permutation of each epoch and one for the levels and
  masks, drawn in the order :func:`calibtut.models.fit` consumes them
  (levels, then masks with ``bernoulli_``, which is what ``nn.Dropout``
  draws); on CPU the draws are therefore those of the model trained alone;
* **every loss vectorised over models**: the base score (mixture NLL or CRPS,
  SQR pinball loss) and each regularizer (PCE-KDE, PCE-Sort with the hard
  sort, QR with NeuralSort, Trunc) are mapped over the model axis with
  :func:`torch.vmap`, on the models that use it, and combined as
  ``base + lam * penalty`` with ``lam`` a tensor;
* **one optimizer** over the stacked parameters: Adam is elementwise, so it
  updates each model's slice as the model's own Adam would (tested);
* **divergence and early stopping as device state**: per-model flags, stale
  counters, best losses and best weights (kept with :func:`torch.where`); the
  host reads them every ``check_every`` epochs, records the histories and
  drops the stopped models from the stack (with their Adam moments).

The inputs are checked once, before training; the steps call the unchecked
losses. On CPU the result equals the models trained one at a time by
:func:`calibtut.models.fit_study`, up to the rounding of batched against
single matrix products (tested). What does not batch stays on the per-model
path: the soft PCE-Sort of the ablation (an isotonic regression on the host
at every step), fixed SQR levels, and models of different architectures.

``flush_denormal=True`` trains with subnormal floats flushed to zero
(:func:`torch.set_flush_denormal`). QR's NeuralSort at temperature 1e-3
exponentiates logits of order 1e5, whose softmax on CPU is about five times
slower when the tiny results are computed as subnormals; flushed, a value
under 1.2e-38 becomes 0 and nothing else changes, so the results differ from
the exact ones only where such a value arises (the NeuralSort weights, rarely
an Adam moment). Off by default: the engine's vanilla models are then bit for
bit the models trained alone.
"""

from __future__ import annotations

import contextlib

import torch
from torch import nn

from calibtut._validation import check_bool, check_int
from calibtut.metrics.torch import crps_mixture, nll_mixture, pinball_loss, pit_mixture
from calibtut.models.batched import _check_models, _check_study_inputs
from calibtut.models.sqr import SQRNet
from calibtut.models.training import FitHistory
from calibtut.regularizers.calibration_penalties import (
    pce_kde_pit,
    pce_kde_quantile,
    pce_sort,
    qr_spacing_002,
    trunc_penalty,
)
from calibtut.regularizers.quantile_regularization import pit_negentropy

__all__ = ["fit_study_engine"]

_LR = 1e-2


def _qr(pit):
    return pit_negentropy(pit, qr_spacing_002, sort="neural", tau=1e-3, eps=1e-5, validate_args=False)


#: Per-model scores and penalties, each mapped over the model axis by torch.vmap.
_MIXTURE_SCORES = {
    "nll": lambda y, w, m, s: nll_mixture(y, w, m, s, validate_args=False),
    "crps": lambda y, w, m, s: crps_mixture(y, w, m, s, validate_args=False),
}
_PIT_PENALTIES = {
    "pce-kde": lambda pit: pce_kde_pit(pit, validate_args=False),
    "pce-sort": lambda pit: pce_sort(pit, validate_args=False),
    "qr": _qr,
}
_QUANTILE_PENALTIES = {
    "pce-kde": lambda q, y, lv: pce_kde_quantile(q, y, lv, validate_args=False),
    "trunc": lambda q, y, lv: trunc_penalty(q, y, lv, validate_args=False),
}


def _pinball(q, y, lv):
    return pinball_loss(y, q, lv, validate_args=False)


class _Architecture:
    """The layers of a study network in forward order, read from one model."""

    def __init__(self, model):
        self.kind = model.form if isinstance(model, SQRNet) else "mixture"
        self.hidden, self.dropout_at = [], None  # (key, relu) per body Linear; position of the dropout
        body = list(model.body)
        for i, layer in enumerate(body):
            if isinstance(layer, nn.Linear):
                relu = i + 1 < len(body) and isinstance(body[i + 1], nn.ReLU)
                self.hidden.append((f"body.{i}", relu))
            elif isinstance(layer, nn.Dropout):
                self.dropout_at, self.p = len(self.hidden), float(layer.p)
        widths = [model.body[int(k.split(".")[1])].in_features for k, _ in self.hidden]
        widths.append(model.head.in_features)
        self.width = widths[self.dropout_at]  # the features the dropout multiplies
        self.n_components = getattr(model, "n_components", None)
        self.min_std = getattr(model, "min_std", None)

    def forward(self, params, x, noise):
        """Outputs of every model: ``x`` is ``(M, rows, features)``, ``noise`` ``(M, rows, width)`` or None."""
        h = x * noise if noise is not None and self.dropout_at == 0 else x  # dropout on the inputs
        for i, (key, relu) in enumerate(self.hidden):
            h = torch.baddbmm(params[key + ".bias"].unsqueeze(1), h, params[key + ".weight"].transpose(1, 2))
            # in place (the product's backward needs its inputs, not its output); the dropout
            # before the ReLU, as relu(h) * m == relu(h * m) for a mask m >= 0
            if noise is not None and i + 1 == self.dropout_at:
                h = h.mul_(noise)
            if relu:
                h = torch.relu_(h)
        if self.kind == "mixture":
            out = torch.baddbmm(params["head.bias"].unsqueeze(1), h, params["head.weight"].transpose(1, 2))
            means, rho, logits = out.split(self.n_components, dim=-1)
            return torch.softmax(logits, dim=-1), means, nn.functional.softplus(rho) + self.min_std
        # the scalar head as a product and a sum, as SQRNet computes it
        return torch.sum(h * params["head.weight"], dim=-1) + params["head.bias"]

    def level_shift(self, params, levels):
        """Affine SQR: ``W_o emb(alpha)`` for each model's levels ``(M, m)``, shape ``(M, m)``."""
        emb = torch.baddbmm(params["level_embedding.bias"].unsqueeze(1), levels.unsqueeze(-1),
                            params["level_embedding.weight"].transpose(1, 2))
        return torch.sum(emb * params["head.weight"], dim=-1)


class _Streams:
    """One shuffling and one noise generator per distinct seed, on the device."""

    def __init__(self, seeds, device):
        self.seeds = sorted(set(seeds))
        self.group = torch.as_tensor([self.seeds.index(s) for s in seeds], device=device)
        self.shufflers = [torch.Generator(device=device).manual_seed(s) for s in self.seeds]
        self.noise = [torch.Generator(device=device).manual_seed(s) for s in self.seeds]
        self.device = device

    def orders(self, n):
        return torch.stack([torch.randperm(n, generator=g, device=self.device) for g in self.shufflers])

    def levels(self, n_levels, dtype):
        """Sorted uniform levels, one row per seed, as :meth:`StudyLoss.draw_levels` draws them."""
        draws = [torch.rand(n_levels, generator=g, dtype=dtype, device=self.device) for g in self.noise]
        return torch.sort(torch.stack(draws), dim=-1).values.clamp(1e-6, 1 - 1e-6)

    def masks(self, rows, width, p, dtype):
        """Dropout noise ``bernoulli(1 - p) / (1 - p)``, one ``(rows, width)`` draw per seed."""
        draws = [torch.empty(rows, width, dtype=dtype, device=self.device).bernoulli_(1 - p, generator=g)
                 for g in self.noise]
        return torch.stack(draws).div_(1 - p)


class _State:
    """Per-model device state; ``rows`` maps stack positions to the caller's model indices."""

    def __init__(self, params, lam, group, device):
        m = len(lam)
        self.params = {k: v.detach().clone().requires_grad_(True) for k, v in params.items()}
        self.optimizer = _adam(self.params.values(), device)
        self.best = {k: v.detach().clone() for k, v in params.items()}
        self.lam, self.group = lam, group
        self.best_loss = torch.full((m,), float("inf"), dtype=torch.float64, device=device)
        self.best_epoch = torch.zeros(m, dtype=torch.long, device=device)
        self.stale = torch.zeros(m, dtype=torch.long, device=device)
        self.active = torch.ones(m, dtype=torch.bool, device=device)
        self.diverged = torch.zeros(m, dtype=torch.bool, device=device)
        self.rows = list(range(m))

    def keep(self, positions):
        """Keep the stack positions ``positions`` (with their Adam moments), drop the others."""
        index = torch.as_tensor(positions, device=self.lam.device)
        old, params = self.optimizer, {k: v.detach()[index].clone().requires_grad_(True)
                                       for k, v in self.params.items()}
        new = _adam(params.values(), self.lam.device)
        for p_old, p_new in zip(self.params.values(), params.values()):
            state = old.state.get(p_old)
            if state:
                new.state[p_new] = {"step": state["step"].clone(), "exp_avg": state["exp_avg"][index].clone(),
                                    "exp_avg_sq": state["exp_avg_sq"][index].clone()}
        self.params, self.optimizer = params, new
        self.best = {k: v[index] for k, v in self.best.items()}
        for name in ("lam", "group", "best_loss", "best_epoch", "stale", "active", "diverged"):
            setattr(self, name, getattr(self, name)[index])
        self.rows = [self.rows[i] for i in positions]


def _adam(params, device):
    # fused on a GPU (one kernel for every tensor); on CPU the single-tensor loop that fit uses too
    return torch.optim.Adam(list(params), lr=_LR, fused=True if device.type == "cuda" else None)


@contextlib.contextmanager
def _denormals_flushed(on):
    """Subnormals flushed to zero inside the block when ``on`` (then off again, torch's default)."""
    if not on:
        yield
        return
    torch.set_flush_denormal(True)
    try:
        yield
    finally:
        torch.set_flush_denormal(False)


def _check_engine_losses(losses):
    """Refuse what does not batch: soft PCE-Sort, fixed SQR levels, SQR level counts that differ."""
    for loss in losses:
        if loss.regularizer == "pce-sort" and loss.lam > 0 and loss.sort == "soft":
            raise ValueError("the soft PCE-Sort sorts on the host at every step: train it with fit_study")
        if loss.model == "sqr" and loss.levels is not None:
            raise ValueError("fixed SQR levels do not batch: train them with fit_study")
    if len({loss.n_levels for loss in losses if loss.model == "sqr"}) > 1:
        raise ValueError("SQR losses must share n_levels (one draw of levels per seed)")


def _spread(t, group):
    """A per-seed tensor ``(G, ...)`` as a per-model one ``(M, ...)`` (a view when there is one seed)."""
    if t.shape[0] == 1:
        return t.expand(len(group), *t.shape[1:])
    return t.index_select(0, group)


class _Objective:
    """Base scores and penalties of the stacked models, with the models grouped by what they compute."""

    def __init__(self, losses, arch, streams, dtype):
        self.losses, self.arch, self.streams, self.dtype = losses, arch, streams, dtype
        self.n_levels = losses[0].n_levels

    def regroup(self, rows, device):
        """Positions of the models of each score and each active penalty, after a change of the stack."""
        def positions(select):
            found = [pos for pos, m in enumerate(rows) if select(self.losses[m])]
            return None if not found else torch.as_tensor(found, device=device)

        self.scores = {s: positions(lambda loss, s=s: loss.score == s) for s in ("nll", "crps")}
        table = _PIT_PENALTIES if self.arch.kind == "mixture" else _QUANTILE_PENALTIES
        self.penalties = {r: positions(lambda loss, r=r: loss.regularizer == r and loss.lam > 0) for r in table}
        self.everyone = len(rows)

    def outputs(self, params, group, x, training):
        """Network outputs and the per-model targets' levels for a batch ``x`` of shape ``(G, b, d)``."""
        arch, b = self.arch, x.shape[1]
        levels = None
        if arch.kind != "mixture":
            levels = self.streams.levels(self.n_levels, self.dtype)
        if arch.kind == "paper":
            m = levels.shape[1]
            x = torch.cat([x.repeat_interleave(m, 1), levels.repeat(1, b).unsqueeze(-1)], dim=-1)
        noise = None
        if training and arch.p > 0:
            noise = _spread(self.streams.masks(x.shape[1], arch.width, arch.p, self.dtype), group)
        out = arch.forward(params, _spread(x, group), noise)
        if arch.kind == "mixture":
            return out, None
        per_model = _spread(levels, group)
        if arch.kind == "paper":
            return out.reshape(len(group), b, -1), per_model
        return out.unsqueeze(-1) + arch.level_shift(params, per_model).unsqueeze(1), per_model

    def values(self, out, levels, y, lam, regularized):
        """Per-model losses ``(M,)``: the base score, plus ``lam * penalty`` when ``regularized``."""
        if self.arch.kind == "mixture":
            total = torch.zeros(self.everyone, dtype=self.dtype, device=y.device)
            for score, where in self.scores.items():
                if where is not None:
                    args = [t.index_select(0, where) for t in (y, *out)]
                    total = total.index_add(0, where, torch.vmap(_MIXTURE_SCORES[score])(*args))
            if not regularized or all(w is None for w in self.penalties.values()):
                return total
            pit = torch.vmap(lambda yy, w, m, s: pit_mixture(yy, w, m, s, validate_args=False))(y, *out)
            inputs, table = (pit.clamp(0.0, 1.0),), _PIT_PENALTIES
        else:
            total = torch.vmap(_pinball)(out, y, levels)
            if not regularized:
                return total
            inputs, table = (out, y, levels), _QUANTILE_PENALTIES
        for name, where in self.penalties.items():
            if where is not None:
                penalty = torch.vmap(table[name])(*[t.index_select(0, where) for t in inputs])
                total = total.index_add(0, where, lam.index_select(0, where) * penalty)
        return total


def fit_study_engine(models, X, y, *, losses, val, seeds, epochs=5000, patience=30, batch_size=512, device="cpu",
                     check_every=5, flush_denormal=False):
    """Train study models of one architecture together as one batched program (see the module docstring).

    Parameters
    ----------
    models : list of MixtureMLP or list of SQRNet
        Same class, form and sizes (any number of hidden layers); trained in place.
    X, y : array_like
        Training data (standardised), shared by every model.
    losses : list of StudyLoss
        One per model, from :func:`calibtut.models.make_study_model`.
    val : tuple (X_val, y_val)
        Validation data; each model early-stops on its base loss there.
    seeds : sequence of int
        One training seed per model, each >= 0; models with the same seed
        share their batches, levels and dropout masks.
    epochs, patience, batch_size : int
        As in :func:`calibtut.models.fit_study`, each >= 1 (the batch is capped
        at the training size, the last incomplete batch dropped).
    device : {"cpu", "cuda"} or torch.device, default "cpu"
    check_every : int, default 5
        Epochs between two reads of the device state by the host (recording
        the histories, dropping stopped models), >= 1. Only the time changes:
        a stopped model is frozen in its best weights whatever the value.
    flush_denormal : bool, default False
        Flush subnormal floats to zero while training (see the module
        docstring: faster QR steps on CPU, not bit for bit the exact run; it is
        switched off again at the end, torch's default). Where the CPU cannot
        flush, nothing changes.

    Returns
    -------
    list of FitHistory
        One per model, as :func:`calibtut.models.fit_study` returns it.

    Examples
    --------
    >>> import numpy as np
    >>> from calibtut.models import make_study_model
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.normal(size=(64, 2)), rng.normal(size=64)
    >>> pairs = [make_study_model("mix-nll", 2, regularizer="qr", lam=lam, seed=0) for lam in (0.0, 1.0)]
    >>> hists = fit_study_engine([m for m, _ in pairs], X, y, losses=[l for _, l in pairs],
    ...                          val=(X[:16], y[:16]), seeds=[0, 0], epochs=3)
    >>> [len(h.val_loss) for h in hists]
    [3, 3]
    """
    _check_models(models, losses)
    _check_engine_losses(losses)
    seeds, epochs, patience, batch_size, dev, (X_t, y_t), (Xv, yv) = _check_study_inputs(
        models, X, y, val, seeds, epochs, patience, batch_size, device)
    check_every = check_int(check_every, "check_every", minimum=1)
    flush_denormal = check_bool(flush_denormal, "flush_denormal")
    dtype = X_t.dtype
    if len(Xv) != len(yv):
        raise ValueError(f"val[0] and val[1] must have the same length, got {len(Xv)} and {len(yv)}")
    if X_t.shape[1] != models[0].in_features or Xv.shape[1] != models[0].in_features:
        raise ValueError(f"X and val[0] must have {models[0].in_features} features")
    n = len(X_t)

    arch = _Architecture(models[0])
    streams = _Streams(seeds, dev)
    objective = _Objective(losses, arch, streams, dtype)
    params, _ = torch.func.stack_module_state([model.to(dev) for model in models])
    lam = torch.as_tensor([loss.lam for loss in losses], dtype=dtype, device=dev)
    state = _State(params, lam, streams.group, dev)
    objective.regroup(state.rows, dev)
    histories = [FitHistory() for _ in models]
    records = []
    stop = n - n % batch_size
    chunks = list(zip(torch.tensor_split(Xv, max(1, len(Xv) // batch_size)),
                      torch.tensor_split(yv, max(1, len(Xv) // batch_size))))
    with _denormals_flushed(flush_denormal):
        for epoch in range(epochs):
            started = state.active.clone()
            orders = streams.orders(n)
            running = torch.zeros(len(state.rows), dtype=torch.float64, device=dev)
            for start in range(0, stop, batch_size):
                idx = orders[:, start : start + batch_size]
                out, levels = objective.outputs(state.params, state.group, X_t[idx], training=True)
                yb = _spread(y_t[idx], state.group)
                values = objective.values(out, levels, yb, state.lam, regularized=True)
                state.optimizer.zero_grad(set_to_none=True)
                values.sum().backward()
                state.optimizer.step()
                with torch.no_grad():
                    finite = torch.stack([p.flatten(1).isfinite().all(1) for p in state.params.values()]).all(0)
                    state.diverged |= state.active & ~finite
                    state.active &= finite
                    running += values.detach().double() * batch_size
            with torch.no_grad():
                total = torch.zeros(len(state.rows), dtype=torch.float64, device=dev)
                for xc, yc in chunks:
                    out, levels = objective.outputs(state.params, state.group, xc.expand(len(streams.seeds), *xc.shape),
                                                    training=False)
                    yc_m = yc.expand(len(state.rows), *yc.shape)
                    total += objective.values(out, levels, yc_m, state.lam, regularized=False).double() * len(xc)
                val_loss = total / len(Xv)
                recorded = started & state.active  # the epochs fit records: begun and not diverged
                improved = recorded & (val_loss < state.best_loss)
                state.best_loss = torch.where(improved, val_loss, state.best_loss)
                state.best_epoch = torch.where(improved, epoch, state.best_epoch)
                for k, v in state.best.items():
                    keep_new = improved.view(-1, *([1] * (v.ndim - 1)))
                    state.best[k] = torch.where(keep_new, state.params[k].detach(), v)
                state.stale = torch.where(improved, 0, state.stale + recorded.long())
                state.active &= state.stale < patience
                records.append((running / stop, val_loss, recorded, started & state.diverged))
            if (epoch + 1) % check_every == 0 or epoch + 1 == epochs:
                _flush(records, state, histories, patience)
                records = []
                active = state.active.cpu().tolist()
                if not any(active):
                    break
                if not all(active):
                    _park(state, models, [pos for pos, a in enumerate(active) if not a])
                    state.keep([pos for pos, a in enumerate(active) if a])
                    objective.regroup(state.rows, dev)
    _park(state, models, range(len(state.rows)))
    for model in models:
        model.eval()
    return histories


def _flush(records, state, histories, patience):
    """Append the recorded epochs to the histories of the stacked models (one host read)."""
    if not records:
        return
    train, val, recorded, diverged = (torch.stack(col).cpu() for col in zip(*records))
    for pos, m in enumerate(state.rows):
        hist = histories[m]
        for e in range(len(records)):
            if diverged[e, pos]:
                hist.lr.append(_LR)
                hist.diverged = hist.stopped_early = True
            if recorded[e, pos]:
                hist.lr.append(_LR)
                hist.train_loss.append(float(train[e, pos]))
                hist.val_loss.append(float(val[e, pos]))
    best_loss, best_epoch, stale = state.best_loss.cpu(), state.best_epoch.cpu(), state.stale.cpu()
    for pos, m in enumerate(state.rows):
        hist = histories[m]
        if hist.val_loss:
            hist.best_loss, hist.best_epoch = float(best_loss[pos]), int(best_epoch[pos])
        if stale[pos] >= patience:
            hist.stopped_early = True


def _park(state, models, positions):
    """Load the best weights of the stacked models at ``positions`` into their modules."""
    for pos in positions:
        models[state.rows[pos]].load_state_dict({k: v[pos].clone() for k, v in state.best.items()})
