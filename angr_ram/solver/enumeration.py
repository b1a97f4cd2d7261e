"""Small-domain solving: decide queries over let-bound table lookups by evaluating every input.

A symbolic-index read from a table with many entries is bound to a fresh ``ram_let_*`` symbol by
one definitional path constraint (see :func:`angr_ram.memory.relocatable.RelocatableMixin._let`), so
an index computed from an earlier lookup stays small. SAT solvers are poor at such chains (each hop
is an arbitrary function; z3 needs seconds per check at three hops of a 2048-entry table), but the
inputs they depend on are often few: two bytes of stdin are 65536 assignments. This layer answers a
query exactly by evaluating its slice on all assignments at once with numpy (a recognised table
selection is one ``searchsorted``), when

* the slice (the constraints sharing variables with the query) contains a let-bound symbol, and
* its free variables (all but the let-bound ones, which are functions of them) have at most
  :data:`MAX_BITS` bits in all.

The same holds for a slice that computes with floating point (:mod:`.float_semantics`: numpy's
IEEE arithmetic on the bits), lets or not: z3's floating-point theory needs seconds per check
where the inputs are a few bytes. Anything else (wider inputs, a value over 64 bits used other
than in windows of at most 64 bits of its concatenations, shifts, bitwise operations and low
halves of sums and products, division by a value that may be zero, floating point that is not
exact under to-nearest-even) returns :data:`UNHANDLED` and the query goes to z3.
Definitional constraints are true by construction under this evaluation, so they are skipped.
"""

from __future__ import annotations

import claripy
import numpy as np
from claripy.errors import UnsatError
from claripy.frontend.mixin.model_cache_mixin import ModelCache

from angr_ram.core.scope import LRU, memo
from angr_ram.solver.columns import unique_rows
from angr_ram.solver.evaluator import (
    _U64,
    MAX_BITS,
    Evaluator,
    _leaves,
    _Unsupported,
    deep_recursion,
    is_let,
    split_lets,
    uses_float,
)
from angr_ram.solver.frontends import SeededSolver
from angr_ram.solver.joint_image import joint_image
from angr_ram.solver.model_eval import fast_eval_ast
from angr_ram.solver.narrow_cut import MAX_CUT_BITS, NoCut, effective_bits, find_cut
from angr_ram.solver.semantics import VECTOR
from angr_ram.solver.variable_windows import window_groups

UNHANDLED = object()


def _prepare(constraints, exprs, extra=()):
    """The evaluator and the non-definitional constraints of a slice, or None if not handled;
    ``exprs`` are the query's expressions, ``extra`` its extra constraints."""
    lets, rest = split_lets(constraints)
    if not lets and not any(uses_float(x) for x in (*constraints, *exprs, *extra)):
        return None
    leaves = _leaves([*constraints, *exprs, *extra])
    free = [v for n, v in sorted(leaves.items()) if not is_let(n)]
    if any(v.op != "BVS" for v in free):
        return None
    if any(n not in lets for n in leaves if is_let(n)):
        return None
    if sum(v.length for v in free) > MAX_BITS:
        return _prepare_cut(lets, rest, exprs, extra)
    narrowed = _within_domains(free, lets, rest)
    if narrowed is not None:
        return narrowed
    return Evaluator(free, lets), rest


DOMAIN_SHARE = 0.5      # rows left by the inputs' own constraints below which they are enumerated alone


def _within_domains(free: list, lets: dict, rest: list):
    """An evaluator over only the assignments that the constraints on one input variable each
    allow (a template's ``'A' <= byte <= 'z'``: 3364 of 65536 rows for two bytes), and the other
    constraints; None when those constraints leave more than :data:`DOMAIN_SHARE` of the rows.
    The node values of a query's large expressions (a hash function of the input) are then
    computed and kept for those rows alone: over every row they outgrew the value cache and were
    computed again query after query. The domains are the same in every state of a run, so the
    evaluator's layout, and with it the cached values, is shared."""
    unary: dict = {}
    for c in rest:
        names = c.variables
        if len(names) == 1 and _inputs_only(c) and _bounds_bits(c):
            unary.setdefault(next(iter(names)), []).append(c)
    if not unary:
        return None
    key = tuple((v.args[0], v.length, tuple(sorted(x.hash() for x in unary.get(v.args[0], ())))) for v in free)
    domains = memo("enumeration.domains", lambda: LRU(256))
    hit = domains.lookup(key)
    if hit is None:
        try:
            hit = _domain_columns(free, unary)
        except _Unsupported:      # (kept: the same constraints are not tried again)
            hit = False
        domains.put(key, hit)
    if hit is False:
        return None
    columns, size = hit
    used = {x.hash() for cs in unary.values() for x in cs}
    return Evaluator.over(columns, size, lets), [c for c in rest if c.hash() not in used]


