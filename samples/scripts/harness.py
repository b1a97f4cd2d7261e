"""Runs the corpus's angr scripts with and without angr-ram and checks each answer natively.

Each ``sNN_*.py`` beside this file is a user's script: ``solve(binary, attach)`` builds its own
project and state, calls ``attach(simgr)`` where a user would add
``simgr.use_technique(angr_ram.RelocatableMemory())`` (or nothing, for stock angr), and returns
the input it found: ``stdin`` bytes, ``args`` (argv[1:]) and ``files`` (name -> bytes, written to
the native run's working directory). The answer is right when the native program, given it,
prints the script's ``EXPECT``.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
BUILD = HERE.parent / "build"


def names() -> list[str]:
    """The corpus's script names, in order."""
    return sorted(p.stem for p in HERE.glob("s[0-9][0-9]_*.py"))


def load(name: str):
    """The script module ``name``."""
    spec = importlib.util.spec_from_file_location(f"angr_script_{name}", HERE / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def stock(simgr) -> None:
    """The attach of a script run on stock angr: nothing."""


def ram(simgr) -> None:
    """The one line a user adds."""
    import angr_ram
    simgr.use_technique(angr_ram.RelocatableMemory())


def run(name: str, with_ram: bool) -> dict:
    """Run script ``name`` on its program; its answer."""
    mod = load(name)
    return mod.solve(os.fspath(BUILD / mod.PROGRAM), ram if with_ram else stock)


def native_ok(name: str, answer: dict, timeout: float = 10.0) -> bool:
    """Whether the native program prints the script's EXPECT on ``answer``."""
    mod = load(name)
    binary = os.fspath(BUILD / mod.PROGRAM)
    with tempfile.TemporaryDirectory() as cwd:
        for fname, data in (answer.get("files") or {}).items():
            Path(cwd, fname).write_bytes(data)
        args = [a.split(b"\0")[0] for a in answer.get("args") or []]
        r = subprocess.run([binary, *args], input=answer.get("stdin", b""), capture_output=True,
                           timeout=timeout, cwd=cwd, check=False)
    return mod.EXPECT in r.stdout
