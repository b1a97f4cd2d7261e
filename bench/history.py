"""Process-history benchmark: does a run cost the same after other runs in the same process?

A user's IPython session, a test suite's worker or a script that loops over inputs runs many
explorations in one process. Each row runs a *follower* (a user's script: ``entry_state`` with one
wide ``claripy.BVS``, angr's default options, ``simgr.run()``) in a child process, alone and after
a *leader* run in that process (the leader's result dropped, as a script drops it). The table shows
the follower's wall time, its z3 seconds (angr-ram's ``solver_seconds``), the process's peak RSS
while the follower ran (sampled every 0.1 s) and how many objects the leader left behind (Python objects that survive a
garbage collection after it, compared with before it).
Target: the follower's peak RSS within 1.5x and its time within 1.5x of its run alone.
"""

from __future__ import annotations

import json
import subprocess
import sys

from . import sample_path

# name: (leader binary, leader stdin bytes, leader explore() arguments, what)
LEADERS = {
    "alone": None,
    "uthash-stopped": ("uthash_key4_O0", 4, {"timeout": 15, "defer_ms": 100},
                       "uthash lookup of a 4-byte key, stopped by its 15 s timeout"),
    "uthash-finished": ("uthash_key4_O0", 4, {"defer_ms": 300, "solver_timeout_ms": 600},
                        "the same lookup run to its end"),
}
# name: (binary, stdin bytes)
FOLLOWERS = {"matrix2x-16": ("matrix2x_O0", 16)}
RSS_RATIO = 1.5
TIME_RATIO = 1.5

_CHILD = r"""
import gc, json, sys, time
import angr, claripy
import angr_ram
from angr_ram.run.runner import explore
leader, follower, nbytes = json.loads(sys.argv[1])
def rss_mb():
    with open("/proc/self/status") as f:
        return int(f.read().split("VmRSS:")[1].split()[0]) / 1024
gc.collect()
before = len(gc.get_objects())
if leader is not None:
    r = explore(leader[0], leader[1], **leader[2])
    del r
    time.sleep(0.3)                 # a round of the guard's watcher thread
    gc.collect()
left = len(gc.get_objects()) - before
start_rss = rss_mb()
import threading
peak = [start_rss]
done = threading.Event()
def sample():
    while not done.wait(0.1):
        peak[0] = max(peak[0], rss_mb())
threading.Thread(target=sample, daemon=True).start()
proj = angr.Project(follower, auto_load_libs=False)
stdin = angr.SimFileStream(name="stdin", content=claripy.BVS("stdin", 8 * nbytes), size=nbytes, has_end=True)
simgr = proj.factory.simulation_manager(proj.factory.entry_state(stdin=stdin))
simgr.use_technique(angr_ram.RelocatableMemory())
t0 = time.perf_counter()
simgr.run()
wall = time.perf_counter() - t0
st = angr_ram.stats(simgr)
done.set()
peak[0] = max(peak[0], rss_mb())
print(json.dumps({"wall": wall, "z3": st["solver_seconds"], "paths": st["paths"], "left": left,
                  "peak_mb": peak[0], "start_mb": start_rss}))
"""


def history_rows(samples_dir=None, kill_after: float = 900.0) -> list[dict]:
    """One row per (follower, leader): the follower's cost in a child process after the leader."""
    rows = []
    for fname, (fbin, nbytes) in FOLLOWERS.items():
        for lname, leader in LEADERS.items():
            spec = None if leader is None else [sample_path(leader[0], samples_dir), leader[1], leader[2]]
            arg = json.dumps([spec, sample_path(fbin, samples_dir), nbytes])
            try:
                out = subprocess.run([sys.executable, "-c", _CHILD, arg], capture_output=True, text=True,
                                     timeout=kill_after)
                res = json.loads(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 else None
                err = None if res is not None else (out.stderr.strip().splitlines() or ["?"])[-1][:80]
            except subprocess.TimeoutExpired:
                res, err = None, f"killed after {kill_after:.0f} s"
            rows.append({"follower": fname, "leader": lname, "result": res, "error": err})
    return rows


def format_history(rows: list[dict]) -> str:
    head = f"{'follower':<12} {'after':<16} {'wall s':>7} {'z3 s':>6} {'paths':>6} {'peak MB':>8} " \
           f"{'left objs':>10} {'vs alone':>18}"
    lines = [head, "-" * len(head)]
    alone = {r["follower"]: r["result"] for r in rows if r["leader"] == "alone" and r["result"]}
    for r in rows:
        res = r["result"]
        if res is None:
            lines.append(f"{r['follower']:<12} {r['leader']:<16} {r['error']}")
            continue
        base = alone.get(r["follower"])
        vs = ""
        if base is not None and r["leader"] != "alone":
            grow = res["peak_mb"] / max(1.0, base["peak_mb"])
            t = res["wall"] / max(0.1, base["wall"])
            ok = grow <= RSS_RATIO and t <= TIME_RATIO
            vs = f"{t:.1f}x t {grow:.1f}x mem {'ok' if ok else 'OVER'}"
        lines.append(f"{r['follower']:<12} {r['leader']:<16} {res['wall']:7.1f} {res['z3']:6.1f} {res['paths']:6d} "
                     f"{res['peak_mb']:8.0f} {res['left']:10d} {vs:>18}")
    return "\n".join(lines)


def history_table(samples_dir=None) -> int:
    """Print the process-history table (``angr-ram bench --history``)."""
    print(__doc__.strip().splitlines()[0])
    print(format_history(history_rows(samples_dir)))
    return 0
