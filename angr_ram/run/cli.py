"""Command line: ``angr-ram run BINARY --stdin-bytes N``, ``angr-ram replay DIR BINARY`` and ``angr-ram bench``."""

from __future__ import annotations

import argparse
import atexit
import json
import os
import sys
import time

import angr

from angr_ram.core.errors import AngrRamError
from angr_ram.core.version import __version__
from angr_ram.memory.strategies.models import MODELS
from angr_ram.memory.uninitialized import UNINITIALIZED
from angr_ram.posix.environment import ENVIRONMENTS
from angr_ram.run.cli_bench import add_bench_parser
from angr_ram.run.config import RunConfig
from angr_ram.run.coverage_plot import plot_runs
from angr_ram.run.distributed import explore_distributed
from angr_ram.run.inputs import SymArgs, Template, parse_range, sym_files
from angr_ram.run.progress import Progress
from angr_ram.run.replay import format_table, replay
from angr_ram.run.runner import explore
from angr_ram.run.search import SEARCHES
from angr_ram.run.summary import json_report, process_seconds, stats_table, summary_lines, write_run_report
from angr_ram.run.testcases import prepare_test_dir, write_tests
from angr_ram.solver.persistent_cache import check_store_dir

DEFAULT_MAX_RSS_MB = 2048        # issue 81's target for a coreutils run (the technique's own default: no cap)
# the CLI's default --spill-rss-mb, as a share of --max-rss-mb: the frontier grows about 2-3 MB/s on
# Debian's expr and join (1.6-2.4 GB at 600 s); spilling from here keeps the run under its cap
SPILL_SHARE = 0.85
DEFAULT_SEARCH = "covnew-dives"   # measured on coreutils under KLEE's inputs (docs/bench/coreutils-60s-dives-vs-dfs.txt)


def _positive(text: str) -> int:
    v = int(text, 0)
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, not {text}")
    return v


