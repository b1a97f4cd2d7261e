"""The C library and POSIX models that are not angr-ram's mission but that real programs call
(getopt, scanf, strtod, libm, stdio, signals, processes, shared memory, threads, locale, time):
a SimLibrary a user can also install on stock angr (:func:`.library.install_posix`). What the
relocatable memory needs (the heap, strings over relocatable objects, installation, stubs)
stays in :mod:`angr_ram.procedures`."""
