"""The solver chain: address-constraint substitution, the query cache, small-domain evaluation,
seeded models, angr-ram's claripy frontends and the z3 backend's setup, down to the one wrapper of
``z3.Solver.check``."""
