"""Run profiles: every size in a notebook derives from ``ci`` or ``full``."""

from __future__ import annotations

import html
import reprlib
from collections.abc import Mapping
from types import MappingProxyType

from calibtut.run.display import use_book_display

__all__ = ["PROFILES", "Settings", "check_profile", "settings"]

#: The valid profile names: ``ci`` (under 60 s on 2 CPU cores) and ``full`` (the paper's scale).
PROFILES = ("ci", "full")

#: How a setting's value is shortened in the one-line display of :class:`Settings`.
_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 40
_SHORT.maxlist = _SHORT.maxtuple = 6


def check_profile(profile):
    """Check a profile name and return it.

    Examples
    --------
    >>> check_profile("ci")
    'ci'
    """
    if not isinstance(profile, str):
        raise TypeError(f"profile must be a string, one of {PROFILES}, got {type(profile).__name__}")
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {', '.join(map(repr, PROFILES))}, got {profile!r}")
    return profile


class Settings(Mapping):
    """Read-only settings of one profile, with attribute and key access.

    Build it with :func:`settings`. It behaves as a read-only mapping (so
    ``dict(s)`` and ``f(**s)`` work) and exposes each key as an attribute;
    ``s.profile`` is the profile it was built for.

    Examples
    --------
    >>> s = settings("ci", ci={"n": 200}, full={"n": 10_000})
    >>> s.n, s["n"], s.profile
    (200, 200, 'ci')

    In a notebook the settings display as one line a reader can take in
    (``_repr_html_``), not as the constructor call that ``repr`` gives:

    >>> s._repr_html_()
    '<p class="calibtut-settings">This page ran the <b>ci</b> profile: n = 200.</p>'
    """

    __slots__ = ("_profile", "_values")

    def __init__(self, profile, values):
        object.__setattr__(self, "_profile", check_profile(profile))
        object.__setattr__(self, "_values", MappingProxyType(dict(values)))

    @property
    def profile(self):
        """The profile name these settings belong to."""
        return self._profile

    def __getattr__(self, key):
        try:
            return self._values[key]
        except KeyError:
            known = ", ".join(self._values) or "none"
            raise AttributeError(f"no setting {key!r} in profile {self._profile!r} (known: {known})") from None

    def __setattr__(self, key, value):
        raise AttributeError("settings are read-only; change the ci/full dicts in the notebook instead")

    def __delattr__(self, key):
        raise AttributeError("settings are read-only")

    def __getitem__(self, key):
        return self._values[key]

    def __iter__(self):
        return iter(self._values)

    def __len__(self):
        return len(self._values)

    def __eq__(self, other):
        if isinstance(other, Settings):
            return self._profile == other._profile and dict(self._values) == dict(other._values)
        return NotImplemented

    __hash__ = None

    def __reduce__(self):
        return (Settings, (self._profile, dict(self._values)))

    def __repr__(self):
        body = ", ".join(f"{k}={v!r}" for k, v in self._values.items())
        return f"Settings(profile={self._profile!r}{', ' if body else ''}{body})"

    def _repr_pretty_(self, printer, cycle):
        printer.text(repr(self))

    def _repr_html_(self):
        values = " · ".join(f"{k} = {_SHORT.repr(v)}" for k, v in self._values.items())
        text = f"This page ran the <b>{self._profile}</b> profile"
        return f'<p class="calibtut-settings">{text}{": " + html.escape(values) if values else ""}.</p>'


_RESERVED = frozenset({"profile", "keys", "items", "values", "get"})


def settings(profile, *, ci, full):
    """Pick the settings of one profile, checking both profiles define the same keys.

    In a notebook it also switches on the book's table and figure display
    (:func:`calibtut.run.display.use_book_display`: a missing value as "–",
    no running row number, side-by-side panels stacked on a phone), since
    every chapter calls it first.

    Parameters
    ----------
    profile : {"ci", "full"}
        The profile to return.
    ci, full : dict
        Settings for each profile, with the same keys (valid Python identifiers).

    Returns
    -------
    Settings
        A read-only mapping with attribute access.

    Raises
    ------
    ValueError
        If ``profile`` is not a known profile, or the key sets differ.

    Examples
    --------
    >>> s = settings("full", ci={"n": 200, "seeds": 2}, full={"n": 10_000, "seeds": 10})
    >>> s
    Settings(profile='full', n=10000, seeds=10)
    >>> s.seeds
    10
    >>> settings("paper", ci={}, full={})
    Traceback (most recent call last):
    ...
    ValueError: profile must be one of 'ci', 'full', got 'paper'
    """
    check_profile(profile)
    given = {"ci": ci, "full": full}
    for name, values in given.items():
        if not isinstance(values, Mapping):
            raise TypeError(f"{name} must be a dict of settings, got {type(values).__name__}")
        for key in values:
            if not isinstance(key, str) or not key.isidentifier():
                raise ValueError(f"{name} has key {key!r}; setting names must be Python identifiers")
            if key in _RESERVED or key.startswith("_"):
                raise ValueError(f"{name} has key {key!r}, which is reserved; choose another name")
    only_ci = sorted(set(ci) - set(full))
    only_full = sorted(set(full) - set(ci))
    if only_ci or only_full:
        raise ValueError(
            f"ci and full must define the same settings; only in ci: {only_ci}, only in full: {only_full}"
        )
    use_book_display()
    return Settings(profile, given[profile])
