"""Where things live: the repository root, the current run directory, results.

The runner tells the notebook kernel where its run directory is through the
environment variable :data:`RUN_DIR_ENV`; everything else is found by walking up
from a starting folder to the repository root.

Large files under ``results/`` are kept gzip-compressed beside the name their
readers ask for (``runs.csv.gz`` for ``runs.csv``, ``study.jsonl.gz`` for
``study.jsonl``): :func:`stored_path` finds whichever is there, and
:func:`gzip_bytes` compresses so that the same content always gives the same
bytes.
"""

from __future__ import annotations

import gzip
import os
import tempfile
from pathlib import Path

#: Environment variable through which the runner passes the run directory to the kernel.
RUN_DIR_ENV = "CALIBTUT_RUN_DIR"
#: Environment variable through which the runner names the folder of the notebook's sweep stores.
SWEEP_DIR_ENV = "CALIBTUT_SWEEP_DIR"
#: Environment variable that overrides the repository-root search.
ROOT_ENV = "CALIBTUT_ROOT"

_ROOT_MARKERS = ("_toc.yml",)

#: Size in bytes above which a published table or a sweep store is kept gzip-compressed.
COMPRESS_ABOVE = 200_000
#: Suffix of the compressed twin of a file.
GZIP_SUFFIX = ".gz"


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


def stored_path(path):
    """The file ``path``, or its compressed twin ``<path>.gz``: whichever exists.

    A name that already ends in ``.gz`` is returned as it is, and so is
    ``path`` when neither file exists (the place a new plain file goes).

    Parameters
    ----------
    path : str or path-like
        The plain name a reader asks for, e.g. ``results/<part>/<nb>/runs.csv``.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    ValueError
        If both ``path`` and ``<path>.gz`` exist, since either could be the
        newer one.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> stored_path(folder / "runs.csv").name
    'runs.csv'
    >>> _ = (folder / "runs.csv.gz").write_bytes(gzip_bytes(b"a\\n1\\n"))
    >>> stored_path(folder / "runs.csv").name
    'runs.csv.gz'
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a file path, got {type(path).__name__}")
    path = Path(path)
    if path.name.endswith(GZIP_SUFFIX):
        return path
    twin = path.with_name(path.name + GZIP_SUFFIX)
    if not twin.is_file():
        return path
    if path.is_file():
        raise ValueError(f"both {path} and its compressed twin {twin.name} exist; keep the one with the "
                         f"complete content (compare them with `zcat {twin.name} | cmp - {path.name}`) "
                         f"and delete the other")
    return twin


def gzip_bytes(data):
    """``data`` as one gzip member that depends on ``data`` alone (level 9, no name, time stamp 0).

    Compressing the same content twice gives the same bytes, so re-saving an
    unchanged result leaves git with nothing to commit.

    Examples
    --------
    >>> gzip_bytes(b"x\\n") == gzip_bytes(b"x\\n")
    True
    >>> import gzip
    >>> gzip.decompress(gzip_bytes(b"x\\n"))
    b'x\\n'
    """
    return gzip.compress(bytes(data), compresslevel=9, mtime=0)


def atomic_write_bytes(path, data):
    """Write ``data`` to ``path`` atomically (temporary file, then ``os.replace``).

    A reader sees the old file or the new one, never a part of either.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "a.bin"
    >>> atomic_write_bytes(p, b"hi").read_bytes()
    b'hi'
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    umask = os.umask(0)
    os.umask(umask)
    try:
        os.chmod(tmp, 0o666 & ~umask)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
