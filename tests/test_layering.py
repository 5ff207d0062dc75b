"""The package's layers, read from its import statements (no module is imported).

A subpackage or flat module of ``calibtut`` may import from its own layer or a
lower one, never from a higher one; the graph of its top-level parts has no
cycle; every import of a calibtut module sits at the top of its module (none
inside a function, where it would hide a cycle); and no module imports a
``_private`` name or module of another top-level part, except the shared
internals ``calibtut._validation``, ``calibtut._numeric`` and
``calibtut._torch``.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "calibtut"

#: Lowest first. A part may import from its own layer and the layers before it.
LAYERS = (
    ("_validation", "_estimator", "_numeric", "_torch", "numerics"),
    ("metrics", "data", "papers", "run"),
    ("conformal", "regularizers", "online"),
    ("recalibration", "models", "selective"),
    ("shift", "plots", "stats"),
    ("experiments",),
)
LAYER_OF = {part: i for i, parts in enumerate(LAYERS) for part in parts}
SHARED = set(LAYERS[0])


def _module_name(path):
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(node, module, is_package):
    """The absolute module an ``ImportFrom`` names (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def imports(path, module=None):
    """``(line, imported module, imported names, inside a function)`` of one file."""
    tree = ast.parse(path.read_text(encoding="utf8"))
    module = module or _module_name(path)
    in_function = set()
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            in_function.update(id(n) for n in ast.walk(fn) if n is not fn)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.append((node.lineno, alias.name, (), id(node) in in_function))
        elif isinstance(node, ast.ImportFrom):
            target = _absolute(node, module, path.name == "__init__.py")
            names = tuple(a.name for a in node.names)
            found.append((node.lineno, target, names, id(node) in in_function))
    return [f for f in found if f[1] == "calibtut" or f[1].startswith("calibtut.")]


def part_of(module):
    """The top-level part of a calibtut module: ``calibtut.conformal.sets`` -> ``conformal``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _edges():
    edges = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        for line, target, names, in_function in imports(path):
            if target == "calibtut":  # ``from calibtut import data``: each name is a part
                for name in names:
                    edges.append((path, line, module, f"calibtut.{name}", (), in_function))
            else:
                edges.append((path, line, module, target, names, in_function))
    return edges


EDGES = _edges()


def _where(path, line):
    return f"{path.relative_to(PACKAGE.parent)}:{line}"


def test_every_part_has_a_layer():
    parts = {part_of(_module_name(p)) for p in PACKAGE.rglob("*.py")} - {""}
    assert parts <= set(LAYER_OF), f"parts without a layer: {sorted(parts - set(LAYER_OF))}"


def test_imports_go_down_the_layers():
    bad = []
    for path, line, module, target, _, _ in EDGES:
        src, dst = part_of(module), part_of(target)
        if src and dst and src != dst and LAYER_OF[dst] > LAYER_OF[src]:
            bad.append(f"{_where(path, line)}: {module} (layer {LAYER_OF[src]}) imports {target} "
                       f"(layer {LAYER_OF[dst]})")
    assert not bad, "\n".join(bad)


def test_no_cycle_between_parts():
    graph = {}
    for _, _, module, target, _, _ in EDGES:
        src, dst = part_of(module), part_of(target)
        if src and dst and src != dst:
            graph.setdefault(src, set()).add(dst)
    state = {}

    def visit(node, stack):
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                raise AssertionError("import cycle: " + " -> ".join(stack + [node, nxt]))
            if nxt not in state:
                visit(nxt, stack + [node])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [])


def test_no_cycle_between_modules():
    graph = {}
    for _, _, module, target, names, in_function in EDGES:
        graph.setdefault(module, set()).add(target)
    modules = set(graph)
    # ``from calibtut.x import y`` may import the submodule calibtut.x.y
    for _, _, module, target, names, _ in EDGES:
        for name in names:
            if f"{target}.{name}" in modules:
                graph[module].add(f"{target}.{name}")
    state = {}

    def visit(node, stack):
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if nxt == node or nxt.startswith(node + ".") and node.count(".") < 2:
                continue  # a package importing its own submodules
            if state.get(nxt) == "open":
                raise AssertionError("import cycle: " + " -> ".join(stack + [node, nxt]))
            if nxt not in state:
                visit(nxt, stack + [node])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state and not node.endswith("__init__"):
            visit(node, [])


def test_no_function_level_imports_of_calibtut():
    bad = [f"{_where(path, line)}: imports {target} inside a function"
           for path, line, _, target, _, in_function in EDGES if in_function]
    assert not bad, "\n".join(bad)


def test_no_private_import_across_parts():
    bad = []
    for path, line, module, target, names, _ in EDGES:
        src, dst = part_of(module), part_of(target)
        if src == dst or dst in SHARED:
            continue
        private = [n for n in names if n.startswith("_")]
        private_module = any(p.startswith("_") for p in target.split(".")[1:])
        if private or private_module:
            bad.append(f"{_where(path, line)}: {module} imports {target} {private}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("source, expected", [
    ("def f():\n    from calibtut.conformal import sets\n", True),
    ("from calibtut.conformal import sets\n", False),
])
def test_the_function_level_check_sees_what_it_should(tmp_path, source, expected):
    path = tmp_path / "probe.py"
    path.write_text(source, encoding="utf8")
    assert [f[3] for f in imports(path, "calibtut.probe")] == [expected]


def test_numpy_families_do_not_load_torch():
    """Conformal prediction, recalibration and the metrics run on numpy alone (the
    minimum-versions check in tests/test_packaging.py installs them without torch)."""
    code = ("import sys, calibtut.conformal, calibtut.recalibration, calibtut.metrics, calibtut.online; "
            "assert 'torch' not in sys.modules, sorted(m for m in sys.modules if m.startswith('calibtut'))")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_numpy_families_load_neither_pandas_nor_scikit_learn():
    """pandas and scikit-learn are imported by the few functions that use them (a DataFrame
    returned, ``CrossConformalRegressor``'s clone, the isotonic fit), not at import: they add
    about half the import time of these families."""
    code = ("import sys, calibtut.conformal, calibtut.recalibration, calibtut.metrics, calibtut.online; "
            "loaded = sorted({'pandas', 'sklearn'} & {m.split('.')[0] for m in sys.modules}); "
            "assert not loaded, loaded")
    subprocess.run([sys.executable, "-c", code], check=True)
