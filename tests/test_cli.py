"""The command line: outcomes as JSON, and clear messages for bad input."""

import json
import os
import subprocess
import sys

import pytest

import angr_ram
from angr_ram.cli import main

from .conftest import BUILD


def test_run_json_reports_outcomes_errors_and_stats(capsys):
    assert main(["run", os.fspath(BUILD / "oob_O0"), "--stdin-bytes", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {(o["exit"], o["stdout"]) for o in out["outcomes"]} == {(0, ""), (1, "")}
    assert [e["kind"] for e in out["errors"]] == ["out-of-bounds"]
    assert 10 <= int(out["errors"][0]["stdin"], 16) < 16
    for key in ("paths", "errors", "forks", "objects", "solver_queries", "solver_seconds"):
        assert key in out["stats"]


@pytest.mark.parametrize(("args", "message"), [
    (["run", "/no/such/binary", "--stdin-bytes", "1"], "no such file"),
    (["run", __file__, "--stdin-bytes", "1"], "not an ELF file"),
])
def test_bad_binaries_get_a_clear_message(args, message, capsys):
    assert main(args) == 2
    assert message in capsys.readouterr().err


def test_non_x86_64_binary_is_refused(tmp_path, capsys):
    elf = tmp_path / "arm.elf"
    data = bytearray((BUILD / "branches_O0").read_bytes())
    data[18:20] = (40).to_bytes(2, "little")  # e_machine = ARM
    elf.write_bytes(bytes(data))
    assert main(["run", os.fspath(elf), "--stdin-bytes", "1"]) == 2
    assert "angr-ram" in capsys.readouterr().err


def test_unknown_option_values_are_rejected():
    with pytest.raises(angr_ram.AngrRamError, match="unknown model"):
        angr_ram.RelocatableMemory(model="magic")
    with pytest.raises(angr_ram.AngrRamError, match="context_k"):
        angr_ram.RelocatableMemory(context_k=-1)
    r = subprocess.run([sys.executable, "-m", "angr_ram.cli", "run", "x", "--stdin-bytes", "1", "--model", "nope"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "invalid choice" in r.stderr


def test_bench_prints_every_configuration_and_the_ratio(capsys):
    from angr_ram.bench.speed import main as bench_main

    assert bench_main(["uaf"], timeout=60) == 0
    out = capsys.readouterr().out
    for label in ("stock", "ram-concrete", "ram-symbolic", "sym/concrete"):
        assert label in out
    assert bench_main(["nope"]) == 2
