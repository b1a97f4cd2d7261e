"""Run-limits benchmark (``samples/limits`` and the hard shapes of the corpus): does every run end
on time and keep what it found?

Each program is run by the CLI in its own process (``angr-ram run --json --emit-tests DIR``) with
``--timeout 10``, with ``--timeout 30``, and with a long timeout and SIGINT (the user's Ctrl-C)
5 s after the process started. Per run the table shows the process's wall time, the seconds from
the start of exploration to the end of writing tests (``run s``) and how far that is past the
limit, the process's peak RSS, finished paths, error paths, unfinished paths (active when the run
stopped, set aside, waiting to merge), the tests written and whether every path has one.
Targets: back within the limit + 2 s, RSS under 1.5 GiB, a test for every path.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time

from . import sample_path

# name: (binary, CLI arguments, what)
LIMITS = {
    "heapchase-O0": ("heapchase_O0", ["--stdin-bytes", "2"], "6 hops p += *p in a 2 KiB heap buffer filled by inlined memcpy"),
    "heapchase-O2": ("heapchase_O2", ["--stdin-bytes", "2"], "the same at -O2"),
    "heapchase-dsmm": ("heapchase_O0", ["--stdin-bytes", "2", "--model", "dsmm"], "the same under dsmm"),
    "stackchase": ("stackchase_O0", ["--stdin-bytes", "1"], "a[a[a[...]]] through an 11-int stack array"),
    "uthash-key4": ("uthash_key4_O0", ["--stdin-bytes", "4"], "uthash lookup of a 4-byte key"),
    "uthash-key4-dsmm": ("uthash_key4_O0", ["--stdin-bytes", "4", "--model", "dsmm"], "the same under dsmm"),
    "tablehops8-O0": ("tablehops8_O0", ["--stdin-bytes", "4"], "8 dependent lookups in a 4 KiB table, 4-byte input"),
    "tablehops8-O2": ("tablehops8_O2", ["--stdin-bytes", "4"], "the same at -O2"),
    "hashcheck": ("hashcheck_O0", ["--stdin-bytes", "8"], "FNV-1a of 8 bytes compared with constants"),
    "spin": ("spin_O0", ["--stdin-bytes", "2"], "an input that makes the program loop forever"),
    "collatz": ("collatz_O0", ["--arg", "1"], "Collatz walk from a symbolic argv byte"),
    "serial-100ms": ("serial_O0", ["--arg", "5", "--solver-timeout-ms", "100"], "serial check, 100 ms per z3 call (the least the CLI takes)"),
    "symsize-O2": ("symsize_O2", ["--stdin-bytes", "2"], "malloc of a symbolic size at -O2"),
}
MODES = (("timeout 10", 10.0, None), ("timeout 30", 30.0, None), ("Ctrl-C at 5 s", 120.0, 5.0))
RSS_TARGET_MB = 1536
OVER_TARGET_S = 2.0


def run_limited(binary: str, args: list[str], timeout: float, sigint_after: float | None,
                kill_after: float = 300.0) -> dict:
    """One CLI run in a child process: its JSON summary plus ``wall``, ``rss_mb``, ``status`` and
    ``tests_on_disk`` (manifest lines)."""
    with tempfile.TemporaryDirectory(prefix="angr-ram-limits-") as tmp:
        out_dir = os.path.join(tmp, "tests")
        cmd = [sys.executable, "-m", "angr_ram.run.cli", "run", binary, *args, "--timeout", str(timeout),
               "--json", "--emit-tests", out_dir]
        t0 = time.perf_counter()
        with open(os.path.join(tmp, "out"), "w+b") as out:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL)
            sent = False
            status = rusage = None
            while status is None:
                pid, st, ru = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    status, rusage = st, ru
                    break
                now = time.perf_counter() - t0
                if sigint_after is not None and not sent and now >= sigint_after:
                    proc.send_signal(signal.SIGINT)
                    sent = True
                if now > kill_after:
                    proc.kill()
                time.sleep(0.02)
            proc.returncode = os.waitstatus_to_exitcode(status)
            wall = time.perf_counter() - t0
            out.seek(0)
            text = out.read().decode("utf-8", "replace")
        try:
            res = json.loads(text[text.index("{"):])
        except ValueError:
            res = {}
        manifest = os.path.join(out_dir, "tests.jsonl")
        kinds: dict[str, int] = {}
        if os.path.isfile(manifest):
            with open(manifest) as f:
                for line in f:
                    if line.strip():
                        k = json.loads(line)["kind"]
                        kinds[k] = kinds.get(k, 0) + 1
    res.update(wall=wall, rss_mb=rusage.ru_maxrss / 1024, status=proc.returncode,
               tests_on_disk=sum(kinds.values()), test_kinds=kinds)
    return res


def limits_rows(names=None, samples_dir=None, modes=MODES) -> list[dict]:
    """Run every program of :data:`LIMITS` (or ``names``) in every mode; one dict per run."""
    rows = []
    for name in names or LIMITS:
        binary, args, _ = LIMITS[name]
        path = sample_path(binary, samples_dir)
        for mode, timeout, sigint in modes:
            r = run_limited(path, args, timeout, sigint)
            limit = sigint if sigint is not None else timeout
            run_s = r.get("seconds", float("nan")) + r.get("tests_seconds", 0.0)
            paths = r.get("stats", {}).get("paths", 0)
            errors = len(r.get("errors", []))
            unfinished = r.get("unfinished", 0)
            rows.append({
                "program": name, "mode": mode, "limit": limit, "status": r["status"], "wall": r["wall"],
                "run_s": run_s, "stopped": r.get("stopped"), "rss_mb": r["rss_mb"], "paths": paths,
                "errors": errors, "unfinished": unfinished, "tests": r["tests_on_disk"],
                "kinds": r["test_kinds"], "plain": r.get("tests_plain", 0), "unsolved": r.get("tests_unsolved", 0),
                # a test per path: every finished path (one or more), error path and unfinished path
                "covered": r["tests_on_disk"] >= paths + errors + unfinished - r.get("tests_infeasible", 0)
                and bool(r.get("stats")),
            })
    return rows


def format_limits(rows: list[dict]) -> str:
    head = ("program", "mode", "stopped", "wall s", "run s", "over s", "RSS MB", "paths", "errors",
            "unfinished", "tests", "per path")
    lines = [head]
    for r in rows:
        over = r["run_s"] - r["limit"] if r["stopped"] in ("timeout", "interrupted") else 0.0
        if r["mode"].startswith("Ctrl-C") and r["stopped"] == "interrupted":
            over = r["wall"] - r["limit"]      # measured from the signal, which counts from process start
        lines.append((r["program"], r["mode"], str(r["stopped"] or "done"), f"{r['wall']:.1f}", f"{r['run_s']:.1f}",
                      f"{over:+.1f}", f"{r['rss_mb']:.0f}", str(r["paths"]), str(r["errors"]), str(r["unfinished"]),
                      str(r["tests"]), "yes" if r["covered"] else "NO"))
        r["over"] = over
    widths = [max(len(row[i]) for row in lines) for i in range(len(head))]
    text = ["  ".join(c.rjust(w) if i >= 3 else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True)))
            for row in lines]
    late = [r for r in rows if r["over"] > OVER_TARGET_S]
    fat = [r for r in rows if r["rss_mb"] > RSS_TARGET_MB]
    uncovered = [r for r in rows if not r["covered"]]
    text.append("")
    text.append(f"runs: {len(rows)}; back later than the limit + {OVER_TARGET_S:g} s: {len(late)}"
                + (f" ({', '.join(r['program'] + '/' + r['mode'] for r in late)})" if late else "")
                + f"; RSS over {RSS_TARGET_MB} MB: {len(fat)}"
                + (f" ({', '.join(r['program'] + '/' + r['mode'] for r in fat)})" if fat else "")
                + f"; without a test per path: {len(uncovered)}"
                + (f" ({', '.join(r['program'] + '/' + r['mode'] for r in uncovered)})" if uncovered else ""))
    return "\n".join(text)


def limits_table(names=None, samples_dir=None) -> int:
    """Print the run-limits table (``angr-ram bench --limits``)."""
    print(__doc__.strip().splitlines()[0])
    for name in names or LIMITS:
        if name not in LIMITS:
            print(f"unknown limits program {name!r}; known: {', '.join(LIMITS)}", file=sys.stderr)
            return 2
    print(format_limits(limits_rows(names, samples_dir)))
    return 0
