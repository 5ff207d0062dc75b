"""The package's maps of itself stay complete: package docstrings and CONTRIBUTING's module map.

* Every package of ``calibtut`` (a folder with an ``__init__.py``) has a
  docstring that names each of its public submodules and subpackages (no
  leading underscore): as an entry of a "Modules" / "Packages" list (the name
  alone on its line) or in backticks (``tasks.py``, ``tasks``,
  :mod:`calibtut.metrics.torch`). A word that happens to be a module's name in
  running prose does not count.
* CONTRIBUTING.md's module map names every module: each top-level part of
  ``calibtut`` in the layer table (``calibtut.<part>``), each part of the
  experiments layer in the sentence that lists them, and each file of an
  experiments part (``tasks.py``, ``claims.py``, ...) in the table of the
  experiments layer's files.
* Both maps name nothing that is not there: a docstring's "Modules" /
  "Packages" list names only modules of its package, and CONTRIBUTING's
  tables name only parts and files that exist.

Only files are read; nothing is imported.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "calibtut"
CONTRIBUTING = ROOT / "CONTRIBUTING.md"


def packages():
    return sorted(p.parent for p in PACKAGE.rglob("__init__.py"))


def public_children(package):
    """Names of the public modules and subpackages directly under ``package``."""
    names = [p.stem for p in package.glob("*.py") if not p.stem.startswith("_")]
    names += [p.name for p in package.iterdir() if (p / "__init__.py").exists() and not p.name.startswith("_")]
    return sorted(names)


def mentions(doc, name):
    """Whether ``doc`` names the module ``name`` as a list entry or in backticks."""
    listed = re.search(rf"^[ \t]*{re.escape(name)}[ \t]*$", doc, re.M)
    quoted = re.search(rf"`[~\w.]*\b{re.escape(name)}(\.py)?`", doc)
    return bool(listed or quoted)


def _dotted(package):
    return ".".join(package.relative_to(PACKAGE.parent).parts)


@pytest.mark.parametrize("package", packages(), ids=_dotted)
def test_package_docstring_names_each_public_submodule(package):
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf8")))
    assert doc, f"{_dotted(package)} has no docstring"
    missing = [name for name in public_children(package) if not mentions(doc, name)]
    assert not missing, f"the docstring of {_dotted(package)} does not name {missing}"


def listed_children(doc):
    """The entries of a docstring's numpydoc "Modules" / "Packages" sections (a name alone at the margin)."""
    names = []
    for section in re.finditer(r"^(?:Modules|Packages)\n-+\n(.*?)(?=^\w[\w ]*\n-+\n|\Z)", doc, re.S | re.M):
        names += re.findall(r"^(\w+)[ \t]*$", section.group(1), re.M)
    return names


def test_the_section_reader_reads_entries_only():
    doc = "Title.\n\nModules\n-------\nalpha\n    What alpha holds.\nbeta\n    Beta, and\n    more.\n"
    assert listed_children(doc) == ["alpha", "beta"]
    assert listed_children(doc + "\nNotes\n-----\ngamma\n") == ["alpha", "beta"]


@pytest.mark.parametrize("package", packages(), ids=_dotted)
def test_package_docstring_lists_no_module_that_is_not_there(package):
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf8"))) or ""
    stale = sorted(set(listed_children(doc)) - set(public_children(package)))
    assert not stale, f"the docstring of {_dotted(package)} lists {stale}, which it does not hold"


def _contributing():
    return CONTRIBUTING.read_text(encoding="utf8")


def _section(text, heading):
    """The text of a markdown section, from its heading to the next heading of the same or a higher level."""
    level = len(heading) - len(heading.lstrip("#"))
    start = text.index(f"\n{heading}\n")
    rest = text[start + len(heading) + 2:]
    end = re.search(rf"^#{{1,{level}}} ", rest, re.M)
    return rest[: end.start()] if end else rest


def layer_table_parts(text):
    """The top-level parts the layer table names: ``calibtut.<part>`` in the part column of a ``| <layer> |`` row."""
    parts = set()
    for line in _section(text, "## Package layout").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0].isdigit():
            parts.update(re.findall(r"`calibtut\.(\w+)", cells[1]))
    return parts


