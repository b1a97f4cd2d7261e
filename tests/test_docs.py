"""The documentation: a README that is a page, pages that build as a site (``mkdocs build
--strict``), and an options reference that matches the code."""

import dataclasses
import importlib.util
import re
import subprocess
import sys

import yaml

from angr_ram.run.config import RunConfig

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
    for f in fields:
        assert f"| `{f.name}` | {f.metadata['values']} | {f.metadata['doc']} |" in page, f.name


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
