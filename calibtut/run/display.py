"""How the book shows a table in a notebook: a missing value as "–", no running row number.

pandas shows a missing value as ``NaN`` and numbers the rows of every table
0, 1, 2, ...; in a reader's table the first means "not reported" and the
second means nothing. :func:`use_book_display` registers :func:`table_html` as
the notebook's HTML form of every ``pandas.DataFrame`` (the plain-text form,
the data and every computation are untouched). :func:`calibtut.run.settings`
calls it, so every chapter that picks its profile shows its tables this way,
in the book as on Colab or in Jupyter.
"""

from __future__ import annotations

import pandas as pd

__all__ = ["MISSING", "table_html", "use_book_display"]

#: How a missing value reads in a table of the book.
MISSING = "–"


def table_html(df):
    """A DataFrame as the book's HTML table.

    Missing values read :data:`MISSING`; a default row index (0, 1, 2, ...
    without a name) is left out, while a meaningful index (a named one, or
    labels) is kept. Long and wide tables are cut as pandas cuts them
    (``display.max_rows``, ``display.max_columns``).

    Parameters
    ----------
    df : pandas.DataFrame

    Returns
    -------
    str
        HTML, as ``DataFrame._repr_html_`` gives it.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> html = table_html(pd.DataFrame({"method": ["a", "b"], "ece": [0.1, np.nan]}))
    >>> "–" in html, "NaN" in html, "<th>0</th>" in html
    (True, False, False)
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame, got {type(df).__name__}")
    default_index = isinstance(df.index, pd.RangeIndex) and df.index.name is None
    return df.to_html(
        notebook=True,
        na_rep=MISSING,
        index=not default_index,
        max_rows=pd.get_option("display.max_rows"),
        max_cols=pd.get_option("display.max_columns"),
        show_dimensions=pd.get_option("display.show_dimensions"),
    )


def use_book_display(shell=None):
    """Show every DataFrame of this IPython session with :func:`table_html`.

    Parameters
    ----------
    shell : IPython.core.interactiveshell.InteractiveShell or None
        The session; None: the running one, if any.

    Returns
    -------
    bool
        Whether a session was found and set up (False in a plain Python
        process, where nothing changes).

    Examples
    --------
    >>> use_book_display() in (True, False)  # False outside IPython: nothing to set up
    True
    """
    if shell is None:
        try:
            from IPython import get_ipython  # optional: only notebooks have a session
        except ImportError:
            return False
        shell = get_ipython()
        if shell is None:
            return False
    shell.display_formatter.formatters["text/html"].for_type(pd.DataFrame, table_html)
    return True
