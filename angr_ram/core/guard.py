"""Run guard: the run's deadline, Ctrl-C and a per-step time and memory budget, enforced from a
watcher thread whatever the main thread is doing.

A Python signal handler or a time check in the exploration loop runs only when the main thread
comes back to Python code; a z3 check (a C call) or a step that builds a huge expression does not
come back for minutes. And z3 takes the first Ctrl-C for itself: during a check it catches SIGINT,
answers ``unknown`` and the run goes on, so the user had to press twice.

:class:`RunGuard` (a context manager, one per run) is watched by one daemon thread that wakes every
``TICK`` seconds and on every SIGINT (through :func:`signal.set_wakeup_fd`, with the z3 solvers'
own Ctrl-C handling turned off by :func:`quiet_ctrl_c`). When the run must stop (deadline passed,
Ctrl-C) or the step that is running exceeds its budget, the thread

1. interrupts the step's z3 context (the check in progress answers ``unknown`` at once), and
2. if the step is still running ``grace`` seconds later, raises an exception in its thread
   (:class:`RunStopped` or :class:`StepAbandoned`, both ``BaseException`` so that no
   ``except Exception`` in angr or claripy swallows them) with ``PyThreadState_SetAsyncExc``,
   again every ``grace`` seconds (a raise that lands in a ctypes callback is dropped).

A step that z3 was interrupted in ends with that exception even if it completed: an interrupted
z3 may have answered wrongly (see :func:`fresh_answer`), so nothing it produced is kept, and the
interrupt is drained before the next check. Exceptions are raised only between
:meth:`RunGuard.step` entry and exit; a pending one is cleared when the step ends. A third Ctrl-C
raises KeyboardInterrupt (the user does not want to wait). SIGTERM (``timeout``, ``kill``, a batch
system ending the job) counts as a Ctrl-C press where the process left it at its default, so a
terminated run still writes its summary and tests. What the guard cannot bound: a z3 phase
that looks at neither its interrupt nor its time-out (the internalisation of a huge formula)
returns only when z3 does; z3's memory there is capped at :data:`Z3_CAP_FACTOR` times the step's
memory budget.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import select
import signal
import sys
import threading
import time

from angr_ram.core.deadline import Deadline
from angr_ram.core.z3_interrupts import (
    _z3_memory_cap,
    _z3_memory_restore,
    drain_z3,
    interrupt_z3,
    thread_context,
)

TICK = 0.05          # seconds between the watcher's checks
# z3's own allocator is capped at this many times the step's memory budget: a last resort for a
# phase that ignores interrupts. At the budget itself z3 4.13 reached the cap where its
# out-of-memory exception is not caught (std::terminate: the process aborted, losing the run);
# above it the watcher's RSS check interrupts z3 first wherever z3 looks at interrupts.
Z3_CAP_FACTOR = 4


class RunStopped(BaseException):
    """The run must stop now (its deadline passed, or Ctrl-C): raised inside a guarded step."""

    reason = "stopped"


class RunDeadline(RunStopped):
    """The run's time limit passed."""

    reason = "timeout"


class RunInterrupted(RunStopped):
    """Ctrl-C."""

    reason = "interrupted"


class StepAbandoned(BaseException):
    """The running step exceeded its own budget: the state is set aside, the run goes on."""

    reason = "step over budget"


class StepTimeBudget(StepAbandoned):
    """The step ran longer than its time budget."""

    reason = "step time budget exceeded"


class StepMemoryBudget(StepAbandoned):
    """The process grew by more than the step's memory budget while the step ran."""

    reason = "step memory budget exceeded"


def rss_mb() -> float:
    """Resident set size of this process in MiB (0 where /proc is not available)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return 0.0


def available_mb() -> float:
    """Memory the machine has available (``MemAvailable``) in MiB (0 where /proc is not available)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0.0


MEMORY_RETRY_FACTOR = 4        # a step over its memory budget is retried with this many times the budget ...
MEMORY_RETRY_SHARE = 0.5       # ... while that is at most this share of the machine's available memory


