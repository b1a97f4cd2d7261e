"""A single-threaded model of the pthread calls libraries make on their own behalf.

Libraries that are thread-safe by default (glib's slice allocator, APR's pools, OpenSSL) create
thread-specific-data keys and lock mutexes even in a single-threaded program. angr models only
``pthread_mutex_lock``/``unlock``, ``pthread_once``, ``pthread_create`` and
``pthread_cond_signal``; every other pthread call returns an unconstrained value, so a key is
garbage, ``pthread_getspecific`` returns an arbitrary pointer and each lock "fails" on some path:
false error paths (glib's ``g_slice_alloc`` dereferences the pointer) and abort paths that the
program never takes. Here, as in a process with one thread:

* ``pthread_key_create`` writes a fresh key (1, 2, ... per path) and succeeds;
  ``pthread_setspecific``/``pthread_getspecific`` store and read the key's value (NULL until set);
* locks, attributes and naming succeed (the only thread always gets the lock; ``pthread_sigmask`` is
  :mod:`.signals`');
  ``pthread_self`` is the running thread's id (``pthread_equal`` compares ids);
* ``pthread_create`` runs the new thread's start routine to its return before the creator goes on
  (one schedule the kernel may pick; angr's ran the routine and then ended the path with exit 0,
  so whatever the creator did after it was lost), and ``pthread_join`` gives its return value.
  ``pthread_exit`` in the main thread ends the process with status 0 (glibc's, once no other
  thread runs); inside a started routine it is a named error (unwinding to the creator is not modelled).
"""

from __future__ import annotations

import angr
import claripy

from angr_ram.procedures.libc import single_value

_KEYS = "angr_ram_pthread_keys"     # state.globals: next key and the values (a tuple of pairs)
THREAD_ID = 0x7FFFF7D8A740          # pthread_self(): the one thread's id (an address, as in glibc)


def _table(state) -> tuple[int, dict]:
    nxt, pairs = state.globals.get(_KEYS, (1, ()))
    return nxt, dict(pairs)


def _save(state, nxt: int, values: dict) -> None:
    state.globals[_KEYS] = (nxt, tuple(values.items()))


def _key(state, key) -> int | None:
    return single_value(state, key[31:0])


class KeyCreate(angr.SimProcedure):
    """``pthread_key_create(key *, destructor)``: a fresh key, written to ``*key``; returns 0."""

    def run(self, key_ptr, destructor):  # pylint: disable=arguments-differ,unused-argument
        nxt, values = _table(self.state)
        self.state.memory.store(key_ptr, claripy.BVV(nxt, 32), endness=self.state.arch.memory_endness)
        _save(self.state, nxt + 1, values)
        return claripy.BVV(0, 32)


class GetSpecific(angr.SimProcedure):
    """``pthread_getspecific(key)``: the value last set for ``key`` on this path, NULL if none."""

    def run(self, key):  # pylint: disable=arguments-differ
        k = _key(self.state, key)
        if k is None:
            raise angr.errors.SimProcedureError("pthread_getspecific with a symbolic key")
        return _table(self.state)[1].get(k, claripy.BVV(0, self.state.arch.bits))


class SetSpecific(angr.SimProcedure):
    """``pthread_setspecific(key, value)``: stores ``value`` for ``key``; returns 0."""

    def run(self, key, value):  # pylint: disable=arguments-differ
        k = _key(self.state, key)
        if k is None:
            raise angr.errors.SimProcedureError("pthread_setspecific with a symbolic key")
        nxt, values = _table(self.state)
        values[k] = value
        _save(self.state, nxt, values)
        return claripy.BVV(0, 32)


class Succeed(angr.SimProcedure):
    """A pthread call that always succeeds in a single-threaded process: returns 0."""

    def run(self):  # pylint: disable=arguments-differ
        return claripy.BVV(0, 32)


class Self(angr.SimProcedure):
    """``pthread_self()``: the id of the thread running (the innermost started one, else the main
    thread's)."""

    def run(self):  # pylint: disable=arguments-differ
        running = _threads(self.state)[1]
        return claripy.BVV(running[-1] if running else THREAD_ID, self.state.arch.bits)


class Equal(angr.SimProcedure):
    """``pthread_equal(a, b)``: non-zero when the ids are the same."""

    def run(self, a, b):  # pylint: disable=arguments-differ
        return claripy.If(a == b, claripy.BVV(1, 32), claripy.BVV(0, 32))


