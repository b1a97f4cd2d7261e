"""State plugins: address space, object store, substitution, solver, memory, heap."""