def retry_memory_scale(budget_mb: float | None, scale: int) -> int | None:
    """The budget scale for retrying a step that went over ``budget_mb * scale``: the next
    :data:`MEMORY_RETRY_FACTOR`-fold one while it stays within :data:`MEMORY_RETRY_SHARE` of the
    memory the machine has available (a step over the budget, z3 on a hash of the input, is not
    given up while the machine could afford it); None when it may not grow any more."""
    if not budget_mb:
        return None
    scale *= MEMORY_RETRY_FACTOR
    return scale if budget_mb * scale <= MEMORY_RETRY_SHARE * available_mb() else None


def release_memory() -> None:
    """Collect garbage and give freed heap pages back to the system (glibc's ``malloc_trim``), so
    that the memory an abandoned step held is not counted against the next one."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def _quiet_unraisable(hook):
    """``sys.unraisablehook`` that drops the guard's own exceptions: one raised into the main thread
    while it ran a ctypes callback (z3's error handler) is reported there as unraisable; the guard
    raises it again, so the report is noise."""
    def quiet(unraisable):
        try:
            ours = isinstance(unraisable.exc_value, RunStopped | StepAbandoned)
        except RecursionError:      # reported from deep in claripy's recursion: no room to report it
            return
        if not ours:
            hook(unraisable)
    quiet.ram_guard = True
    return quiet


# PyThreadState_SetAsyncExc(thread id, exception type)
_set_async_exc = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.py_object)(
    ("PyThreadState_SetAsyncExc", ctypes.pythonapi))


def _raise_in(thread_id: int, exc_type) -> None:
    _set_async_exc(thread_id, exc_type)


class _Withdrawn(BaseException):
    """Stands in for a raise of the guard's that was not delivered; delivered and caught at once."""


def _nothing() -> None:
    pass


def _withdraw_pending_raise() -> None:
    """Drop a raise the watcher set in the calling thread that has not been delivered yet. It is
    replaced by :class:`_Withdrawn`, which the next function call here delivers and the handler
    catches. Clearing it with ``PyThreadState_SetAsyncExc(id, NULL)`` leaves CPython 3.11's eval
    breaker set with nothing to deliver: under a profiler or tracer (cProfile, coverage, a
    debugger) the next function call then looped for ever at its first instruction."""
    try:
        _set_async_exc(threading.get_ident(), _Withdrawn)    # (delivered as early as this call's end)
        for _ in range(100):
            _nothing()
    except _Withdrawn:
        pass


class _Watcher:
    """The one watcher thread of the process: every ``TICK`` seconds (and at once on a Ctrl-C byte
    from a guard's wake-up pipe) it checks the registered guards."""

    def __init__(self):
        self.guards: list[RunGuard] = []
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None

    def add(self, guard: RunGuard) -> None:
        if not getattr(sys.unraisablehook, "ram_guard", False):
            sys.unraisablehook = _quiet_unraisable(sys.unraisablehook)
        with self.lock:
            if guard not in self.guards:
                self.guards.append(guard)
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._run, name="angr-ram-guard", daemon=True)
                self.thread.start()

    def remove(self, guard: RunGuard) -> None:
        with self.lock:
            if guard in self.guards:
                self.guards.remove(guard)

    def _run(self) -> None:
        while True:
            self._tick()

    def _tick(self) -> None:
        """One round of checks. A function of its own: its locals (the guards of this round) go when
        it returns. Kept in the thread's loop, the last guard checked stayed referenced after its run
        ended (a loop over no guards rebinds nothing), and with it the run's technique, project,
        engine and last state: the z3 and claripy objects of a whole run, which made every later run
        in the process slower (checks 2-4x the CPU time) and larger."""
        with self.lock:
            guards = list(self.guards)
        pipes = [g._pipe[0] for g in guards if g._pipe is not None]
        if pipes:
            try:
                ready, _, _ = select.select(pipes, [], [], TICK)
            except (OSError, ValueError):      # a pipe closed under us: the guard is leaving
                ready = []
        else:
            time.sleep(TICK)
            ready = []
        for g in guards:
            try:
                if g._pipe is not None and g._pipe[0] in ready:
                    g._read_pipe()
                g._check()
            except Exception:  # noqa: BLE001, S112 - the watcher must outlive any one guard's trouble
                continue


