"""Drives benchmark: the same program driven three ways, side by side.

* ``explore``: :func:`angr_ram.run.runner.explore` (what the CLI runs): one variable per input byte;
* ``wide``: a user's script: ``entry_state`` with stdin one ``claripy.BVS`` of all the bytes,
  angr's default state options, ``RelocatableMemory()`` (and ``QuantifiedMerging``) attached;
* ``bytes``: the same script with one ``claripy.BVS`` per byte;
* ``symbolic`` (shown beside them, not one of the three): the ``wide`` script with
  ``RelocatableMemory(uninitialized="symbolic")``: unwritten memory and registers are any content
  (stable variables) instead of the default zeros; its time over the fastest drive's is shown.

Each run is a child process (its own peak RSS), killed at the time limit. Per program the table
shows each drive's seconds, finished paths, outcomes and RSS, and the slowest drive's time over
the fastest's. Targets (issue: the same speed however angr-ram is driven): that ratio at most 1.5
on every program and 1.2 in geometric mean; a 4-byte-input three-hop lookup within 2x of the
2-byte one; eight hops under 30 s for every input width.
"""

from __future__ import annotations

import json
import math
import os
import resource
import subprocess
import sys
import time

from . import child_env, run_child, sample_path

DRIVES = ("explore", "wide", "bytes")
EXTRA = ("symbolic",)

# name: (binary, stdin bytes, merging mode or None, what)
PROGRAMS = {
    **{f"hops{w}x{h}-{o}": (f"hopsw{w}x{h}_{o}", w, None, f"{h} dependent lookups, index folded from {w} bytes")
       for h in (3, 8) for w in (2, 4, 8) for o in ("O0", "O2")},
    "matrix2x-O0": ("matrix2x_O0", 16, None, "two [i][j] lookups in a 20x20 calloc'd matrix, 4-byte indices"),
    "matrix2x-O2": ("matrix2x_O2", 16, None, "the same at -O2"),
    **{f"{p}{m}-pat": (f"{p}{m}_O0", m + 1, "pat", f"loop corpus {p} at M = {m}, pattern merging")
       for p in ("wordcount", "c_strspn", "b64class") for m in (8, 12)},
    **{f"heapuninit-{o}": (f"heapuninit_{o}", 4, None, "reads of a malloc'd block one byte of which was written")
       for o in ("O0", "O2")},
    **{f"uthash4-{o}": (f"uthash_key4_{o}", 4, None, "uthash lookup of a 4-byte key: 24 branches only an inverted "
                        "hash decides (second pass, then unknown)") for o in ("O0", "O2")},
}


