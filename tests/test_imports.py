"""The package's import structure: no import cycle (package ``__init__`` files included), no
import hidden inside a function to break one, and every module importable first in a fresh
process, in either order."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "angr_ram"


def _modules() -> dict[str, Path]:
    out = {}
    for p in sorted(PACKAGE.rglob("*.py")):
        parts = p.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = p
    return out


MODULES = _modules()


def _targets(module: str, node) -> list[str]:
    """The package modules an import statement of ``module`` loads (with the packages whose
    ``__init__`` runs first)."""
    is_pkg = MODULES[module].name == "__init__.py"
    here = module.split(".") if is_pkg else module.split(".")[:-1]
    found = []
    if isinstance(node, ast.ImportFrom):
        base = ".".join(here[:len(here) - node.level + 1] + ([node.module] if node.module else [])) \
            if node.level else (node.module or "")
        for a in node.names:
            found.append(f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base)
    else:
        found = [a.name for a in node.names]
    out = []
    for t in found:
        if t not in MODULES or t == module:
            continue
        out.append(t)
        parts = t.split(".")
        for k in range(2, len(parts)):              # a.b.c runs a.b's __init__ first, unless we are in a.b
            pkg = ".".join(parts[:k])
            if pkg in MODULES and module != pkg and not module.startswith(pkg + "."):
                out.append(pkg)
    return out


def _imports():
    top, hidden = {}, {}
    for m, p in MODULES.items():
        tree = ast.parse(p.read_text())
        top[m], hidden[m] = set(), []
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                deps = _targets(m, node)
                if node in tree.body:
                    top[m].update(deps)
                elif deps:
                    hidden[m].append((node.lineno, deps))
    return top, hidden


def _cycle(graph: dict) -> list | None:
    state, stack = {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for d in sorted(graph.get(n, ())):
            if state.get(d) == 1:
                return stack[stack.index(d):] + [d]
            if d not in state:
                c = visit(d)
                if c:
                    return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            c = visit(n)
            if c:
                return c
    return None


def test_the_import_graph_has_no_cycle_and_no_import_hides_in_a_function():
    top, hidden = _imports()
    assert len(MODULES) > 60
    assert _cycle(top) is None, " -> ".join(_cycle(top))
    assert {m: h for m, h in hidden.items() if h} == {}


# the packages, bottom to top: a module imports only from its own package and the ones below it
ORDER = ["core", "solver", "memory", "procedures", "posix", "merging", "run"]


def _layer_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 and parts[1] in ORDER else None


def test_every_module_has_a_layer_and_imports_only_go_down():
    top, _ = _imports()
    unplaced = sorted(m for m in MODULES if _layer_of(m) is None and m != "angr_ram" and m.count(".") != 1)
    assert unplaced == []
    assert sorted(m for m in MODULES if m.count(".") == 1) == sorted(f"angr_ram.{p}" for p in ORDER)
    upward = sorted(f"{m} ({_layer_of(m)}) -> {d} ({_layer_of(d)})" for m, deps in top.items() for d in deps
                    if _layer_of(m) and _layer_of(d) and ORDER.index(_layer_of(d)) > ORDER.index(_layer_of(m)))
    assert upward == []


def test_the_cycle_check_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


@pytest.mark.parametrize("order", ["forward", "reverse"])
def test_every_module_imports_in_a_fresh_process_in_either_order(order):
    names = sorted(m for m in MODULES if m != "angr_ram.__main__")
    if order == "reverse":
        names.reverse()
    code = "import importlib, sys\nfor n in sys.argv[1:]:\n    importlib.import_module(n)\nprint('ok')"
    out = subprocess.run([sys.executable, "-c", code, *names], capture_output=True, text=True, timeout=300,
                         cwd=PACKAGE.parent)
    assert out.stdout.strip() == "ok", out.stderr[-3000:]


# modules over the size limit, each at most its size when the limit was set: they may shrink, not grow
LIMIT = 500
OVERSIZE: dict[str, int] = {}      # modules allowed over LIMIT lines, with their size (none now)


def test_modules_stay_small():
    sizes = {str(p.relative_to(PACKAGE.parent)): len(p.read_text().splitlines()) for p in MODULES.values()}
    too_big = {m: n for m, n in sizes.items() if n > OVERSIZE.get(m, LIMIT)}
    assert too_big == {}
