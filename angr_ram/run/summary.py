"""What ``angr-ram run`` prints: a short summary a person reads, or every number as JSON.

The summary says what the run found: paths and the command's own time (loading the binary,
exploring, choosing the tests' inputs: what ``time`` measures, not only the exploration), the
outcomes by exit code then stdout (runs of exit codes with the same stdout on one line), how the
paths ended, what reached a find target and with which input, the error paths with their inputs,
and the tests written. The solver's and the memory model's counters are behind ``--stats``; the
JSON has all of it.
"""

from __future__ import annotations

import json
import os
import sys
import time

from angr_ram.core.profile import report

PRINTED_OUTCOMES = 32      # outcome lines the summary prints (--json has all)
PRINTED_ERRORS = 16        # error paths the summary prints (--json has all)

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_IMPORTED = time.time()


def process_seconds() -> float:
    """Seconds since this process started (the interpreter's own start-up and imports included),
    from ``/proc``; since this module was imported where that is not readable."""
    try:
        with open("/proc/self/stat") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return max(0.0, uptime - start_ticks / _CLOCK_TICKS)
    except (OSError, ValueError, IndexError):
        return time.time() - _IMPORTED


def by_exit_code(outcomes) -> list:
    """Outcomes in the order a person reads them: by exit code (no exit last), then stdout."""
    return sorted(outcomes, key=lambda o: (o[0] is None, o[0] if o[0] is not None else 0, o[1]))


def outcome_lines(outcomes) -> list[str]:
    """One line per outcome, by exit code then stdout; consecutive exit codes with the same stdout
    (a program that exits with its input) on one line as ``exit 3-97``."""
    codes: dict[bytes, list] = {}
    for code, out in outcomes:
        codes.setdefault(out, []).append(code)
    groups = []                    # (first code, last code, stdout)
    for out, cs in codes.items():
        if None in cs:
            groups.append((None, None, out))
        run: list[int] = []
        for c in sorted(c for c in cs if c is not None):
            if run and c != run[-1] + 1:
                groups.append((run[0], run[-1], out))
                run = []
            run.append(c)
        if run:
            groups.append((run[0], run[-1], out))
    groups.sort(key=lambda g: (g[0] is None, g[0] if g[0] is not None else 0, g[2]))
    return [f"  no exit: {out!r}" if first is None else
            f"  exit {first if first == last else f'{first}-{last}'}: {out!r}" for first, last, out in groups]


def _inputs_text(stdin: bytes, args: list, files: dict) -> str:
    parts = []
    if stdin:
        parts.append(f"stdin={stdin!r}")
    parts += [f"arg{k}={a!r}" for k, a in enumerate(args, start=1)]
    parts += [f"{name}={data!r}" for name, data in sorted(files.items())]
    return " ".join(parts) or "no input"


def json_report(res, wall: float) -> dict:
    """Every number of the run (``--json``)."""
    return {
        "outcomes": [{"exit": c, "stdout": o.decode("latin-1")} for c, o in by_exit_code(res.outcomes)],
        "endings": res.endings,
        "errors": [{"kind": k, "message": m, "stdin": s.hex() if s is not None else None}
                   for k, m, s in res.errors],
        "stats": res.stats, "seconds": round(res.seconds, 3), "command_seconds": round(wall, 3),
        "timed_out": res.timed_out, "stopped": res.stopped, "found": res.found,
        "found_inputs": [{"stdin": s.hex(), "args": [a.hex() for a in args],
                          "files": {k: v.hex() for k, v in files.items()}} for s, args, files in res.found_inputs],
        "unknown": res.unknown, "unfinished": res.unfinished, "beyond_max_paths": res.beyond_max_paths,
        "warnings": res.warnings,
        "tests": None if res.tests is None else len(res.tests), "tests_seconds": round(res.tests_seconds, 3),
        "tests_plain": res.tests_plain, "tests_unsolved": res.tests_unsolved,
        "tests_infeasible": res.tests_infeasible, "tests_unwritten": res.tests_unwritten, "profile": res.profile, "stubs": res.stubs,
        "environment": res.environment, "outcomes_partial": res.outcomes_partial,
        "outcomes_from_model": res.outcomes_from_model, "spilled": res.spilled, "spilled_left": res.spilled_left,
        "coverage": res.coverage,
    }


