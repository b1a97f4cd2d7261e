"""Runs: the RelocatableMemory technique and its configuration, explore/prepare/summarize, test
cases and their native replay, shipping states to dask workers, the command line."""
