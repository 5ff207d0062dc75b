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

__all__ = ["resolve_device", "to_tensor", "seeded_rng"]


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
