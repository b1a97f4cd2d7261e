"""Explore one binary over dask.distributed workers: the frontier of states is partitioned over them.

The driver explores from the entry state until the frontier has a few states per worker, then
submits batches of pickled states (:mod:`angr_ram.run.shipping`) as dask tasks. A task steps its states
with the run's techniques and options for a bounded time, and returns its finished paths as plain
records (outcomes, error paths with their reproducing stdin) and its remaining frontier as pickled
states, which the driver submits again, in batches, to whichever workers are free (work balancing).

Each worker loads the binary once per run and keeps one :class:`~angr_ram.RelocatableMemory`
technique for it (a worker plugin), so run-scoped tables (query cache, memos, counters) are per
worker; ``persist=`` may name a directory that all workers share. A task's input states are part
of the task, held by the scheduler: when a worker dies, dask runs the task again elsewhere and no
state is lost. A task that raises is reported as an error with its input states' ids and the run
continues. dask does the scheduling, transport and retries; nothing here is a scheduler.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
import uuid
import warnings
from collections import deque
from dataclasses import dataclass, field

from angr_ram.core.deadline import Deadline
from angr_ram.core.errors import AngrRamError
from angr_ram.run.concrete_steps import own_driver
from angr_ram.run.runner import RunResult, collect_paths, count_into, prepare
from angr_ram.run.shipping import StatePacker, prime_continuations
from angr_ram.run.technique import stats as run_stats

PLUGIN_PREFIX = "angr-ram-run-"
HUNGER_CHECK = 0.5      # seconds between a task's looks at the driver's "a worker is idle" event


@dataclass(frozen=True)
class RunSpec:
    """What a worker needs to rebuild a run's project and techniques: the binary and options."""

    binary: str
    stdin_bytes: int
    engine: str
    model: str
    symbolic_bases: bool
    args: tuple = ()
    files: tuple = ()
    find: tuple = ()
    avoid: tuple = ()
    num_find: int = 1
    options: tuple = ()          # sorted (name, value) pairs for RelocatableMemory
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])

    def prepare(self):
        """The run's simulation manager (with its entry state) and RelocatableMemory technique, with
        SimProcedure continuations at the same addresses in every process."""
        simgr, tech = prepare(self.binary, self.stdin_bytes, engine=self.engine, model=self.model,
                       symbolic_bases=self.symbolic_bases, args=self.args, files=self.files,
                       find=self.find, avoid=self.avoid, num_find=self.num_find, **dict(self.options))
        prime_continuations(simgr._project)
        return simgr, tech


@dataclass
class BatchResult:
    """What one task returns: its finished paths, its remaining frontier and the worker's counters."""

    paths: RunResult
    frontier: list[bytes]
    stats: dict
    session: str                 # the worker run that stepped the batch (a restarted worker has a new one)
    batches: int                 # batches that worker run has stepped so far (orders its stats snapshots)
    steps: int
    seconds: float
    bytes_out: int


class WorkerRun:
    """One run on one worker: the project loaded once, the technique whose run scope the batches
    share, and the packer that joins shipped states to them."""

    def __init__(self, spec: RunSpec):
        self.spec = spec
        self.simgr, self.tech = spec.prepare()   # techniques attached once: hooks are installed once
        self.simgr.drop(stash="active")          # the entry state is the driver's
        self.packer = StatePacker(self.simgr)
        self.session = uuid.uuid4().hex[:12]
        self.batches = 0
        self.lock = threading.Lock()             # a worker with several threads steps one batch at a time

    def step(self, blobs: list[bytes], seconds: float | None, hungry: str | None) -> BatchResult:
        """Step the shipped states until none is active, ``seconds`` (if not None) have passed, or the driver's
        dask Event ``hungry`` says a worker is idle with nothing to do (checked every
        :data:`HUNGER_CHECK` seconds) while this batch has two states or more to share; then
        return the finished paths and the frontier."""
        with self.lock:
            t0 = time.perf_counter()
            simgr = self.simgr
            simgr.populate("active", [self.packer.loads(b) for b in blobs])
            event = _event(hungry)
            steps, checked = 0, t0
            try:
                while simgr.active:
                    with own_driver():
                        simgr.step()
                    steps += 1
                    now = time.perf_counter()
                    if seconds is not None and now - t0 >= seconds:
                        break
                    if event is not None and now - checked >= HUNGER_CHECK and len(simgr.active) >= 2:
                        checked = now
                        if event.is_set():
                            break
                if self.tech is not None:   # a path deferred in this batch is shipped back, not lost
                    self.tech.resume_deferred(simgr)
                paths = collect_paths(simgr, RunResult())
                before = self.packer.bytes_out
                frontier = [self.packer.dumps(s) for s in simgr.active]
            finally:
                _empty(simgr)         # a failed batch leaves nothing behind for the next one
            self.batches += 1
            st = self.tech.stats.as_dict() if self.tech is not None else {}
            return BatchResult(paths, frontier, st, self.session, self.batches, steps,
                               time.perf_counter() - t0, self.packer.bytes_out - before)


