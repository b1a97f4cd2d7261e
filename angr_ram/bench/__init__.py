"""Benchmarks: scripts that print comparable tables (``angr-ram bench``).

Every table runs the sample binaries built by ``make samples``; ``samples_dir`` (CLI
``--samples-dir``) says where they are. The default is ``$ANGR_RAM_SAMPLES``, else the checkout's
``samples/build`` when angr-ram runs from its repository, else ``./samples/build``.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import AngrRamError

_CHECKOUT = Path(__file__).resolve().parent.parent.parent / "samples" / "build"


def default_samples_dir() -> Path:
    """Where the sample binaries are when no directory is given (see the module docstring)."""
    env = os.environ.get("ANGR_RAM_SAMPLES")
    if env:
        return Path(env)
    if _CHECKOUT.is_dir():
        return _CHECKOUT
    return Path.cwd() / "samples" / "build"


def sample_path(name: str, samples_dir: Path | str | None = None) -> str:
    """The path of sample binary ``name``; a clear error if it is not there."""
    d = Path(samples_dir) if samples_dir is not None else default_samples_dir()
    p = d / name
    if not p.is_file():
        raise AngrRamError(f"{p}: sample binary not found; build the samples (make samples) "
                           "or pass --samples-dir DIR")
    return os.fspath(p)


def fastest(settings, run, repeat: int = 1) -> dict:
    """Run every setting (a tuple whose first item is its label) ``repeat`` times, round-robin so
    that machine noise hits all alike, and keep each label's fastest result (a dict with
    ``"seconds"``) from ``run(*setting)``."""
    best: dict = {}
    for _ in range(max(repeat, 1)):
        for setting in settings:
            r = run(*setting)
            label = setting[0]
            if label not in best or r["seconds"] < best[label]["seconds"]:
                best[label] = r
    return best
