"""Memory-semantics benchmark (``samples/semantics``): programs written for angr-ram from the
descriptions of public symbolic-execution test suites (KLEE's multiple free/realloc/write
resolution, symbolic sizes, lowered switches, array optimisation; the logic-bomb categories
symbolic memory, symbolic jump and input-dependent loops), stock angr beside each model.

The native oracle of each program is its domain (the input values per byte that cover every
behaviour): an input is *faulting* when the AddressSanitizer build reports an error or the native
program is killed by a signal, and the *clean* outcomes are the native outcomes of the others. Per
program and configuration the table shows time, finished paths, clean outcomes found, outcomes the
native program never has, error paths, whether every faulting input class is reported, and RSS.
"""

from __future__ import annotations

import itertools
import os
import subprocess
from pathlib import Path

from angr_ram.run.replay import ASAN_ENV

from . import sample_path
from .corpus import run
from .native import run_inputs

# name: (stdin bytes, the input values per byte that cover every behaviour, memory errors possible, what)
SEMANTICS = {
    "multifree": (1, range(8), True, "free() of one of three heap pointers or NULL, then every object read"),
    "freeall": (1, range(64), True, "free() of every bucket of a hash table, one holding the input's entry"),
    "multirealloc": (2, range(4), True, "realloc() of two heap, one stack pointer or NULL, size 0..12"),
    "stackoob": (1, range(256), True, "b[a[x]] with x in -4..4 over two 5-int stack arrays"),
    "calleeoob": (1, range(8), True, "a callee indexes its caller's 6-int stack array at -1..6"),
    "fpoob": (1, range(8), True, "call through a 3-entry function table at an index up to 3"),
    "fptable": (1, range(256), False, "call through a 4-entry function table at a symbolic index"),
    "cgoto": (1, range(10), False, "computed goto through a label table"),
    "switchjt": (1, range(256), False, "dense switch (jump table) over an input byte"),
    "usable": (2, range(40), False, "malloc_usable_size of one of three objects (one of symbolic size) or NULL"),
    "multiwrite": (2, range(12), False, "write through a pointer to one of three calloc'd arrays"),
    "symsize": (2, range(8), False, "malloc of a symbolic size, indexed inside and past it"),
    "tripcount": (1, range(12), False, "Collatz-style loop with an input-dependent trip count"),
    "table4000": (2, range(256), False, "a 4000-byte global table read at k and k - 1"),
    "bigstack": (2, range(256), False, "an 8 KiB stack table read at a 13-bit symbolic index"),
    "table64k": (2, range(256), False, "a 64 KiB .rodata table read at k and k ^ 0x8000"),
    # issue 83's shapes; a list gives each byte its own values (a domain that covers every outcome)
    "constidx": (32, [(0, 200)] + [(0,)] * 31, False,
                 "16 checked reads of an 8 KiB stack table i % 256 at input indices (KLEE's const-array test)"),
    "rotable": (2, [range(256), range(32)], False, "an 8 KiB .rodata table read at a folded index, then at its value"),
    "stackbomb": (2, [range(256), range(4)], False, "a 1024-int stack permutation: a[x], a[a[x]], 8 hops"),
    "foldhops": (4, [range(256), (0,), (0,), (0, 2, 4, 6)], False,
                 "3 dependent lookups in a 4 KiB .rodata int table, index folded from 4 input bytes"),
}
CONFIGS = (("stock", {"engine": "stock"}), ("fork", {"model": "fork"}), ("dsmm", {"model": "dsmm"}),
           ("ite", {"model": "ite"}))


def inputs(name: str) -> list[bytes]:
    n, alphabet, _, _ = SEMANTICS[name]
    per_byte = alphabet if isinstance(alphabet, list) else [alphabet] * n
    return [bytes(t) for t in itertools.product(*per_byte)]


def asan_reports(asan_binary: str, stdin: bytes) -> bool:
    """Whether the AddressSanitizer build reports an error on ``stdin``."""
    r = subprocess.run([os.path.abspath(asan_binary)], input=stdin, capture_output=True, timeout=20,
                       env=dict(os.environ, **ASAN_ENV))
    return b"ERROR: AddressSanitizer" in r.stderr


def native_truth(name: str, binary: str, asan_binary: str) -> tuple[set, set]:
    """(clean outcomes, faulting inputs) of ``binary`` over the program's domain."""
    ins = inputs(name)
    runs = dict(zip(ins, run_inputs(binary, ins), strict=True))
    bad = {i for i, (code, _) in runs.items() if code >= 128}
    if SEMANTICS[name][2]:
        bad |= {i for i in ins if asan_reports(asan_binary, i)}
    return {o for i, o in runs.items() if i not in bad}, bad


def semantics_table(names=None, opts=("O0", "O2"), timeout: float = 120.0, samples_dir: Path | None = None) -> None:
    """Print the table (one explore() per program, optimisation level and configuration, each in
    a subprocess)."""
    names = names or list(SEMANTICS)
    print(f"{'program':13} {'opt':3} {'setting':6} {'time s':>8} {'paths':>6} {'found':>7} {'wrong':>5} "
          f"{'errors':>6} {'faults':>6} {'RSS MB':>6}")
    for name in names:
        for opt in opts:
            b = sample_path(f"{name}_{opt}", samples_dir)
            clean, bad = native_truth(name, b, sample_path(f"{name}_asan", samples_dir))
            for label, kw in CONFIGS:
                r = run(b, timeout, stdin=SEMANTICS[name][0], **kw)
                found = len(r["outcomes"] & clean)
                wrong = len(r["outcomes"] - clean)
                t = f"{r['seconds']:8.1f}" + ("+" if r["timed_out"] else " ")
                faults = "-" if not bad else ("yes" if r["errors"] else "MISSED")
                rss = "-" if r.get("rss_mb") is None else r["rss_mb"]
                print(f"{name:13} {opt:3} {label:6} {t} {r['paths']:6} {found:>3}/{len(clean):<3} {wrong:5} "
                      f"{r['errors']:6} {faults:>6} {rss:>6}", flush=True)
    print("+ = stopped by the timeout; found = clean outcomes found (native outcomes of the inputs without a")
    print("memory error); wrong = outcomes of no clean input (a crash reported as an outcome counts here);")
    print("faults = inputs with a memory error (ASan or a signal) reported by an error path: yes / MISSED / - (none)")
