"""Shared torch internals: tensors from arrays, the device, seeded generators."""

from __future__ import annotations

import contextlib

import numpy as np
import torch

from calibtut._validation import as_float_array, check_int

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
