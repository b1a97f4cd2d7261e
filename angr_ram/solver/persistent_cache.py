"""An on-disk store of solver answers, keyed by a canonical form of the query (lmdb).

The key of a query (:class:`Canonicalizer`, shared with the in-memory address-aware cache) is a
digest of its constraints, goals and expressions in which every variable is renamed by order of
first occurrence: a base address to ``B<i>:<object size>``, any other variable to
``V<j>:<kind>:<bits>`` (claripy appends a process-wide counter to variable names, so names differ
between runs). Equal keys therefore mean the two queries are equal up to a bijective renaming of
variables that maps bases to bases of equal size: equisatisfiable (plain renaming for ordinary
variables, the address-aware argument for bases). Models are stored by variable position, mapped
to the new query's names through the same numbering, and checked against it before use.

Roots are ordered by a digest that abstracts base names; ties can give two equal queries
different keys, which only costs a miss.

Where the file lives: ``persist=True`` uses ``$ANGR_RAM_CACHE_DIR`` or ``~/.cache/angr-ram``
(``queries.lmdb`` inside); a string is a directory of its own. The store records the versions of
angr-ram, claripy and z3 that wrote it and is emptied when any of them differs.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
from pathlib import Path

import claripy
import z3

from angr_ram.core.dag import fold
from angr_ram.core.errors import AngrRamError
from angr_ram.core.version import __version__

MAP_SIZE = 1 << 32
_LEAVES = ("BVS", "BoolS", "FPS", "StringS")
# claripy orders the operands of these by hash, which depends on the names of base addresses, so
# their operands are compared as a multiset (sorted by their renaming-invariant digest)
COMMUTATIVE = frozenset(("And", "Or", "__add__", "__mul__", "__and__", "__or__", "__xor__", "__eq__", "__ne__"))


def default_cache_dir() -> Path:
    """``$ANGR_RAM_CACHE_DIR`` or ``~/.cache/angr-ram``."""
    env = os.environ.get("ANGR_RAM_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "angr-ram"


@functools.cache
def version_tag() -> str:
    """The versions a stored answer depends on."""
    return f"angr-ram {__version__}; claripy {claripy.__version__}; z3 {z3.get_version_string()}"


def _literal(x) -> bytes:
    return repr(x).encode()


def _hash_bytes(e) -> bytes:
    return (e.hash() & ((1 << 64) - 1)).to_bytes(8, "little")


class Canonicalizer:
    """Canonical keys of queries up to a renaming of base addresses (see the module docstring).

    Every sub-expression gets a *local* form, memoized for the run: a digest in which its variables
    are numbered by first occurrence inside it (depth first, left to right) and stand for their kind
    and width (base addresses: for their object size), plus the list of those variables. The digest
    is invariant under renaming, and the local forms of the roots, with their variables numbered
    across the whole query, identify it. Constant parts are identified by claripy's (deterministic)
    structural hash.
    """

    def __init__(self, limit: int = 500_000):
        self._local: dict = {}
        self.limit = limit          # memoized local forms; the memo is cleared between queries beyond it

    def _bound(self) -> None:
        if len(self._local) > self.limit:
            self._local.clear()

    def local(self, e, sizes: dict) -> tuple[bytes, tuple[str, ...]]:
        """``(digest, variables in first-occurrence order)`` of ``e``."""
        def shortcut(node):
            if not node.variables:
                return _hash_bytes(node), ()
            if node.op in _LEAVES:
                name = node.args[0]
                tag = f"B:{sizes[name]}" if name in sizes else f"V:{node.op}:{node.length}"
                return hashlib.blake2b(tag.encode(), digest_size=16).digest(), (name,)
            return None

        def combine(node, value_of):
            bases: list[str] = []
            index: dict[str, int] = {}
            h = hashlib.blake2b(digest_size=16)
            h.update(node.op.encode())
            h.update(_literal(node.length))
            for a in self.operands(node, sizes):
                if not isinstance(a, claripy.ast.Base):
                    h.update(b"#" + _literal(a) + b",")
                    continue
                d, bs = value_of(a)
                for n in bs:
                    if n not in index:
                        index[n] = len(bases)
                        bases.append(n)
                h.update(d)
                h.update(_literal([index[n] for n in bs]) + b",")
            return h.digest(), tuple(bases)
        return fold(e, combine, self._local, shortcut)

    def operands(self, node, sizes: dict) -> tuple:
        """``node.args``, sorted by digest for commutative operators (operands must be known)."""
        if node.op not in COMMUTATIVE:
            return node.args
        memo = self._local

        def rank(a):
            if not isinstance(a, claripy.ast.Base):
                return b"#" + _literal(a)
            f = memo.get(a.hash())
            return f[0] if f is not None else _hash_bytes(a)
        return tuple(sorted(node.args, key=rank))

    def first_difference(self, a, b, sizes_a: dict, sizes_b: dict) -> str | None:
        """Where ``a`` and ``b`` stop being renamings of each other: the path of operand indices to
        the first pair of nodes (depth first, commutative operands in canonical order) that differ
        in operator, width, arity, constant or variable kind/size, described; None if their local
        forms agree (the difference, if any, is then in how variables are shared across roots)."""
        path: list[str] = []
        x, y = a, b
        while True:
            fx, fy = self.local(x, sizes_a), self.local(y, sizes_b)
            if fx[0] == fy[0]:
                return None
            same_shape = x.op == y.op and x.length == y.length and len(x.args) == len(y.args) \
                and x.op not in _LEAVES and x.variables and y.variables
            if not same_shape:
                return f"at {'/'.join(path) or 'root'}: {_show(x, sizes_a)} vs {_show(y, sizes_b)}"
            xs, ys = self._unmatched(x, y, sizes_a, sizes_b)
            for i, (u, v) in enumerate(zip(xs, ys, strict=True)):
                if not isinstance(u, claripy.ast.Base) or not isinstance(v, claripy.ast.Base):
                    if u != v:
                        return f"at {'/'.join([*path, f'{x.op}[{i}]'])}: {u!r} vs {v!r}"
                    continue
                if self.local(u, sizes_a)[0] != self.local(v, sizes_b)[0]:
                    path.append(f"{x.op}[{i}]")
                    x, y = u, v
                    break
            else:
                return f"at {'/'.join(path) or 'root'}: operands agree, variables are shared differently"

    def _unmatched(self, x, y, sizes_a: dict, sizes_b: dict) -> tuple[list, list]:
        """``x``'s and ``y``'s operands to compare pairwise; for a commutative operator, those left
        after pairing operands of equal local form (in argument order)."""
        if x.op not in COMMUTATIVE:
            return list(x.args), list(y.args)

        def form(a, sizes):
            return self.local(a, sizes)[0] if isinstance(a, claripy.ast.Base) else repr(a)
        ys = list(y.args)
        xs = []
        for u in x.args:
            fu = form(u, sizes_a)
            j = next((j for j, v in enumerate(ys) if form(v, sizes_b) == fu), None)
            if j is None:
                xs.append(u)
            else:
                del ys[j]
        return xs, ys

    def key(self, kind: str, constraints, goals, exprs, sizes: dict) -> tuple[bytes, list[str]]:
        """The key of a query and its variable names in canonical order.

        Variables are numbered by first occurrence: in the expressions (in order), then in the goals
        and constraints, each group sorted by local digest. The key hashes the expressions in order
        and the goals and constraints as sorted groups, each root as its local digest plus the
        query-wide numbers of its variables.
        """
        order: dict[str, int] = {}
        names: list[str] = []

        def renamed(form) -> bytes:
            d, bs = form
            if not bs:
                return d
            for n in bs:
                if n not in order:
                    order[n] = len(names)
                    names.append(n)
            return d + _literal([order[n] for n in bs])

        parts = [renamed(self.local(x, sizes)) for x in exprs]
        groups = []
        for roots in (goals, constraints):
            forms = sorted((self.local(r, sizes) for r in roots), key=lambda f: f[0])
            groups.append(sorted(renamed(f) for f in forms))
        out = hashlib.blake2b(digest_size=32)
        out.update(version_tag().encode())
        out.update(kind.encode())
        for tag, seq in ((b"E", parts), (b"G", groups[0]), (b"C", groups[1])):
            out.update(tag + _literal(len(seq)))
            for d in seq:
                out.update(_literal(len(d)) + d)
        return out.digest(), names

    def plain(self, e, sizes: dict) -> bytes:
        """Digest of ``e`` that is invariant under renaming of base addresses."""
        self._bound()
        return self.local(e, sizes)[0]


def _show(e, sizes: dict, width: int = 160) -> str:
    """A short description of node ``e``; base addresses show their object size."""
    if e.op in _LEAVES and e.args[0] in sizes:
        return f"base of a {sizes[e.args[0]]}-byte object ({e.args[0]})"
    text = str(e)
    return text if len(text) <= width else text[:width] + "..."


log = logging.getLogger(__name__)
_GARBLED = "__garbled__"      # what get() returns for a record that is not JSON (rejected by the cache's shape check)


def check_store_dir(directory=None) -> Path:
    """Create the store's directory (``directory``, else :func:`default_cache_dir`) and check that it
    is writable, before anything is explored: a clear one-line
    :class:`~angr_ram.core.errors.AngrRamError` otherwise. Returns the directory."""
    d = Path(directory) if directory is not None else default_cache_dir()
    try:
        d.mkdir(parents=True, exist_ok=True)
        probe = d / ".angr-ram-write-check"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        raise AngrRamError(f"{os.fspath(d)}: cannot keep the persistent cache there ({e.strerror or e})") from None
    return d


class PersistentStore:
    """A key-value store of answers in an lmdb environment, emptied on a version change."""

    def __init__(self, directory: str | os.PathLike | None = None):
        try:
            import lmdb
        except ImportError as exc:  # pragma: no cover - lmdb comes with angr
            raise AngrRamError("the persistent query cache needs the 'lmdb' package") from exc
        d = Path(directory) if directory is not None else default_cache_dir()
        self.path = d / "queries.lmdb"
        self.failed: str | None = None     # set when a read or write failed: the store is then left alone
        try:
            d.mkdir(parents=True, exist_ok=True)
            self.env = lmdb.open(os.fspath(self.path), map_size=MAP_SIZE, subdir=True, sync=False,
                                 metasync=False, max_dbs=2)
            self.db = self.env.open_db(b"answers")
            tag = version_tag().encode()
            with self.env.begin(write=True) as txn:
                meta = txn.get(b"__version__")
                if meta != tag:
                    txn.drop(self.db, delete=False)
                    txn.put(b"__version__", tag)
        except (OSError, lmdb.Error) as e:
            raise AngrRamError(f"persistent cache {os.fspath(self.path)}: cannot be used "
                               f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})") from None

    def get(self, key: bytes):
        """The stored answer for ``key`` (a JSON value), or None when there is none, when the record
        is not JSON (garbled) or when the store cannot be read any more."""
        if self.failed is not None:
            return None
        import lmdb
        try:
            with self.env.begin(db=self.db) as txn:
                raw = txn.get(key)
        except lmdb.Error as e:
            self._fail(e)
            return None
        if raw is None:
            return None
        try:
            return json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            return _GARBLED

    def put(self, key: bytes, value) -> None:
        """Store ``value`` (JSON-serialisable) under ``key`` (nothing once the store has failed: a
        full disk or a read-only store costs the cache, never the run)."""
        if self.failed is not None:
            return
        import lmdb
        try:
            with self.env.begin(write=True, db=self.db) as txn:
                txn.put(key, json.dumps(value).encode())
        except (OSError, lmdb.Error) as e:
            self._fail(e)

    def _fail(self, e: BaseException) -> None:
        self.failed = f"{type(e).__name__}: {e}"
        log.warning("persistent cache %s: %s; going on without it", os.fspath(self.path), self.failed)

    def __len__(self) -> int:
        import lmdb
        try:
            with self.env.begin(db=self.db) as txn:
                return txn.stat(self.db)["entries"]
        except lmdb.Error:
            return 0

    def close(self) -> None:
        """Flush and close the environment (a failure to flush is logged, not raised)."""
        import lmdb
        try:
            self.env.sync(True)
        except (OSError, lmdb.Error) as e:
            self._fail(e)
        self.env.close()
