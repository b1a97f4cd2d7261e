"""Subjects benchmark: the seed papers' evaluation subjects at binary level (issue 45 item 4).

Each subject is a driver of our own that calls a library's public API as the seeds' drivers do
(samples/subjects: libyaml's scanner, expat, libosip's parser, libxml2's HTML parser, SQLite's
trigger creation), statically linked against Debian's ``-dev`` package, run on a KLEE-style
template under stock angr, angr-ram's default (``fork``), ``dsmm``, address-aware caching
(``aa``), ``fork`` in the fixed environment (``fixed``), a user's script (``script``), and ``fork``
and the script with every block on angr's VEX engine (``vex``, ``scrvex``: concrete blocks on ints
off), each in a child process with a time budget. Per run: seconds (``+``: stopped by the budget), finished
paths, the outcomes found of those the native driver gives over the template's domain, z3 checks,
error paths, peak RSS, and tests whose native replay contradicts them.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import resource
import sys
import time
from pathlib import Path

from angr_ram.core.errors import AngrRamError
from angr_ram.run.concrete_steps import angr_blocks
from angr_ram.run.inputs import Template
from angr_ram.run.replay import replay
from angr_ram.run.runner import explore

from . import child_result, sample_path, unknown_name
from .native import run_inputs

MAX_NATIVE = 250_000    # a template with more inputs than this gets no native outcome set

# name: (binary, template, low, high, what)
SUBJECTS = {
    "yaml-2": ("yaml_scan_O2", b"??", "A", "z", "libyaml yaml_parser_scan loop, 2 bytes"),
    "yaml-3": ("yaml_scan_O2", b"???", "A", "z", "libyaml yaml_parser_scan loop, 3 bytes"),
    "expat-2": ("expat_parse_O2", b"??", "A", "z", "expat XML_Parse, hash salt 17, 2 bytes"),
    "expat-4": ("expat_parse_O2", b"<??>", "A", "z", "expat XML_Parse of an element tag, 2 bytes"),
    "osip-req": ("osip_parse_O2", b"?NVITE sip:a@? SIP/2.0\r\n\r\n", "A", "z",
                 "libosip osip_message_parse, method and host bytes"),
    "osip-status": ("osip_parse_O2", b"SIP/2.0 ?0? OK\r\n\r\n", "0", "9", "libosip, two status digits"),
    "html-2": ("html_parse_O0", b"??", "A", "z", "libxml2 htmlParseDocument, 2 bytes"),
    "html-4": ("html_parse_O0", b"<?>?", "A", "z", "libxml2 htmlParseDocument of an element, 2 bytes"),
    "sqlite-1": ("sqlite_trigger_O2", b"?", "A", "z", "SQLite: a table, one trigger, then a trigger named by 1 byte"),
    # Debian's own binaries (an absolute path): m4 with the papers' symbol-table templates, and
    # programs whose output echoes their input
    "m4-1": ("/usr/bin/m4", b"define(`a',1)\n?\n", "A", "z", "Debian m4: a define, then a symbolic line"),
    "m4-2": ("/usr/bin/m4", b"define(`a',1)\n?\ndefine(`b',2)\n?\n", "A", "z",
             "Debian m4, the AAQC paper's input: two defines, two symbolic lines"),
    # the papers' make input: variables defined, then one whose value names a variable by a symbolic
    # byte (a lookup in make's variable hash table); a rule prints them (-n: not run). Names a..z:
    # the native process's environment (``_``, the shell's last command) is not the analysis's
    "make-1": ("/usr/bin/make", b"a := glar\nb := blor\nd := $?\ne := $b\nall: ; @echo $(d)$(e)\n", "a", "z",
               "Debian make -r -n -R -f A: the papers' variables, one named by a symbolic byte"),
    "base64-2": ("/usr/bin/base64", b"??", "A", "z", "Debian base64 of 2 bytes"),
    "cksum-2": ("/usr/bin/cksum", b"??", "A", "z", "Debian cksum of 2 bytes"),
    # the seeds' APR and json-c subjects (issue 82): reduced, then at the seeds' sizes
    "apr-1": ("apr_seeds_O0", b"?\0\0\0\3\0\0\0", "\0", "\x14",
              "APR apr_hash_get: 15 int keys, a lookup of one symbolic byte 0..20 then of 3"),
    "apr-15x2": ("apr_seeds_O0", b"????????", "\0", "\xff",
                 "APR, the seeds' size: 15 int keys, two lookups of symbolic 4-byte keys"),
    "jsonc-1": ("jsonc_seeds_O0", b"a?cd", "a", "e", "json-c: keys a..d added one by one, the second lookup symbolic"),
    "jsonc-4": ("jsonc_seeds_O0", b"????", "\0", "\xff",
                "json-c, the seeds' size: keys a..d added one by one, a symbolic 1-byte key looked up after each"),
    # the seeds' drivers of the other libraries at their sizes (reference-implementations.md section 2)
    "html-3": ("html_parse_O0", b"???", "\0", "\xff",
               "libxml2, the seeds' size: htmlParseDocument over 3 fully symbolic bytes and a NUL"),
    "expat-10": ("expat_parse_O2", b"??????????", "\0", "\xff",
                 "expat, the seeds' size: XML_Parse of 10 fully symbolic bytes as UTF-16, hash salt 17"),
    "osip-20": ("osip_parse_O2", b"?" * 20, "\0", "\xff", "libosip, the seeds' size: 20 fully symbolic bytes"),
    "yaml-10": ("yaml_scan_O2", b"?" * 10, "\0", "\xff", "libyaml, the seeds' size: 10 fully symbolic bytes"),
}
# the seeds' sizes (bench/seeds_sizes.py): not in the default list, they run for minutes to hours
SEEDS_SIZES = ("apr-15x2", "jsonc-4", "html-3", "expat-10", "osip-20", "yaml-10")
# options every setting of a subject gets: APR seeds its hash with the clock, json-c with random
# bytes, libxml2 its dictionaries' with the clock; the seeds ran KLEE with the real clock and
# /dev/urandom, one value per run
SUBJECT_OPTIONS = {n: {"environment": "fixed"} for n in ("apr-1", "jsonc-1", *SEEDS_SIZES)}
# subjects whose template is a file the program reads: (file name, the program's arguments)
FILE_SUBJECTS = {"make-1": ("A", ("-r", "-n", "-R", "-f", "A"))}
# subjects whose template is stdin and that take arguments
STDIN_ARGS = {"expat-10": ("UTF-16",)}
# "fixed": fork in the fixed environment (angr_ram.posix.environment: the clocks read one instant,
# getrandom fixed bytes), as KLEE ran the seeds' subjects; libxml2 seeds its dictionaries' hash from
# time(), which angr makes a fresh symbol, so every name may fall in every bucket
# "vex" and "scrvex": fork and script with every block on angr's VEX engine (angr_ram.run.concrete_steps.angr_blocks),
# the side-by-side baseline of concrete blocks on ints
CONFIGS = (("stock", {"engine": "stock"}), ("fork", {"model": "fork"}), ("dsmm", {"model": "dsmm"}),
           ("aa", {"model": "fork", "cache": "aa"}), ("fixed", {"model": "fork", "environment": "fixed"}),
           ("script", {"drive": "script"}), ("vex", {"model": "fork", "blocks": "angr"}),
           ("scrvex", {"drive": "script", "blocks": "angr"}))


def template_of(name: str) -> Template:
    _, data, lo, hi, _ = SUBJECTS[name]
    return Template(data, ord(lo), ord(hi))


def inputs_of(name: str) -> dict:
    """``explore``'s input arguments for subject ``name``: the template on stdin, or in a file."""
    if name in FILE_SUBJECTS:
        file, args = FILE_SUBJECTS[name]
        return {"stdin_bytes": 0, "files": [(file, template_of(name))], "args": list(args)}
    return {"stdin_bytes": template_of(name), **({"args": list(STDIN_ARGS[name])} if name in STDIN_ARGS else {})}


