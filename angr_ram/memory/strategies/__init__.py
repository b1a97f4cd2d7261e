"""Resolution and partitioning policies for symbolic pointers."""
