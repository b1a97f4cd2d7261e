"""claripy 9.2.213: BackendZ3._batch_eval leaves its push()ed scope, with the blocking clauses of
the models it found, in the caller's solver when a check raises (a z3 time-out, an interrupt)."""
import claripy
import z3

be = claripy.backends.z3
x = claripy.BVS("x", 8)
s = be.solver()
be.add(s, [claripy.ULT(x, 10)])
real_check = z3.Solver.check
calls = []

def flaky_check(self, *args):
    calls.append(1)
    if len(calls) == 3:                 # the third model's check gives up, as a time-out does
        raise z3.Z3Exception("canceled")
    return real_check(self, *args)

z3.Solver.check = flaky_check
try:
    be._batch_eval([be.convert(x)], 5, solver=s)
except Exception as e:
    print("batch_eval raised:", type(e).__name__, e)
finally:
    z3.Solver.check = real_check
print("scopes left in the caller's solver:", s.num_scopes())
print("x's values the solver still allows:", len(be._batch_eval([be.convert(x)], 20, solver=s)), "of 10")
