"""The frontier on dask workers: a LocalCluster of 2 workers finds exactly the native outcome set and
the single-process run's paths and error paths; a killed worker and a corrupted state lose nothing
else."""

import os
import signal

import pytest

distributed = pytest.importorskip("distributed")
import dask  # noqa: E402

from angr_ram.run.distributed import explore_distributed  # noqa: E402
from angr_ram.run.runner import explore  # noqa: E402
from angr_ram.run.shipping import StatePacker  # noqa: E402

from .conftest import BUILD, shared_run  # noqa: E402
from .groundtruth import outcome_set  # noqa: E402
from .test_errors import ASAN_ERROR, asan_results  # noqa: E402


@pytest.fixture(scope="module")
def client():
    os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "error")
    with dask.config.set({"distributed.worker.profile.enabled": False}):
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=None, silence_logs=40)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


# sample, stdin bytes, options: a pointer sample, one with dsmm, one on stock angr's engine, and code
# not written for angr-ram: zlib's crc32 (Debian's libz.a) and strspn/strcspn/strtok from the C standard
# (the stock-engine run takes 50 s: make test-slow)
RUNS = [("matrix10_O0", 2, {}), ("hashtables_O0", 1, {"model": "dsmm"}),
        pytest.param("branches_O2", 2, {"engine": "stock"}, marks=pytest.mark.slow, id="branches_O2-stock"),
        ("crc32_zlib_O0", 2, {}), ("strspn_generic_O0", 2, {}),
        ("strspn_generic_O2", 2, {})]


@pytest.mark.parametrize("name,n,opts", RUNS, ids=[getattr(r, "id", None) or r[0] + "-" + "-".join(map(str, r[2].values()))
                                                    for r in RUNS])
def test_outcomes_equal_native_and_single_process(client, name, n, opts):
    b = os.fspath(BUILD / name)
    d = explore_distributed(b, n, client=client, task_seconds=1.0, batch=2, **opts)
    single = shared_run(b, n, **opts) if not opts else explore(b, n, **opts)
    assert d.outcomes == frozenset(outcome_set(b, n)) == single.outcomes
    assert d.stats["paths"] == single.stats["paths"]
    assert d.endings == single.endings
    assert d.errors == [] and d.stopped is None
    assert d.stats["dist_tasks"] >= 2 and d.stats["dist_states_shipped"] >= 4
    if opts.get("engine") != "stock":          # the workers' counters are summed into the run's
        for k in ("objects", "forks", "resolutions", "let_bindings"):
            assert d.stats[k] == single.stats[k], k
        assert 0 < d.stats["dist_bytes_per_state"] < 4 << 20     # no project or run-wide table inside


def test_error_paths_travel_with_their_inputs(client):
    """uaf, on the cluster at a scheduler address: the three memory-error paths come back from the
    workers with inputs that the AddressSanitizer build confirms; the clean outcomes equal native."""
    b = os.fspath(BUILD / "uaf_O0")
    d = explore_distributed(b, 1, scheduler=client.scheduler.address, task_seconds=1.0, batch=1)
    assert d.stats["dist_workers"] == 2                   # counted from the scheduler it connected to
    native = asan_results("uaf")
    assert d.outcomes == {out for out in native.values() if out[0] != ASAN_ERROR}
    single = explore(b, 1)
    assert sorted((k, s) for k, _, s in d.errors) == sorted((k, s) for k, _, s in single.errors)
    assert {k for k, _, _ in d.errors} == {"use-after-free", "double-free", "invalid-free"}
    for _, _, stdin in d.errors:
        assert native[stdin][0] == ASAN_ERROR


def test_a_killed_worker_loses_no_state(client):
    """A worker process killed while it steps a batch: dask runs the batch again on a worker its
    nanny restarted, and the outcome set is still complete."""
    b = os.fspath(BUILD / "branches_O0")
    killed = []

    def kill_one(p):
        if killed:
            return
        working = [w for w, keys in p.client.processing().items() if keys]
        if working:
            pid = p.client.run(os.getpid, workers=working[:1])[working[0]]
            os.kill(pid, signal.SIGKILL)
            killed.append(working[0])

    d = explore_distributed(b, 2, client=client, task_seconds=0.5, batch=1, progress=kill_one)
    assert killed
    assert d.outcomes == frozenset(outcome_set(b, 2))
    assert d.stats["paths"] == shared_run(b, 2).stats["paths"]
    assert d.stats["dist_tasks_failed"] == 0 and d.errors == []
    client.wait_for_workers(2, timeout=60)      # the nanny brought the worker back


def test_a_failing_task_is_reported_with_its_states_and_the_run_goes_on(client, monkeypatch):
    """One shipped state is corrupted: its task fails, is reported with the id of its input state,
    and the other states' paths are still explored."""
    real = StatePacker.dumps
    calls = []

    def corrupt_second(self, state, trim_history=True):
        data = real(self, state, trim_history)
        calls.append(1)
        return b"not a state" if len(calls) == 2 else data

    monkeypatch.setattr(StatePacker, "dumps", corrupt_second)
    b = os.fspath(BUILD / "matrix10_O0")
    d = explore_distributed(b, 2, client=client, task_seconds=1.0, batch=1)
    failed = [m for k, m, _ in d.errors if k == "task-failed"]
    assert len(failed) == 1 and "input states [1]" in failed[0]
    assert d.stats["dist_tasks_failed"] == 1
    assert d.outcomes and d.outcomes <= frozenset(outcome_set(b, 2))
    assert 0 < d.stats["paths"] < shared_run(b, 2).stats["paths"]      # only that state's subtree is missing