def summary_lines(res, binary: str, wall: float, tests_dir=None, full_stats: bool = False) -> list[str]:
    """The summary ``angr-ram run`` prints (``wall``: the command's seconds so far)."""
    parts = [f"exploring {res.seconds:.1f}s"]
    if res.tests is not None:
        parts.append(f"tests {res.tests_seconds:.1f}s")
    if res.stopped:
        parts.append(f"stopped: {res.stopped}")
    paths = res.stats.get("paths", 0)
    out = [f"{binary}: {paths} path{'s' if paths != 1 else ''} in {wall:.1f}s ({', '.join(parts)})"]
    listed = outcome_lines(res.outcomes)
    if listed:
        out.append("outcomes (exit code: stdout):")
        out += listed[:PRINTED_OUTCOMES]
        if len(listed) > PRINTED_OUTCOMES:
            out.append(f"  ... {len(listed) - PRINTED_OUTCOMES} more (all of them with --json)")
    if res.outcomes_partial:
        out.append(f"paths with more outcomes than listed: {res.outcomes_partial} (the output depends on the "
                   "input: some outcomes and one per exit code are listed; each path has its tests)"
                   + (f"; {res.outcomes_from_model} of them list only the outcome of the input that drives them "
                      "(z3 or the run's time ran out)" if res.outcomes_from_model else ""))
    out.append("paths by ending: " + (", ".join(f"{k}: {v}" for k, v in sorted(res.endings.items())) or "none"))
    cov = res.coverage
    if cov is not None:
        out.append(f"coverage: {cov['instructions_covered']} of {cov['instructions']} instructions "
                   f"({cov['percent']}%), {cov['blocks_covered']} of {cov['blocks']} blocks of main and the "
                   "functions it calls")
    if res.beyond_max_paths:
        out.append(f"paths beyond --max-paths: {res.beyond_max_paths} (they finished in the same step as the "
                   "last one counted; not reported, no tests)")
    if res.found:
        out.append(f"paths that reached a find target: {res.found}")
        for stdin, args, files in res.found_inputs:
            out.append(f"  input: {_inputs_text(stdin, args, files)}")
    if res.unknown:
        out.append(f"states set aside because z3 gave up: {res.unknown} (give a longer --solver-timeout-ms "
                   "or --timeout)")
    if res.unfinished:
        out.append(f"unfinished paths: {res.unfinished} (still running when the run stopped, or set aside; "
                   "each has a test with the input that drives the program there"
                   + (f"; {res.spilled_left} of them waited in spill files" if res.spilled_left else "")
                   + ")")
    if res.spilled:
        out.append(f"states spilled to disk to bound the live ones: {res.spilled}")
    if res.stubs:
        out.append("angr stubs called (no model: any return value, no effect; results through them may not "
                   "replay): " + ", ".join(f"{k} ({v} paths)" for k, v in sorted(res.stubs.items())))
    if res.environment:
        out.append("paths that depend on the symbolic environment (explored for each of its values; a native "
                   "run sees one; --environment fixed explores one clock and fixed random bytes): "
                   + ", ".join(f"{k} ({v} paths)" for k, v in sorted(res.environment.items())))
    if res.errors:
        out.append(f"error paths: {len(res.errors)}")
        for kind, msg, stdin in res.errors[:PRINTED_ERRORS]:
            out.append(f"  {kind}: {msg}  stdin={stdin!r}")
        if len(res.errors) > PRINTED_ERRORS:
            out.append(f"  ... {len(res.errors) - PRINTED_ERRORS} more (all of them with --json)")
    if res.tests is not None:
        out.append(f"tests: {len(res.tests)} written to {tests_dir} (replay: angr-ram replay {tests_dir} {binary})")
        short = [f"{n} {what}" for n, what in ((res.tests_plain, "with inputs not all made readable"),
                                               (res.tests_unsolved, "with unsolved (zero) inputs"),
                                               (res.tests_infeasible, "set-aside paths found infeasible"),
                                               (res.tests_unwritten, "spilled states without a test"))
                 if n]
        if short:
            out.append("tests out of time: " + ", ".join(short))
    if full_stats:
        out.append("stats:")
        out += [f"  {k} = {round(v, 3) if isinstance(v, float) else v}" for k, v in res.stats.items()]
    if res.profile is not None:
        out.append("profile (exclusive seconds while exploring):")
        out.append(report(res.profile))
    return out


RUN_REPORT = "run.json"


def write_run_report(report: dict, directory, binary: str) -> None:
    """Keep the run's numbers beside its tests (``DIR/run.json``) for :func:`stats_table`."""
    path = os.path.join(os.fspath(directory), RUN_REPORT)
    try:
        with open(path, "w") as f:
            json.dump({"binary": binary, **report}, f)
    except OSError as e:        # the tests are written; the table will say the report is missing
        print(f"angr-ram: cannot write {path}: {e.strerror}", file=sys.stderr)


def _stats_row(directory) -> tuple:
    path = os.path.join(os.fspath(directory), RUN_REPORT)
    try:
        with open(path) as f:
            r = json.load(f)
        stats = r["stats"]
    except (OSError, ValueError, KeyError, TypeError):
        return (os.fspath(directory), "no run.json (not written by angr-ram run --emit-tests)")
    cov = r.get("coverage") or {}
    secs = r.get("command_seconds") or r.get("seconds") or 0.0
    z3 = stats.get("z3_seconds", 0.0)
    return (os.fspath(directory), str(stats.get("paths", 0)), str(r.get("tests") or 0), str(len(r.get("errors", []))),
            f"{secs:.1f}", f"{cov['percent']:.1f}" if cov else "-",
            f"{100.0 * cov['blocks_covered'] / cov['blocks']:.1f}" if cov and cov.get("blocks") else "-",
            str(cov.get("instructions", "-")) if cov else "-", str(stats.get("z3_checks", 0)),
            f"{100.0 * z3 / secs:.1f}" if secs else "-", r.get("stopped") or "done")


def stats_table(directories) -> str:
    """A row per run directory: paths, tests, errors, seconds, instruction and block coverage
    (percent of main and the functions it calls), instructions there, z3 checks, the share of time
    in z3 and why the run stopped (klee-stats' Path, Instrs, Time, ICov, BCov, TSolver)."""
    head = ("directory", "paths", "tests", "errors", "seconds", "ICov%", "BCov%", "instrs", "z3 checks", "z3 %",
            "stopped")
    rows = [head] + [_stats_row(d) for d in directories]
    full = [r for r in rows if len(r) == len(head)]
    widths = [max(len(r[i]) for r in full) for i in range(len(head))]
    out = []
    for r in rows:
        if len(r) != len(head):
            out.append(f"{r[0]:<{widths[0]}}  {r[1]}")
        else:
            out.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))))
    return "\n".join(out)
