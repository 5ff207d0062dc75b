"""Helpers private to the drift part."""

from __future__ import annotations


def _check_names(values, allowed, name):
    values = (values,) if isinstance(values, str) else tuple(values)
    bad = [v for v in values if v not in allowed]
    if bad or not values:
        raise ValueError(f"{name} must be a non-empty selection of {list(allowed)}, got {list(values)}")
    return values
