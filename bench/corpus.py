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

from angr_ram.run.outcomes import path_outcomes
from angr_ram.run.runner import explore

from . import child_env, run_child, sample_path
from .models import geomean
from .native import outcome_set

# program -> what it is
CORPUS = {
    "uthash_find": "uthash HASH_FIND_INT (Jenkins hash), 24 entries",
    "jsonc_get": "json-c object lookup, 12 members (libjson-c.a)",
    "glib_hash": "glib GHashTable lookup, 12 string keys (libglib-2.0.a)",
    "apr_hash": "APR apr_hash_get, 12 string keys in a pool (libapr-1.a)",
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
# programs that seed a hash from getrandom/time: also in the fixed environment (plugins/environment.py),
# stock angr with the same environment model, and angr's own string procedures for comparison
FIXED = {"environment": "fixed"}
EXTRA = {"jsonc_get": (("stock/fx", {"engine": "stock", **FIXED}), ("fork/fx", {"model": "fork", **FIXED}),
                       ("dsmm/fx", {"model": "dsmm", **FIXED}),
                       ("fork/fx/angr-str", {"model": "fork", "string_procedures": False, **FIXED})),
         "apr_hash": (("stock/fx", {"engine": "stock", **FIXED}), ("fork/fx", {"model": "fork", **FIXED}),
                      ("dsmm/fx", {"model": "dsmm", **FIXED}))}


def run(binary: str, timeout: float, stdin: int = 2, times: bool = False, **kw) -> dict:
    """One exploration of ``binary`` with ``stdin`` symbolic stdin bytes, in a subprocess killed
    30 s after ``timeout`` (stock angr's z3 calls can outlast the exploration's own timeout);
    ``times``: also when each outcome was first reached (an extra outcome extraction per path)."""
    t = time.perf_counter()
    cmd = [sys.executable, "-m", "bench.corpus", binary, json.dumps(kw), str(timeout), str(stdin), str(int(times))]
    try:
        out = run_child(cmd, timeout + 30, child_env(), check=True).stdout
        r = json.loads(out.strip().splitlines()[-1])
        r["outcomes"] = {(c, bytes.fromhex(o)) for c, o in r["outcomes"]}
        r["first_seen"] = {(c, bytes.fromhex(o)): sec for c, o, sec in r["first_seen"]}
    except subprocess.TimeoutExpired:
        r = {"paths": 0, "outcomes": set(), "errors": 0, "timed_out": True, "z3": 0, "rss_mb": None,
             "first_seen": {}, "unknown": 0, "killed": True}
    r["seconds"] = time.perf_counter() - t
    return r


def _one(binary: str, kw: dict, timeout: float, stdin: int = 2, times: bool = False) -> None:
    t0, first, done = time.perf_counter(), {}, [0]

    def seen(simgr):                     # when each outcome was first reached
        new, done[0] = simgr.deadended[done[0]:], len(simgr.deadended)
        for s in new:
            for oc in path_outcomes(s):
                first.setdefault(oc, time.perf_counter() - t0)

    r = explore(binary, stdin, timeout=timeout, progress=seen if times else None, **kw)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024     # KiB on Linux
    print(json.dumps({"paths": r.stats.get("paths", 0), "errors": len(r.errors), "timed_out": r.timed_out,
                      "z3": r.stats.get("z3_checks", 0), "rss_mb": round(rss), "unknown": r.unknown,
                      "outcomes": sorted((c, o.hex()) for c, o in r.outcomes),
                      "first_seen": sorted((c, o.hex(), round(t, 1)) for (c, o), t in first.items())}))


DEFAULT_LABEL = "fork"      # the configuration RelocatableMemory() gets with no arguments


def stock_complete(r: dict, truth: set) -> bool:
    """Whether stock angr's run ``r`` explored the program completely: it finished, reached every
    native outcome and reported nothing the native program does not do."""
    return not r["timed_out"] and r["outcomes"] == truth and not r["errors"]


def print_default_vs_stock(rows: list[tuple[str, dict, dict]]) -> None:
    """Time and peak-memory ratios of the default configuration to stock angr on the programs
    that stock angr explores completely, and their geometric means (issue targets: time at most
    1.2x per program and 1x in geometric mean, RSS at most 1.5x)."""
    import math

    print(f"default ({DEFAULT_LABEL}) against stock angr where stock angr explores completely:")
    print(f"{'program':20} {'stock s':>8} {'default s':>9} {'time x':>7} {'stock MB':>8} {'default MB':>10} {'RSS x':>6}")
    times, mems = [], []
    for row, s, d in rows:
        tx = d["seconds"] / s["seconds"] if not d["timed_out"] else float("inf")
        mx = (d["rss_mb"] / s["rss_mb"]) if d.get("rss_mb") and s.get("rss_mb") else float("nan")
        times.append(tx)
        if not math.isnan(mx):
            mems.append(mx)
        print(f"{row:20} {s['seconds']:8.1f} {d['seconds']:9.1f} {tx:7.2f} {s.get('rss_mb') or '-':>8} "
              f"{d.get('rss_mb') or '-':>10} {mx:6.2f}")
    print(f"{len(rows)} programs: time x max {max(times, default=float('nan')):.2f}, geometric mean "
          f"{geomean(times):.2f}; RSS x max {max(mems, default=float('nan')):.2f}, geometric mean {geomean(mems):.2f}")


def corpus_table(names=None, opts=("O0", "O2"), timeout: float = 300.0, samples_dir: Path | None = None) -> None:
    """Print the corpus table and the hops table."""
    names = names or list(CORPUS)
    print(f"{'program':16} {'opt':3} {'setting':16} {'time s':>8} {'paths':>6} {'found':>7} {'errors':>6} {'RSS MB':>6}")
    complete: list[tuple[str, dict, dict]] = []     # (row, stock's run, the default's run)
    for name in names:
        for opt in opts:
            b = sample_path(f"{name}_{opt}", samples_dir)
            truth = outcome_set(b, 2)
            runs = {}
            for label, kw in CONFIGS + EXTRA.get(name, ()):
                r = runs[label] = run(b, timeout, **kw)
                found = len(r["outcomes"] & truth)
                wrong = len(r["outcomes"] - truth)
                t = f"{r['seconds']:8.1f}" + ("+" if r["timed_out"] else " ")
                extra = f"  ({wrong} outcomes not native!)" if wrong else ""
                rss = "-" if r.get("rss_mb") is None else r["rss_mb"]
                print(f"{name:16} {opt:3} {label:16} {t} {r['paths']:6} {found:>3}/{len(truth):<3} {r['errors']:6} {rss:>6}{extra}",
                      flush=True)
            if stock_complete(runs["stock"], truth):
                complete.append((f"{name} {opt}", runs["stock"], runs[DEFAULT_LABEL]))
    print()
    print_default_vs_stock(complete)
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
    print("+ = stopped by the timeout; found = outcomes found of those the native program produces;")
    print("/fx = fixed environment (getrandom, clocks); /angr-str = angr's string procedures")
    print()
    keyfind_table(timeout=min(timeout, 60.0), samples_dir=samples_dir)


def key4_truth(binary: str) -> set:
    """Outcomes of ``uthash_key4``: its 24 stored keys (the program's own generator) and one absent
    key, run natively; every other input behaves like the absent key."""
    keys, k = [], 0x12345678
    for _ in range(24):
        k = (k * 1103515245 + 12345) & 0xFFFFFFFF
        keys.append(k)
    absent = next(x for x in range(1, 100) if x not in keys)
    outs = set()
    for key in [*keys, absent]:
        p = subprocess.run([binary], input=key.to_bytes(4, "little"), capture_output=True, timeout=10)
        outs.add((p.returncode, p.stdout))
    return outs


def keyfind_table(timeout: float = 60.0, samples_dir: Path | None = None) -> None:
    """Print, for uthash's lookup of a four-byte key (Jenkins hash), when each outcome was first reached."""
    print(f"uthash HASH_FIND_INT of a 4-byte key (2^32 inputs): seconds to each outcome, run stopped at {timeout:.0f} s")
    print(f"{'opt':3} {'setting':6} {'not found':>9} {'value<12':>8} {'value>=12':>9} {'paths':>6} {'unknown':>7} {'errors':>6}")
    for opt in ("O0", "O2"):
        b = sample_path(f"uthash_key4_{opt}", samples_dir)
        truth = key4_truth(b)
        for label, kw in CONFIGS:
            r = run(b, timeout, stdin=4, times=True, **kw)
            cells = [r["first_seen"].get((code, b""), None) for code in (2, 3, 4)]
            cells = ["-" if c is None else f"{c:.1f}" for c in cells]
            wrong = r["outcomes"] - truth
            extra = f"  ({len(wrong)} outcomes not native!)" if wrong else ""
            if r.get("killed"):
                extra += f"  (killed {timeout + 30:.0f} s after the start: a z3 call outlasted the timeout)"
            print(f"{opt:3} {label:6} {cells[0]:>9} {cells[1]:>8} {cells[2]:>9} {r['paths']:6} {r['unknown']:7} "
                  f"{r['errors']:6}{extra}", flush=True)
    print("- = not reached; unknown = paths set aside undecided (the hash would have to be inverted)")


if __name__ == "__main__":
    _one(sys.argv[1], json.loads(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1")
