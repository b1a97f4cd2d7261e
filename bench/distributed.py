"""Distributed table: one program with over a thousand paths, single-process and on 1, 2 and 4 local
dask workers (``angr-ram bench --distributed``)."""

from __future__ import annotations

import time
from pathlib import Path

from angr_ram.run.runner import explore

from . import sample_path

DIST_SAMPLE = ("memspnab9_O0", 10)     # 1535 paths, about 110 s single-process on the 2-core machines
DIST_WORKERS = (1, 2, 4)


def distributed_table(timeout: float = 900.0, workers=DIST_WORKERS, samples_dir: Path | None = None,
                      sample: tuple[str, int] = DIST_SAMPLE, task_seconds: float | None = None) -> int:
    """Time, paths, tasks, states shipped and pickled bytes per state of ``sample`` explored in one
    process and on each number of ``workers`` (a LocalCluster each), with the speedup over one
    worker; every run's outcome set is compared with the single-process run's."""
    from angr_ram.run.distributed import explore_distributed

    name, n = sample
    path = sample_path(name, samples_dir)
    hdr = (f"{'run':14} {'time s':>8} {'paths':>6} {'same outcomes':>13} {'tasks':>6} {'shipped':>8} "
           f"{'KiB/state':>9} {'worker s':>9} {'vs 1 worker':>11}")
    print(f"{name}, {n} symbolic stdin bytes")
    print(hdr)
    print("-" * len(hdr))
    t = time.perf_counter()
    single = explore(path, n, timeout=timeout)
    secs = time.perf_counter() - t
    print(f"{'one process':14} {secs:8.2f} {single.stats['paths']:6d} {'-':>13} {'-':>6} {'-':>8} {'-':>9} "
          f"{'-':>9} {'-':>11}" + ("  TIMEOUT" if single.timed_out else ""), flush=True)
    one = None
    for w in workers:
        t = time.perf_counter()
        r = explore_distributed(path, n, workers=w, timeout=timeout, task_seconds=task_seconds)
        secs = time.perf_counter() - t       # includes starting the cluster and its workers
        s = r.stats
        one = secs if w == 1 else one
        speed = f"{one / secs:.2f}x" if one is not None else "-"
        print(f"{f'{w} worker(s)':14} {secs:8.2f} {s['paths']:6d} {str(r.outcomes == single.outcomes):>13} "
              f"{s['dist_tasks']:6d} {s['dist_states_shipped']:8d} {s['dist_bytes_per_state'] / 1024:9.0f} "
              f"{s['dist_worker_seconds']:9.1f} {speed:>11}" + ("  TIMEOUT" if r.timed_out else ""), flush=True)
    return 0