def _domain_columns(free: list, unary: dict):
    """(columns, size) of the product of the variables' allowed values, or False when it is not
    below :data:`DOMAIN_SHARE` of all assignments."""
    allowed = []
    for v in free:
        cs = unary.get(v.args[0])
        everything = np.arange(1 << v.length, dtype=_U64)
        if not cs:
            allowed.append(everything)
            continue
        ev = Evaluator([v], {})
        m = np.ones(ev.size, dtype=bool)
        for c in cs:
            m &= np.broadcast_to(ev.bool(c), m.shape)
        allowed.append(everything[m])
    size = 1
    for a in allowed:
        size *= len(a)
    if size > DOMAIN_SHARE * (1 << sum(v.length for v in free)):
        return False
    grids = np.meshgrid(*allowed, indexing="ij") if allowed else []
    return {v.args[0]: np.ascontiguousarray(g.reshape(-1)) for v, g in zip(free, grids, strict=True)}, size


_BIT_LEVEL = frozenset({"BVS", "BVV", "BoolV", "Extract", "ZeroExt", "SignExt", "Concat", "Not", "And", "Or",
                        "__eq__", "__ne__", "ULT", "ULE", "UGT", "UGE", "SLT", "SLE", "SGT", "SGE"})


def _bounds_bits(c) -> bool:
    """Whether ``c`` only compares bits of its variable with constants (a template's byte range,
    ``name[7:0] != '>'``): cheap over every value of the variable. A constraint that computes
    with the variable (a hash of a one-variable input name) is evaluated over the domain's rows
    instead: over all 2**16 values of a 16-bit input a 5,000-node hash outgrew the value cache,
    its shared nodes were computed again and again, and every query spent seconds to give up."""
    return all(x.op in _BIT_LEVEL for x in _walk(c))


def _walk(e):
    seen, todo = set(), [e]
    while todo:
        x = todo.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        yield x
        todo.extend(a for a in x.args if isinstance(a, claripy.ast.Base))


def _inputs_only(c) -> bool:
    return bool(c.variables) and not any(is_let(n) for n in c.variables)


def _filter(c) -> bool:
    """A constraint that restricts a cut's image (on inputs alone, no floating point): z3 can
    take it with the cut's values, and it holds on every row the image keeps."""
    return _inputs_only(c) and not uses_float(c)


def _prepare_cut(lets: dict, rest: list, exprs, extra):
    """The evaluator over a narrow cut's joint image (:mod:`.narrow_cut`) and the constraints to
    evaluate on it, or None. Constraints on inputs alone restrict the image (and then hold on
    every row: they are given a column of True)."""
    filters = [c for c in (*rest, *extra) if _filter(c)]
    others = [c for c in (*rest, *extra) if not _filter(c)]
    try:
        cut = find_cut([*others, *exprs], lets)
        nodes = sorted(cut.values(), key=lambda x: x.hash())
        if not nodes or sum(effective_bits(x) for x in nodes) > 2 * MAX_CUT_BITS:
            return None      # (between MAX_CUT_BITS and twice that: nodes that are functions of
                             # each other in forms claripy does not unify; the image decides)
    except RecursionError:   # an expression deeper than the analysis may go: z3 answers
        return None
    fkeys = tuple(sorted({c.hash() for c in filters}))
    key = (tuple(x.hash() for x in nodes), fkeys)
    images = memo("enumeration.cut_images", lambda: LRU(64))   # rows: at most 2^16 x nodes
    rows = images.lookup(key)
    if rows is None:
        try:
            rows = joint_image(nodes, filters)
        except (NoCut, RecursionError):
            rows = False
        images.put(key, rows)
    if rows is False:
        return None
    ev = Evaluator.over_cut(nodes, rows, lets)
    for c in filters:
        ev.cuts.setdefault(c.hash(), np.bool_(True))
    return ev, rest


MODEL_Z3_MS = 5000      # the input-only problem that turns a satisfying cut row into input values