_WATCHER = _Watcher()


class RunGuard:
    """Enforce a run's deadline, Ctrl-C and per-step budgets (see the module docstring).

    :param deadline: the run's :class:`~angr_ram.core.deadline.Deadline` (None: no limit); when the
        run must stop early (Ctrl-C) it is stopped too, so that every reader sees it passed.
    :param step_seconds: a step running longer is abandoned (None: no limit); see :meth:`step`.
    :param step_memory_mb: a step during which the process grows by more is abandoned (None: no limit).
    :param grace: seconds between interrupting z3 and raising in the main thread.
    :param catch_sigint: take over SIGINT (and SIGTERM, if at its default) for the run (only possible in
        the main thread).
    :param on_stop: called (from the watcher thread) once when the run must stop.
    """

    def __init__(self, deadline: Deadline | None = None, step_seconds: float | None = None,
                 step_memory_mb: float | None = None, grace: float = 0.2, catch_sigint: bool = True,
                 on_stop=None):
        self.deadline = deadline if deadline is not None else Deadline()
        self.step_seconds = step_seconds
        self.step_memory_mb = step_memory_mb
        self.grace = grace
        self.catch_sigint = catch_sigint and threading.current_thread() is threading.main_thread()
        self.on_stop = on_stop
        self.stop_reason: str | None = None      # "timeout" or "interrupted" once the run must stop
        self.interrupts = 0                      # Ctrl-C presses seen
        self.abandoned = 0                       # steps abandoned for their budget
        self._lock = threading.Lock()
        self._step = None                        # (serial, started, rss at start, budget seconds) of the guarded step
        self._serial = 0
        self._raised_for = None                  # serial of the step an exception was raised in
        self._why: dict = {}                     # serial -> the StepAbandoned kind z3 was interrupted for
        self._interrupted = None                 # serial of the last step whose z3 context was interrupted
        self._stopped_at = None                  # perf_counter() when the run had to stop
        self._ctx = None                         # the z3 context of the guarded step's thread
        self.last_interrupted = None             # the exception kind the last step was interrupted for (None: not)
        self._pending_stop = None                # (serial, perf_counter()) when z3 was last interrupted for a step
        self._main = self._owner = threading.get_ident()
        self._pipe = None
        self._old = None
        self._entered = 0

    # -- life cycle -------------------------------------------------------------------------------
    def __enter__(self) -> RunGuard:
        self._entered += 1
        if self._entered > 1:
            return self
        self._main = self._owner = threading.get_ident()
        if self.catch_sigint:
            r, w = os.pipe()
            os.set_blocking(w, False)
            os.set_blocking(r, False)
            try:
                old_fd = signal.set_wakeup_fd(w)
                old_handler = signal.signal(signal.SIGINT, self._on_sigint)
                old_term = signal.getsignal(signal.SIGTERM)
                if old_term == signal.SIG_DFL:      # a handler of the user's own stays theirs
                    signal.signal(signal.SIGTERM, self._on_sigint)
            except ValueError:          # not the main thread of the main interpreter after all
                os.close(r)
                os.close(w)
                self.catch_sigint = False
            else:
                self._pipe, self._old = (r, w), (old_fd, old_handler, old_term)
        _WATCHER.add(self)
        return self

    def __exit__(self, *exc) -> None:
        self._entered -= 1
        if self._entered > 0:
            return
        _WATCHER.remove(self)
        with self._lock:
            if self._old is not None:
                old_fd, old_handler, old_term = self._old
                signal.set_wakeup_fd(old_fd)
                signal.signal(signal.SIGINT, old_handler)
                if old_term == signal.SIG_DFL:
                    signal.signal(signal.SIGTERM, old_term)
                self._old = None
            if self._pipe is not None:
                pipe, self._pipe = self._pipe, None
                for fd in pipe:
                    os.close(fd)

    @staticmethod
    def _on_sigint(signum, frame) -> None:      # noqa: ARG004 - Python-level handler
        """Runs in the main thread when it next executes Python; the watcher acts on the pipe's byte."""

    # -- the main thread's side -------------------------------------------------------------------
    @property
    def stopped(self) -> bool:
        """Whether the run must stop (deadline or Ctrl-C)."""
        if self.stop_reason is None and self.deadline.passed():
            self._set_stop("timeout")
        return self.stop_reason is not None

    def seconds_left(self) -> float | None:
        """Seconds to the deadline (None: no deadline; 0 once stopped)."""
        if self.stopped:
            return 0.0
        return self.deadline.left()

    @contextlib.contextmanager
    def step(self, seconds: float | None = None, memory_mb: float | None = None, stoppable: bool = True,
             z3_memory_mb: float | None = None):
        """Guard one step: inside it, the run's stop and the step's budgets raise :class:`RunStopped`
        or :class:`StepAbandoned`. ``seconds`` and ``memory_mb`` override the guard's step budgets
        for this step (0: none); ``z3_memory_mb`` (0: none) is the budget z3's own cap is derived
        from, when it is not ``memory_mb`` (a budget cut to a run's room below its RSS cap must not
        shrink z3's last-resort cap, which z3 4.13 does not always survive). ``stoppable=False``:
        only the budgets apply (work done after the run stopped, such as choosing the tests' inputs)."""
        if stoppable and self.stopped:
            raise RunDeadline if self.stop_reason == "timeout" else RunInterrupted
        budget = self.step_seconds if seconds is None else (seconds or None)
        mem = self.step_memory_mb if memory_mb is None else (memory_mb or None)
        ctx = thread_context()
        with self._lock:
            self._serial += 1
            self._main = threading.get_ident()
            self._ctx = ctx
            self._step = (self._serial, time.perf_counter(), rss_mb() if mem else 0.0, budget, mem, stoppable)
        registered = self._entered == 0          # a budget-only guard watched only while its step runs
        if registered:
            _WATCHER.add(self)
        z3_cap = None
        z3_mb = mem if z3_memory_mb is None else (z3_memory_mb or None)
        if mem and z3_mb:       # z3's own allocator stops too, as a last resort (see Z3_CAP_FACTOR)
            z3_cap = _z3_memory_cap(z3_mb * Z3_CAP_FACTOR)
        completed = False
        try:
            yield
            completed = True
        except (KeyboardInterrupt, Exception) as e:
            # claripy turns a z3 check that was interrupted into KeyboardInterrupt (the guard took
            # SIGINT over, so inside a step this is the guard's own interrupt, or a third Ctrl-C),
            # and an interrupted tactic or model into an error: once the guard has interrupted this
            # step, whatever escapes it is the guard's stop
            if isinstance(e, KeyboardInterrupt) and self.interrupts >= 3:
                raise
            serial = self._step[0]
            if stoppable and self.stop_reason is not None:
                raise (RunDeadline if self.stop_reason == "timeout" else RunInterrupted) from e
            if serial in self._why:
                raise self._why[serial] from e
            if isinstance(e, KeyboardInterrupt):
                raise StepAbandoned from e       # another guard's interrupt reached this step's z3 call
            raise
        finally:
            with self._lock:
                serial = self._step[0]
                interrupted = self._interrupted == serial
                if not interrupted:
                    self.last_interrupted = None
                elif stoppable and self.stop_reason is not None:
                    self.last_interrupted = RunDeadline if self.stop_reason == "timeout" else RunInterrupted
                else:
                    self.last_interrupted = self._why.get(serial, StepAbandoned)
                self._why.pop(serial, None)
                raised = self._raised_for == serial
                self._step = None
                if raised:
                    _withdraw_pending_raise()     # a raise that had not been delivered yet (we are self._main)
            if interrupted:
                drain_z3(ctx)                 # the interrupt must not poison the next check (see above)
            if registered:
                _WATCHER.remove(self)
            if z3_cap is not None:
                _z3_memory_restore(z3_cap)
        if completed and self.last_interrupted is not None:
            # z3 was interrupted inside this step: an answer it got may be wrong, so nothing the
            # step produced is kept (the caller sets the state aside or stops, as for a raise)
            raise self.last_interrupted

    # -- the watcher thread's side ----------------------------------------------------------------
    def _read_pipe(self) -> None:
        try:
            data = os.read(self._pipe[0], 64)
        except (BlockingIOError, OSError, TypeError):
            return
        for _ in range(data.count(bytes([signal.SIGINT])) + data.count(bytes([signal.SIGTERM]))):
            self.interrupts += 1
            self._set_stop("interrupted")
            step = self._step
            if step is not None and step[5]:
                self._interrupt(step[0])
            if self.interrupts >= 3:          # a third press: the user does not want to wait
                with self._lock:
                    self._raised_for = -1
                    for tid in {self._main, self._owner}:
                        _raise_in(tid, KeyboardInterrupt)

    def seconds_stopped(self) -> float:
        """Seconds since the run had to stop (0 while it runs)."""
        return 0.0 if self._stopped_at is None else time.perf_counter() - self._stopped_at

    def _set_stop(self, reason: str) -> None:
        if self.stop_reason is None or (reason == "interrupted" and self.stop_reason == "timeout"):
            first = self.stop_reason is None
            if first:
                self._stopped_at = time.perf_counter()
                self.deadline.stop()
            self.stop_reason = reason
            if first and self.on_stop is not None:
                with contextlib.suppress(Exception):
                    self.on_stop()

    def _check(self) -> None:
        now = time.perf_counter()
        if self.stop_reason is None and self.deadline.passed():
            self._set_stop("timeout")
        step = self._step
        if step is None:
            return
        serial, started, rss0, budget, mem, stoppable = step
        if self.stop_reason is not None and stoppable:
            self._end_step(serial, now, RunDeadline if self.stop_reason == "timeout" else RunInterrupted)
        elif serial in self._why:
            self._end_step(serial, now, self._why[serial])
        elif budget is not None and now - started > budget:
            self.abandoned += 1
            self._end_step(serial, now, StepTimeBudget)
        elif mem is not None and rss_mb() - rss0 > mem:
            self.abandoned += 1
            self._end_step(serial, now, StepMemoryBudget)

    def _end_step(self, serial: int, now: float, exc_type) -> None:
        """End step ``serial``: interrupt z3 at once, and raise ``exc_type`` in the main thread if the
        step is still running ``grace`` seconds later; again every ``grace`` seconds while it runs
        (a raise that lands in a ctypes callback is dropped by ctypes)."""
        if self._pending_stop is None or self._pending_stop[0] != serial:
            self._pending_stop = (serial, now)
            if issubclass(exc_type, StepAbandoned):
                self._why[serial] = exc_type
            self._interrupt(serial)
            return
        if now - self._pending_stop[1] < self.grace:
            return
        with self._lock:
            step = self._step
            if step is not None and step[0] == serial:
                self._raised_for = serial
                _raise_in(self._main, exc_type)
        self._pending_stop = (serial, now)
        self._interrupt(serial)

    def _interrupt(self, serial: int) -> None:
        """Interrupt the z3 context of step ``serial`` if that step is still running (under the lock:
        the step's end, which drains the interrupts, cannot slip between the test and the interrupt)."""
        with self._lock:
            step = self._step
            if step is not None and step[0] == serial:
                self._interrupted = serial
                interrupt_z3(self._ctx)
