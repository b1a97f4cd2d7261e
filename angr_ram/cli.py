"""Command line: ``angr-ram run BINARY --stdin-bytes N`` and ``angr-ram bench``."""

from __future__ import annotations

import argparse
import json
import sys

from .errors import AngrRamError
from .technique import MODELS


def _progress(stream):
    def show(simgr):
        stream.write(f"\r  active {len(simgr.active):5d}  finished {len(simgr.deadended):5d}  "
                     f"errors {len(simgr.stashes.get('memory_errors', [])) + len(simgr.errored):4d}")
        stream.flush()
    return show


def cmd_run(args) -> int:
    """Explore one binary and print its outcomes, error paths and statistics."""
    from .runner import explore

    progress = _progress(sys.stderr) if sys.stderr.isatty() and not args.json else None
    opts = {"cache": args.cache, "validate": args.validate, "persist": args.persist} if args.engine == "ram" else {}
    if args.merge is not None:
        points = ["auto"] if args.merge_points == "auto" else [
            int(p, 0) if p[:1].isdigit() else p for p in args.merge_points.split(",") if p]
        opts.update(merge=args.merge, merge_points=points, merge_validate=args.merge_validate,
                    merge_incremental=False if args.no_incremental else None)
    res = explore(args.binary, args.stdin_bytes, engine=args.engine, model=args.model,
                  symbolic_bases=not args.concrete_bases, timeout=args.timeout, progress=progress, **opts)
    if progress is not None:
        sys.stderr.write("\n")
    if args.json:
        print(json.dumps({
            "outcomes": [{"exit": c, "stdout": o.decode("latin-1")} for c, o in sorted(res.outcomes, key=repr)],
            "errors": [{"kind": k, "message": m, "stdin": s.hex() if s is not None else None}
                       for k, m, s in res.errors],
            "stats": res.stats, "seconds": round(res.seconds, 3), "timed_out": res.timed_out,
        }, indent=2))
        return 0
    print(f"{args.binary}: {res.stats.get('paths', 0)} paths in {res.seconds:.2f}s"
          + (" (timed out)" if res.timed_out else ""))
    print("outcomes (exit code, stdout):")
    for code, out in sorted(res.outcomes, key=repr):
        print(f"  exit {code}: {out!r}")
    if res.errors:
        print("error paths:")
        for kind, msg, stdin in res.errors:
            print(f"  {kind}: {msg}  stdin={stdin!r}")
    print("stats: " + ", ".join(f"{k}={round(v, 3) if isinstance(v, float) else v}" for k, v in res.stats.items()))
    return 0


def cmd_bench(args) -> int:
    """Run the benchmark table (see :mod:`angr_ram.bench`)."""
    if args.merging:
        from .bench import merge_table

        return merge_table(args.timeout, args.repeat)
    if args.cache:
        from .bench import cache_table

        return cache_table(args.samples, args.timeout, args.repeat)
    if args.models:
        from .bench_models import main as models_main

        return models_main(args.timeout, args.repeat, args.plot)
    if args.corpus:
        from .bench_corpus import corpus_table
        corpus_table(args.samples or None, timeout=args.timeout)
        return 0
    from .bench import main as bench_main

    return bench_main(args.samples, args.timeout, args.json, args.repeat)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``angr-ram`` command."""
    p = argparse.ArgumentParser(prog="angr-ram", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="explore a binary with symbolic stdin")
    r.add_argument("binary")
    r.add_argument("--stdin-bytes", type=int, required=True, help="number of symbolic stdin bytes")
    r.add_argument("--model", choices=MODELS, default="fork", help="multiple-resolution model")
    r.add_argument("--engine", choices=("ram", "stock"), default="ram", help="angr-ram or plain angr")
    r.add_argument("--concrete-bases", action="store_true", help="concrete heap bases (baseline)")
    r.add_argument("--cache", choices=("syntactic", "aa"), default=None, help="run-wide query cache")
    r.add_argument("--validate", action="store_true", help="re-check every cache hit with the solver")
    r.add_argument("--persist", nargs="?", const=True, default=None, metavar="DIR",
                   help="keep cache answers on disk (default $ANGR_RAM_CACHE_DIR or ~/.cache/angr-ram)")
    r.add_argument("--merge", choices=("ite", "pat"), default=None, help="state merging (QuantifiedMerging)")
    r.add_argument("--merge-points", default="auto", metavar="LIST",
                   help="with --merge: comma-separated function names or addresses, or 'auto' (all loops)")
    r.add_argument("--no-incremental", action="store_true", help="with --merge pat: no incremental merging")
    r.add_argument("--merge-validate", action="store_true", help="with --merge: check every merge and answer")
    r.add_argument("--json", action="store_true", help="machine-readable output")
    r.add_argument("--timeout", type=float, default=None, help="stop exploring after S seconds")
    r.set_defaults(func=cmd_run)
    b = sub.add_parser("bench", help="compare stock angr and angr-ram on the samples")
    b.add_argument("samples", nargs="*", help="sample names (default: all)")
    b.add_argument("--timeout", type=float, default=300.0, help="per-run timeout in seconds")
    b.add_argument("--json", action="store_true")
    b.add_argument("--repeat", type=int, default=1, help="runs per configuration; the minimum time is shown")
    b.add_argument("--models", action="store_true", help="compare the memory models and split sizes instead")
    b.add_argument("--cache", action="store_true", help="compare the query-cache modes instead")
    b.add_argument("--merging", action="store_true", help="compare the state-merging modes on memspn instead")
    b.add_argument("--corpus", action="store_true",
                   help="stock angr vs fork vs dsmm on third-party and specification-derived programs")
    b.add_argument("--plot", metavar="PNG", default=None, help="with --models: plot time against matrix size")
    b.set_defaults(func=cmd_bench)
    return p


def main(argv=None) -> int:
    """Entry point of the ``angr-ram`` command."""
    args = build_parser().parse_args(argv)
    if getattr(args, "stdin_bytes", 1) is not None and getattr(args, "stdin_bytes", 1) <= 0:
        print("angr-ram: --stdin-bytes must be a positive number", file=sys.stderr)
        return 2
    try:
        return args.func(args)
    except AngrRamError as e:
        print(f"angr-ram: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