def _empty(simgr) -> None:
    """Drop every state of ``simgr`` (its finished paths have been collected)."""
    for states in simgr.stashes.values():
        states.clear()
    simgr.errored.clear()


def _run_plugin_class():
    from distributed import WorkerPlugin

    class RunPlugin(WorkerPlugin):
        """Keeps the :class:`WorkerRun` of one run on each worker (built at the first task)."""

        def __init__(self, spec: RunSpec):
            self.spec = spec
            self.name = PLUGIN_PREFIX + spec.run_id
            self.run = None

        def get(self) -> WorkerRun:
            if self.run is None:
                self.run = WorkerRun(self.spec)
            return self.run

        def teardown(self, worker):
            if self.run is not None and self.run.tech is not None:
                self.run.tech.close()
            self.run = None

    return RunPlugin


def _event(name: str | None):
    if name is None:
        return None
    from distributed import Event
    return Event(name)


def run_batch(run_id: str, blobs: list[bytes], seconds: float | None, hungry: str | None = None) -> BatchResult:
    """The dask task: step ``blobs`` (pickled states) on this worker's run ``run_id``."""
    from distributed import get_worker
    plugin = get_worker().plugins[PLUGIN_PREFIX + run_id]
    return plugin.get().step(blobs, seconds, hungry)


@dataclass
class Progress:
    """What the driver knows after each finished task (given to the ``progress`` callback)."""

    paths: int
    errors: int
    frontier: int                # states waiting or being stepped
    busy: int                    # tasks being run
    workers: int
    tasks: int
    seconds: float
    client: object = None        # the dask Client, for scripts that want more


