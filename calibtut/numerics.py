"""Numerics profiles: which CPU kernels, and how many threads, the numeric libraries use.

torch (its ATen kernels, oneDNN and MKL), numpy (its own SIMD loops and
OpenBLAS), scipy and faiss each choose their kernels when they load, by the
instruction set of the CPU: the same training run on a CPU with AVX-512 and on
one with AVX2 only differs in its last bits, and a long training, or a claim
that sits on its threshold, turns those bits into another result. The number of
threads changes the order of parallel reductions in the same way. A *numerics
profile* fixes both, through the environment variables each library reads when
it loads:

========================  ==================  =================  ==============
variable                  library             ``avx2``           ``generic``
========================  ==================  =================  ==============
``ATEN_CPU_CAPABILITY``   torch (ATen)        ``avx2``           ``default``
``ONEDNN_MAX_CPU_ISA``    torch (oneDNN)      ``AVX2``           ``SSE41``
``MKL_CBWR``              torch (MKL)         ``COMPATIBLE``     ``COMPATIBLE``
``OPENBLAS_CORETYPE``     numpy, scipy        ``Haswell``        ``Nehalem``
``NPY_DISABLE_CPU_...``   numpy's own loops   the AVX-512 sets   AVX2 and up
``FAISS_OPT_LEVEL``       faiss               ``AVX2``           ``generic``
========================  ==================  =================  ==============

Two profiles are named:

- ``"reference"``, the numerics of the book: on x86-64, every library limited
  to AVX2 (the instruction set of every x86-64 CPU sold since 2015), MKL to the
  one code path it runs alike on Intel and AMD CPUs, one thread per process.
  The test command, the notebook runner, papermill runs and every local sweep
  worker run under it, so that a chapter's ``ci`` claims and a published full
  run give the same bits on any x86-64 machine with AVX2. On other
  architectures (ARM) only the thread count is fixed: their kernels are other
  kernels, and their results are not bit-identical to x86-64's.
- ``"native"``: nothing limited, each library takes the fastest kernels of the
  CPU and its default thread count. Faster on AVX-512 machines (the appendix
  "Running the full experiments" measures by how much), at the price of results
  that are exact only on the same kind of CPU.

MKL, which torch uses for its matrix products, chooses its kernels by the CPU's
vendor as well as its instruction set: on an AMD CPU, ``MKL_CBWR=AVX2`` is
ignored and MKL runs a kernel of its own for AMD's Zen cores, so a training run
on an AMD EPYC and on an Intel Xeon differs in its last bits under the same
AVX2 limit. ``MKL_CBWR=COMPATIBLE`` selects MKL's SSE2 path on both vendors;
it makes a large matrix product about 2.7 times slower, and the book's small
networks about 15 % slower (the appendix "Running the full experiments"
measures it).

A profile must be in the environment before numpy or torch is imported: set it
for a new process with :func:`profile_environment`, or call
:func:`apply_profile` on the first lines of a script. This module imports
neither, so it can be imported first. :func:`numerics_state` reads back, from
inside a process, what the libraries actually loaded.

Command line::

    python -m calibtut.numerics --export              # `export` lines for a shell (eval them)
    python -m calibtut.numerics -- python script.py   # run a command under the reference profile
    python -m calibtut.numerics --state               # what this interpreter's libraries load
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import platform
import shlex
import sys

__all__ = [
    "DEFAULT_PROFILE",
    "ISA_LEVELS",
    "ISA_VARS",
    "PROFILES",
    "PROFILE_ENV",
    "THREAD_VARS",
    "apply_profile",
    "cpu_flags",
    "isa_environment",
    "machine_arch",
    "main",
    "numerics_label",
    "numerics_state",
    "profile_environment",
    "thread_environment",
]

#: Environment variable naming the numerics profile a process was started under.
PROFILE_ENV = "CALIBTUT_NUMERICS"
#: Instruction-set limits, from none to the oldest x86-64 vector extensions.
ISA_LEVELS = ("native", "avx2", "generic")
#: The named profiles: (instruction-set level, threads; None is the libraries' default).
PROFILES = {"reference": ("avx2", 1), "native": ("native", None)}
#: The profile of the test command, the runner and the sweep workers.
DEFAULT_PROFILE = "reference"
#: Variables that limit the instruction set, in the order of the table above.
ISA_VARS = (
    "ATEN_CPU_CAPABILITY",
    "ONEDNN_MAX_CPU_ISA",
    "MKL_CBWR",
    "OPENBLAS_CORETYPE",
    "NPY_DISABLE_CPU_FEATURES",
    "FAISS_OPT_LEVEL",
)
#: Variables that set the thread count of OpenMP (torch, faiss), MKL and OpenBLAS.
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")

# numpy's dispatch targets above AVX2: numpy >= 2.4 names them by x86-64
# level (X86_V4), older releases by extension; numpy ignores a name it does not
# know, so both spellings are listed.
_NUMPY_AVX512 = (
    "X86_V4 AVX512F AVX512CD AVX512_KNL AVX512_KNM AVX512_SKX AVX512_CLX AVX512_CNL "
    "AVX512_ICL AVX512_SPR"
)
_ISA_VALUES = {
    "avx2": ("avx2", "AVX2", "COMPATIBLE", "Haswell", _NUMPY_AVX512, "AVX2"),
    "generic": (
        "default",
        "SSE41",
        "COMPATIBLE",
        "Nehalem",
        "X86_V3 AVX AVX2 F16C FMA3 " + _NUMPY_AVX512,
        "generic",
    ),
}
_X86 = ("x86_64", "i386", "i686")
_NUMERIC_MODULES = ("numpy", "torch", "scipy", "faiss")
# The profile this process started under: read once, when this module is first imported (before
# anything can change the environment), so that a later change (a profile put into the environment
# for child processes) is not taken for this process's own.
_STARTED_UNDER = os.environ.get(PROFILE_ENV) or None
_STARTED_ENV = {name: os.environ.get(name) for name in ISA_VARS + THREAD_VARS}


def machine_arch():
    """This machine's architecture, normalised (``x86_64``, ``aarch64``, ...).

    Examples
    --------
    >>> machine_arch() in ("x86_64", "aarch64", "arm64", "ppc64le", "s390x", "i686")
    True
    """
    arch = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(arch, arch)


def cpu_flags():
    """The CPU's feature flags as the kernel lists them (``/proc/cpuinfo``; empty elsewhere).

    Examples
    --------
    >>> flags = cpu_flags()
    >>> isinstance(flags, frozenset)
    True
    """
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                key = line.split(":", 1)[0].strip().lower()
                if key in ("flags", "features"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def _check_choice(value, name, choices):
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, one of {list(choices)}, got {type(value).__name__}")
    if value not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}, got {value!r}")
    return value


def isa_environment(isa, arch=None):
    """The variables that limit every numeric library's CPU kernels to ``isa``.

    Parameters
    ----------
    isa : {"native", "avx2", "generic"}
        ``"native"`` unsets every limit (value None); ``"avx2"`` keeps the
        kernels of AVX2 and FMA, and MKL's SSE2 path (the one it runs alike
        on every vendor's CPU); ``"generic"`` those of SSE 4.
    arch : str, optional
        The architecture (default this machine's). The limits exist on x86-64
        only: elsewhere every variable is unset.

    Returns
    -------
    dict
        Variable name -> value, None for a variable to unset.

    Examples
    --------
    >>> isa_environment("avx2", arch="x86_64")["ATEN_CPU_CAPABILITY"]
    'avx2'
    >>> set(isa_environment("avx2", arch="aarch64").values())
    {None}
    """
    _check_choice(isa, "isa", ISA_LEVELS)
    arch = machine_arch() if arch is None else arch
    if isa == "native" or arch not in _X86:
        return dict.fromkeys(ISA_VARS)
    return dict(zip(ISA_VARS, _ISA_VALUES[isa]))


def thread_environment(threads):
    """The variables that set OpenMP, MKL and OpenBLAS to ``threads`` threads (None: unset).

    Examples
    --------
    >>> thread_environment(1)["OMP_NUM_THREADS"]
    '1'
    >>> thread_environment(0)
    Traceback (most recent call last):
    ...
    ValueError: threads must be an integer >= 1 or None, got 0
    """
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise ValueError(f"threads must be an integer >= 1 or None, got {threads!r}")
    return dict.fromkeys(THREAD_VARS, None if threads is None else str(threads))


def profile_environment(profile=DEFAULT_PROFILE, *, threads="profile", arch=None):
    """The environment variables of a numerics profile, for a process about to start.

    Parameters
    ----------
    profile : {"reference", "native"}, default "reference"
    threads : int or None, optional
        Threads per process; default the profile's (1 for ``"reference"``,
        the libraries' own for ``"native"``); None unsets the thread variables.
    arch : str, optional
        The architecture the process runs on (default this machine's).

    Returns
    -------
    dict
        Variable name -> value (None: unset it), ``CALIBTUT_NUMERICS`` included.

    Examples
    --------
    >>> env = profile_environment("reference", arch="x86_64")
    >>> env["CALIBTUT_NUMERICS"], env["OPENBLAS_CORETYPE"], env["OMP_NUM_THREADS"]
    ('reference', 'Haswell', '1')
    >>> profile_environment("native")["ATEN_CPU_CAPABILITY"] is None
    True
    >>> profile_environment("fast")
    Traceback (most recent call last):
    ...
    ValueError: profile must be one of ['reference', 'native'], got 'fast'
    """
    _check_choice(profile, "profile", PROFILES)
    isa, default_threads = PROFILES[profile]
    threads = default_threads if threads == "profile" else threads
    return {PROFILE_ENV: profile, **isa_environment(isa, arch), **thread_environment(threads)}


def _set(environ, values):
    for name, value in values.items():
        if value is None:
            environ.pop(name, None)
        else:
            environ[name] = value


def apply_profile(profile=DEFAULT_PROFILE, *, threads="profile"):
    """Put a numerics profile into this process's environment, before numpy or torch loads.

    Call it on the first lines of a script, before anything imports numpy,
    scipy, torch or faiss (``import calibtut.numerics`` imports none of them).
    Processes started afterwards (kernels, workers) inherit it.

    Parameters
    ----------
    profile, threads
        As for :func:`profile_environment`.

    Returns
    -------
    dict
        The variables set (None: unset).

    Raises
    ------
    RuntimeError
        If a numeric library is already loaded with other settings: it read
        its variables when it loaded, and would ignore the new ones.

    Examples
    --------
    >>> import subprocess, sys
    >>> code = ("import calibtut.numerics as n; n.apply_profile('reference'); "
    ...         "import os; print(os.environ['OMP_NUM_THREADS'])")
    >>> subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
    '1\\n'
    """
    values = profile_environment(profile, threads=threads)
    changed = {name for name, value in values.items() if os.environ.get(name) != value}
    loaded = [name for name in _NUMERIC_MODULES if name in sys.modules]
    if changed and loaded:
        raise RuntimeError(
            f"apply_profile({profile!r}) would change {sorted(changed)}, but {', '.join(loaded)} "
            f"already loaded with the old values; apply the profile before importing them, or start "
            f"a new process under it: python -m calibtut.numerics --profile {profile} -- COMMAND"
        )
    _set(os.environ, values)
    global _STARTED_UNDER, _STARTED_ENV
    _STARTED_UNDER = profile
    _STARTED_ENV = {name: os.environ.get(name) for name in ISA_VARS + THREAD_VARS}
    return values


#: MKL's conditional-numerical-reproducibility branches (mkl_cbwr.h), as MKL reports the one in use.
_MKL_BRANCHES = {1: "off", 2: "auto", 3: "compatible", 4: "sse2", 6: "ssse3", 7: "sse4_1", 8: "sse4_2",
                 9: "avx", 10: "avx2", 11: "avx512_mic", 12: "avx512", 13: "avx512_mic_e1", 14: "avx512_e1"}


def _mkl_branch(torch):
    """The code path MKL runs in torch, as MKL reports it (None where torch's library does not say).

    Asked through MKL's service function ``mkl_serv_cbwr_get`` in torch's CPU
    library: on an AMD CPU a branch that MKL does not honour there reads "auto".
    """
    folder = os.path.join(os.path.dirname(torch.__file__), "lib")
    names = [name for name in sorted(os.listdir(folder)) if name.startswith("libtorch_cpu.")] \
        if os.path.isdir(folder) else []
    for name in names:
        try:
            get = getattr(ctypes.CDLL(os.path.join(folder, name)), "mkl_serv_cbwr_get")
        except (OSError, AttributeError):
            continue
        return _MKL_BRANCHES.get(get(1), str(get(1)))
    return None


def _torch_state(torch):
    config = torch.__config__.show()

    def version_line(marker):
        line = next((line for line in config.splitlines() if marker in line), "")
        return line.strip(" -") or None

    return {
        "version": torch.__version__,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "threads": torch.get_num_threads(),
        "mkl": version_line("Math Kernel Library"),
        "mkl_branch": _mkl_branch(torch),
        "onednn": version_line("MKL-DNN") or version_line("oneDNN"),
    }


def numerics_state(load=False):
    """What this process's numeric libraries actually use, read back from them.

    Parameters
    ----------
    load : bool, default False
        Import numpy and torch to ask them; by default only the libraries
        already loaded are asked (so that asking does not load them with the
        wrong settings).

    Returns
    -------
    dict
        ``profile`` (the ``CALIBTUT_NUMERICS`` the process started under, or
        that :func:`apply_profile` set; None without one), ``arch``, ``env`` (the profile's variables as the
        process started with them), and, for each
        loaded library, what it reports: ``numpy`` (version and the SIMD targets
        its loops dispatch to), ``blas`` (every BLAS and OpenMP library that
        threadpoolctl finds: its API, version, kernel architecture and
        threads), ``torch`` (version, ATen CPU capability, threads, MKL and
        oneDNN versions, the code path MKL runs) and ``faiss`` (the instruction set of the build it
        loaded).

    Examples
    --------
    >>> state = numerics_state(load=True)
    >>> state["torch"]["cpu_capability"] in ("DEFAULT", "AVX2", "AVX512", "NO AVX", "ZVECTOR", "SVE256")
    True
    """
    # numpy, torch and threadpoolctl are imported here, not at the top, so that
    # this module can be imported (and the profile applied) before they load.
    state = {
        "profile": _STARTED_UNDER,
        "arch": machine_arch(),
        "env": dict(_STARTED_ENV),
    }
    if load or "numpy" in sys.modules:
        import numpy
        from threadpoolctl import threadpool_info

        try:
            from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
        except ImportError:  # numpy < 2
            from numpy.core._multiarray_umath import __cpu_dispatch__, __cpu_features__
        state["numpy"] = {
            "version": numpy.__version__,
            "simd": [name for name in __cpu_dispatch__ if __cpu_features__.get(name)],
        }
        state["blas"] = [
            {key: info.get(key) for key in ("internal_api", "version", "architecture", "num_threads")}
            | {"library": os.path.basename(info.get("filepath") or "")}
            for info in threadpool_info()
        ]
    if load or "torch" in sys.modules:
        try:
            import torch
        except ModuleNotFoundError as exc:  # torch is optional (the torch extra): not listed then
            if exc.name != "torch":
                raise
        else:
            state["torch"] = _torch_state(torch)
    faiss = sys.modules.get("faiss")
    if faiss is not None:
        builds = [name.rsplit("_", 1)[-1] for name in sys.modules if name.startswith("faiss.swigfaiss")]
        state["faiss"] = {"version": getattr(faiss, "__version__", None), "build": builds}
    return state


def numerics_label(state=None):
    """A short summary of :func:`numerics_state`, as every stored sweep task records it.

    Returns
    -------
    dict
        ``profile`` (None when the process started under none), ``torch``
        (ATen's CPU capability, None when torch is not loaded), ``mkl`` (the
        code path MKL runs), ``blas``
        (``api:architecture`` of each BLAS loaded) and ``threads`` (torch's, or
        ``OMP_NUM_THREADS``).

    Examples
    --------
    >>> label = numerics_label({"profile": "reference", "env": {"OMP_NUM_THREADS": "1"},
    ...                         "torch": {"cpu_capability": "AVX2", "mkl_branch": "compatible", "threads": 1},
    ...                         "blas": [{"internal_api": "openblas", "architecture": "Haswell"}]})
    >>> label
    {'profile': 'reference', 'torch': 'AVX2', 'mkl': 'compatible', 'blas': ['openblas:Haswell'], 'threads': 1}
    """
    state = numerics_state() if state is None else state
    torch = state.get("torch") or {}
    blas = sorted({f"{b.get('internal_api')}:{b.get('architecture')}" for b in state.get("blas", [])
                   if b.get("internal_api") in ("openblas", "mkl", "blis")})
    threads = torch.get("threads")
    if threads is None:
        omp = (state.get("env") or {}).get("OMP_NUM_THREADS")
        threads = int(omp) if omp and omp.isdigit() else None
    return {"profile": state.get("profile"), "torch": torch.get("cpu_capability"), "mkl": torch.get("mkl_branch"),
            "blas": blas, "threads": threads}


def main(argv=None):
    """Command line: print a profile's variables, run a command under it, or read back the state.

    Examples
    --------
    >>> main(["--export", "--profile", "native"])  # doctest: +ELLIPSIS
    export CALIBTUT_NUMERICS=native
    unset ATEN_CPU_CAPABILITY
    ...
    0
    """
    parser = argparse.ArgumentParser(prog="python -m calibtut.numerics",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default=DEFAULT_PROFILE, choices=list(PROFILES))
    parser.add_argument("--threads", type=int, help="threads per process (default: the profile's)")
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--export", action="store_true", help="print shell lines that set the profile")
    what.add_argument("--state", action="store_true",
                      help="print, as JSON, what numpy, torch and the BLAS load under the current environment")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARGS...]: run it under the profile")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    threads = "profile" if args.threads is None else args.threads
    try:
        values = profile_environment(args.profile, threads=threads)
    except ValueError as exc:
        parser.error(str(exc))
    if args.state:
        print(json.dumps(numerics_state(load=True), indent=2))
        return 0
    if command:
        env = dict(os.environ)
        _set(env, values)
        os.execvpe(command[0], command, env)
    for name, value in values.items():
        print(f"unset {name}" if value is None else f"export {name}={shlex.quote(value)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
