"""angr 9.2.213: printf's ``%d`` of a symbolic integer writes the text of one value the solver
picks and adds no constraint, so the path's output contradicts its other inputs: with stdin one
symbolic byte, the one path prints "0" while its stdin may still be any byte (native: input 2
prints "2"). With fix.patch the path is constrained to the value it printed (inputs: [0]).
Run from this folder: ``python reproducer.py`` (builds prog.c with gcc)."""
import logging
import os
import subprocess

import angr
import claripy

logging.disable(logging.WARNING)
here = os.path.dirname(os.path.abspath(__file__))
prog = os.path.join(here, "prog")
if not os.path.exists(prog):
    subprocess.run(["gcc", "-O0", "-o", prog, os.path.join(here, "prog.c")], check=True)
p = angr.Project(prog, auto_load_libs=False)
b = claripy.BVS("in", 8)
st = p.factory.entry_state(stdin=angr.SimFileStream(name="stdin", content=b, has_end=True))
sm = p.factory.simgr(st)
sm.run()
for s in sm.deadended:
    out = s.posix.dumps(1)
    ins = s.solver.eval_upto(b, 3)
    print("stdout", out, "inputs still allowed", ins, "consistent:", all(str(v).encode() + b"\n" == out for v in ins))