def _one_value_through_cut(constraints, e, extra):
    """One value of the input-only expression ``e`` (a test's input: the query that asks for a
    model) when the slice is too wide to enumerate but has a narrow cut: a satisfying row of the
    cut's joint image is found by evaluation, then z3 solves only ``cut node == its value in the
    row`` with the constraints on inputs alone that compute no floating point: the table lookups
    and floating point that make the whole slice slow for z3 are left out, and every input with
    those cut values satisfies them (the evaluation showed it). UNHANDLED if there is no cut or that small problem is not solved in
    :data:`MODEL_Z3_MS`; UnsatError when no row satisfies the slice."""
    lets, rest = split_lets(constraints)
    if any(n not in lets for n in _leaves([*constraints, e, *extra]) if is_let(n)):
        return UNHANDLED
    if not lets and not any(uses_float(c) for c in (*constraints, *extra)):
        return UNHANDLED
    prep = _prepare_cut(lets, rest, (), extra)
    if prep is None:
        return UNHANDLED
    ev, rest = prep
    mask = _sat_mask(ev, [*rest, *extra])
    if not mask.any():
        raise UnsatError("angr-ram: unsatisfiable (small-domain enumeration over a cut)")
    k = int(np.argmax(mask))
    small = SeededSolver(timeout=MODEL_Z3_MS)
    for x in ev.cut_nodes:
        v = ev.cuts[x.hash()][k]
        small.add(x == claripy.BoolV(bool(v)) if isinstance(x, claripy.ast.Bool) else x == int(v))
    small.add([c for c in (*rest, *extra) if _filter(c)])   # the others hold on the row
    try:
        return tuple(small.eval(e, 1))
    except claripy.errors.ClaripyError:
        return UNHANDLED


def _sat_mask(ev: Evaluator, constraints):
    m = np.ones(ev.size, dtype=bool)
    for c in constraints:
        m &= ev.constraint(c)
    return m


def _values(ev: Evaluator, e, mask, n: int | None):
    """Distinct values of ``e`` over the assignments in ``mask`` (at most ``n``), as Python ints."""
    if e.length <= 64:
        v = np.broadcast_to(ev.ev(e), mask.shape)[mask]
        vals = np.unique(v)
        return [int(x) for x in (vals if n is None else vals[:n])]
    chunks = []
    for lo in range(0, e.length, 64):
        hi = min(e.length, lo + 64) - 1
        chunks.append(np.broadcast_to(ev.bits(e, hi, lo), mask.shape)[mask])
    rows = unique_rows(chunks)
    out = []
    for row in rows[: n if n is not None else len(rows)]:
        out.append(sum(int(x) << (64 * i) for i, x in enumerate(row)))
    return out


def answer(constraints, name: str, args: tuple, kwargs: dict):
    """The answer to solver query ``name`` over the slice ``constraints``, or UNHANDLED."""
    with deep_recursion():
        return _answer(constraints, name, args, kwargs)


def _answer(constraints, name: str, args: tuple, kwargs: dict):
    extra = tuple(kwargs.get("extra_constraints") or ())
    exprs = query_exprs(name, args)
    try:
        prep = _prepare(constraints, exprs, extra)
        if prep is None:
            if name == "eval" and args[1] == 1 and _inputs_only(args[0]):
                return _one_value_through_cut(constraints, args[0], extra)
            return UNHANDLED
        ev, rest = prep
        mask = _sat_mask(ev, [*rest, *extra])
        sat = bool(mask.any())
        if name in ("satisfiable", "check_satisfiability"):
            return sat if name == "satisfiable" else ("SAT" if sat else "UNSAT")
        if name in ("is_true", "is_false"):
            b = np.broadcast_to(ev.bool(args[0]), mask.shape)
            return not bool((mask & (~b if name == "is_true" else b)).any())
        if not sat:
            raise UnsatError("angr-ram: unsatisfiable (small-domain enumeration)")
        if name == "eval":
            return tuple(_values(ev, args[0], mask, args[1]))
        if name == "batch_eval":
            cols = [np.broadcast_to(ev.ev(x), mask.shape)[mask] for x in args[0]]
            if any(x.length > 64 for x in args[0]):
                return UNHANDLED
            rows = unique_rows(cols)[: args[1]]
            return [tuple(int(x) for x in r) for r in rows]
        if name in ("max", "min"):
            e = args[0]
            signed = kwargs.get("signed", False)
            v = np.broadcast_to(ev.ev(e), mask.shape)[mask]
            v = VECTOR.signed(v, e.length) if signed else v
            r = int(v.max() if name == "max" else v.min())
            return r & ((1 << e.length) - 1) if signed else r
        if name == "solution":
            e, val = args[0], args[1]
            x = np.broadcast_to(ev.ev(e), mask.shape)
            target = val if isinstance(val, int) else ev.ev(val)
            return bool((mask & (x == _U64(target) if isinstance(target, int) else mask & (x == target))).any())
    except _Unsupported:
        return UNHANDLED
    return UNHANDLED


_EXPR_QUERIES = {"eval": 1, "max": 1, "min": 1, "is_true": 1, "is_false": 1, "solution": 2}


