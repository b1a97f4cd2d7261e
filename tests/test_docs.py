"""The documentation: a README that is a page, pages that build as a site (``mkdocs build
--strict``), and an options reference that matches the code."""

import dataclasses
import importlib.util
import inspect
import re
import subprocess
import sys

import yaml

from angr_ram.merging.options import MERGE_OPTIONS
from angr_ram.merging.policies import MODES
from angr_ram.merging.technique import QuantifiedMerging
from angr_ram.run.config import RunConfig, run_options
from angr_ram.run.technique import RelocatableMemory

from .conftest import ROOT

DOCS = ROOT / "docs"


def _nav_pages(nav) -> list[str]:
    out = []
    for item in nav:
        for v in item.values():
            out += _nav_pages(v) if isinstance(v, list) else [v]
    return out


def test_the_readme_is_a_page_and_its_links_resolve():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 250
    links = re.findall(r"\]\((docs/[^)#]*)\)", text)
    assert len(links) >= 10
    for link in links:
        assert (ROOT / link).exists(), link
    for cmd in ("make demo", "make test"):
        assert cmd in text


def test_every_page_is_in_the_site_navigation():
    cfg = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    nav = set(_nav_pages(cfg["nav"]))
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md") if "bench" not in p.parts}
    assert pages == nav


def test_the_options_reference_matches_the_code():
    """The options table is what ``docs/tools/options_reference.py`` writes from RunConfig's fields
    (signature with the defaults, one row per option with its values and meaning)."""
    spec = importlib.util.spec_from_file_location("options_reference", DOCS / "tools" / "options_reference.py")
    ref = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ref)
    page = (DOCS / "reference" / "options.md").read_text()
    assert page == ref.rewritten(page), "the options table is stale: run python docs/tools/options_reference.py"
    sig = re.search(r"`(RelocatableMemory\(.*?\))`", page, re.S).group(1)
    fields = dataclasses.fields(RunConfig)
    assert " ".join(sig.split()) == "RelocatableMemory(" + ", ".join(
        f"{f.name}={f.default!r}".replace("'", '"') for f in fields) + ")"
    for name, opt in run_options().items():
        assert f"| `{name}` | {opt.values} | {opt.doc} |" in page, name
    merge_params = [n for n in inspect.signature(QuantifiedMerging.__init__).parameters if n != "self"]
    assert list(MERGE_OPTIONS) == merge_params, "every QuantifiedMerging keyword has one entry in MERGE_OPTIONS"
    assert f"QuantifiedMerging({merge_params[0]}=" in page and "| `uninitialized` | `None`" in page


def test_each_techniques_docstring_lists_its_options_from_the_same_text():
    """``help(RelocatableMemory)`` / ``help(QuantifiedMerging)`` show each option with the meaning
    the reference prints: both are written from one table."""
    for cls, options in ((RelocatableMemory, run_options()), (QuantifiedMerging, MERGE_OPTIONS)):
        doc = " ".join(cls.__doc__.split())
        for name, opt in options.items():
            assert f":param {name}: ({opt.values}; default " in doc, (cls.__name__, name)
            assert " ".join(opt.doc.split()) in doc, (cls.__name__, name)
        assert doc.count(":param ") == len(options)
    assert all(f'`"{m}"`' in MERGE_OPTIONS["mode"].values for m in MODES)


def test_the_site_builds_strictly(tmp_path):
    """(mkdocs is in the test extras: ``make test`` installs it.)"""
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-f", str(ROOT / "mkdocs.yml"),
                        "-d", str(tmp_path / "site")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert (tmp_path / "site" / "reference" / "options" / "index.html").is_file()


def test_the_module_map_lists_every_module_with_its_docstring():
    """``docs/architecture.md``'s module map is what ``docs/tools/module_map.py`` writes from the
    modules' docstrings (run it after adding or renaming a module)."""
    spec = importlib.util.spec_from_file_location("module_map", DOCS / "tools" / "module_map.py")
    mm = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mm)
    page = (DOCS / "architecture.md").read_text()
    assert page == mm.rewritten(page), "the module map is stale: run python docs/tools/module_map.py"
    for path in (ROOT / "angr_ram").rglob("*.py"):
        if path.name != "__init__.py":
            assert f"`{path.relative_to(ROOT).as_posix()}`" in page
