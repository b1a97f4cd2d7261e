"""A run's configuration as one validated value.

:class:`RunConfig` holds every option of :class:`~angr_ram.run.technique.RelocatableMemory` (the
technique's keyword arguments, the CLI's ``run`` options and :func:`~angr_ram.run.runner.explore`'s
memory options are its fields). It is checked once, when it is made: a bad value is a one-line
:class:`~angr_ram.core.errors.AngrRamError` naming the option, before any state is touched. The
technique, its run scope (:attr:`angr_ram.core.scope.RunScope.config`) and the layers below read their
settings from it instead of from module-level switches.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from angr_ram.core.errors import AngrRamError
from angr_ram.core.option_docs import Option
from angr_ram.memory.heap_overflows import check_heap_overflows
from angr_ram.memory.strategies.models import MODELS
from angr_ram.memory.uninitialized import check_uninitialized
from angr_ram.posix.environment import ENVIRONMENTS

CACHES = (None, "syntactic", "aa")
Z3_DEFAULT_MS = 300_000      # claripy's own time-out per z3 call


def option(default, values: str, doc: str):
    """A field of :class:`RunConfig`: its default, the values it takes and what it means (Markdown,
    as the options reference prints them)."""
    return dataclasses.field(default=default, metadata={"option": Option(values, doc)})


@dataclass(frozen=True)
class RunConfig:
    """The options of one angr-ram run; each field's ``metadata`` holds the values it takes and what
    it means, from which ``docs/tools/options_reference.py`` writes the options reference."""

    model: str = option("fork", '`fork` `ite` `dsmm` `smm` `flat`',
                        'what happens when a pointer may reach several objects. `fork`: one state per object, each '
                        'constrained to it, and the access is re-executed. `ite`: one state, the value is an if-then-else'
                        ' over the objects. `dsmm`: the objects are merged into a new segment by relocation and the '
                        'access reaches that one segment. `smm`: segments by allocation-site groups, united when a '
                        'pointer resolves across them; forks instead above `smm_threshold` bytes. `flat`: one segment of '
                        'every live heap object. Fixed regions and split chunks are never merged; those cases fall back '
                        'to forking.')
    symbolic_bases: bool = option(True, '`True` / `False`',
                        'heap objects get symbolic bases `ram_base_N` (relocatable). `False` runs the same model on '
                        "concrete bases: the baseline for measuring the model's overhead (not with "
                        '`dsmm`/`smm`/`flat`/`split`, which relocate).')
    context_k: int = option(4, 'int >= 0',
                        "how many call sites each object's allocation context records.")
    reuse_segments: bool = option(False, 'bool',
                        'segment models give a segment the same hidden address in every state that merges objects of the '
                        "same shape (allocation site, context, size) at the same instruction, so those states' queries "
                        'become syntactically equal.')
    split: int | None = option(None, '`None` or a multiple of 8',
                        'dynamic splitting: an object larger than `split_threshold` bytes accessed at a symbolic offset '
                        'is replaced by adjacent chunks of `split` bytes (its base is re-bound to the first chunk) and '
                        'the access is re-resolved.')
    split_threshold: int = option(300, 'int',
                        'with `split`: the size in bytes above which an object accessed at a symbolic offset is split.')
    smm_threshold: int = option(10 * 1024, 'int',
                        'with `smm`: the size in bytes above which a united segment is not made and the access forks '
                        'instead.')
    cache: str | None = option(None, '`None` `"syntactic"` `"aa"`',
                        'one query cache for the whole run: satisfiability questions, one-solution model queries '
                        '(`eval`/`batch_eval` with n = 1) and solution sets of address-free expressions (`eval_upto(e, '
                        "n)`). Questions are sliced to the constraints that share input *bytes* with them (KLEE's "
                        'independence; a constraint on byte 1 of a wide `claripy.BVS("stdin", 16)` is independent of one '
                        'on byte 0; base addresses do not connect constraints); angr\'s "is the path still feasible" '
                        'checks are split into independent components, each looked up on its own (constraints on placed '
                        "bases alone that the placement makes true, such as the hundreds a parser's loop over a heap "
                        'buffer leaves, are no question and no component). `syntactic` compares the substituted query '
                        'exactly. `aa` (address-aware) also matches queries equal up to a renaming of variables that maps'
                        ' base addresses to bases of equal object size: the key is a canonical digest with variables '
                        'numbered by first occurrence, bases standing for their sizes, and the operands of commutative '
                        'operators sorted (claripy orders them by hash, i.e. by name). See [Query cache](query-cache.md).')
    validate: bool = option(False, 'bool',
                        'every cache hit is also answered by the solver, and every aa hit is re-checked structurally '
                        '(Algorithm 1: a size-preserving bijection of bases); a difference raises `CacheMismatch` naming '
                        'the query.')
    persist: bool | str | None = option(None, '`None`, `True` or a directory',
                        "the cache's answers are also written to an lmdb store: `True` uses `$ANGR_RAM_CACHE_DIR` or "
                        '`~/.cache/angr-ram` (file `queries.lmdb`); a later run, in this or another process, reads them. '
                        'The store records the versions of angr-ram, claripy and z3 and is emptied when one differs. '
                        'Needs `cache`.')
    context_resolution: bool = option(True, 'bool',
                        'segment models (`dsmm`, `smm`, `flat`) remember, per access location, the allocation contexts '
                        '(site and `context_k` call sites) of the objects that location resolved to. The next symbolic '
                        'access there merges the current objects with those contexts into one segment and proves with one'
                        ' query that the access stays inside it; only if that fails does it scan (`context_hits`, '
                        '`context_misses`).')
    max_symbolic_size: int = option(64 * 1024, 'int',
                        'the largest value a symbolic allocation size (`malloc(len)`) may take. Up to it the object has a'
                        ' symbolic size (see "Symbolic allocation sizes"); inputs that make the size larger are forked '
                        'off as a `symbolic-allocation-size` error path with such an input.')
    solver_timeout_ms: int | None = option(None, 'int or None',
                        "milliseconds z3 may spend on one call (None: claripy's 300 s; CLI `--solver-timeout-ms`). A "
                        'state whose step needs a call z3 gives up on (time-out, resource limit, `unknown`) goes to the '
                        "`unknown` stash with the reason in `state.ram.unknown`, counted in `stats()['unknown']`; it is "
                        'never pruned. `tech.resume_unknown(simgr, longer_ms)` moves those states back to `active` with '
                        'the longer timeout.')
    cache_limit: int = option(100_000, 'int',
                        'entries each map of the query cache (syntactic, address-aware) keeps; the least recently used go'
                        " first (CLI `--cache-limit`). The canonicalizer's memo of sub-expression forms is cleared "
                        'between queries when it grows past five times this.')
    profile: bool = option(False, 'bool',
                        "time each step's parts, exclusively: angr's engine, angr-ram's memory layer, resolution, object "
                        "stores, substitution, the query cache, the solver frontend and z3, and z3's time per site (the "
                        'hooked SimProcedure or the block and its symbol), like klee-stats. `angr_ram.stats(simgr, '
                        'profile=True)["profile"]`; CLI `angr-ram run --profile` prints the table (and `--json` includes '
                        'it). Off: no timing.')
    seeded_models: bool = option(True, 'bool',
                        "before claripy hands a query to z3, answer from a model claripy keeps for the solver's "
                        "constraints that satisfies the query's own constraints (only those are evaluated; claripy's "
                        'composite `check_satisfiability`, behind every branch check, does not look at its models), else '
                        "evaluate it on up to three batches of candidate assignments (claripy's models of sibling "
                        "queries, all-zero, then constants of the query's goals, of the heap objects' stores and of its "
                        'constraints placed over the input bytes in both byte orders), vectorized; a candidate that '
                        'satisfies every constraint is a real model and answers the query. Queries over let-bound table '
                        'lookups whose let-only constraints are unsatisfiable over the values the tables hold are '
                        'answered unsat without the hash that selects among them. The batches after the first are skipped'
                        ' at a resolution site (instruction) where fewer than one in 8 of its recent tries answered from '
                        'them, except every 8th query there. Counted in `seeded_answers`, `seeded_siblings`, '
                        '`seeded_misses`, `relaxed_unsat`, `seeded_tiers_skipped`.')
    defer_ms: int | None = option(1000, 'int or None',
                        'first-pass budget per z3 call (CLI `--defer-ms`, 0 for none). A branch successor whose '
                        'feasibility z3 cannot decide within it is set aside alone in the `ram_deferred` stash (not '
                        "`deferred`, which angr's `DFS` uses) while its siblings go on (a step that gives up elsewhere "
                        'defers its whole state; a pointer z3 gives up on, such as a hash-table bucket chosen by a hash '
                        'of the input, is resolved instead from its expression: the arms of its if-then-else selection '
                        'and the let-bound table lookups behind it, narrowed by the constraints on them, '
                        '`structural_resolutions`; a pointer whose expression allows one target is resolved that way '
                        "without any query; a value in it that would fault, such as a table's empty entry, is forked off "
                        'as its own error path, which is set aside alone when z3 cannot decide whether it is feasible); '
                        'when no other state is active the deferred ones resume: in a run with no bound of its own (a '
                        "script's `simgr.run()` with no `guarded(timeout=)` and no `solver_timeout_ms`) in a second pass,"
                        ' with `resume_ms` per call, a few at a time, after which a path still undecided goes to '
                        '`unknown`; in a bounded run with the full budget (`solver_timeout_ms`). So a hard query (a hash '
                        'that would have to be inverted) does not hold up the easy paths, and nothing is dropped for it. '
                        'Where the last two first-pass steps at a block each deferred a path, steps there get 100 ms '
                        'per call (every 4th the whole `defer_ms`) until one defers nothing. '
                        "Counted in `deferred_states`, `deferred_resumed`, `undecided_successors`. A run's `timeout` "
                        '(`explore`, `--timeout`) also bounds every z3 call: a call made near the end gets only the time '
                        'left, and what it could not decide is reported as `unknown`.')
    resume_ms: int | None = option(5_000, 'int or None',
                        "the second pass's budget per z3 call (default 5000; CLI `--resume-ms`, 0 for none; None: no "
                        'second pass, deferred paths resume with the full budget). It applies to runs with no bound of '
                        "their own: a branch only an inverted hash could decide must not hold a script for claripy's 300 "
                        's per call, once per such branch. Paths resume `step_seconds * 1000 // resume_ms` at a time (at '
                        'least one), so no `simgr.step()` steps them all at once; one still undecided goes to `unknown` '
                        "(its reason names the budget) and `tech.resume_unknown(simgr)` retries it with claripy's full "
                        '300 s. The pass learns per branch: once z3 gave up on two paths deferred at the same block and '
                        'decided none there, the block\'s further paths go to `unknown` untried (their reason says so), '
                        'but every fourth, which is still tried; one decided path ends that. A hash-collision branch '
                        'defers one path per bucket entry, each of which would cost the whole budget. Counted in '
                        '`second_pass_skipped`.')
    environment: str = option("symbolic", '`"symbolic"` `"fixed"`',
                        'the program\'s environment (CLI `--environment`; with `engine="stock"`, `explore(..., '
                        'environment=...)` installs the same model under plain angr). `symbolic`: `getrandom` (libc '
                        'function and system call) fills its buffer with fresh symbolic bytes and returns the length, so '
                        "every random value is explored; the clock is angr's (a fresh non-decreasing symbol). Stock angr "
                        'has no `getrandom`: the call returns an unconstrained value and writes nothing. `fixed`: one '
                        'fixed environment, as a replay would see it: `getrandom` writes the same pseudo-random bytes on '
                        'every run (`angr_ram.posix.environment.fixed_bytes`) and `time`/`gettimeofday`/`clock_gettime` '
                        'read 1700000000 plus one second per read. Use `fixed` for programs that seed a hash table from '
                        'the environment (json-c, glib, CPython): with a symbolic seed every table layout is a different '
                        "path and every key hash a hard query (json-c's lookup: 0 paths in 140 s, and z3 grows to 13 GB);"
                        ' with the fixed seed, all outcomes in 11 s (docs/bench/libraries.txt). libxml2 seeds its '
                        "dictionaries' hash from `time()`: the subject `html-4` (an element named by a symbolic byte) "
                        'takes 601 s and 97 paths under the symbolic clock, 124 s and 28 paths (both native outcomes) '
                        'under `fixed` (docs/bench/subjects.txt). Paths that depend on the random value itself are then '
                        'explored for that value only.')
    string_procedures: bool = option(True, 'bool',
                        '`strlen`, `strnlen`, `strcmp`, `strncmp`, `memcmp`, `bcmp` read the bytes through the '
                        'relocatable memory up to the first byte that ends the operation for sure (a concrete NUL or '
                        'difference, the length) and return an if-then-else over the symbolic bytes before it: '
                        '`strlen(s)` is `If(s[0] == 0, 0, If(s[1] == 0, 1, ...))`, with no fresh `strlen_N` length '
                        'symbol, so branches on the result are questions over the input bytes only (small-domain '
                        'enumeration decides them). A pointer that selects among a few strings (a bucket entry chosen by '
                        "an input's hash) is split into one case per value, in program terms. Bytes past a symbolic NUL "
                        'are read only inside the same live object, so no access is reported that C would not make. Where'
                        ' the end is not within `state.libc.max_str_len` bytes, the length is symbolic, or the pointer '
                        "has more than 64 values, angr's own procedure runs. Counted in `string_exact`, "
                        '`string_fallback`.')
    step_seconds: float | None = option(10.0, 'float or None',
                        "the longest a first-pass step may run (with `defer_ms`; default 10 s, so a script's "
                        "`simgr.run()` without `guarded()` never waits on one state's step; None: no limit). A longer "
                        'step is abandoned by the run guard (z3 interrupted, then the step itself) and its state deferred'
                        ' like a state whose z3 call exceeded `defer_ms`; a step stalled in Python work (a huge '
                        "expression) or in many calls moves aside too. A second-pass step's limit is in the same ratio to"
                        " `resume_ms`; steps resumed with the full budget have none (only the run's). Counted in "
                        '`steps_abandoned`.')
    step_memory_mb: float | None = option(768, 'float or None',
                        "the most the process may grow during one step; z3's own allocator is capped at four times that "
                        'above what it holds. A step over it is abandoned and its state set aside (`ram_deferred`, '
                        "retried with four times the budget while half the machine's available memory allows, else "
                        '`unknown`), and freed memory is given back to the system.')
    max_rss_mb: float | None = option(None, 'float or None',
                        "the resident memory (MiB) the run keeps under: a step may grow the process only by what is "
                        'left below it (at least 128 MiB, so the run goes on), and a step over its memory budget is '
                        'retried with a larger one only while that fits under it (None: no cap; `angr-ram run` gives '
                        '2048, `--max-rss-mb`).')
    uninitialized: str = option("auto", '`"auto"` `"zero"` `"symbolic"`',
                        'what memory and registers no one wrote hold on the states the technique manages, for scripts and'
                        ' the CLI alike (`explore(..., uninitialized=...)`, CLI `--uninitialized`). `auto` (default): '
                        "`zero` for states that start at the program's entry point, a script's other states "
                        '(`blank_state`, `call_state`, `entry_state(addr=)`) keep the options it gave them. `zero`: '
                        "angr's `ZERO_FILL_UNCONSTRAINED_MEMORY` and `_REGISTERS` are turned on (a fresh process's heap "
                        "pages and registers; KLEE too gives unwritten memory one concrete content), so each path's test "
                        'replays. `symbolic`: both are turned off; unwritten bytes are any value, one stable variable '
                        'each (see "Uninitialized memory" in [What it does, precisely](semantics.md)), and paths that '
                        "depend on them are found: a test's input is chosen with those bytes zero where its path allows, "
                        'else its message says it needs other content (it replays only where memory happens to hold it). '
                        '`QuantifiedMerging(uninitialized=...)` does the same for the states it steps alone.')

    heap_overflows: str = option("auto", '`"auto"` `"stop"` `"continue"`',
                        'what a heap overflow (an access based on one heap object that lands outside it) does after its'
                        ' `out-of-bounds` error path is reported. `stop`: the path ends there (KLEE\'s way). `continue`: '
                        'the error path is reported beside the path, which goes on with heap objects laid out as '
                        "glibc lays out a fresh heap's chunks, so the overflow reaches the next chunk as natively (a "
                        'script that looks for a corrupted handler finds it). `auto` (default): `continue` for a '
                        "script's technique, `stop` under the CLI and `explore()`, whose paths end at their first error. "
                        'See "Heap overflows" in [What it does, precisely](semantics.md).')

    def __post_init__(self):
        for check in _CHECKS:
            problem = check(self)
            if problem:
                raise AngrRamError(problem)

    @classmethod
    def of(cls, **options) -> RunConfig:
        """A config from keyword options; an unknown option is a clear error (with the known ones)."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(options) - names)
        if unknown:
            raise AngrRamError(f"unknown option{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}; "
                               f"known: {', '.join(sorted(names))}")
        return cls(**options)

    def replace(self, **changes) -> RunConfig:
        """This config with ``changes`` (checked as a new one)."""
        return dataclasses.replace(self, **changes)

    @property
    def full_ms(self) -> int:
        """Milliseconds z3 may spend on one call outside a first pass."""
        return self.solver_timeout_ms if self.solver_timeout_ms is not None else Z3_DEFAULT_MS

    @property
    def first_pass_ms(self) -> int | None:
        """The first-pass budget per z3 call, or None when there is none (no ``defer_ms``, or one
        no shorter than the full budget)."""
        return self.defer_ms if self.defer_ms is not None and self.defer_ms < self.full_ms else None