def _non_negative(text: str) -> int:
    try:
        v = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, not {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, not {text}")
    return v


MIN_SOLVER_MS = 100     # z3 takes tens of milliseconds on easy checks of hashed or many-byte inputs


def _milliseconds(text: str) -> int:
    try:
        v = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of milliseconds, not {text!r}") from None
    if v < MIN_SOLVER_MS:
        raise argparse.ArgumentTypeError(
            f"{text} ms is too short: give at least {MIN_SOLVER_MS} (z3 needs tens of milliseconds to set up a "
            "check; with less it gives up on easy branches and their paths are lost to the unknown stash)")
    return v


def _milliseconds_or_zero(text: str) -> int:
    return 0 if text.strip() in ("0", "0x0") else _milliseconds(text)


class _SymArgsAction(argparse.Action):
    """``--sym-args MIN MAX N`` appended to the argument list in order with --arg and --arg-str."""

    def __call__(self, parser, namespace, values, option_string=None):
        try:
            low, high, size = (int(v, 0) for v in values)
            spec = SymArgs(low, high, size)
        except (ValueError, AngrRamError) as e:
            parser.error(f"argument --sym-args: {e}")
        items = getattr(namespace, self.dest, None) or []
        setattr(namespace, self.dest, [*items, spec])


def _sym_file(text: str) -> tuple[str, int]:
    name, sep, size = text.rpartition(":")
    if not sep or not name or not size.isdigit() or int(size) <= 0:
        raise argparse.ArgumentTypeError(f"expected NAME:N with a positive size N, not {text!r}")
    return name, int(size)


def _inputs(args) -> tuple:
    """stdin (a number of symbolic bytes or a Template) and the symbolic files of ``run``'s arguments."""
    lo, hi = parse_range(args.template_range)
    stdin = args.stdin_bytes
    if args.sym_stdin_template is not None:
        if stdin:
            raise AngrRamError("give either --stdin-bytes or --sym-stdin-template, not both")
        stdin = Template.read(args.sym_stdin_template, lo, hi)
    if args.sym_stdin is not None:
        if stdin or args.sym_stdin_template is not None:
            raise AngrRamError("give one of --stdin-bytes, --sym-stdin and --sym-stdin-template")
        stdin = args.sym_stdin
    files = list(args.sym_file or ())
    for count, size in args.sym_files or ():
        files += sym_files(count, size)
    for spec in args.sym_file_template or ():
        name, sep, path = spec.partition(":")
        if not sep or not name or not path:
            raise AngrRamError(f"expected --sym-file-template NAME:FILE, not {spec!r}")
        files.append((name, Template.read(path, lo, hi)))
    names = [n for n, _ in files]
    if len(set(names)) != len(names):
        raise AngrRamError("a symbolic file is given twice")
    return stdin, files


def cmd_run(args) -> int:
    """Explore one binary and print its outcomes, error paths and statistics (and write its tests)."""
    distributed = args.workers is not None or args.scheduler is not None
    run = explore
    if distributed:
        if (args.merge is not None or args.emit_tests is not None or args.max_states is not None
                or args.spill_states is not None or args.spill_rss_mb is not None):
            raise AngrRamError("--workers/--scheduler cannot be combined with --merge, --emit-tests, --max-states "
                               "or --spill-*")

        def run(binary, stdin_bytes, max_states=None, tests=False, **kw):  # noqa: ARG001 - refused above
            return explore_distributed(binary, stdin_bytes, workers=args.workers or 2, scheduler=args.scheduler,
                                       task_seconds=args.task_seconds, **kw)

    if args.emit_tests is not None:      # checked (and an earlier run's tests removed) before exploring
        prepare_test_dir(args.emit_tests)
    if args.persist is not None and args.engine == "ram":
        if args.cache is None:
            raise AngrRamError("--persist needs a query cache: add --cache aa or --cache syntactic")
        check_store_dir(None if args.persist is True else args.persist)
    opts = {}
    if args.engine == "ram":        # the run's options as one validated value (a bad one: an error now)
        ram = {"model": args.model, "symbolic_bases": not args.concrete_bases, "cache": args.cache,
               "validate": args.validate, "persist": args.persist, "solver_timeout_ms": args.solver_timeout_ms,
               "cache_limit": args.cache_limit, "defer_ms": args.defer_ms or None, "profile": args.profile,
               "resume_ms": args.resume_ms or None, "max_rss_mb": args.max_rss_mb or None}
        if args.uninitialized is not None:
            ram["uninitialized"] = args.uninitialized
        if args.heap_overflows is not None:
            ram["heap_overflows"] = args.heap_overflows
        opts["config"] = RunConfig.of(**ram)
    if args.environment is not None:
        opts["environment"] = args.environment
    spill_rss = args.spill_rss_mb or None
    if (args.spill_rss_mb is None and args.spill_states is None and args.engine == "ram" and args.merge is None
            and not distributed and args.max_rss_mb):       # under the cap, the frontier waits on disk
        spill_rss = SPILL_SHARE * args.max_rss_mb
    if args.spill_states is not None or spill_rss is not None:
        if args.spill_states is not None and args.spill_states < 4:
            raise AngrRamError(f"--spill-states must be at least 4, not {args.spill_states}")
        opts.update(spill_states=args.spill_states, spill_rss_mb=spill_rss)
    if args.merge is not None:
        points = ["auto"] if args.merge_points == "auto" else [
            int(p, 0) if p[:1].isdigit() else p for p in args.merge_points.split(",") if p]
        opts.update(merge=args.merge, merge_points=points, merge_validate=args.merge_validate,
                    merge_incremental=False if args.no_incremental else None, merge_patterns=args.merge_patterns)
    stdin, files = _inputs(args)
    search = args.search or ("all" if args.merge is not None or distributed else DEFAULT_SEARCH)
    if search != "all":
        if distributed:
            raise AngrRamError("--search cannot be combined with --workers/--scheduler (each worker steps its batch)")
        opts["search"] = search      # with --merge: a fragment's leaves wait for it to close in any order
    if not args.no_coverage:
        opts["coverage"] = True
        if args.emit_tests is not None:
            opts["coverage_series"] = os.path.join(args.emit_tests, "coverage.csv")
    every = args.progress
    live = every is None and sys.stderr.isatty() and not args.json
    with Progress(sys.stderr, live=live, every=every, started=args.started) as shown:
        update = shown.update_distributed if distributed else shown.update
        res = run(args.binary, stdin, engine=args.engine, timeout=args.timeout,
                  progress=update if shown.enabled else None,
                  args=args.argv or (), files=files, find=args.find or (), avoid=args.avoid or (),
                  num_find=args.num_find, max_paths=args.max_paths, max_states=args.max_states,
                  tests=args.emit_tests is not None, **opts)
    for w in res.warnings:
        print(f"angr-ram: {w}", file=sys.stderr)
    report = json_report(res, time.perf_counter() - args.started)
    if args.emit_tests is not None:
        write_tests(res.tests, args.emit_tests, args.binary)
        write_run_report(report, args.emit_tests, args.binary)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print("\n".join(summary_lines(res, args.binary, time.perf_counter() - args.started, args.emit_tests, args.stats)))
    return 130 if res.stopped == "interrupted" else 0


def cmd_replay(args) -> int:
    """Run the native binary on every test of a directory; non-zero exit on any mismatch."""
    results = replay(args.directory, args.binary, asan=args.asan, jobs=args.jobs, timeout=args.timeout)
    if args.json:
        print(json.dumps([{"id": r.test.id, "kind": r.test.kind, "status": r.status, "exit": r.exit,
                           "stdout": r.stdout.decode("latin-1"), "stdout_bytes": r.stdout_length,
                           "detail": r.detail} for r in results], indent=2))
    else:
        print(format_table(results))
    return 1 if any(r.failed for r in results) else 0


def cmd_stats(args) -> int:
    """Print a row per test directory: paths, tests, errors, time, coverage, z3; with ``--plot``,
    also write their coverage and paths over time as a PNG."""
    print(stats_table(args.directories))
    if args.plot:
        plot_runs(args.directories, args.plot)
        print(f"plot written to {args.plot}")
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse with a bad command line said in one line (not twenty lines of usage), exit 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def _seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, not {text!r}") from None
    if not v > 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text}")
    return v


