"""SimProcedures and environment models: heap, libc start-up and output, strings, number parsing,
threads, the program's environment, and the record of angr stubs a path went through."""