_STARTED = "angr_ram_pthread_started"    # state.globals: (threads created, ids running innermost last,
#                                          ((id, return value), ...) of those that returned)
FIRST_THREAD = THREAD_ID + 0x801000         # the ids of started threads: apart from the main one
THREAD_SPACING = 0x801000                   # glibc's default thread stack and guard, as ids are spaced
ESRCH = 3


def _threads(state) -> tuple[int, tuple, tuple]:
    return state.globals.get(_STARTED, (0, (), ()))


class Create(angr.SimProcedure):
    """``pthread_create(thread, attr, start, arg)``: ``*thread`` gets a fresh id, ``start(arg)`` runs
    to its return, which ``pthread_join`` gives; returns 0. A thread that creates another one runs
    it to its return first: the routines' calls nest, so the innermost running thread returns first."""

    def run(self, thread, attr, start, arg):  # pylint: disable=arguments-differ,unused-argument
        created, running, done = _threads(self.state)
        tid = FIRST_THREAD + THREAD_SPACING * created
        self.state.memory.store(thread, claripy.BVV(tid, 64), endness=self.state.arch.memory_endness)
        self.state.globals[_STARTED] = (created + 1, (*running, tid), done)
        self.call(start, (arg,), "returned", prototype="void *start_routine(void *)")

    def returned(self, thread, attr, start, arg):  # pylint: disable=arguments-differ,unused-argument
        created, running, done = _threads(self.state)
        value = self.state.registers.load(self.state.arch.ret_offset, self.state.arch.bytes)
        self.state.globals[_STARTED] = (created, running[:-1], (*done, (running[-1], value)))
        return claripy.BVV(0, 32)


class Join(angr.SimProcedure):
    """``pthread_join(thread, retval)``: ``*retval`` (unless NULL) gets the thread's return value;
    0, or ``ESRCH`` for an id no ``pthread_create`` of this path gave."""

    def run(self, thread, retval):  # pylint: disable=arguments-differ
        tid = single_value(self.state, thread)
        if tid is None:
            raise angr.errors.SimProcedureError("pthread_join of a thread id with several values")
        values = dict(_threads(self.state)[2])
        if tid not in values:
            return claripy.BVV(ESRCH, 32)
        if retval.symbolic or retval.concrete_value != 0:
            self.state.memory.store(retval, values[tid], endness=self.state.arch.memory_endness)
        return claripy.BVV(0, 32)


class Exit(angr.SimProcedure):
    """``pthread_exit(value)``: see the module doc."""

    NO_RET = True

    def run(self, value):  # pylint: disable=arguments-differ,unused-argument
        if _threads(self.state)[1]:
            raise angr.errors.SimProcedureError("pthread_exit inside a started thread: unwinding to its creator is not modelled")
        self.exit(0)


SUCCEEDING = (
    "pthread_key_delete", "pthread_mutex_init", "pthread_mutex_destroy", "pthread_mutex_trylock",
    "pthread_mutex_timedlock", "pthread_mutex_consistent",
    "pthread_mutexattr_init", "pthread_mutexattr_destroy", "pthread_mutexattr_settype",
    "pthread_mutexattr_setprotocol", "pthread_mutexattr_setpshared", "pthread_mutexattr_setrobust",
    "pthread_rwlock_init", "pthread_rwlock_destroy", "pthread_rwlock_rdlock", "pthread_rwlock_wrlock",
    "pthread_rwlock_tryrdlock", "pthread_rwlock_trywrlock", "pthread_rwlock_unlock",
    "pthread_cond_init", "pthread_cond_destroy", "pthread_cond_broadcast",
    "pthread_attr_init", "pthread_attr_destroy", "pthread_attr_setstacksize", "pthread_attr_setinheritsched",
    "pthread_setname_np", "pthread_detach",
)
THREAD_PROCEDURES = {"pthread_key_create": KeyCreate, "pthread_getspecific": GetSpecific,
                     "pthread_setspecific": SetSpecific, "pthread_self": Self, "pthread_equal": Equal,
                     "pthread_create": Create, "pthread_join": Join, "pthread_exit": Exit,
                     **{name: Succeed for name in SUCCEEDING}}