def native_outcomes(binary: str, name: str, forkserver: Path | None = None) -> set | None:
    """The (exit, stdout) pairs the native binary gives over subject ``name``'s template's domain, on
    stdin or in its file (None if the domain is large)."""
    t = template_of(name)
    holes = [k for k, b in enumerate(t.data) if b == ord("?")]
    if (t.hi - t.lo + 1) ** len(holes) > MAX_NATIVE:
        return None
    inputs = []
    for vals in itertools.product(range(t.lo, t.hi + 1), repeat=len(holes)):
        data = bytearray(t.data)
        for k, v in zip(holes, vals, strict=True):
            data[k] = v
        inputs.append(bytes(data))
    if name in FILE_SUBJECTS:
        file, args = FILE_SUBJECTS[name]
        return set(run_inputs(binary, inputs, forkserver=forkserver, target=f"file:{file}", args=args))
    return set(run_inputs(binary, inputs, forkserver=forkserver, args=STDIN_ARGS.get(name, ())))


def _script(binary: str, name: str, budget: float):
    """The subject driven as a user's script would: ``entry_state`` with stdin (or the subject's
    file) the template's bytes, its ``?`` bytes one wide ``claripy.BVS`` each byte of which is limited to the range,
    angr's default options, ``RelocatableMemory()`` attached and run under its guard."""
    import angr
    import claripy

    import angr_ram
    from angr_ram.run.runner import summarize

    t = template_of(name)
    holes = [k for k, b in enumerate(t.data) if b == ord("?")]
    var = claripy.BVS("input", 8 * len(holes))
    parts = [var.get_byte(holes.index(k)) if k in holes else claripy.BVV(b, 8) for k, b in enumerate(t.data)]
    proj = angr.Project(binary, auto_load_libs=False)
    if name in FILE_SUBJECTS:
        file, args = FILE_SUBJECTS[name]
        state = proj.factory.entry_state(args=[binary, *args], fs={file: angr.SimFile(
            file, content=claripy.Concat(*parts), size=len(parts), has_end=True)})
    else:
        state = proj.factory.entry_state(args=[binary, *STDIN_ARGS.get(name, ())], stdin=angr.SimFileStream(name="stdin", content=claripy.Concat(*parts),
                                                                  size=len(parts), has_end=True))
    for k in range(len(holes)):
        state.solver.add(claripy.UGE(var.get_byte(k), t.lo), claripy.ULE(var.get_byte(k), t.hi))
    simgr = proj.factory.simulation_manager(state)
    tech = simgr.use_technique(angr_ram.RelocatableMemory())
    with tech.guarded(timeout=budget) as guard:
        simgr.run()
    r = summarize(simgr, tech, tests=True)
    r.stopped = guard.stop_reason if simgr.active else None
    return r


