"""Installability: range requirements, a dry run beside an installed torch, the oldest versions.

``pip install calibtut`` must not replace a reader's torch (Colab, a CUDA
build) or any other library they already have when its version is inside the
declared range, so the runtime requirements in ``pyproject.toml`` are
compatible ranges; the exact versions the book is tested with live in
``constraints.txt``. These tests use the package registries (PyPI) through pip:

* every runtime requirement is a range with a lower and an upper bound, and the
  torch range admits the two latest minor releases on the registry;
* ``pip install --dry-run --report`` of the package with its ``torch`` extra into a
  fresh environment that already holds a torch inside the range (the oldest declared, and the
  previous minor release) plans no torch install (the installed torch is a
  metadata-only stand-in: the resolver reads what is installed from its
  ``.dist-info``, so no multi-gigabyte download is needed);
* a fresh environment with the oldest declared numpy, scipy, pandas and
  scikit-learn (and no torch) passes the unit tests of the metrics and
  recalibration modules (a minimum-dependencies check);
* opt-in (``CALIBTUT_INSTALL_TESTS=1``): the same environment with the oldest
  declared torch as well passes those tests and the torch-using ones (models,
  regularizers, batched training, the shift and selective code) on the CPU.
  PyPI's Linux torch wheel is a CUDA build that imports only beside its
  ``nvidia-*`` libraries, so this downloads about 1.9 GB (4.6 GB installed).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf8"))["project"]
#: The runtime requirements and the torch extra (torch is optional: ``calibtut[torch]``).
RUNTIME = {Requirement(r).name.lower(): Requirement(r)
           for r in PROJECT["dependencies"] + PROJECT["optional-dependencies"]["torch"]}

#: Libraries installed at their oldest declared version in the minimum-dependencies check.
MINIMUM_CHECKED = ("numpy", "scipy", "pandas", "scikit-learn")
#: Test tools and the oracle libraries the checked test modules import (netcal and
#: MAPIE need torch or newer versions; the tests that use them skip without them).
MINIMUM_ENV_EXTRAS = ("pytest", "hypothesis", "properscoring", "scoringrules", "uncertainty-toolbox")
MINIMUM_ENV_TESTS = (
    "tests/test_metrics_classification.py",
    "tests/test_metrics_regression.py",
    "tests/test_metrics_scores.py",
    "tests/test_metrics_hypothesis_tests.py",
    "tests/test_recalibration.py",
    "tests/test_isotonic.py",
)
#: The torch-using tests the minimum-versions check runs when it installs torch too, with
#: the oracle libraries they import.
MINIMUM_TORCH_TESTS = (
    "tests/test_models.py",
    "tests/test_models_batched.py",
    "tests/test_models_classifier.py",
    "tests/test_models_regression_study.py",
    "tests/test_regularizers.py",
    "tests/test_calibration_penalties.py",
    "tests/test_metrics_torch.py",
    "tests/test_sorting.py",
    "tests/test_shift.py",
    "tests/test_admit.py",
    "tests/test_knn_approximation.py",
    "tests/test_token_cnn.py",
    "tests/test_protein_cnn.py",
)
MINIMUM_TORCH_EXTRAS = ("crepes",)
TIMEOUT_S = 900

#: Tests that download a CUDA torch wheel with its libraries run only when asked.
needs_big_downloads = pytest.mark.skipif(
    os.environ.get("CALIBTUT_INSTALL_TESTS") != "1",
    reason="downloads torch with its CUDA libraries (about 2 GB): set CALIBTUT_INSTALL_TESTS=1")


def _pip(*args, python=sys.executable, timeout=TIMEOUT_S):
    cmd = [python, "-m", "pip", "--disable-pip-version-check", *map(str, args)]
    done = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"{' '.join(cmd)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def _registry_versions(name):
    """Final releases of ``name`` on the package index, newest first (``pip index versions``)."""
    out = _pip("index", "versions", name, timeout=300)
    listed = re.search(r"^Available versions: (.+)$", out, flags=re.MULTILINE).group(1).split(", ")
    versions = {Version(v) for v in listed}
    return sorted((v for v in versions if not v.is_prerelease and not v.local), reverse=True)


def _latest_per_minor(versions, count):
    """The newest release of each of the ``count`` newest minor series."""
    latest = {}
    for v in versions:
        latest.setdefault((v.major, v.minor), v)
    return [latest[key] for key in sorted(latest, reverse=True)[:count]]


def _lower_bound(req):
    bounds = [Version(s.version) for s in req.specifier if s.operator == ">="]
    assert len(bounds) == 1, f"{req} needs exactly one lower bound (>=)"
    return bounds[0]


def _new_env(path):
    """A fresh virtual environment without pip (this pip installs into it with ``--python``)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, timeout=TIMEOUT_S)
    python = path / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    return python, Path(purelib)


