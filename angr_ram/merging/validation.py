"""Checking a pattern merge against Theorem 3.7 of the state-merging-with-quantifiers paper
(``QuantifiedMerging(validate=True)``): at ``k = k_j`` the pattern is equivalent to the j-th leaf's
tree path condition and the merged registers equal the leaf's."""

from __future__ import annotations

import claripy

from angr_ram.core.errors import AngrRamError


def check_theorem(clause, merged, tails, states) -> None:
    """Theorem 3.7 for every leaf: pattern(k_j) <=> tpc_j, and equal register values."""
    regs = ("rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11", "r12",
            "r13", "r14", "r15", "rip")
    for kj, tail, leaf in zip(clause.ks, tails, states, strict=True):
        parts = [clause.phi1, *[clause.instance(i) for i in range(1, kj + 1)],
                 clause.phi3.instantiate(kj, clause.members)]
        if any(p is None for p in parts):
            raise AngrRamError(f"merge validation: a pattern instance at k={kj} names an unknown variable")
        tpc = claripy.And(*tail) if tail else claripy.true()
        s = claripy.Solver()
        if s.satisfiable([claripy.And(*parts) != tpc]):
            raise AngrRamError(f"merge validation: the pattern at k={kj} is not equivalent to its path condition")
        for r in regs:
            mv, lv = getattr(merged.regs, r), getattr(leaf.regs, r)
            if claripy.Solver().satisfiable([clause.k == kj, tpc, mv != lv]):
                raise AngrRamError(f"merge validation: register {r} differs from the leaf at k={kj}")