def _child(binary: str, name: str, kw: dict, budget: float) -> None:
    kw = {**SUBJECT_OPTIONS.get(name, {}), **kw}
    t0 = time.perf_counter()
    with angr_blocks() if kw.pop("blocks", None) == "angr" else contextlib.nullcontext():
        if kw.get("drive") == "script":
            r = _script(binary, name, budget)
        else:
            r = explore(binary, timeout=budget, tests=True, **inputs_of(name), **kw)
    ran = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t1 = time.perf_counter()
    results = replay(r.tests, binary)
    print(json.dumps({"paths": r.stats.get("paths", 0), "errors": len(r.errors), "stopped": r.stopped,
                      "z3": r.stats.get("z3_checks", 0), "rss_mb": round(rss), "unknown": r.unknown,
                      "outcomes": sorted((c, o.hex()) for c, o in r.outcomes if c is not None),
                      "tests": len(r.tests), "mismatches": sum(x.failed for x in results),
                      "unsolved": r.tests_unsolved,
                      **{k: r.stats.get(k, 0) for k in ("cache_queries", "cache_size", "multiple_resolutions", "forks")},
                      "stubs": sorted(r.stubs),
                      # exploring alone (what the seeds' termination times measure), then with the
                      # outcomes and tests, then the native replay of the tests
                      "explore_s": round(r.seconds, 1), "run_s": round(ran, 1),
                      "replay_s": round(time.perf_counter() - t1, 1)}))