@pytest.mark.parametrize("name", sorted(RUNTIME))
def test_runtime_requirement_is_a_range(name):
    req = RUNTIME[name]
    operators = {s.operator for s in req.specifier}
    assert not operators & {"==", "===", "~="}, f"{req}: an exact pin belongs in constraints.txt"
    lower = _lower_bound(req)
    uppers = [Version(s.version) for s in req.specifier if s.operator == "<"]
    assert len(uppers) == 1, f"{req} needs an upper bound (<next major)"
    upper = uppers[0]
    # Up to the next major (the next minor for 0.x versions), never narrower.
    expected = Version(f"{lower.major + 1}") if lower.major else Version(f"0.{lower.minor + 1}")
    assert upper >= expected, f"{req}: the upper bound must be at least {expected}"
    assert req.specifier.contains(lower) and not req.specifier.contains(upper)


def test_constraints_pin_every_runtime_requirement_inside_its_range():
    pins = {}
    for line in (ROOT / "constraints.txt").read_text(encoding="utf8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[name.strip().lower().replace("_", "-")] = Version(version.strip())
    for name, req in RUNTIME.items():
        assert name in pins, f"constraints.txt has no pin for {name}"
        assert req.specifier.contains(pins[name]), f"constraints.txt pins {name}=={pins[name]}, outside {req}"


def test_torch_range_admits_the_two_latest_minor_releases():
    latest = _latest_per_minor(_registry_versions("torch"), 2)
    assert len(latest) == 2
    for version in latest:
        assert RUNTIME["torch"].specifier.contains(version), f"{RUNTIME['torch']} excludes torch {version}"


@pytest.mark.parametrize("which", ["oldest", "previous-minor"])
def test_dry_run_keeps_an_installed_torch(tmp_path, which):
    # The oldest declared torch (the GPU image's, and an older Colab's), and the newest
    # release of the second-newest minor series: inside the range but neither the
    # locked version nor what an unconstrained resolver would pick.
    if which == "oldest":
        installed = _lower_bound(RUNTIME["torch"])
    else:
        installed = _latest_per_minor(_registry_versions("torch"), 2)[1]
    python, site = _new_env(tmp_path / "env")
    info = site / f"torch-{installed}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: torch\nVersion: {installed}\n", encoding="utf8")
    (info / "INSTALLER").write_text("pip\n", encoding="utf8")
    (info / "RECORD").write_text("", encoding="utf8")
    report = tmp_path / "report.json"
    _pip("--python", python, "install", "--dry-run", "--quiet", "--report", report, f"{ROOT}[torch]")
    planned = {item["metadata"]["name"].lower() for item in json.loads(report.read_text())["install"]}
    assert "calibtut" in planned  # the report is the real plan of this package
    assert "torch" not in planned, f"pip would replace torch {installed}: plan {sorted(planned)}"
    book_tools = {"jupyter-book", "papermill", "jupytext", "nbformat", "ipykernel", "ipywidgets"}
    assert not planned & book_tools, f"the library alone pulls book tools: {sorted(planned & book_tools)}"


@pytest.mark.parametrize("with_torch", [False, pytest.param(True, marks=needs_big_downloads)],
                         ids=["without-torch", "with-torch"])
def test_minimum_versions_pass_the_tests(tmp_path, request, with_torch):
    checked = MINIMUM_CHECKED + (("torch",) if with_torch else ())
    minimum = {name: _lower_bound(RUNTIME[name]) for name in checked}
    extras = MINIMUM_ENV_EXTRAS + (MINIMUM_TORCH_EXTRAS if with_torch else ())
    tests = MINIMUM_ENV_TESTS + (MINIMUM_TORCH_TESTS if with_torch else ())
    python, _ = _new_env(tmp_path / "env")
    request.addfinalizer(lambda: shutil.rmtree(tmp_path / "env", ignore_errors=True))  # up to 5 GB
    pins = [f"{name}=={version}" for name, version in minimum.items()]
    _pip("--python", python, "install", "--quiet", "--prefer-binary", "--no-compile", *pins, *extras)
    found = subprocess.run(
        [python, "-c", ("import json, importlib.metadata as m; import sys; "
                        "print(json.dumps({n: m.version(n) for n in sys.argv[1:]}))"), *checked],
        check=True, capture_output=True, text=True).stdout
    # the public version: PyPI's torch 2.11.0 calls itself 2.11.0+cu130 once installed
    assert {n: Version(Version(v).public) for n, v in json.loads(found).items()} == minimum
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env.update(PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", CUDA_VISIBLE_DEVICES="")
    done = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests],
                          check=False, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"with {pins}:\n{done.stdout[-5000:]}\n{done.stderr[-2000:]}"
    assert " passed" in done.stdout.splitlines()[-1]