def experiments_parts_listed(text):
    """The parts of the experiments layer named in the sentence that lists them (``drift``, ...)."""
    section = _section(text, "### The experiments layer")
    sentence = re.search(r"for each part of the book \(([^)]*)\)", section, re.S)
    assert sentence, "CONTRIBUTING's experiments section no longer lists its parts 'for each part of the book (...)'"
    return set(re.findall(r"`(\w+)`", sentence.group(1)))


def experiments_files_listed(text):
    """The file names (``tasks.py``, ...) that the experiments layer's file table names, in any column."""
    section = _section(text, "### The experiments layer")
    rows = [line for line in section.splitlines() if line.startswith("|")]
    return set(re.findall(r"`(\w+\.py)`", "\n".join(rows)))


def test_the_map_parsers_read_the_map():
    text = _contributing()
    assert {"metrics", "conformal", "experiments", "_validation"} <= layer_table_parts(text)
    assert "drift" in experiments_parts_listed(text)
    assert {"tasks.py", "tables.py", "_common.py"} <= experiments_files_listed(text)


def test_contributing_layer_table_names_every_top_level_part():
    parts = {p.stem for p in PACKAGE.glob("*.py") if p.name != "__init__.py"}
    parts |= {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    missing = sorted(parts - layer_table_parts(_contributing()))
    assert not missing, f"CONTRIBUTING.md's layer table does not name calibtut.{missing}"


def test_contributing_names_nothing_that_is_not_there():
    text = _contributing()
    parts = {p.stem for p in PACKAGE.glob("*.py")} | {p.name for p in PACKAGE.iterdir() if p.is_dir()}
    stale = sorted(layer_table_parts(text) - parts)
    assert not stale, f"CONTRIBUTING.md's layer table names calibtut.{stale}, which do not exist"
    experiments = PACKAGE / "experiments"
    stale_parts = sorted(experiments_parts_listed(text) - {p.name for p in experiments.iterdir() if p.is_dir()})
    assert not stale_parts, f"CONTRIBUTING.md's experiments section lists the parts {stale_parts}, which do not exist"
    files = {p.name for p in experiments.glob("*/*.py")}
    stale_files = sorted(experiments_files_listed(text) - files)
    assert not stale_files, f"CONTRIBUTING.md's table of the experiments files names {stale_files}, which no part has"


def test_contributing_names_every_experiments_part_and_file():
    text = _contributing()
    experiments = PACKAGE / "experiments"
    parts = {p.name for p in experiments.iterdir() if (p / "__init__.py").exists()}
    missing_parts = sorted(parts - experiments_parts_listed(text))
    assert not missing_parts, f"CONTRIBUTING.md's experiments section does not list the parts {missing_parts}"
    files = {p.name for part in parts for p in (experiments / part).glob("*.py") if p.name != "__init__.py"}
    missing = sorted(files - experiments_files_listed(text))
    assert not missing, f"CONTRIBUTING.md's table of the experiments files does not name {missing}"


#: The role files of an experiments part (CONTRIBUTING, "The experiments layer").
ROLE_FILES = {"__init__.py", "tasks.py", "tables.py", "figures.py", "chapters.py", "claims.py", "_common.py"}


def _public_functions(path):
    tree = ast.parse(path.read_text(encoding="utf8"))
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef) and not node.name.startswith("_")}


def sub_study_files():
    return sorted(p for p in (PACKAGE / "experiments").glob("*/*.py") if p.name not in ROLE_FILES)


def test_the_rule_reader_sees_the_sub_studies():
    names = {p.name for p in sub_study_files()}
    assert {"ablations.py", "protection.py"} <= names
    assert not names & ROLE_FILES


@pytest.mark.parametrize("path", sub_study_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_file_not_named_for_a_role_is_a_sub_study_with_its_own_sweep(path):
    functions = _public_functions(path)
    sweep = sorted(f for f in functions if f.endswith("_tasks") or f.startswith("run_"))
    assert sweep, (f"{path.parent.name}/{path.name} is named for neither a role ({sorted(ROLE_FILES)}) nor a "
                   "sub-study with its own sweep (no *_tasks or run_* function): move its code to the role files")
