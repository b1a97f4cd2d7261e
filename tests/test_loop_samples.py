"""The loop samples of the state-merging issue (memspn, chained memspn, strspn/strchr-like) reach
exactly the native outcome set without merging: the baseline the merging modes must reproduce.

The native domain uses one representative per byte class: the programs only compare buffer bytes
with 'a', 'b', 'c' and NUL, and the size byte with 0..M, so every other value behaves like 'd' (or
like a size above M).
"""

import os

import pytest

from angr_ram.run.runner import explore

from .conftest import BUILD, assert_tests_replay
from .groundtruth import outcome_set_over

LETTERS = b"abcd\0"
SIZES = range(0, 6)          # n = 0..4 and one value above M = 4


@pytest.mark.parametrize("name", ["memspn4_O0", "memspnab4_O0", "memspn2x4_O0", "memspn2x4_O2", "strloops_O0",
                                  "strloops_O2"])
@pytest.mark.slow
def test_loop_samples_match_native_outcomes(name):
    b = os.fspath(BUILD / name)
    if name.startswith("strloops"):
        n, alphabets = 4, [LETTERS] * 4
    else:
        n, alphabets = 5, [SIZES] + [LETTERS] * 4
    r = explore(b, n, tests=True)
    assert r.errors == []
    assert r.outcomes == outcome_set_over(b, alphabets)
    assert_tests_replay(b, r)


def test_memspn_explores_one_path_per_span_and_ab_explodes():
    """Without merging memspn over "a" forks O(M) paths; over "ab" the paths grow exponentially
    in M (why the merging technique exists)."""
    a4 = explore(os.fspath(BUILD / "memspn4_O0"), 5).stats["paths"]
    a8 = explore(os.fspath(BUILD / "memspn8_O0"), 9).stats["paths"]
    ab4 = explore(os.fspath(BUILD / "memspnab4_O0"), 5).stats["paths"]
    assert (a4, a8) == (10, 18)      # spans 0..M at n = 0..M, plus the n > M exit
    assert ab4 > 4 * a4
