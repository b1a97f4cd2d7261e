"""The base every layer builds on: errors, scoped values, run scopes, the patch registry, the run
guard, counters, profiles."""