def explore_distributed(binary: str, stdin_bytes: int = 0, workers: int = 2, scheduler: str | None = None,
                        engine: str = "ram", model: str = "fork", symbolic_bases: bool = True,
                        timeout: float | None = None, progress=None, max_paths: int | None = None,
                        args=(), files=(), find=(), avoid=(), num_find: int = 1, batch: int = 16,
                        task_seconds: float | None = None, client=None, **options) -> RunResult:
    """Explore ``binary`` like :func:`angr_ram.run.runner.explore`, stepping the states on dask workers.

    ``workers`` local worker processes (a ``LocalCluster``), or the cluster of the scheduler at
    ``scheduler`` ("tcp://host:8786"), or an existing dask ``client``. A task takes up to ``batch``
    states and steps them until they are done, or until a worker is idle and no state is waiting
    (a dask ``Event`` the driver sets; then it returns its frontier), or for at most
    ``task_seconds`` (None: no bound but the run's ``timeout``). States are shipped when another
    worker needs them, not on a clock: a shipped state loses its solver's caches. The result's stats hold the summed counters of the driver and all workers, plus
    ``dist_*`` counts (tasks, states shipped, bytes pickled per state, failed tasks).
    """
    for bad in ("merge", "merge_points", "tests"):
        if options.get(bad):
            raise AngrRamError(f"{bad}= is not supported with workers: quantified merging needs the states "
                               "it merges in one process, and tests are collected from one run's states")
        options.pop(bad, None)
    try:
        import dask
        import distributed
    except ImportError:
        raise AngrRamError("--workers/--scheduler need dask.distributed: pip install 'angr-ram[dist]'") from None
    if workers < 1:
        raise AngrRamError(f"workers must be at least 1, not {workers}")
    spec = RunSpec(os.path.abspath(binary), stdin_bytes, engine, model, symbolic_bases, tuple(args),
                   tuple(tuple(f) for f in files), tuple(find), tuple(avoid), num_find,
                   tuple(sorted(options.items())))
    t0 = time.perf_counter()
    deadline = Deadline(timeout, start=t0)      # the run's one time limit (angr_ram.core.deadline)
    res = RunResult()
    simgr, tech = spec.prepare()
    dist = {"dist_tasks": 0, "dist_tasks_failed": 0, "dist_states_shipped": 0, "dist_bytes_pickled": 0,
            "dist_steps": 0, "dist_worker_seconds": 0.0}

    def stopped() -> str | None:
        done = sum(res.endings.values()) + len(res.errors)
        if find and res.found >= num_find:
            return "found"
        if deadline.passed():
            return "timeout"
        if max_paths is not None and done >= max_paths:
            return "max-paths"
        return None

    cluster = own_client = None
    nworkers = workers
    if client is None and scheduler is not None:
        client = own_client = distributed.Client(scheduler)
    if client is not None:                # an existing cluster: its workers count
        nworkers = max(1, len(client.scheduler_info().get("workers", {})))

    # local start: a few states per worker
    while simgr.active and len(simgr.active) < 2 * nworkers and stopped() is None:
        with own_driver():
            simgr.step()
        if tech is not None:          # shipped states run with the full z3 budget
            tech.resume_deferred(simgr)
        active = list(simgr.active)
        simgr.drop(stash="active")
        collect_paths(simgr, res)
        _empty(simgr)
        simgr.populate("active", active)
    packer = StatePacker(simgr)
    pending: deque = deque((i, packer.dumps(s)) for i, s in enumerate(simgr.active))
    next_id = len(pending)
    simgr.drop(stash="active")
    local_stats = run_stats(simgr)
    if tech is not None:
        tech.close()
    snapshots: dict[str, tuple[int, dict]] = {}
    dist["dist_states_shipped"] += len(pending)
    dist["dist_bytes_pickled"] += packer.bytes_out

    res.stopped = stopped()
    if pending and res.stopped is None:
        warnings.filterwarnings("ignore", message=".*large graph.*", category=UserWarning)
        logging.getLogger("distributed").setLevel(logging.ERROR)
        if client is None:
            # read by the worker processes: quiet logs, and no statistical profiler (it samples
            # the task thread's deep angr stacks every 10 ms and slows stepping by a third)
            # (the nannies hand the workers this process's dask config, so it is set here too)
            os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "error")
            with dask.config.set({"distributed.worker.profile.enabled": False}):
                cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                                   dashboard_address=None, silence_logs=logging.ERROR)
            client = own_client = distributed.Client(cluster)
        plugin = _run_plugin_class()(spec)
        client.register_plugin(plugin)
        inflight: dict = {}
        ac = distributed.as_completed()
        hungry = distributed.Event(f"angr-ram-hungry-{spec.run_id}", client=client)
        is_hungry = [False]

        def budget() -> float | None:
            left = deadline.left()
            return left if task_seconds is None else task_seconds if left is None else min(left, task_seconds)

        def submit() -> None:
            slots = nworkers                  # one task per worker; a task shares its states on demand
            while pending and len(inflight) < slots:
                k = max(1, min(batch, math.ceil(len(pending) / (slots - len(inflight)))))
                chunk = [pending.popleft() for _ in range(min(k, len(pending)))]
                fut = client.submit(run_batch, spec.run_id, [b for _, b in chunk], budget(), hungry.name,
                                    pure=False)
                inflight[fut] = [i for i, _ in chunk]
                ac.add(fut)
                dist["dist_tasks"] += 1
            want = not pending and len(inflight) < slots      # a worker idles: running tasks should share
            if want != is_hungry[0]:
                hungry.set() if want else hungry.clear()
                is_hungry[0] = want

        try:
            submit()
            for fut in ac:
                ids = inflight.pop(fut)
                if fut.status == "error":
                    exc = fut.exception()
                    dist["dist_tasks_failed"] += 1
                    res.errors.append(("task-failed", f"{type(exc).__name__}: {exc} (input states {ids})", None))
                else:
                    out: BatchResult = fut.result()
                    _merge_paths(res, out.paths)
                    seen = snapshots.get(out.session)
                    if seen is None or seen[0] < out.batches:
                        snapshots[out.session] = (out.batches, out.stats)
                    for b in out.frontier:
                        pending.append((next_id, b))
                        next_id += 1
                    dist["dist_states_shipped"] += len(out.frontier)
                    dist["dist_bytes_pickled"] += out.bytes_out
                    dist["dist_steps"] += out.steps
                    dist["dist_worker_seconds"] += out.seconds
                fut.release()
                res.stopped = stopped()
                if res.stopped is not None:
                    break
                submit()
                if progress is not None:
                    progress(Progress(sum(res.endings.values()), len(res.errors), len(pending) + sum(
                        len(v) for v in inflight.values()), len(inflight), nworkers, dist["dist_tasks"],
                        time.perf_counter() - t0, client))
        except KeyboardInterrupt:
            res.stopped = "interrupted"
        finally:
            for fut in list(inflight):
                fut.cancel()
            try:
                client.unregister_worker_plugin(plugin.name)
            except Exception:  # noqa: BLE001 - the run's result does not depend on the cleanup
                pass
            if own_client is not None:
                own_client.close()
            if cluster is not None:
                cluster.close()
    if own_client is not None and own_client.status != "closed":   # the run ended in the local start
        own_client.close()
    res.timed_out = res.stopped in ("timeout", "interrupted")
    res.seconds = time.perf_counter() - t0
    res.stats = _sum_stats([local_stats] + [s for _, s in snapshots.values()])
    res.stats["paths"] = sum(res.endings.values())
    res.stats["errors"] = len(res.errors)
    res.stats["unknown"] = res.unknown
    dist["dist_workers"] = nworkers
    dist["dist_bytes_per_state"] = dist["dist_bytes_pickled"] // max(1, dist["dist_states_shipped"])
    res.stats.update(dist)
    return res


def _merge_paths(res: RunResult, part: RunResult) -> None:
    res.outcomes |= part.outcomes
    res.outcomes_partial += part.outcomes_partial
    res.outcomes_from_model += part.outcomes_from_model
    count_into(res.endings, part.endings.items())
    res.errors.extend(part.errors)
    res.found += part.found
    res.unknown += part.unknown
    count_into(res.stubs, part.stubs.items())
    count_into(res.environment, part.environment.items())


def _sum_stats(snapshots: list[dict]) -> dict:
    total: dict = {}
    for snap in snapshots:
        for k, v in snap.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                total.setdefault(k, v)
            else:
                total[k] = total.get(k, 0) + v
    return total
