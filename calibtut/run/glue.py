"""Glue values into the book with only IPython (no myst-nb needed at run time).

myst-nb's ``{glue}`` roles read cell outputs whose metadata carries
``{"scrapbook": {"name": ..., "mime_prefix": "application/papermill.record/"}}``
and whose mime types start with that prefix; the prefix hides the output in the
notebook itself. :func:`glue` writes exactly that, so it works on Colab (which
lacks myst-nb) and in the book build alike.
"""

from __future__ import annotations

import numpy as np

from calibtut.run._paths import check_name

__all__ = ["GLUE_PREFIX", "glue", "glue_bundle"]

GLUE_PREFIX = "application/papermill.record/"


def _plain_text(value, fmt):
    if isinstance(value, np.generic):
        value = value.item()
    if fmt is not None:
        if not isinstance(fmt, str):
            raise TypeError(f"fmt must be a format spec string such as '.3f', got {type(fmt).__name__}")
        try:
            # quoted: myst-nb reads the text back with literal_eval, which would turn "1.00" into 1.0
            return repr(format(value, fmt))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"fmt {fmt!r} cannot format a {type(value).__name__}: {exc}") from None
    return repr(value)


def glue_bundle(name, value, fmt=None):
    """The display data and metadata that :func:`glue` shows.

    Parameters
    ----------
    name : str
        The glue key, used as ``{glue:text}`name``` in the book.
    value : object
        The value. numpy scalars are shown as plain Python numbers, so
        ``{glue:text}`name:.3f``` formats them.
    fmt : str, optional
        A format spec applied now (e.g. ``".1%"``); the text shown is then
        exactly ``format(value, fmt)``, trailing zeros included (it is stored
        quoted, as myst-nb expects of text).

    Returns
    -------
    (dict, dict)
        Mime bundle (every key prefixed) and output metadata.

    Examples
    --------
    >>> data, meta = glue_bundle("ece", np.float64(0.0123), fmt=".3f")
    >>> data["application/papermill.record/text/plain"]
    "'0.012'"
    >>> meta
    {'scrapbook': {'name': 'ece', 'mime_prefix': 'application/papermill.record/'}}
    """
    check_name(name, "name")
    data = {}
    metadata = {}
    if fmt is None and not isinstance(value, (str, bool, int, float, complex, np.generic)) and value is not None:
        from IPython.core.formatters import format_display_data

        rich, rich_meta = format_display_data(value)
        data.update(rich)
        metadata.update(rich_meta)
    data["text/plain"] = _plain_text(value, fmt)
    metadata["scrapbook"] = {"name": name, "mime_prefix": GLUE_PREFIX}
    return {GLUE_PREFIX + mime: content for mime, content in data.items()}, metadata


def glue(name, value, fmt=None):
    """Record ``value`` under ``name`` for myst-nb's ``{glue}`` roles and directives.

    The output is hidden in the notebook and pasted into the page where the
    book writes ``{glue:text}`name``` (or ``{glue}`name```, ``{glue:figure}``
    for figures). Needs only IPython, so it also runs on Colab.

    Parameters
    ----------
    name : str
        The glue key; unique within a notebook.
    value : object
        Number, string, DataFrame, figure, ...
    fmt : str, optional
        Format spec applied before gluing (``"{:fmt}".format(value)``).

    Examples
    --------
    >>> glue("coverage", 0.9, fmt=".0%")  # doctest: +SKIP
    """
    from IPython.display import display

    data, metadata = glue_bundle(name, value, fmt)
    display(data, raw=True, metadata=metadata)
