"""The runner never loses published work.

- ``pip install .``'s ``build/`` leaves the code version clean.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from calibtut.run.provenance import git_state

REPO = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------- build/ leaves the code clean


def test_build_and_dist_are_ignored():
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    for path in ("build/anything", "build/lib/calibtut/run/execute.py", "dist/calibtut-0.1.0.tar.gz"):
        done = subprocess.run(["git", "-C", str(REPO), "check-ignore", "-q", path], check=False)
        assert done.returncode == 0, f"{path} is not ignored"


def test_git_state_is_clean_beside_an_ignored_build_folder(tmp_path):
    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    shutil.copyfile(REPO / ".gitignore", tmp_path / ".gitignore")
    (tmp_path / "code.py").write_text("a = 1\n")
    git("add", "-A")
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init")
    (tmp_path / "build" / "lib" / "calibtut").mkdir(parents=True)  # what `pip install .` leaves
    (tmp_path / "build" / "lib" / "calibtut" / "code.py").write_text("a = 1\n")
    (tmp_path / "dist").mkdir()
    (tmp_path / "dist" / "calibtut-0.1.0.tar.gz").write_bytes(b"")
    assert git_state(tmp_path)["dirty"] is False
    (tmp_path / "new.py").write_text("b = 1\n")  # an untracked file that is not ignored still counts
    assert git_state(tmp_path)["dirty"] is True
