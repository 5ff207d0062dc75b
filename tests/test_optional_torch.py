"""torch is optional: ``pip install calibtut`` brings numpy, scipy, pandas, matplotlib and
scikit-learn, not torch, and the numpy families work without it.

* ``pyproject.toml``: torch is the ``torch`` extra, which the ``book``, ``test`` and
  ``embeddings`` extras include (the book's own environment keeps it);
* in this interpreter with torch hidden (an import hook answers as if it were not
  installed): ``calibtut`` and its numpy families import and compute, and every torch
  family raises an ImportError that says ``pip install "calibtut[torch]"`` and how to
  get torch's CPU build (fast);
* in a fresh virtual environment: ``pip install -c constraints.txt .`` (the package's
  own metadata, the lock's versions) installs no torch, and calibtut, its conformal,
  recalibration and metrics families import and compute there (the package
  registries; under a minute, see ``FRESH_ENV_COST``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf8"))["project"]
#: The families that need torch; each must fail to import with the install hint.
TORCH_FAMILIES = (
    "calibtut.models",
    "calibtut.regularizers",
    "calibtut.selective",
    "calibtut.shift",
    "calibtut.metrics.torch",
    "calibtut.experiments.covariate_shift",
    "calibtut.experiments.quantile_regularization",
    "calibtut.experiments.regression_study",
    "calibtut.experiments.venn_admit",
)
#: The families that run on numpy alone.
NUMPY_FAMILIES = ("calibtut.conformal", "calibtut.recalibration", "calibtut.metrics", "calibtut.online")
#: Measured on the shared two-core development machine (load 4 to 5; the wheels from pip's cache
#: or the index), without .pyc files (--no-compile).
FRESH_ENV_COST = "30 to 50 s of wall time (18 CPU-seconds for the whole file), 34 distributions, 527 MB"

#: A tiny computation of each numpy family; prints one line.
USE_THE_NUMPY_FAMILIES = textwrap.dedent("""
    import numpy as np
    import calibtut
    from calibtut.conformal import SplitConformalRegressor, split_conformal_sets
    from calibtut.metrics import expected_calibration_error, mean_set_size, set_coverage
    from calibtut.recalibration import TemperatureScaling

    rng = np.random.default_rng(0)
    logits = 2 * rng.normal(size=(300, 3))
    y = rng.integers(0, 3, size=300)
    probs = TemperatureScaling().fit(logits[:200], y[:200]).predict_proba(logits[200:])
    sets = split_conformal_sets(probs[:50], y[200:250], probs[50:], alpha=0.2)
    lo, hi = SplitConformalRegressor(alpha=0.1).fit(np.zeros(99), rng.normal(size=99)).predict_interval(np.zeros(5))
    ece = expected_calibration_error(probs.max(axis=1), probs.argmax(axis=1) == y[200:])
    print(calibtut.__version__, set_coverage(y[250:], sets), mean_set_size(sets), float(hi[0] - lo[0]), ece)
""")

HIDE_TORCH = textwrap.dedent("""
    import sys

    class HideTorch:  # answers as an environment without torch would
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] == "torch":
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)

    sys.meta_path.insert(0, HideTorch())
""")


def _extra(name):
    return [Requirement(r) for r in PROJECT["optional-dependencies"][name]]


def _includes_torch(extra, seen=()):
    for req in _extra(extra):
        if req.name == "torch" or req.name == "calibtut" and any(
                e == "torch" or e not in seen and _includes_torch(e, seen + (extra,)) for e in req.extras):
            return True
    return False


def test_torch_is_an_extra_that_the_book_and_the_tests_install():
    assert "torch" not in {Requirement(r).name for r in PROJECT["dependencies"]}
    assert [r.name for r in _extra("torch")] == ["torch"]
    for extra in ("book", "test", "embeddings"):
        assert _includes_torch(extra), f"the {extra} extra must install torch (calibtut[torch])"
    assert not _includes_torch("run")  # the runner alone needs no torch


def test_without_torch_the_numpy_families_work_and_the_torch_families_say_how_to_install_it():
    code = HIDE_TORCH + textwrap.dedent(f"""
        import importlib
        for name in {NUMPY_FAMILIES!r}:
            importlib.import_module(name)
        import calibtut.data, calibtut.papers, calibtut.run, calibtut.plots, calibtut.stats
        import calibtut.experiments.drift
        from calibtut.run.provenance import libraries
        assert libraries()["torch"] is None
        for name in {TORCH_FAMILIES!r}:
            try:
                importlib.import_module(name)
            except ImportError as exc:
                assert 'pip install "calibtut[torch]"' in str(exc), (name, str(exc))
                assert "--index-url https://download.pytorch.org/whl/cpu" in str(exc), (name, str(exc))
                assert exc.name == "torch", (name, exc.name)
            else:
                raise AssertionError(name + " imported without torch")
        assert "torch" not in sys.modules
    """) + USE_THE_NUMPY_FAMILIES
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]


def test_a_broken_torch_is_not_reported_as_a_missing_one():
    """torch installed but one of its own imports missing: that error, not the install hint."""
    code = textwrap.dedent("""
        import sys

        class BrokenTorch:  # torch is found, but a library it loads is not
            def find_spec(self, name, path=None, target=None):
                if name == "torch":
                    raise ModuleNotFoundError("No module named 'torch_stand_in_lib'", name="torch_stand_in_lib")

        sys.meta_path.insert(0, BrokenTorch())
        try:
            import calibtut._torch
        except ModuleNotFoundError as exc:
            assert exc.name == "torch_stand_in_lib", exc
        else:
            raise AssertionError("imported")
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.install
def test_a_fresh_environment_installs_no_torch_and_runs_the_numpy_families(tmp_path):
    """``pip install -c constraints.txt .`` into a new venv: no torch, and the families work.

    Cost: see :data:`FRESH_ENV_COST` (pip reads the wheels from its cache or the index).
    """
    start = time.perf_counter()
    env_dir = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True, timeout=300)
    python = env_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--python", str(python)]
    done = subprocess.run([*pip, "install", "--quiet", "--no-compile", "--progress-bar", "off",
                           "-c", str(ROOT / "constraints.txt"), str(ROOT)],
                          capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"pip install failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    installed = subprocess.run([*pip, "list", "--format", "freeze"], capture_output=True, text=True,
                               check=True, timeout=300).stdout
    names = {line.partition("==")[0].lower() for line in installed.split()}
    assert "calibtut" in names and "torch" not in names, sorted(names)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    code = textwrap.dedent("""
        import importlib.util, sys
        import calibtut, calibtut.conformal, calibtut.recalibration, calibtut.metrics, calibtut.online
        assert calibtut.__file__.startswith(sys.prefix), calibtut.__file__  # the installed copy
        assert importlib.util.find_spec("torch") is None
        try:
            import calibtut.models
        except ImportError as exc:
            assert 'pip install "calibtut[torch]"' in str(exc), exc
        else:
            raise AssertionError("calibtut.models imported without torch")
    """) + USE_THE_NUMPY_FAMILIES
    run = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    size = sum(f.stat().st_size for f in env_dir.rglob("*") if f.is_file() and not f.is_symlink())
    print(f"fresh environment without torch: {len(names)} distributions, {size / 1e6:.0f} MB, "
          f"{time.perf_counter() - start:.0f} s; {run.stdout.strip()}")
