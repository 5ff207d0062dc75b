"""Tests of calibtut.numerics: the profiles, and that they reach every process that computes.

Each library's choice is read back from inside the process that made it (a
plain interpreter, a notebook kernel started by the runner, a local Dask
worker, a recheck), never inferred from the environment variables alone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest
import torch

from calibtut import numerics as N
from calibtut.run import read_provenance, sweep
from calibtut.run.__main__ import main as run_main
from calibtut.run.recheck import recheck, stored_numerics
from calibtut.run.store import SweepStore

HERE = Path(__file__).resolve().parent
X86_AVX2 = N.machine_arch() == "x86_64" and {"avx2", "fma"} <= N.cpu_flags()
needs_x86_avx2 = pytest.mark.skipif(not X86_AVX2, reason="instruction-set limits exist on x86-64 CPUs with AVX2")
#: ATen's AVX-512 kernels need these four extensions.
ATEN_AVX512 = {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= N.cpu_flags()


def _env(values, **extra):
    env = dict(os.environ, **extra)
    for name, value in values.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def _state_under(values):
    code = "import json; from calibtut.numerics import numerics_state; print(json.dumps(numerics_state(load=True)))"
    done = subprocess.run([sys.executable, "-c", code], env=_env(values), capture_output=True, text=True,
                          timeout=120, check=True)
    return json.loads(done.stdout)


def _openblas(state):
    return {b["architecture"] for b in state["blas"] if b["internal_api"] == "openblas"}


def _above_avx2(simd):
    return [s for s in simd if s == "X86_V4" or s.startswith("AVX512")]


# ---------------------------------------------------------------- the profiles


def test_profile_environments_by_hand():
    ref = N.profile_environment("reference", arch="x86_64")
    assert ref == {
        "CALIBTUT_NUMERICS": "reference", "ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2",
        "MKL_CBWR": "COMPATIBLE", "OPENBLAS_CORETYPE": "Haswell",
        "NPY_DISABLE_CPU_FEATURES": ("X86_V4 AVX512F AVX512CD AVX512_KNL AVX512_KNM AVX512_SKX AVX512_CLX "
                                     "AVX512_CNL AVX512_ICL AVX512_SPR"),
        "FAISS_OPT_LEVEL": "AVX2", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
    }
    # on ARM only the threads are fixed; native unsets every limit and every thread count
    arm = N.profile_environment("reference", arch="aarch64")
    assert all(arm[name] is None for name in N.ISA_VARS) and arm["OMP_NUM_THREADS"] == "1"
    native = N.profile_environment("native", arch="x86_64")
    assert native["CALIBTUT_NUMERICS"] == "native"
    assert all(native[name] is None for name in N.ISA_VARS + N.THREAD_VARS)
    assert N.profile_environment("native", threads=3)["MKL_NUM_THREADS"] == "3"
    assert N.profile_environment("reference", threads=None)["OMP_NUM_THREADS"] is None
    generic = N.isa_environment("generic", arch="x86_64")
    assert generic["ATEN_CPU_CAPABILITY"] == "default" and "X86_V3" in generic["NPY_DISABLE_CPU_FEATURES"]


@pytest.mark.parametrize("call, message", [
    (lambda: N.profile_environment("fast"), "profile must be one of"),
    (lambda: N.profile_environment(1), "profile must be a string"),
    (lambda: N.isa_environment("avx512"), "isa must be one of"),
    (lambda: N.thread_environment(True), "threads must be an integer >= 1 or None, got True"),
    (lambda: N.thread_environment(1.5), "threads must be an integer"),
    (lambda: N.profile_environment("reference", threads=-1), "got -1"),
])
def test_bad_arguments_are_refused(call, message):
    with pytest.raises((ValueError, TypeError), match=message):
        call()


@needs_x86_avx2
@pytest.mark.parametrize("isa, capability, blas", [("avx2", "AVX2", "Haswell"), ("generic", "DEFAULT", "Nehalem")])
def test_every_library_loads_the_kernels_it_is_limited_to(isa, capability, blas):
    state = _state_under({**N.isa_environment(isa), **N.thread_environment(1)})
    assert state["torch"]["cpu_capability"] == capability
    assert state["torch"]["mkl_branch"] in ("compatible", None)  # None: this torch does not say
    assert state["torch"]["threads"] == 1
    assert _openblas(state) == {blas}
    assert not _above_avx2(state["numpy"]["simd"])
    if isa == "generic":
        assert not {"X86_V3", "AVX2", "FMA3"} & set(state["numpy"]["simd"])


@needs_x86_avx2
def test_native_takes_the_cpus_own_kernels():
    state = _state_under(N.profile_environment("native"))
    assert state["profile"] == "native"
    assert state["torch"]["mkl_branch"] in ("off", None)
    assert state["torch"]["cpu_capability"] == ("AVX512" if ATEN_AVX512 else "AVX2")
    assert bool(_above_avx2(state["numpy"]["simd"])) == ("avx512f" in N.cpu_flags())


def test_apply_profile_first_thing_in_a_process():
    code = ("import calibtut.numerics as n; n.apply_profile('reference'); import json, numpy; "
            "print(json.dumps(n.numerics_state()))")
    done = subprocess.run([sys.executable, "-c", code], env=_env(N.profile_environment("native")),
                          capture_output=True, text=True, timeout=120, check=True)
    state = json.loads(done.stdout)
    assert state["profile"] == "reference" and state["env"]["OMP_NUM_THREADS"] == "1"
    if X86_AVX2:
        assert _openblas(state) == {"Haswell"}


def test_apply_profile_refuses_once_numpy_is_loaded(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    with pytest.raises(RuntimeError, match=r"already loaded.*python -m calibtut.numerics --profile reference"):
        N.apply_profile("reference")
    assert os.environ["OMP_NUM_THREADS"] == "7"


def test_command_line_exports_and_runs_a_command_under_the_profile(capsys):
    assert N.main(["--export"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "export CALIBTUT_NUMERICS=reference" in lines and "export OMP_NUM_THREADS=1" in lines
    code = "import os; print(os.environ['CALIBTUT_NUMERICS'], os.environ.get('OMP_NUM_THREADS'))"
    done = subprocess.run([sys.executable, "-m", "calibtut.numerics", "--profile", "native", "--threads", "2",
                           "--", sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["native", "2"]


# ---------------------------------------------------------------- the runner's kernel

NOTEBOOK = textwrap.dedent(
    '''\
    ---
    jupytext:
      text_representation:
        extension: .md
        format_name: myst
    kernelspec:
      display_name: Python 3
      language: python
      name: python3
    ---

    ```{code-cell} ipython3
    :tags: [parameters]
    profile = "ci"
    ```

    ```{code-cell} ipython3
    import json
    from calibtut.numerics import numerics_state
    print(json.dumps(numerics_state(load=True)))
    ```
    '''
)


@pytest.fixture
def book(tmp_path, monkeypatch):
    monkeypatch.delenv("CALIBTUT_RUN_DIR", raising=False)
    monkeypatch.delenv("CALIBTUT_ROOT", raising=False)
    (tmp_path / "_toc.yml").write_text("root: intro\n")
    folder = tmp_path / "notebooks" / "p9"
    folder.mkdir(parents=True)
    (folder / "01_numerics.md").write_text(NOTEBOOK)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _kernel_state(run_dir):
    nb = nbformat.read(run_dir / "01_numerics.ipynb", as_version=4)
    return json.loads(nb.cells[-1].outputs[0]["text"])


@pytest.mark.parametrize("profile", ["reference", "native"])
def test_the_profile_reaches_the_notebook_kernel(book, profile, capsys):
    args = ["notebooks/p9/01_numerics.md", "--no-progress", "--out", f"_build/{profile}"]
    assert run_main(args + (["--numerics", profile] if profile != "reference" else [])) == 0
    run_dir = book / "_build" / profile
    state = _kernel_state(run_dir)
    assert state["profile"] == profile
    provenance = read_provenance(run_dir)
    assert provenance["numerics"]["profile"] == profile
    assert provenance["libraries"]["torch"] == torch.__version__ and provenance["libraries"]["blas"]
    if profile == "reference":
        assert state["env"]["OMP_NUM_THREADS"] == "1" and state["torch"]["threads"] == 1
        assert provenance["numerics"]["environment"]["OMP_NUM_THREADS"] == "1"
    if X86_AVX2:
        assert state["torch"]["cpu_capability"] == ("AVX2" if profile == "reference" or not ATEN_AVX512
                                                    else "AVX512")


# ---------------------------------------------------------------- sweeps: workers, stores, recheck


def kernels(seed):
    """A task whose result is the kernels its process loaded (so it depends on the numerics)."""
    state = N.numerics_state(load=True)
    return {"seed_back": seed, "torch": state["torch"]["cpu_capability"],
            "blas": ",".join(sorted(_openblas(state))), "threads": state["torch"]["threads"]}


@pytest.fixture
def restored_environment():
    """Dask's pre-spawn environment is written into this process's environment: put it back."""
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


def test_the_profile_reaches_local_dask_workers(tmp_path, monkeypatch, restored_environment):
    pytest.importorskip("distributed")
    for name in (N.PROFILE_ENV, *N.ISA_VARS):
        monkeypatch.delenv(name, raising=False)  # a process started under no profile
    path = tmp_path / "kernels.jsonl"
    table = sweep([{"seed": 0}, {"seed": 1}], kernels, store=path, progress=False, workers=1)
    lines = SweepStore(path).entries()
    assert {line["numerics"]["profile"] for line in lines} == {"reference"}
    assert set(table["threads"]) == {1}
    if X86_AVX2:
        assert set(table["torch"]) == {"AVX2"} and set(table["blas"]) == {"Haswell"}
        assert {line["numerics"]["torch"] for line in lines} == {"AVX2"}


def test_every_store_line_records_its_numerics(tmp_path):
    path = tmp_path / "serial.jsonl"
    sweep([{"seed": 3}], kernels, store=path, progress=False)
    (line,) = SweepStore(path).entries()
    assert line["numerics"] == N.numerics_label()
    assert stored_numerics([line])[2] is True


def test_recheck_recomputes_under_the_profile_the_store_records(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])))
    path = tmp_path / "kernels.jsonl"
    code = (f"from calibtut.run import sweep; from test_numerics import kernels; "
            f"sweep([{{'seed': 0}}, {{'seed': 1}}], kernels, store={str(path)!r}, progress=False)")
    subprocess.run([sys.executable, "-m", "calibtut.numerics", "--profile", "reference", "--", sys.executable,
                    "-c", code], check=True, timeout=120, env=dict(os.environ, CALIBTUT_NUMERICS="native"))
    assert stored_numerics(SweepStore(path).entries()) == ("reference", 1, True)
    same = recheck(path, progress=False)
    assert same["match"].all() and same["numerics"].str.startswith("reference:").all()
    native = recheck(path, progress=False, numerics="native")
    assert native["numerics"].str.startswith("native:").all()
    # under the CPU's own kernels torch's kernels change exactly where the CPU has more than AVX2
    changed = {name for names in native["differing"] for name in names.split(",") if name}
    assert changed <= {"torch", "blas", "threads"}
    assert ("torch" in changed) == (X86_AVX2 and ATEN_AVX512)


MIRROR = os.environ.get("CALIBTUT_DATA_MIRROR")
RESULTS = HERE.parent / "results"


@pytest.mark.skipif(not MIRROR, reason="CALIBTUT_DATA_MIRROR is not set to the offline data mirror")
@pytest.mark.parametrize("store", [
    "venn_admit/09_when_does_it_protect/sweeps/va9_protection.jsonl.gz",
    "drift/05_hyperparameters/sweeps/hyperparameter_search.jsonl",
])
def test_a_committed_store_rechecks_exactly_under_its_recorded_profile(store):
    """Two published stores of quick tasks (a few seconds each), recomputed here under the profile they record."""
    table = recheck(RESULTS / store, sample=2, max_seconds=5, progress=False)
    assert len(table) == 2 and table["match"].all(), table.to_dict("records")
