"""Where things live: the repository root, the current run directory, results.

The runner tells the notebook kernel where its run directory is through the
environment variable :data:`RUN_DIR_ENV`; everything else is found by walking up
from a starting folder to the repository root.
"""

from __future__ import annotations

import os
from pathlib import Path

#: Environment variable through which the runner passes the run directory to the kernel.
RUN_DIR_ENV = "CALIBTUT_RUN_DIR"
#: Environment variable through which the runner names the folder of the notebook's sweep stores.
SWEEP_DIR_ENV = "CALIBTUT_SWEEP_DIR"
#: Environment variable that overrides the repository-root search.
ROOT_ENV = "CALIBTUT_ROOT"

_ROOT_MARKERS = ("_toc.yml",)


def _is_root(folder):
    if any((folder / marker).is_file() for marker in _ROOT_MARKERS):
        return True
    pyproject = folder / "pyproject.toml"
    if pyproject.is_file():
        text = pyproject.read_text(encoding="utf-8", errors="replace")
        return 'name = "calibtut"' in text
    return False


def find_root(start=None, *, required=True):
    """Return the calibtut repository root.

    The root is the first folder, walking up from ``start`` (default: the current
    working directory), that holds a ``_toc.yml`` or a ``pyproject.toml`` naming
    the ``calibtut`` project. The environment variable ``CALIBTUT_ROOT``, when
    set, wins.

    Parameters
    ----------
    start : str or path-like, optional
        Folder (or file) to start from.
    required : bool, default True
        Raise ``FileNotFoundError`` when no root is found; otherwise return None.

    Returns
    -------
    pathlib.Path or None

    Examples
    --------
    >>> import tempfile, pathlib
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (tmp / "_toc.yml").write_text("root: intro")
    >>> (tmp / "notebooks" / "000").mkdir(parents=True)
    >>> find_root(tmp / "notebooks" / "000") == tmp.resolve()
    True
    """
    env = os.environ.get(ROOT_ENV)
    if env:
        root = Path(env).expanduser().resolve()
        if not root.is_dir():
            raise FileNotFoundError(f"{ROOT_ENV}={env!r} is not a folder")
        return root
    if start is not None and not isinstance(start, (str, os.PathLike)):
        raise TypeError(f"start must be a folder or file path, got {start!r} ({type(start).__name__})")
    here = Path(start if start is not None else Path.cwd()).expanduser().resolve()
    if here.is_file():
        here = here.parent
    for folder in (here, *here.parents):
        if _is_root(folder):
            return folder
    if required:
        raise FileNotFoundError(
            f"could not find the calibtut repository root (a folder with _toc.yml or the "
            f"calibtut pyproject.toml) above {here}; run from a clone of the repository "
            f"or set {ROOT_ENV}"
        )
    return None


def current_run_dir():
    """Return the run directory set by the runner, or None outside a runner.

    Examples
    --------
    >>> import os
    >>> os.environ.pop("CALIBTUT_RUN_DIR", None) and None
    >>> current_run_dir() is None
    True
    """
    value = os.environ.get(RUN_DIR_ENV)
    return Path(value) if value else None


def check_name(name, argname):
    """Check a file-name component: a non-empty string without path separators.

    Examples
    --------
    >>> check_name("table_1", "name")
    'table_1'
    """
    if not isinstance(name, str):
        raise TypeError(f"{argname} must be a string, got {type(name).__name__}")
    if not name or name in (".", "..") or "/" in name or "\\" in name or name.startswith("."):
        raise ValueError(f"{argname} must be a plain file name (no path separators), got {name!r}")
    return name