def run(binary: str, name: str, kw: dict, budget: float, grace: float = 60) -> dict:
    """One run in a child process, killed ``grace`` seconds after the budget (its tests and their
    replay run after the exploration's budget)."""
    t0 = time.perf_counter()
    r = child_result([sys.executable, "-m", "bench.subjects", binary, name, json.dumps(kw), str(budget)],
                     budget + grace)
    r["seconds"] = time.perf_counter() - t0
    return r


def _binary(name: str, samples_dir) -> str:
    """A sample's path, or a system binary's (an absolute path), with a clear error if missing."""
    if name.startswith("/"):
        if not os.path.isfile(name):
            raise AngrRamError(f"{name}: not on this machine (install the Debian package that ships it)")
        return name
    return sample_path(name, samples_dir)


def subjects_table(names=None, budget: float = 600.0, samples_dir: Path | None = None,
                   settings: str | None = None) -> int:
    """Print the subjects table (``angr-ram bench --subjects``); ``settings``: a comma-separated subset of CONFIGS."""
    names = names or [n for n in SUBJECTS if n not in SEEDS_SIZES]
    known = dict(CONFIGS)
    chosen = settings.split(",") if settings else list(known)
    if unknown_name(names, SUBJECTS, "subject") or unknown_name(chosen, known, "setting"):
        return 2
    print(__doc__.strip().splitlines()[0])
    print(f"{'subject':12} {'setting':6} {'time s':>8} {'paths':>6} {'found':>9} {'z3':>6} {'errors':>6} "
          f"{'RSS MB':>6} {'mismatch':>8}  stubs")
    for name in names:
        binary = _binary(SUBJECTS[name][0], samples_dir)
        server = Path(sample_path("forkserver.so", samples_dir)) if binary.startswith("/usr/") else None
        truth = native_outcomes(binary, name, server)
        for label in chosen:
            r = run(binary, name, known[label], budget)
            if "outcomes" not in r:
                why = "killed" if r.get("killed") else r.get("failed", "failed")
                print(f"{name:12} {label:6} {r['seconds']:8.1f}+ {why}", flush=True)
                continue
            found = (f"{len(r['outcomes'] & truth)}/{len(truth)}" if truth is not None
                     else f"{len(r['outcomes'])}/-")
            wrong = "" if truth is None or r["outcomes"] <= truth else f"  ({len(r['outcomes'] - truth)} not native!)"
            mark = "+" if r["stopped"] else " "
            unsolved = f"  ({r['unsolved']} tests unsolved in time: unchecked)" if r.get("unsolved") else ""
            print(f"{name:12} {label:6} {r['seconds']:7.1f}{mark} {r['paths']:6} {found:>9} {r['z3']:6} "
                  f"{r['errors']:6} {r['rss_mb']:6} {r['mismatches']:>4}/{r['tests']:<3}  "
                  f"{','.join(r['stubs']) or '-'}{wrong}{unsolved}", flush=True)
    print("+ = stopped by the budget (or killed); found = outcomes found of those the native driver gives "
          "over the template's domain; mismatch = tests whose native replay contradicts them / tests")
    return 0


if __name__ == "__main__":
    _child(sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), float(sys.argv[4]))
