"""``setenv``, ``unsetenv``, ``putenv`` and ``clearenv``, and ``getenv``/``secure_getenv`` that see
them.

angr models ``getenv`` over the environment the path started with and stubs the others (any
return value, nothing changed), so a program that passed a value to itself through its environment
(a "covert propagation" logic bomb) read back nothing: ``getenv`` of a name just set was NULL.

The changes are kept per path in ``state.globals`` (the names' latest settings, last wins):

* ``setenv(name, value, overwrite)`` copies ``"name=value"`` to the heap and sets ``name`` to the
  copy's value part, unless ``name`` is set and ``overwrite`` is 0 (an ``overwrite`` that may be
  0 or not forks the path); a NULL or empty name, or one with ``=``: -1 with ``EINVAL``;
* ``putenv("name=value")`` sets ``name`` to the caller's own string (glibc keeps the string: a
  later change to it is seen by ``getenv``); a string without ``=`` unsets the name;
* ``unsetenv(name)`` unsets it; ``clearenv()`` unsets every name;
* ``getenv(name)``: the latest setting of ``name``, else the start's environment (angr's model).

A program that walks ``environ`` itself sees the start's environment only."""

from __future__ import annotations

import angr
import claripy

from angr_ram.core.errors import ForkRequest, Target
from angr_ram.memory.strategies.fork import value_forking_enabled
from angr_ram.procedures.libc import ret_errno, single_value
from angr_ram.procedures.strings import RamStrlen, concrete_string

_KEY = "angr_ram_env_vars"      # state.globals: ((name, value pointer or None), ...); name None: clearenv
MAX_NAME = 4096


def _setting(state, name: bytes):
    """(True, pointer or None) for ``name``'s latest change on the path, else (False, None)."""
    for key, ptr in reversed(state.globals.get(_KEY, ())):
        if key is None or key == name:
            return True, ptr
    return False, None


def _change(state, name: bytes | None, ptr) -> None:
    state.globals[_KEY] = (*state.globals.get(_KEY, ()), (name, ptr))


class RamGetenv(angr.SIM_PROCEDURES["posix"]["getenv"]):
    """``getenv(name)`` / ``secure_getenv(name)``: the path's latest setting, else angr's model."""

    def run(self, m_name):  # pylint: disable=arguments-differ
        name = concrete_string(self, m_name, MAX_NAME)
        if name is not None:
            changed, ptr = _setting(self.state, name)
            if changed:
                return claripy.BVV(0, self.arch.bits) if ptr is None else ptr
        return super().run(m_name)


def _name(proc, m_name) -> bytes | None:
    """The variable name at ``m_name``, or None when it is NULL, empty, has ``=`` or is not one
    string on the path."""
    if proc.state.solver.is_true(m_name == 0):
        return None
    name = concrete_string(proc, m_name, MAX_NAME)
    return name if name and b"=" not in name else None


class Setenv(angr.SimProcedure):
    """``setenv(name, value, overwrite)``."""

    def run(self, m_name, m_value, overwrite):  # pylint: disable=arguments-differ
        name = _name(self, m_name)
        if name is None:
            return ret_errno(self.state, "EINVAL")
        flag = overwrite[31:0]
        keep = single_value(self.state, flag)
        if keep is None and value_forking_enabled() and self._is_set(m_name, name):
            raise ForkRequest([Target(flag == 0, "value"), Target(flag != 0, "value")], "setenv overwrite")
        if keep == 0 and self._is_set(m_name, name):
            return claripy.BVV(0, 32)
        n = self.inline_call(RamStrlen, m_value).ret_expr
        size = self.state.solver.max(n) + 1 if n.symbolic else n.concrete_value + 1
        head = name + b"="
        block = self.state.heap._malloc(claripy.BVV(len(head) + size, self.arch.bits))
        self.state.memory.store(block, claripy.BVV(head))
        self.state.memory.store(block + len(head), self.state.memory.load(m_value, size))
        _change(self.state, name, block + len(head))
        return claripy.BVV(0, 32)

    def _is_set(self, m_name, name: bytes) -> bool:
        changed, ptr = _setting(self.state, name)
        if changed:
            return ptr is not None
        found = self.inline_call(RamGetenv, m_name).ret_expr
        return not self.state.solver.is_true(found == 0)


class Unsetenv(angr.SimProcedure):
    """``unsetenv(name)``."""

    def run(self, m_name):  # pylint: disable=arguments-differ
        name = _name(self, m_name)
        if name is None:
            return ret_errno(self.state, "EINVAL")
        _change(self.state, name, None)
        return claripy.BVV(0, 32)


class Putenv(angr.SimProcedure):
    """``putenv(string)``."""

    def run(self, m_string):  # pylint: disable=arguments-differ
        if self.state.solver.is_true(m_string == 0):
            return ret_errno(self.state, "EINVAL")
        name = bytearray()
        for i in range(MAX_NAME):          # the name: the bytes before "=" (the value may be symbolic)
            b = single_value(self.state, self.state.memory.load(m_string + i, 1))
            if b is None:
                return ret_errno(self.state, "EINVAL")
            if b in (0, ord("=")):
                break
            name.append(b)
        else:
            return ret_errno(self.state, "EINVAL")
        if not name:
            return ret_errno(self.state, "EINVAL")
        _change(self.state, bytes(name), m_string + len(name) + 1 if b else None)
        return claripy.BVV(0, 32)


class Clearenv(angr.SimProcedure):
    """``clearenv()``."""

    def run(self):  # pylint: disable=arguments-differ
        _change(self.state, None, None)
        return claripy.BVV(0, 32)


ENVIRONMENT_VARIABLE_PROCEDURES = {"getenv": RamGetenv, "secure_getenv": RamGetenv, "setenv": Setenv, "unsetenv": Unsetenv, "putenv": Putenv, "clearenv": Clearenv}