DESCRIPTION = ("Symbolic execution of x86-64 binaries with angr and complete symbolic pointers: "
               "'angr-ram run BINARY --stdin-bytes N' explores, 'angr-ram replay DIR BINARY' runs its tests "
               "natively, 'angr-ram bench' compares it with stock angr.")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``angr-ram`` command."""
    p = _Parser(prog="angr-ram", description=DESCRIPTION)
    p.add_argument("--version", action="version", version=f"angr-ram {__version__} (angr {angr.__version__})")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="explore a binary with symbolic stdin")
    r.add_argument("binary")
    r.add_argument("--stdin-bytes", type=int, default=0, help="number of symbolic stdin bytes (default 0)")
    r.add_argument("--arg", dest="argv", action="append", type=_positive, metavar="N",
                   help="a symbolic argv string of N bytes (repeatable; in order with --arg-str)")
    r.add_argument("--arg-str", dest="argv", action="append", metavar="TEXT",
                   help="a concrete argv string (repeatable; in order with --arg)")
    r.add_argument("--sym-args", dest="argv", action=_SymArgsAction, nargs=3, metavar=("MIN", "MAX", "N"),
                   help="KLEE's --sym-args: MIN to MAX symbolic arguments of up to N bytes each (repeatable; in "
                        "order with --arg and --arg-str; each count is explored)")
    r.add_argument("--sym-files", action="append", nargs=2, type=_positive, metavar=("K", "N"),
                   help="KLEE's --sym-files: K symbolic files of N bytes named A, B, ... the program can open")
    r.add_argument("--sym-stdin", type=_positive, default=None, metavar="N",
                   help="KLEE's --sym-stdin: N symbolic stdin bytes (as --stdin-bytes N)")
    r.add_argument("--sym-file", action="append", type=_sym_file, metavar="NAME:N",
                   help="a symbolic file NAME of N bytes the program can open (repeatable)")
    r.add_argument("--sym-stdin-template", metavar="FILE", default=None,
                   help="stdin is FILE's bytes, each '?' a symbolic byte within --template-range (KLEE's "
                        "-sym-stdin FILE); instead of --stdin-bytes")
    r.add_argument("--sym-file-template", action="append", metavar="NAME:FILE", default=None,
                   help="a file NAME the program can open: FILE's bytes, each '?' symbolic (repeatable)")
    r.add_argument("--template-range", default="A-z", metavar="LO-HI",
                   help="the bytes a template's '?' may be: two characters (A-z, KLEE's default) or numbers")
    r.add_argument("--find", action="append", metavar="ADDR|SYMBOL", help="stop paths that reach it (found)")
    r.add_argument("--avoid", action="append", metavar="ADDR|SYMBOL", help="drop paths that reach it")
    r.add_argument("--num-find", type=_positive, default=1, help="with --find: stop after this many found")
    r.add_argument("--max-paths", type=_positive, default=None, help="stop after this many finished paths")
    r.add_argument("--max-states", type=_positive, default=None, help="stop when more states are active")
    r.add_argument("--spill-states", type=_positive, default=None, metavar="N",
                   help="keep at most N states in memory: the others wait in files and come back later")
    r.add_argument("--spill-rss-mb", type=_non_negative, default=None, metavar="MB",
                   help=f"above this RSS, half the waiting states go to files (default {SPILL_SHARE * 100:.0f}%% of "
                        "--max-rss-mb, without --merge; 0: none)")
    r.add_argument("--max-rss-mb", type=_non_negative, default=DEFAULT_MAX_RSS_MB, metavar="MB",
                   help=f"keep the run's memory under MB: a step may grow it only by what is left below "
                        f"(at least 128 MB); default {DEFAULT_MAX_RSS_MB}, 0: no cap")
    r.add_argument("--solver-timeout-ms", type=_milliseconds, default=None, metavar="MS",
                   help=f"z3 time per call, at least {MIN_SOLVER_MS}; a state needing more goes to the unknown "
                        "stash (default 300000)")
    r.add_argument("--defer-ms", type=_milliseconds_or_zero, default=1000, metavar="MS",
                   help="first-pass z3 time per call: a path needing more waits until the others are done "
                        "(0: no first pass; default 1000)")
    r.add_argument("--resume-ms", type=_milliseconds_or_zero, default=5000, metavar="MS",
                   help="without --timeout or --solver-timeout-ms: z3 time per call of the paths that waited, "
                        "after which one still undecided is reported unknown (0: the full budget; default 5000)")
    r.add_argument("--environment", choices=ENVIRONMENTS, default=None,
                   help="getrandom and clocks: symbolic (every random value, angr's clock; the default) or "
                        "fixed (one fixed environment, like a replay: seeded hashes become concrete)")
    r.add_argument("--uninitialized", choices=UNINITIALIZED, default=None,
                   help="what memory and registers no one wrote hold: zero (as a fresh process reads them, "
                        "so tests replay natively; what auto, the default, gives a run from the entry point) "
                        "or symbolic (any content)")
    r.add_argument("--heap-overflows", choices=("stop", "continue"), default=None,
                   help="after a heap overflow's out-of-bounds error path: stop (the path ends there; the default) "
                        "or continue (the path goes on over glibc's heap layout, the overflow reaching the next chunk)")
    r.add_argument("--emit-tests", metavar="DIR", default=None,
                   help="write a test input per path and outcome, and tests.jsonl, to DIR")
    r.add_argument("--model", choices=MODELS, default="fork", help="multiple-resolution model")
    r.add_argument("--engine", choices=("ram", "stock"), default="ram", help="angr-ram or plain angr")
    r.add_argument("--concrete-bases", action="store_true", help="concrete heap bases (baseline)")
    r.add_argument("--cache", choices=("syntactic", "aa"), default=None, help="run-wide query cache")
    r.add_argument("--cache-limit", type=_positive, default=100_000, metavar="N",
                   help="entries each query-cache map keeps (least recently used go first)")
    r.add_argument("--validate", action="store_true", help="re-check every cache hit with the solver")
    r.add_argument("--profile", action="store_true",
                   help="print where the time went: angr's engine, each angr-ram layer, z3 per site")
    r.add_argument("--persist", nargs="?", const=True, default=None, metavar="DIR",
                   help="keep cache answers on disk (default $ANGR_RAM_CACHE_DIR or ~/.cache/angr-ram)")
    r.add_argument("--merge", choices=("ite", "pat"), default=None, help="state merging (QuantifiedMerging)")
    r.add_argument("--merge-points", default="auto", metavar="LIST",
                   help="with --merge: comma-separated function names or addresses, or 'auto' (all loops)")
    r.add_argument("--no-incremental", action="store_true", help="with --merge pat: no incremental merging")
    r.add_argument("--merge-patterns", choices=("smaller", "always"), default="smaller",
                   help="with --merge pat: keep a pattern merge only when smaller than ite (default), or always")
    r.add_argument("--merge-validate", action="store_true", help="with --merge: check every merge and answer")
    r.add_argument("--search", choices=("all", *SEARCHES), default=None,
                   help="which states are stepped next: all together (angr's order; the default with --merge, "
                        "whose fragment runs are given up beyond 1024 states or 8192 state steps), "
                        "or one at a time: newest (dfs: it finishes paths from the first seconds) or "
                        "oldest (bfs) first, KLEE's random-path, coverage-new (covnew: near code no path executed "
                        "yet), those two in turn, or dives: those two pick a state in turn, depth-first goes on "
                        "from it for 100 steps (covnew-dives, the default) (docs/bench/search-30s.txt)")
    r.add_argument("--no-coverage", action="store_true",
                   help="do not measure the coverage of the binary's code (it builds angr's CFG at the end: "
                        "about 2 s for a coreutils binary)")
    r.add_argument("--json", action="store_true", help="every number of the run as JSON")
    r.add_argument("--stats", action="store_true", help="also print the solver's and memory model's counters")
    r.add_argument("--progress", type=_seconds, nargs="?", const=10.0, default=None, metavar="S",
                   help="write a progress line to stderr every S seconds (default 10; for a log or a pipe: on "
                        "a terminal a live line is shown without it)")
    r.add_argument("--timeout", type=_seconds, default=None, help="stop exploring after S seconds")
    r.add_argument("--workers", type=_positive, default=None, metavar="N",
                   help="step the states on N local dask worker processes (needs angr-ram[dist])")
    r.add_argument("--scheduler", default=None, metavar="ADDR",
                   help="step the states on the workers of the dask scheduler at ADDR (tcp://host:8786)")
    r.add_argument("--task-seconds", type=float, default=None, metavar="S",
                   help="with --workers/--scheduler: the longest a task steps its batch before returning its "
                        "frontier (default: until done, or until another worker is idle)")
    r.set_defaults(func=cmd_run)
    rp = sub.add_parser("replay", help="run the native binary on emitted tests and compare")
    rp.add_argument("directory", help="a directory written by run --emit-tests")
    rp.add_argument("binary", help="the native binary the tests were emitted for")
    rp.add_argument("--asan", metavar="BINARY_ASAN", default=None,
                    help="an AddressSanitizer build that confirms the error tests")
    rp.add_argument("--jobs", type=_positive, default=2, help="native runs at a time")
    rp.add_argument("--timeout", type=_seconds, default=10.0, help="seconds per native run")
    rp.add_argument("--json", action="store_true")
    rp.set_defaults(func=cmd_replay)
    st = sub.add_parser("stats", help="a table of runs' test directories, in the manner of klee-stats")
    st.add_argument("directories", nargs="+", metavar="DIR", help="directories written by run --emit-tests")
    st.add_argument("--plot", metavar="PNG", default=None,
                    help="also plot coverage and finished paths over time, a line per DIR (needs angr-ram[bench])")
    st.set_defaults(func=cmd_stats)
    add_bench_parser(sub, _seconds)
    return p


VALUE_OPTIONS = ("--arg-str",)      # options whose value is a program's argument: it may start with "-"


def _values_attached(argv: list[str]) -> list[str]:
    """``--arg-str -d`` as ``--arg-str=-d``: argparse takes a separate value that starts with "-"
    for an option of its own ("expected one argument"), but a program's argument often does."""
    out, i = [], 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            out.extend(argv[i:])
            break
        if a in VALUE_OPTIONS and i + 1 < len(argv):
            out.append(f"{a}={argv[i + 1]}")
            i += 2
            continue
        out.append(a)
        i += 1
    return out


def main(argv=None, started: float | None = None) -> int:
    """Entry point of the ``angr-ram`` command."""
    args = build_parser().parse_args(_values_attached(list(sys.argv[1:] if argv is None else argv)))
    if getattr(args, "stdin_bytes", 0) < 0:
        print("angr-ram: --stdin-bytes must not be negative", file=sys.stderr)
        return 2
    try:
        # the command's time starts with the process (the ``angr-ram`` command), or with this call
        args.started = time.perf_counter() if started is None else started
        return args.func(args)
    except AngrRamError as e:
        print(f"angr-ram: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:         # the reader of the output went away (| head): nothing more to say
        _quiet_stdout()
        return 0


def _quiet_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def entry() -> None:
    """The ``angr-ram`` command: :func:`main`, then exit at once. Output is flushed and the exit
    handlers run (files, logging, dask), but the interpreter does not tear down the run's objects
    one by one, which after a large run took over a second: a second the user waits after a
    Ctrl-C or a ``--timeout``, with every result already written."""
    rc = main(started=time.perf_counter() - process_seconds())
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except (OSError, ValueError):       # a closed pipe or stream: nothing more can be shown
            pass
    atexit._run_exitfuncs()
    os._exit(rc)


if __name__ == "__main__":
    entry()
