"""Shared torch internals: tensors from arrays, the device, seeded generators.

torch is optional (the ``torch`` extra): every torch family (``calibtut.models``,
``.regularizers``, ``.selective``, ``.shift``, ``.metrics.torch`` and the
experiments that train networks) imports this module first, so that without
torch its import fails with :data:`TORCH_MISSING`, which says how to install it.
"""

from __future__ import annotations

import contextlib

import numpy as np

from calibtut._validation import as_float_array, check_int

#: The message of the ImportError that a torch family raises where torch is not installed.
TORCH_MISSING = (
    "this part of calibtut needs torch, an optional dependency: pip install \"calibtut[torch]\" "
    "(for torch's CPU build, a 200 MB wheel instead of the CUDA one, first run "
    "pip install torch --index-url https://download.pytorch.org/whl/cpu). "
    "calibtut.conformal, calibtut.recalibration, calibtut.metrics and calibtut.online need numpy only."
)

try:
    import torch
except ModuleNotFoundError as exc:
    if exc.name != "torch":  # torch is there but something it needs is not: show that
        raise
    raise ModuleNotFoundError(TORCH_MISSING, name="torch") from exc

__all__ = ["check_features", "check_quantile_batch", "check_tensor", "resolve_device", "to_tensor", "seeded_rng"]


def resolve_device(device):
    """Check a device switch (``"cpu"``, ``"cuda"``, ``"cuda:1"`` or torch.device).

    Examples
    --------
    >>> resolve_device("cpu")
    device(type='cpu')
    """
    try:
        dev = torch.device(device)
    except (TypeError, RuntimeError):
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}") from None
    if dev.type not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("device='cuda' was requested but CUDA is not available")
    return dev


def to_tensor(x, name, *, ndim, dtype=torch.float32):
    """Convert an array or tensor to a float tensor of the given rank.

    Examples
    --------
    >>> to_tensor([[1, 2]], "X", ndim=2)
    tensor([[1., 2.]])
    """
    if isinstance(x, torch.Tensor):
        if x.is_complex():
            raise TypeError(f"{name} must hold real numbers, got a complex tensor ({x.dtype})")
        t = x.detach().to(dtype=dtype, device="cpu")
    else:
        # refuses complex numbers and strings, which numpy would cast or parse
        t = torch.as_tensor(as_float_array(x, name, finite=False, allow_empty=True), dtype=dtype)
    if t.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {tuple(t.shape)}")
    if t.numel() == 0:
        raise ValueError(f"{name} must not be empty")
    if not torch.isfinite(t).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    return t


def check_tensor(x, name, *, ndim=None, integer=False, low=None, high=None, low_open=False, high_open=False):
    """Check a tensor given to a public torch function: type, rank, finiteness, range; the message names it.

    Reading the values synchronises with the device, so the public functions
    check their tensors once, where they enter the package, and the training
    loops call the unchecked core (``validate_args=False``) at each step.

    Parameters
    ----------
    x : object
        The value to check.
    name : str
        The argument's name, used in error messages.
    ndim : int or tuple of int, optional
        Accepted numbers of dimensions.
    integer : bool, default False
        Require an integer dtype (class labels) instead of a floating one.
    low, high : float, optional
        Bounds of the accepted values (closed unless ``low_open``/``high_open``).

    Returns
    -------
    torch.Tensor
        ``x``.

    Examples
    --------
    >>> check_tensor(torch.tensor([0.2, 0.9]), "pit", ndim=1, low=0, high=1)
    tensor([0.2000, 0.9000])
    >>> check_tensor(torch.tensor([0.2, 1.5]), "pit", ndim=1, low=0, high=1)
    Traceback (most recent call last):
    ...
    ValueError: pit must lie in [0, 1], got values in [0.2, 1.5]
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if integer and (x.is_floating_point() or x.is_complex() or x.dtype == torch.bool):
        raise TypeError(f"{name} must have an integer dtype (class labels), got {x.dtype}")
    if not integer and not x.is_floating_point():
        raise TypeError(f"{name} must have a floating dtype, got {x.dtype}")
    allowed = (ndim,) if isinstance(ndim, int) else ndim
    if allowed is not None and x.ndim not in allowed:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {tuple(x.shape)}")
    if x.numel() == 0:
        raise ValueError(f"{name} must not be empty")
    with torch.no_grad():
        if not integer and not bool(torch.isfinite(x).all()):
            raise ValueError(f"{name} contains NaN or infinite values")
        lo, hi = float(x.min()), float(x.max())
    below = low is not None and (lo < low or (low_open and lo == low))
    above = high is not None and (hi > high or (high_open and hi == high))
    if below or above:
        left, right = "(" if low_open else "[", ")" if high_open else "]"
        bounds = f"{left}{'-inf' if low is None else f'{low:g}'}, {'inf' if high is None else f'{high:g}'}{right}"
        raise ValueError(f"{name} must lie in {bounds}, got values in [{lo:.4g}, {hi:.4g}]")
    return x


def check_quantile_batch(quantiles, y, levels):
    """Check a batch of quantile predictions: ``quantiles`` (n, n_levels), ``y`` (n,), ``levels`` in (0, 1).

    Examples
    --------
    >>> check_quantile_batch(torch.zeros(2, 3), torch.zeros(2), torch.tensor([0.1, 0.5, 0.9]))
    >>> check_quantile_batch(torch.zeros(2, 2), torch.zeros(2), torch.tensor([0.1, 0.5, 0.9]))
    Traceback (most recent call last):
    ...
    ValueError: quantiles must have shape (len(y), len(levels)) = (2, 3), got (2, 2)
    """
    quantiles, y = check_tensor(quantiles, "quantiles", ndim=2), check_tensor(y, "y", ndim=1)
    levels = check_tensor(levels, "levels", ndim=1, low=0, high=1, low_open=True, high_open=True)
    if quantiles.shape != (y.shape[0], levels.shape[0]):
        raise ValueError(
            f"quantiles must have shape (len(y), len(levels)) = {(y.shape[0], levels.shape[0])}, "
            f"got {tuple(quantiles.shape)}"
        )


def check_features(x, name, n_features):
    """Check the input of a network's ``forward``: a floating tensor whose last dimension holds ``n_features``.

    Only the type and the shape are read (no value), so the check costs no
    device synchronisation and runs at every call, training steps included.

    Examples
    --------
    >>> check_features(torch.zeros(4, 3), "x", 2)
    Traceback (most recent call last):
    ...
    ValueError: x must have 2 features (its last dimension), got shape (4, 3)
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"{name} must have a floating dtype, got {x.dtype}")
    if x.ndim == 0 or x.shape[-1] != n_features:
        raise ValueError(f"{name} must have {n_features} features (its last dimension), got shape {tuple(x.shape)}")
    return x


@contextlib.contextmanager
def seeded_rng(seed):
    """Context in which torch's default generator is seeded with ``seed``.

    The global RNG state is saved on entry and restored on exit, so code outside
    is unaffected; ``seed=None`` leaves the global generator as it is.

    Examples
    --------
    >>> with seeded_rng(0):
    ...     a = torch.rand(2)
    >>> with seeded_rng(0):
    ...     b = torch.rand(2)
    >>> bool(torch.equal(a, b))
    True
    """
    if seed is None:
        yield
        return
    if isinstance(seed, np.random.Generator):
        seed = int(seed.integers(2**63 - 1))
    seed = check_int(seed, "seed", minimum=0)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield
