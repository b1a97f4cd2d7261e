"""Corpus benchmark: programs written independently of angr-ram (third-party libraries, programs
from a public specification, binary idioms), stock angr vs ``fork`` vs ``dsmm``.

Per program and configuration it prints wall time, finished paths, the outcomes found of those the
native program produces over its whole two-byte input domain, and error paths (every program here
is memory-safe, so any error path is a false one). A second table gives the time per number of
dependent table lookups (``hops``). Configurations run side by side, round-robin.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path

from ..runner import explore
from . import sample_path
from .native import outcome_set

# program -> what it is
CORPUS = {
    "uthash_find": "uthash HASH_FIND_INT (Jenkins hash), 24 entries",
    "jsonc_get": "json-c object lookup, 12 members (libjson-c.a)",
    "crc32_zlib": "zlib crc32 over 2 bytes (libz.a)",
    "aes_sbox": "two dependent AES S-box lookups (FIPS-197)",
    "bytecode": "accumulator bytecode interpreter, switch dispatch",
    "strspn_generic": "strspn/strcspn/strtok from the C standard",
    "lenmsg": "length-prefixed reader, malloc(len) + read(len)",
    "idioms": "alignment, pointer hashing, realloc, qsort/bsearch, lists",
    "tablecopy": "2 KiB table memcpy'd to the heap (rep movsq)",
    "hops3": "3 dependent lookups into a 4 KiB table",
}
CONFIGS = (("stock", {"engine": "stock"}), ("fork", {"model": "fork"}), ("dsmm", {"model": "dsmm"}))


def run(binary: str, timeout: float, **kw) -> dict:
    """One exploration of ``binary`` with two symbolic stdin bytes, in a subprocess killed after
    ``timeout`` seconds (a single z3 call can outlast the exploration's own timeout)."""
    t = time.perf_counter()
    cmd = [sys.executable, "-m", "angr_ram.bench.corpus", binary, json.dumps(kw), str(timeout)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout + 30, check=True).stdout
        r = json.loads(out.strip().splitlines()[-1])
        r["outcomes"] = {(c, bytes.fromhex(o)) for c, o in r["outcomes"]}
    except subprocess.TimeoutExpired:
        r = {"paths": 0, "outcomes": set(), "errors": 0, "timed_out": True, "z3": 0, "rss_mb": None}
    r["seconds"] = time.perf_counter() - t
    return r


def _one(binary: str, kw: dict, timeout: float) -> None:
    r = explore(binary, 2, timeout=timeout, **kw)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024     # KiB on Linux
    print(json.dumps({"paths": r.stats.get("paths", 0), "errors": len(r.errors), "timed_out": r.timed_out,
                      "z3": r.stats.get("z3_checks", 0), "rss_mb": round(rss),
                      "outcomes": sorted((c, o.hex()) for c, o in r.outcomes)}))


def corpus_table(names=None, opts=("O0", "O2"), timeout: float = 300.0, samples_dir: Path | None = None) -> None:
    """Print the corpus table and the hops table."""
    names = names or list(CORPUS)
    print(f"{'program':16} {'opt':3} {'setting':6} {'time s':>8} {'paths':>6} {'found':>7} {'errors':>6} {'RSS MB':>6}")
    for name in names:
        for opt in opts:
            b = sample_path(f"{name}_{opt}", samples_dir)
            truth = outcome_set(b, 2)
            for label, kw in CONFIGS:
                r = run(b, timeout, **kw)
                found = len(r["outcomes"] & truth)
                wrong = len(r["outcomes"] - truth)
                t = f"{r['seconds']:8.1f}" + ("+" if r["timed_out"] else " ")
                extra = f"  ({wrong} outcomes not native!)" if wrong else ""
                rss = "-" if r.get("rss_mb") is None else r["rss_mb"]
                print(f"{name:16} {opt:3} {label:6} {t} {r['paths']:6} {found:>3}/{len(truth):<3} {r['errors']:6} {rss:>6}{extra}",
                      flush=True)
    print()
    print("dependent lookups into a 4 KiB table (-O0): time per number of hops")
    print(f"{'hops':>4} {'stock s':>8} {'stock found':>11} {'fork s':>7} {'fork found':>10} {'z3 checks':>9}")
    for hops in (1, 3, 8):
        b = sample_path(f"hops{hops}_O0", samples_dir)
        truth = outcome_set(b, 2)
        s = run(b, timeout, engine="stock")
        f = run(b, timeout, model="fork")
        print(f"{hops:4} {s['seconds']:8.1f} {len(s['outcomes'] & truth):>5}/{len(truth):<5} "
              f"{f['seconds']:7.1f} {len(f['outcomes'] & truth):>4}/{len(truth):<5} {f['z3']:9}", flush=True)
    print("+ = stopped by the timeout; found = outcomes found of those the native program produces")


if __name__ == "__main__":
    _one(sys.argv[1], json.loads(sys.argv[2]), float(sys.argv[3]))
