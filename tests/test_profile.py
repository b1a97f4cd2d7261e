"""The time breakdown (``profile=True`` / ``--profile``) and base-free object constraints."""

import json
import os
import subprocess
import sys

import claripy
import pytest

from angr_ram.core.profile import SECTIONS
from angr_ram.memory.memory_object import MemoryObject
from angr_ram.memory.relocatable import object_constraint
from angr_ram.memory.strategies.resolution import Hit, exclusion
from angr_ram.run.runner import explore

from .conftest import BUILD


@pytest.mark.slow
def test_profile_splits_the_step_time_and_attributes_z3_to_sites():
    b = os.fspath(BUILD / "allochist0_O0")
    r = explore(b, 2, profile=True)
    p = r.profile
    assert set(p["seconds"]) == set(SECTIONS)
    # every z3 call while exploring is timed, and attributed to a site being stepped
    assert p["calls"]["z3"] == r.stats["z3_checks_exploring"] > 0
    assert sum(n for _, _, n in p["z3_by_site"]) <= p["calls"]["z3"]
    assert any(site.startswith("block 0x") and "(main+" in site for site, _, _ in p["z3_by_site"])
    assert p["calls"]["memory"] > 0 and p["calls"]["resolution"] > 0 and p["calls"]["engine"] > 0
    assert all(v >= 0 for v in p["seconds"].values())
    # exclusive times add up to (at most) the stepping time
    assert sum(p["seconds"].values()) <= r.seconds + 0.5
    # without profile=True nothing is timed
    assert explore(b, 2).profile is None


def test_cli_profile_prints_and_reports_it_in_json():
    b = os.fspath(BUILD / "matrix3_O0")
    out = subprocess.run([sys.executable, "-m", "angr_ram.run.cli", "run", b, "--stdin-bytes", "2", "--profile"],
                         capture_output=True, text=True, check=True).stdout
    assert "profile (exclusive seconds while exploring)" in out and "top sites by z3 time" in out
    js = subprocess.run([sys.executable, "-m", "angr_ram.run.cli", "run", b, "--stdin-bytes", "2", "--profile", "--json"],
                        capture_output=True, text=True, check=True).stdout
    assert json.loads(js)["profile"]["calls"]["engine"] > 0


def test_object_constraints_are_base_free_when_the_base_is_a_summand():
    """``base <= base + off <= base + k`` is ``off <= k``: an object never wraps around."""
    base = claripy.BVS("ram_base_t", 64, explicit_name=True)
    i = claripy.BVS("i", 64, explicit_name=True)
    obj = MemoryObject(id=1, base=base, name="ram_base_t", size=32, site=0, context=(), store=None, addr=0x5000)
    c = object_constraint(base + i * 4, obj, 4)
    assert "ram_base_t" not in c.variables and c is claripy.ULE(i * 4, 28)
    # equisatisfiable with the two-sided form for any concrete placement of the object
    for placed in (0x1000, 0xFFFF_FFFF_FFFF_FF00 - 32):
        two = claripy.And(claripy.UGE(placed + i * 4, placed), claripy.ULE(placed + i * 4, placed + 28))
        s = claripy.Solver()
        assert not s.satisfiable(extra_constraints=[claripy.Not(c == two)])
    ex, agnostic = exclusion(base + i, Hit("object", 0x5008, 0x500F, obj=obj))
    assert agnostic and "ram_base_t" not in ex.variables
