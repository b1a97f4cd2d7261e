"""Symbolic control flow: a jump or call whose target is read from a table at a symbolic index.

angr concretizes a symbolic jump target to at most 256 values and otherwise puts the successor in
its ``unconstrained`` stash: a call through a function-pointer table whose index may also select an
uninitialized word (past the table, or a table on the stack) loses every feasible target with it.
:func:`split_jump` takes such a successor apart arm by arm
(:func:`~angr_ram.memory.strategies.arms.value_arms`): each feasible narrow arm's targets become
successors constrained to the arm (and to the target), and the wide arms become one error path
``invalid-jump-target`` with an input that selects them. A target that is one wide value (a
return to a smashed stack) stays unconstrained, as in angr. A concrete target that holds no code
(:func:`invalid_target`: a table entry that is not a function) is the same error path instead of
angr's ``errored`` record.
"""

from __future__ import annotations

import claripy

from angr_ram.memory.strategies.arms import value_arms

ARMS_LIMIT = 64
TARGETS_PER_ARM = 256      # angr's own limit for one symbolic jump target


def split_jump(state):
    """``(successors, error_state)`` for an unconstrained successor ``state``, or None when its
    target is not a selection with a bounded arm (it then stays unconstrained)."""
    target = state.regs.ip
    if not target.symbolic:
        return None
    arms = value_arms(target, ARMS_LIMIT)
    if arms is None or len(arms) < 2:
        return None
    solver = state.solver
    succs, wide = [], []
    for guard, v in arms:
        extra = () if guard is None else (guard,)
        if not solver.satisfiable(extra_constraints=extra):
            continue
        if not v.symbolic:
            choices = [(v.concrete_value, guard)]
        else:
            values = solver.eval_upto(v, TARGETS_PER_ARM + 1, extra_constraints=extra)
            if len(values) > TARGETS_PER_ARM:
                wide.append(claripy.true() if guard is None else guard)
                continue
            choices = [(x, claripy.And(*extra, v == x)) for x in values]
        for x, c in choices:
            s = state.copy()
            if c is not None:
                s.add_constraints(c)
            s.regs.ip = claripy.BVV(x, state.arch.bits)
            succs.append(s)
    if not succs:
        return None
    err = None
    if wide:
        err = state.copy()
        err.add_constraints(claripy.Or(*wide) if len(wide) > 1 else wide[0])
        err.regs.ip = claripy.BVV(state.history.addr or 0, state.arch.bits)     # the jumping block
    return succs, err


def runs_code(project, addr: int) -> bool:
    """True when a state at ``addr`` can be stepped: a hook, a system call, or an executable
    segment (or section) of a loaded object."""
    if project.is_hooked(addr) or project.simos.is_syscall_addr(addr):
        return True
    obj = project.loader.find_object_containing(addr, membership_check=True)
    if obj is None:
        return False
    seg = obj.find_segment_containing(addr) if hasattr(obj, "find_segment_containing") else None
    if seg is not None:
        return seg.is_executable
    sec = obj.find_section_containing(addr) if hasattr(obj, "find_section_containing") else None
    return sec is None or sec.is_executable


def invalid_target(state) -> bool:
    """True for a state whose next block is at a concrete address that holds no code (a jump or
    call through a table entry that is not a function): angr cannot step it."""
    ip = state.regs.ip
    return not ip.symbolic and not runs_code(state.project, ip.concrete_value)