def run_options() -> dict[str, Option]:
    """Each option of :class:`RunConfig` (the technique's keywords), in the fields' order."""
    return {f.name: f.metadata["option"] for f in dataclasses.fields(RunConfig)}


def run_defaults() -> dict:
    """Each option's default."""
    return {f.name: f.default for f in dataclasses.fields(RunConfig)}


def _positive_number(name: str, v) -> str | None:
    if v is not None and (isinstance(v, bool) or not isinstance(v, int | float) or v <= 0):
        return f"{name} must be a positive number or None, not {v!r}"
    return None


_CHECKS = (
    lambda c: check_uninitialized(c.uninitialized) and None,      # raises its own error
    lambda c: check_heap_overflows(c.heap_overflows) and None,
    lambda c: None if c.model in MODELS else f"unknown model {c.model!r}; supported: {', '.join(MODELS)}",
    lambda c: None if isinstance(c.context_k, int) and c.context_k >= 0 else
    f"context_k must be a non-negative integer, not {c.context_k!r}",
    lambda c: None if c.split is None or (isinstance(c.split, int) and c.split > 0 and not c.split % 8) else
    f"split must be a positive multiple of 8 (bytes per chunk), not {c.split!r}",
    lambda c: None if c.symbolic_bases or c.model not in ("dsmm", "smm", "flat") else
    f"model {c.model!r} relocates objects and needs symbolic_bases=True",
    lambda c: None if c.symbolic_bases or c.split is None else
    "splitting relocates objects and needs symbolic_bases=True",
    lambda c: None if c.cache in CACHES else f"unknown cache {c.cache!r}; use None, 'syntactic' or 'aa'",
    lambda c: None if not c.persist or c.cache is not None else
    "persist needs a query cache: pass cache='aa' or cache='syntactic'",
    lambda c: None if isinstance(c.max_symbolic_size, int) and c.max_symbolic_size >= 0 else
    f"max_symbolic_size must be a non-negative integer, not {c.max_symbolic_size!r}",
    lambda c: None if c.solver_timeout_ms is None or (isinstance(c.solver_timeout_ms, int) and c.solver_timeout_ms > 0)
    else f"solver_timeout_ms must be a positive integer, not {c.solver_timeout_ms!r}",
    lambda c: None if c.defer_ms is None or (isinstance(c.defer_ms, int) and c.defer_ms > 0) else
    f"defer_ms must be a positive integer or None, not {c.defer_ms!r}",
    lambda c: None if c.resume_ms is None or (isinstance(c.resume_ms, int) and not isinstance(c.resume_ms, bool)
                                              and c.resume_ms > 0) else
    f"resume_ms must be a positive integer or None, not {c.resume_ms!r}",
    lambda c: _positive_number("step_seconds", c.step_seconds),
    lambda c: _positive_number("step_memory_mb", c.step_memory_mb),
    lambda c: _positive_number("max_rss_mb", c.max_rss_mb),
    lambda c: None if c.environment in ENVIRONMENTS else
    f"unknown environment {c.environment!r}; use one of {', '.join(ENVIRONMENTS)}",
)
