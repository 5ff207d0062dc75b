"""What a run records about where and how it ran."""

from __future__ import annotations

import functools
import os
import platform
import subprocess
import sys
from importlib import metadata

from calibtut.numerics import cpu_flags, numerics_state

__all__ = ["PACKAGES", "SIMD_DETAIL", "SIMD_FLAGS", "cpu_label", "git_state", "libraries", "machine", "package_versions"]

#: Import name -> distribution name of the packages recorded in provenance.
PACKAGES = {
    "numpy": "numpy",
    "scipy": "scipy",
    "pandas": "pandas",
    "torch": "torch",
    "sklearn": "scikit-learn",
    "calibtut": "calibtut",
    "papermill": "papermill",
}


def package_versions():
    """Versions of Python and the main packages (None for a missing one).

    Examples
    --------
    >>> v = package_versions()
    >>> sorted(v)[:3], v["python"] == __import__("platform").python_version()
    (['calibtut', 'numpy', 'pandas'], True)
    """
    versions = {"python": platform.python_version()}
    for name, dist in PACKAGES.items():
        try:
            versions[name] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def _git(root, *args):
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def git_state(root):
    """The commit checked out at ``root`` and whether the tree has changes outside ``results/``.

    Changes under ``results/`` are what the runner itself writes (sweep stores
    growing during a resumed run, tables about to be published), not code, so
    they do not make the tree dirty. Returns ``{"commit": None, "dirty": None}``
    outside a git repository (or before the first commit, where ``dirty`` is
    still reported).

    Examples
    --------
    >>> import tempfile
    >>> git_state(tempfile.mkdtemp())
    {'commit': None, 'dirty': None}
    """
    if _git(root, "rev-parse", "--is-inside-work-tree") != "true":
        return {"commit": None, "dirty": None}
    status = _git(root, "status", "--porcelain", "--", ":/", ":(exclude,top)results")
    return {"commit": _git(root, "rev-parse", "HEAD"), "dirty": None if status is None else bool(status)}


def _cpuinfo(field):
    """The value of ``field`` for the first processor in ``/proc/cpuinfo`` (None elsewhere)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.lower().startswith(field):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


#: SIMD extensions that change which CPU kernels torch and BLAS pick (and so their last bits): the
#: ones a store line's CPU label names (kept short, and comparable with the labels stored so far).
SIMD_FLAGS = ("avx512f", "avx512_bf16", "amx_tile", "avx2", "fma", "neon", "asimd", "sve")
#: Every vector extension a numeric library may dispatch on, as a run's provenance lists them.
SIMD_DETAIL = (
    "sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl",
    "avx512_vnni", "avx512_bf16", "avx512_fp16", "avx512_vpopcntdq", "avx512ifma", "avx512vbmi",
    "amx_tile", "neon", "asimd", "asimdhp", "sve", "sve2",
)


def _cpu_simd(names=SIMD_FLAGS):
    flags = cpu_flags()
    return [flag for flag in names if flag in flags] or None


def libraries():
    """Versions of the numeric libraries whose kernels a result depends on.

    torch with the MKL and oneDNN it was built with, numpy, and every BLAS
    that threadpoolctl finds loaded (numpy's and scipy's OpenBLAS): the
    versions that, with the CPU's instruction set and the numerics profile
    (:mod:`calibtut.numerics`), decide a result's last bits. Imports numpy,
    scipy and torch (whose entries are None where torch is not installed).

    Examples
    --------
    >>> libs = libraries()
    >>> sorted(libs)
    ['blas', 'mkl', 'numpy', 'onednn', 'torch']
    """
    import scipy.linalg  # noqa: F401 - loads scipy's own BLAS, so that it is listed

    state = numerics_state(load=True)
    torch = state.get("torch") or {}  # None where torch (an optional dependency) is not installed
    return {
        "torch": torch.get("version"),
        "mkl": torch.get("mkl"),
        "onednn": torch.get("onednn"),
        "numpy": state["numpy"]["version"],
        "blas": sorted({f"{b['internal_api']} {b['version']} ({b['library']})" for b in state["blas"]}),
    }


@functools.lru_cache(maxsize=1)
def cpu_label():
    """This machine's CPU model and the SIMD extensions its kernels can use, in one line.

    Every stored sweep task carries it, so a store filled on several machines
    says which task ran where.

    Examples
    --------
    >>> isinstance(cpu_label(), str) and len(cpu_label()) > 0
    True
    """
    model = _cpuinfo("model name") or platform.processor() or platform.machine() or "unknown CPU"
    simd = _cpu_simd()
    return f"{model} ({', '.join(simd)})" if simd else model


_GPU_DEVICE_FILES = ("/dev/nvidiactl", "/dev/nvidia0", "/dev/kfd", "/dev/dxg")


def _gpu_name():
    # Importing torch takes seconds; on Linux a GPU it could use shows up as a device file.
    if "torch" not in sys.modules and sys.platform.startswith("linux"):
        if not any(os.path.exists(f) for f in _GPU_DEVICE_FILES):
            return None
    try:
        import torch
    except ImportError:
        return None
    if torch.cuda.is_available():
        return torch.cuda.get_device_name(0)
    return None


def machine():
    """CPU model and SIMD extensions, logical CPU count (and how many this process may use), GPU, OS.

    The SIMD extensions are recorded because torch and BLAS pick their kernels
    by them: the same training on a machine with AVX-512 and on one with AVX2
    only can differ in its last bits, and a long training can amplify that.

    Examples
    --------
    >>> m = machine()
    >>> m["cpu_count"] >= m["cpu_usable"] >= 1
    True
    """
    count = os.cpu_count() or 1
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else count
    return {
        "cpu_model": _cpuinfo("model name") or platform.processor() or None,
        "cpu_simd": _cpu_simd(SIMD_DETAIL),
        "cpu_count": count,
        "cpu_usable": usable,
        "gpu": _gpu_name(),
        "platform": platform.platform(),
    }
