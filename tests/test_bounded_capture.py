"""Native replay keeps a bounded part of a run's output and still judges it whole: a test whose
native run prints a long sequence (seq on a solved argument printed gigabytes and the replay's
report went past 2 GB) is compared exactly, and an endless printer is stopped by its time-out."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from angr_ram.run.bounded_capture import OUTPUT_CAP, run_captured
from angr_ram.run.replay import replay_one
from angr_ram.run.testcases import TestCase

SEQ = shutil.which("seq")
YES = shutil.which("yes")
pytestmark = pytest.mark.skipif(not (SEQ and YES), reason="needs seq and yes")


def _seq_output(n: int) -> bytes:
    return subprocess.run([SEQ, "1", str(n)], capture_output=True, check=True).stdout


def test_a_long_output_is_compared_whole_and_kept_up_to_the_bound():
    whole = _seq_output(100000)
    assert len(whole) > 4 * OUTPUT_CAP
    right = TestCase("t1", "exit", args=[b"1", b"100000"], exit=0, stdout=whole)
    r = replay_one(SEQ, right)
    assert r.status == "ok"
    assert r.stdout == whole[:OUTPUT_CAP] and r.stdout_length == len(whole) and r.stdout_clipped
    # one byte changed past the kept part, or one line fewer: both mismatch
    late = whole[:-3] + b"X" + whole[-2:]
    assert replay_one(SEQ, TestCase("t2", "exit", args=[b"1", b"100000"], exit=0, stdout=late)).status == "mismatch"
    assert replay_one(SEQ, TestCase("t3", "exit", args=[b"1", b"100000"], exit=0,
                                    stdout=_seq_output(99999))).status == "mismatch"


def test_a_short_output_is_kept_whole():
    r = replay_one(SEQ, TestCase("t", "exit", args=[b"3"], exit=0, stdout=b"1\n2\n3\n"))
    assert (r.status, r.stdout, r.stdout_length, r.stdout_clipped) == ("ok", b"1\n2\n3\n", 6, False)


def test_an_endless_printer_times_out_with_bounded_output():
    code, out, err = run_captured([YES], b"", timeout=1.0)
    assert code is None
    assert len(out.head) == OUTPUT_CAP and out.length > OUTPUT_CAP and out.tail.endswith(b"y\n")
    assert err.length == 0
    r = replay_one(YES, TestCase("t", "exit", exit=0, stdout=b"y\n"), timeout=1.0)
    assert r.status == "timeout" and len(r.stdout) == OUTPUT_CAP


def test_input_the_program_does_not_read_does_not_fail_the_run():
    code, out, _ = run_captured(["/bin/true"], b"x" * (1 << 20), timeout=10.0)
    assert code == 0 and out.length == 0
