"""Benchmarks: scripts that print comparable tables (``angr-ram bench``, from a checkout: this
package is not part of the installed library).

Every table runs the sample binaries built by ``make samples``; ``samples_dir`` (CLI
``--samples-dir``) says where they are. The default is ``$ANGR_RAM_SAMPLES``, else the checkout's
``samples/build``, else ``./samples/build``.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from claripy.frontend.mixin.model_cache_mixin import ModelCache, ModelCacheMixin

from angr_ram.core.errors import AngrRamError
from angr_ram.core.patches import PatchSet
from angr_ram.core.scope import RunScope, in_run
from angr_ram.solver import model_cache, patches
from angr_ram.solver.model_eval import fast_eval_ast

# stock angr's frontends given the answers of angr-ram's model cache (exact, linear-time
# evaluation: angr_ram.solver.model_cache), which angr-ram's own frontends have as a mixin
STOCK_MODEL_CACHE = PatchSet("bench-stock-model-cache", in_run)
STOCK_MODEL_CACHE.patch(ModelCache, "eval_ast")(lambda _stock, mc, ast, allow_unconstrained=True:
                                                fast_eval_ast(mc, ast, allow_unconstrained))
STOCK_MODEL_CACHE.patch(ModelCacheMixin, "batch_eval")(model_cache.exact_batch_eval)
STOCK_MODEL_CACHE.patch(ModelCacheMixin, "min")(model_cache.exact_min)
STOCK_MODEL_CACHE.patch(ModelCacheMixin, "max")(model_cache.exact_max)

# what every run inside :func:`claripy_fixes` uses, stock angr's included
CLARIPY_FIXES = (*patches.NAMES, STOCK_MODEL_CACHE.name)


@contextlib.contextmanager
def claripy_fixes():
    """Inside the block every run, stock angr's included, uses angr-ram's claripy fixes (linear
    model evaluation, cheap solver creation): benchmarks compare the models, not claripy's costs."""
    with RunScope(patch_sets=CLARIPY_FIXES).active():
        yield


def with_claripy_fixes(fn: Callable) -> Callable:
    """Decorator: run ``fn`` inside :func:`claripy_fixes`."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        with claripy_fixes():
            return fn(*args, **kwargs)
    return run

ROOT = Path(__file__).resolve().parent.parent          # the checkout (bench/ is not installed)
_CHECKOUT = ROOT / "samples" / "build"


def child_env(env: dict | None = None) -> dict:
    """``env`` (default: this process's environment) with the checkout on ``PYTHONPATH``, for a
    benchmark's child process (``python -m bench.<table>``)."""
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    return env


def run_child(cmd: list[str], timeout: float, env: dict | None = None, check: bool = False) -> subprocess.CompletedProcess:
    """``subprocess.run(cmd, capture_output=True, text=True)`` in a new session whose whole process
    group is killed when ``timeout`` passes (``subprocess.run`` kills only the child: the native
    replays and solver processes it started went on taking the machine's cores from the next row)."""
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                          start_new_session=True) as p:
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            raise
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)       # anything the child left running
    if check and p.returncode:
        raise subprocess.CalledProcessError(p.returncode, cmd, out, err)
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)


def child_result(cmd: list[str], timeout: float) -> dict:
    """Run a benchmark's child process ``cmd`` (``python -m bench.<table> ...``), killed after
    ``timeout``: the JSON object on its last ``{`` line, ``{"failed": <its last stderr line>}`` when
    there is none, or ``{"killed": True}``; ``outcomes`` decoded to (exit code, stdout bytes) pairs."""
    try:
        p = run_child(cmd, timeout, child_env())
        line = next((ln for ln in reversed(p.stdout.splitlines()) if ln.startswith("{")), None)
        r = json.loads(line) if line else {"failed": (p.stderr.strip().splitlines() or ["no output"])[-1][:100]}
    except subprocess.TimeoutExpired:
        r = {"killed": True}
    if "outcomes" in r:
        r["outcomes"] = {(c, bytes.fromhex(o)) for c, o in r["outcomes"]}
    return r


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


def unknown_name(names, known, what: str) -> bool:
    """Whether one of ``names`` is not in ``known`` (said on stderr, as ``what``)."""
    bad = next((n for n in names if n not in known), None)
    if bad is not None:
        print(f"unknown {what} {bad!r}; known: {', '.join(known)}", file=sys.stderr)
    return bad is not None
