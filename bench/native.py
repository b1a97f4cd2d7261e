"""Native runs of a sample binary over many inputs (the ground truth of benchmarks and tests).

The binary runs unmodified; the fork server built with the samples (``forkserver.so`` next to the
binary, or the one given) is preloaded and forks the process before ``main`` once per input, so
65536 inputs take seconds instead of minutes of exec calls.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import tempfile
from pathlib import Path

from angr_ram.run.replay import fresh_signals, native_environment


def run_inputs(binary: str, inputs: list[bytes], forkserver: Path | None = None, workers: int = 2,
               env: dict | None = None, target: str = "stdin", args=()) -> list[tuple[int, bytes]]:
    """(exit status, stdout) of ``binary`` for each input, in order, using ``workers`` processes.

    ``target`` is where each input goes: ``"stdin"``, ``"argv1"`` (the program's first argument,
    cut at its first NUL) or ``"file:NAME"`` (a file NAME in the program's working directory);
    ``args`` follow (``make -f NAME``)."""
    if not inputs:
        return []
    if forkserver is None:
        forkserver = Path(binary).resolve().parent / "forkserver.so"
    forkserver = Path(forkserver).resolve()       # the runs' working directory is a temporary one
    if not forkserver.is_file():
        raise FileNotFoundError(f"{forkserver}: no fork server; build the samples (make samples) or pass forkserver=")
    if workers > 1 and len(inputs) >= 1024:
        from concurrent.futures import ThreadPoolExecutor
        k = (len(inputs) + workers - 1) // workers
        parts = [inputs[i:i + k] for i in range(0, len(inputs), k)]
        with ThreadPoolExecutor(workers) as ex:
            results = list(ex.map(lambda p: run_inputs(binary, p, forkserver, 1, env, target, args), parts))
        return [r for part in results for r in part]
    n = len(inputs[0])
    if any(len(i) != n for i in inputs):
        raise ValueError("all inputs must have the same length")
    with tempfile.TemporaryDirectory() as d:
        inp, out = Path(d, "in"), Path(d, "out")
        inp.write_bytes(b"".join(inputs))
        env = {**native_environment(env), "GT_INPUTS": str(inp), "GT_LEN": str(n),
               "GT_OUT": str(out), "GT_TARGET": target, "LD_PRELOAD": str(forkserver)}
        argv = [os.path.abspath(binary)] + (["placeholder"] if target == "argv1" else []) + list(args)
        p = subprocess.run(argv, env=env, check=False, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           timeout=600, cwd=d, preexec_fn=fresh_signals())   # the inputs' runs write there too
        if p.returncode != 0:
            raise RuntimeError(f"fork server for {binary} failed ({p.returncode}): "
                               f"{(p.stderr.decode(errors='replace').strip().splitlines() or [''])[-1][:200]}")
        lines = out.read_text().splitlines()
    res = []
    for line in lines:
        code, _, hexout = line.partition(" ")
        res.append((int(code), bytes.fromhex(hexout)))
    if len(res) != len(inputs):
        raise RuntimeError(f"fork server answered {len(res)} of {len(inputs)} inputs")
    return res


def domain(n_bytes: int, alphabet: range | bytes = range(256)) -> list[bytes]:
    """Every input of ``n_bytes`` bytes drawn from ``alphabet``."""
    return [bytes(t) for t in itertools.product(alphabet, repeat=n_bytes)]


def outcome_set(binary: str, n_bytes: int) -> set[tuple[int, bytes]]:
    """All (exit status, stdout) pairs the binary produces over every ``n_bytes``-byte stdin."""
    return set(run_inputs(binary, domain(n_bytes)))