def _child(drive: str, binary: str, nbytes: int, merge: str | None) -> dict:
    import angr
    import claripy

    import angr_ram
    from angr_ram.run.runner import explore, summarize

    t0 = time.perf_counter()
    if drive == "explore":
        r = explore(binary, nbytes, merge=merge, merge_points="auto" if merge else ())
    else:
        proj = angr.Project(binary, auto_load_libs=False)
        if drive in ("wide", "symbolic"):
            content = claripy.BVS("stdin", 8 * nbytes)
        else:
            parts = [claripy.BVS(f"stdin_byte{k}", 8) for k in range(nbytes)]
            content = parts[0] if nbytes == 1 else claripy.Concat(*parts)
        state = proj.factory.entry_state(stdin=angr.SimFileStream(name="stdin", content=content, size=nbytes,
                                                                  has_end=True))
        simgr = proj.factory.simulation_manager(state)
        tech = simgr.use_technique(angr_ram.RelocatableMemory(
            **({"uninitialized": "symbolic"} if drive == "symbolic" else {})))
        if merge:
            simgr.use_technique(angr_ram.QuantifiedMerging(mode=merge, merge_points="auto"))
        simgr.run()
        r = summarize(simgr, tech)
    return {"seconds": time.perf_counter() - t0, "paths": r.stats.get("paths", 0),
            "outcomes": sorted([c, o.hex()] for c, o in r.outcomes if c is not None),
            "errors": len(r.errors), "unknown": r.unknown,
            "enumerated": r.stats.get("enumerated_queries", 0), "z3": r.stats.get("z3_checks", 0),
            "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def run_drive(drive: str, binary: str, nbytes: int, merge: str | None, timeout: float) -> dict:
    """One drive of one program in a child process; ``{"timeout": True}`` if it was killed."""
    cmd = [sys.executable, "-m", "bench.drives", "--child", drive, binary, str(nbytes), merge or "-"]
    t0 = time.perf_counter()
    try:
        p = run_child(cmd, timeout, child_env())
    except subprocess.TimeoutExpired:
        return {"timeout": True, "seconds": time.perf_counter() - t0}
    for line in reversed(p.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return {"failed": (p.stderr.strip().splitlines() or ["no output"])[-1][:120], "seconds": time.perf_counter() - t0}


def drives_rows(names=None, samples_dir=None, timeout: float = 300.0) -> list[dict]:
    rows = []
    for name in names or PROGRAMS:
        binary, nbytes, merge, _ = PROGRAMS[name]
        path = sample_path(binary, samples_dir)
        row = {"program": name, "drives": {}}
        for d in (*DRIVES, *EXTRA):
            row["drives"][d] = run_drive(d, path, nbytes, merge, timeout)
        rows.append(row)
    return rows


def _cell(r: dict) -> str:
    if r.get("failed") == "not run":
        return "-"
    if r.get("timeout"):
        return f">{r['seconds']:.0f}s"
    if r.get("failed"):
        return "failed"
    unknown = f" {r['unknown']}u" if r.get("unknown") else ""
    return f"{r['seconds']:.1f}s {r['paths']}p {len(r['outcomes'])}o{unknown} {r['rss_mb']:.0f}MB"


def format_drives(rows: list[dict]) -> str:
    head = ("program", *DRIVES, "slowest/fastest", "same outcomes", *EXTRA, "symbolic/fastest")
    lines = [head]
    ratios = []
    for row in rows:
        ds = row["drives"]
        secs = [ds[d]["seconds"] for d in DRIVES]
        done = all(not ds[d].get("timeout") and not ds[d].get("failed") for d in DRIVES)
        ratio = max(secs) / min(secs) if min(secs) > 0 else float("inf")
        row["ratio"] = ratio if done else float("inf")
        ratios.append(row["ratio"])
        same = done and len({json.dumps(ds[d]["outcomes"]) for d in DRIVES}) == 1 and all(
            ds[d]["unknown"] == 0 for d in DRIVES)
        row["same"] = same
        sym = ds.get("symbolic", {"failed": "not run"})
        sym_done = done and not sym.get("timeout") and not sym.get("failed")
        lines.append((row["program"], *[_cell(ds[d]) for d in DRIVES],
                      f"{ratio:.2f}" if done else "-", "yes" if same else "NO", _cell(sym),
                      f"{sym['seconds'] / min(secs):.2f}" if sym_done and min(secs) > 0 else "-"))
    widths = [max(len(x[i]) for x in lines) for i in range(len(head))]
    text = ["  ".join(c.ljust(w) for c, w in zip(x, widths, strict=True)) for x in lines]
    finite = [r for r in ratios if math.isfinite(r)]
    geo = math.exp(sum(math.log(r) for r in finite) / len(finite)) if finite else float("nan")
    text.append("")
    text.append(f"slowest/fastest: geometric mean {geo:.2f} (target 1.2), max "
                f"{max(ratios) if ratios else float('nan'):.2f} (target 1.5); "
                f"programs over 1.5: {sum(1 for r in ratios if r > 1.5)}; "
                f"outcomes differing or undecided: {sum(1 for r in rows if not r['same'])}")
    by = {r["program"]: r for r in rows}
    for o in ("O0", "O2"):
        a, b = by.get(f"hops2x3-{o}"), by.get(f"hops4x3-{o}")
        if a and b:
            slow = max(b["drives"][d]["seconds"] for d in DRIVES)
            fast = max(a["drives"][d]["seconds"] for d in DRIVES)
            text.append(f"three hops at {o}, 4-byte over 2-byte input (slowest drives): {slow / fast:.2f} (target 2)")
    eight = [(r["program"], max(r["drives"][d]["seconds"] for d in DRIVES)) for r in rows if "x8-" in r["program"]]
    if eight:
        worst = max(eight, key=lambda x: x[1])
        text.append(f"eight hops, slowest drive: {worst[1]:.1f} s ({worst[0]}; target 30 s)")
    return "\n".join(text)


def drives_table(names=None, samples_dir=None, timeout: float = 300.0) -> int:
    """Print the drives table (``angr-ram bench --drives``)."""
    print(__doc__.strip().splitlines()[0])
    for name in names or ():
        if name not in PROGRAMS:
            print(f"unknown drives program {name!r}; known: {', '.join(PROGRAMS)}", file=sys.stderr)
            return 2
    print(format_drives(drives_rows(names, samples_dir, timeout)))
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "--child":
        import logging
        logging.disable(logging.WARNING)
        _, _, drive, binary, n, merge = sys.argv
        print(json.dumps(_child(drive, binary, int(n), None if merge == "-" else merge)))
        sys.stdout.flush()
        os._exit(0)
    sys.exit(drives_table(sys.argv[1:] or None))
