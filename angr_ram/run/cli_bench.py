"""The ``angr-ram bench`` command: the checkout's benchmark tables (its ``bench`` package)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from angr_ram.core.errors import AngrRamError


def bench_module(name: str):
    """The checkout's ``bench.<name>`` module: the benchmarks are not installed with the library,
    they run from a checkout (this file's, or the current directory)."""
    for root in (Path(__file__).resolve().parent.parent.parent, Path.cwd()):
        if (root / "bench" / "__init__.py").is_file() and (root / "angr_ram").is_dir():
            if str(root) not in sys.path:
                sys.path.insert(0, str(root))
            return importlib.import_module(f"bench.{name}")
    raise AngrRamError("bench runs from a checkout of angr-ram (its bench/ package is not installed); "
                       "run it there, or from the checkout's directory")


def cmd_bench(args) -> int:
    """Run the benchmark table (see the checkout's ``bench`` package)."""
    d = args.samples_dir
    if args.distributed:
        return bench_module("distributed").distributed_table(args.timeout, samples_dir=d)
    if args.solver:
        return bench_module("solver").solver_table()
    if args.merging and args.loops:
        return bench_module("merging").loop_table(args.samples or None, timeout=args.timeout, samples_dir=d)
    if args.merging:
        return bench_module("merging").merge_table(args.timeout, args.repeat, samples_dir=d)
    if args.cache:
        return bench_module("cache").cache_table(args.samples, args.timeout, args.repeat, samples_dir=d)
    if args.models:
        return bench_module("models").main(args.timeout, args.repeat, args.plot, samples_dir=d)
    if args.tests:
        return bench_module("tests").tests_table(d, args.timeout)
    if args.keyfind:
        bench_module("corpus").keyfind_table(timeout=min(args.timeout, 60.0), samples_dir=d)
        return 0
    if args.drives:
        return bench_module("drives").drives_table(args.samples or None, samples_dir=d, timeout=args.timeout)
    if args.cli:
        return bench_module("cli").cli_table(samples_dir=d)
    if args.search:
        return bench_module("search").search_table(args.samples or None, budget=args.timeout)
    if args.coreutils:
        return bench_module("coreutils").coreutils_table(args.samples or None, budget=args.timeout)
    if args.scripts:
        return bench_module("scripts").scripts_table(args.samples or None, timeout=args.timeout)
    if args.processes:
        return bench_module("processes").processes_table(args.samples or None, timeout=args.timeout, samples_dir=d)
    if args.subjects and args.seeds_sizes:
        return bench_module("seeds_sizes").seeds_table(args.samples or None, budget=args.timeout, samples_dir=d,
                                                       settings=args.settings)
    if args.subjects:
        return bench_module("subjects").subjects_table(args.samples or None, budget=args.timeout, samples_dir=d,
                                                       settings=args.settings)
    if args.history:
        return bench_module("history").history_table(samples_dir=d)
    if args.limits:
        return bench_module("limits").limits_table(args.samples or None, samples_dir=d)
    if args.semantics:
        bench_module("semantics").semantics_table(args.samples or None, timeout=args.timeout, samples_dir=d)
        return 0
    if args.corpus:
        bench_module("corpus").corpus_table(args.samples or None, timeout=args.timeout, samples_dir=d)
        print()
        bench_module("semantics").semantics_table(timeout=min(args.timeout, 120.0), samples_dir=d)
        return 0
    return bench_module("speed").main(args.samples, args.timeout, args.json, args.repeat, samples_dir=d)


def add_bench_parser(sub, seconds) -> None:
    """Add ``bench`` and its options to the subcommands ``sub`` (``seconds``: the type of --timeout)."""
    b = sub.add_parser("bench", help="compare stock angr and angr-ram on the samples")
    b.add_argument("samples", nargs="*", help="sample names (default: all)")
    b.add_argument("--timeout", type=seconds, default=300.0, help="per-run timeout in seconds")
    b.add_argument("--json", action="store_true")
    b.add_argument("--repeat", type=int, default=1, help="runs per configuration; the minimum time is shown")
    b.add_argument("--models", action="store_true", help="compare the memory models and split sizes instead")
    b.add_argument("--cache", action="store_true", help="compare the query-cache modes instead")
    b.add_argument("--merging", action="store_true", help="compare the state-merging modes on memspn instead")
    b.add_argument("--loops", action="store_true",
                   help="with --merging: stock angr, ite and pat on the loop corpus at M = 6, 8, 10, 12")
    b.add_argument("--corpus", action="store_true",
                   help="stock angr vs fork vs dsmm on third-party and specification-derived programs")
    b.add_argument("--drives", action="store_true",
                   help="each program driven by explore(), by a script with one wide BVS and angr's default "
                        "options, and by a script with a BVS per byte: time, paths, outcomes, RSS")
    b.add_argument("--cli", action="store_true",
                   help="the command line as a user meets it: undeclared files, --max-paths, find targets, the "
                        "printed time, small solver budgets, summary size, progress when piped")
    b.add_argument("--coreutils", action="store_true",
                   help="Debian's coreutils under KLEE's inputs (--sym-args 0 1 10 --sym-args 0 2 2 --sym-stdin 8), "
                        "angr-ram beside stock angr")
    b.add_argument("--search", action="store_true",
                   help="the search orders on Debian's coreutils over 4 stdin bytes with --timeout as the budget: "
                        "paths, seconds to the first path, coverage, errors, tests, replay mismatches")
    b.add_argument("--scripts", action="store_true",
                   help="the corpus of angr scripts (samples/scripts), each as written and with RelocatableMemory() "
                        "added, side by side: answer, seconds, peak RSS")
    b.add_argument("--processes", action="store_true",
                   help="programs passing values through child processes, the environment, the shell, shared "
                        "memory, scanf and libm (a user's script, stock angr beside angr-ram)")
    b.add_argument("--subjects", action="store_true",
                   help="the seed papers' subjects (libyaml, expat, libosip, libxml2 drivers) on templates under "
                        "stock angr, fork, dsmm and aa with --timeout as the budget: time, paths, outcomes, z3, "
                        "errors, RSS, replay mismatches")
    b.add_argument("--seeds-sizes", action="store_true",
                   help="with --subjects: the seeds' APR and json-c subjects at the seeds' input sizes under fmm and "
                        "dsmm, each with no cache, the syntactic and the address-aware one (settings fmm, fmm-syn, "
                        "fmm-aa, dsmm, dsmm-syn, dsmm-aa), beside the paper's KLEE times; runs take minutes to hours")
    b.add_argument("--settings", default=None, metavar="A,B",
                   help="with --subjects: only these settings (stock, fork, dsmm, aa, fixed, script; vex and "
                        "scrvex: fork and script with every block on angr's engine)")
    b.add_argument("--limits", action="store_true",
                   help="runs stopped by --timeout 10, 30 and Ctrl-C at 5 s on hard programs: time past the limit, "
                        "RSS, paths, unfinished paths, tests written")
    b.add_argument("--history", action="store_true",
                   help="a user's script run alone and after other runs in the same process: time, z3 seconds, "
                        "peak RSS, objects the earlier run left behind")
    b.add_argument("--semantics", action="store_true",
                   help="stock angr vs fork, dsmm and ite on the memory-semantics programs (part of --corpus)")
    b.add_argument("--keyfind", action="store_true",
                   help="seconds to each outcome of uthash's lookup of a four-byte key (part of --corpus)")
    b.add_argument("--distributed", action="store_true",
                   help="a program with over a thousand paths in one process and on 1, 2 and 4 dask workers")
    b.add_argument("--solver", action="store_true",
                   help="claripy's z3 solvers against angr-ram's on hash preimages, branch checks, enumeration")
    b.add_argument("--tests", action="store_true",
                   help="emit tests per program and configuration and replay them natively")
    b.add_argument("--samples-dir", type=Path, default=None,
                   help="where the sample binaries are (default: $ANGR_RAM_SAMPLES, the checkout's samples/build, "
                        "or ./samples/build)")
    b.add_argument("--plot", metavar="PNG", default=None, help="with --models: plot time against matrix size")
    b.set_defaults(func=cmd_bench)