def query_exprs(name: str, args: tuple) -> tuple:
    """The expressions a query asks about (not its extra constraints)."""
    if name == "batch_eval":
        return tuple(args[0])
    if name in _EXPR_QUERIES:
        return tuple(x for x in args[:_EXPR_QUERIES[name]] if not isinstance(x, int))
    return ()


def _query_parts(name: str, args: tuple, kwargs: dict) -> tuple:
    return (*query_exprs(name, args), *(kwargs.get("extra_constraints") or ()))


def query_names(name: str, args: tuple, kwargs: dict) -> set:
    """Variable names a query mentions (its expressions and extra constraints)."""
    names: set = set()
    for e in _query_parts(name, args, kwargs):
        names |= e.variables
    return names


def prime(inner, stats=None) -> None:
    """Decide unchecked components of a composite solver that hold let-bound symbols by
    enumeration, and leave the answer in their satisfiability cache, so that claripy's own whole-state
    checks never send them to z3."""
    for child in inner._solver_list:
        if getattr(child, "_cached_satness", True) is not None:
            continue
        if not any(is_let(n) for n in child.variables) and not any(uses_float(c) for c in child.constraints):
            continue
        r = answer(list(child.constraints), "satisfiable", (), {})
        if r is not UNHANDLED:
            child._cached_satness = r
            if stats is not None:
                stats.enumerated_queries += 1


def solve(inner, name: str, args: tuple, kwargs: dict, stats=None):
    """Answer query ``name`` on the composite solver ``inner`` by enumeration when its slice holds
    let-bound symbols and few free bits; UNHANDLED otherwise (the caller asks ``inner``)."""
    prime(inner, stats)
    names = query_names(name, args, kwargs)
    if not names:
        return UNHANDLED     # whole-state satisfiability: the primed caches answer it
    if not any(is_let(n) for n in names) and not any(uses_float(x) for x in _query_parts(name, args, kwargs)):
        # the query's own slice may still reach let-bound symbols or floating point through
        # shared variables
        children = inner._solvers_for_variables(names) if names else []
        if not any(any(is_let(n) for n in ch.variables) or any(uses_float(c) for c in ch.constraints)
                   for ch in children):
            return UNHANDLED
    child = inner._solver_for_names(names)
    if name not in ("satisfiable", "check_satisfiability") and not kwargs.get("extra_constraints"):
        if not inner.satisfiable():
            raise UnsatError("angr-ram: unsatisfiable state")
    r = answer(list(child.constraints), name, args, kwargs)
    if r is not UNHANDLED and stats is not None:
        stats.enumerated_queries += 1
    return r


def one_model(child) -> dict | None:
    """One assignment (name: value) of every variable of ``child`` (a component of a composite
    solver) that satisfies its constraints, found by small-domain evaluation with no z3; None when
    the component is beyond enumeration (wide inputs, unsupported operations, a variable that is
    not a bit-vector of at most 64 bits) or has no model."""
    leaves: dict = {}
    cons = list(child.constraints)
    for c in cons:
        for leaf in c.leaf_asts():
            if leaf.op == "BVS":
                leaves.setdefault(leaf.args[0], leaf)
    if not leaves or set(leaves) != set(child.variables):
        return None
    if any(not c.variables and not (c.op == "BoolV" and c.args[0]) for c in cons):
        return None         # a constraint simplified to false (or not evaluable)
    groups = window_groups(cons, leaves)
    if groups is None:
        return None
    whole = [(cons, [u for _, units in groups for u in units])]
    out = _grouped_model(whole, leaves)
    if out is None and len(groups) > 1:     # a wide input's bytes read apart: evaluated apart
        out = _grouped_model(groups, leaves)
    return out


def _grouped_model(groups, leaves: dict) -> dict | None:
    """:func:`one_model` over ``groups`` (:func:`~.variable_windows.window_groups`), each answered
    by small-domain evaluation; a group with no let-bound symbol (beyond it: plain input
    constraints, z3's) is taken with its windows 0 if that satisfies it."""
    out = dict.fromkeys(leaves, 0)
    for group, units in groups:
        asked = [leaves[n] if (hi, lo) == (leaves[n].length - 1, 0) else leaves[n][hi:lo] for n, hi, lo in units]
        try:
            r = answer(group, "batch_eval", (asked, 1), {})
        except UnsatError:
            return None
        if r is UNHANDLED and not any(is_let(n) for n, _, _ in units):
            zeros = ModelCache({n: 0 for n, _, _ in units})
            try:
                r = [tuple(0 for _ in units)] if all(fast_eval_ast(zeros, c, True) for c in group) else None
            except Exception:  # noqa: BLE001 - not evaluable: no model from here
                r = None
        if r is UNHANDLED or not r:
            return None
        for (n, _, lo), value in zip(units, r[0], strict=True):
            out[n] |= value << lo
    return out
