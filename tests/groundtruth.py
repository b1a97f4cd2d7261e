"""Native ground truth for the tests: a sample binary's outcomes over its whole bounded input domain.

Running a binary over 65536 inputs takes seconds, and many tests compare with the same binary's
outcome set; the sets are therefore kept on disk next to the binaries (``samples/build/.groundtruth``,
removed by ``make clean``), keyed by the SHA-256 of the binary and of the fork server and by the
input domain: a rebuilt binary is run again, and xdist workers share one computation per binary.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import tempfile
from pathlib import Path

from bench.native import domain, run_inputs

__all__ = ["domain", "outcome_set", "outcome_set_over", "run_inputs"]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _cached(binary: str, spec: str, compute) -> set[tuple[int, bytes]]:
    b = Path(binary).resolve()
    store = b.parent / ".groundtruth"
    key = hashlib.sha256(f"{_digest(b)}:{_digest(b.parent / 'forkserver.so')}:{spec}".encode()).hexdigest()
    f = store / f"{b.name}.{key[:24]}.json"
    if f.is_file():
        return {(c, bytes.fromhex(o)) for c, o in json.loads(f.read_text())}
    result = compute()
    store.mkdir(exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=store, delete=False, suffix=".tmp") as t:
        json.dump(sorted([c, o.hex()] for c, o in result), t)
    os.replace(t.name, f)        # atomic: a concurrent worker reads a whole file or none
    return result


def outcome_set(binary: str, n_bytes: int) -> set[tuple[int, bytes]]:
    """All (exit status, stdout) pairs the binary produces over every ``n_bytes``-byte stdin."""
    return _cached(binary, f"stdin:all:{n_bytes}", lambda: set(run_inputs(binary, domain(n_bytes))))


def outcome_set_over(binary: str, alphabets) -> set[tuple[int, bytes]]:
    """All (exit status, stdout) pairs over the inputs whose byte ``i`` is drawn from
    ``alphabets[i]`` (for programs that only compare bytes with a few constants, one
    representative per class covers the whole domain)."""
    alphabets = [bytes(a) for a in alphabets]
    spec = "stdin:over:" + ",".join(a.hex() for a in alphabets)
    return _cached(binary, spec,
                   lambda: set(run_inputs(binary, [bytes(t) for t in itertools.product(*alphabets)])))
