"""RunConfig: a run's options as one validated value, built once from the technique's keywords
(or given whole), read by the run scope and the layers below."""

import dataclasses
import os

import angr
import claripy
import pytest

import angr_ram
from angr_ram.core.errors import AngrRamError
from angr_ram.run.config import RunConfig
from angr_ram.run.runner import explore

from .conftest import BUILD

BAD = [
    ({"model": "magic"}, "unknown model 'magic'"),
    ({"context_k": -1}, "context_k must be a non-negative integer"),
    ({"split": 12}, "split must be a positive multiple of 8"),
    ({"symbolic_bases": False, "model": "dsmm"}, "needs symbolic_bases=True"),
    ({"symbolic_bases": False, "split": 64}, "splitting relocates objects"),
    ({"cache": "lru"}, "unknown cache 'lru'"),
    ({"persist": True}, "persist needs a query cache"),
    ({"max_symbolic_size": -5}, "max_symbolic_size must be a non-negative integer"),
    ({"solver_timeout_ms": 0}, "solver_timeout_ms must be a positive integer"),
    ({"defer_ms": 0}, "defer_ms must be a positive integer or None"),
    ({"step_seconds": True}, "step_seconds must be a positive number"),
    ({"step_memory_mb": -1}, "step_memory_mb must be a positive number"),
    ({"environment": "mars"}, "unknown environment 'mars'"),
    ({"uninitialized": "random"}, "unknown uninitialized 'random'"),
]


@pytest.mark.parametrize("options,message", BAD, ids=[m.split()[0] + "-" + next(iter(o)) for o, m in BAD])
def test_a_bad_option_is_one_clear_error_from_the_config_and_the_technique(options, message):
    with pytest.raises(AngrRamError, match=message):
        RunConfig(**options)
    with pytest.raises(AngrRamError, match=message):
        angr_ram.RelocatableMemory(**options)


def test_unknown_options_and_mixed_forms_are_clear_errors():
    with pytest.raises(AngrRamError, match="unknown option modle; known: .*model"):
        angr_ram.RelocatableMemory(modle="dsmm")
    with pytest.raises(AngrRamError, match="not both"):
        angr_ram.RelocatableMemory(RunConfig(), model="dsmm")
    with pytest.raises(AngrRamError, match="model is a keyword"):
        angr_ram.RelocatableMemory("dsmm")
    with pytest.raises(AngrRamError, match="unknown option"):
        explore(os.fspath(BUILD / "uaf_O0"), 1, modle="dsmm")


def test_the_config_is_a_value_and_its_derived_budgets_follow_the_technique_rules():
    c = RunConfig(model="dsmm", cache="aa")
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.model = "fork"
    assert c.replace(model="fork") == RunConfig(cache="aa") and c.replace(model="fork") != c
    with pytest.raises(AngrRamError, match="unknown model"):
        c.replace(model="magic")
    assert RunConfig().first_pass_ms == 1000 and RunConfig().full_ms == 300_000
    assert RunConfig(defer_ms=5000, solver_timeout_ms=4000).first_pass_ms is None   # no shorter than the full budget
    assert RunConfig(defer_ms=None).first_pass_ms is None


def test_a_technique_from_a_config_runs_as_one_from_the_same_keywords():
    """A user's script: the same options given as keywords and as a RunConfig; the run scope
    carries the config, and seeded_models=False reaches the seeding layer through it."""
    def run(tech):
        p = angr.Project(os.fspath(BUILD / "symtab_O0"), auto_load_libs=False)
        x = claripy.BVS("x", 16)
        sm = p.factory.simulation_manager(p.factory.entry_state(
            stdin=angr.SimFileStream(name="stdin", content=x, has_end=True)))
        sm.use_technique(tech)
        sm.run()
        assert tech.scope.config is tech.config
        return sorted(s.posix.dumps(1) for s in sm.deadended), tech.stats

    kw_paths, kw_stats = run(angr_ram.RelocatableMemory(model="dsmm", seeded_models=False))
    cfg_paths, cfg_stats = run(angr_ram.RelocatableMemory(RunConfig(model="dsmm", seeded_models=False)))
    seeded_paths, seeded_stats = run(angr_ram.RelocatableMemory(RunConfig(model="dsmm")))
    assert kw_paths == cfg_paths == seeded_paths and len(kw_paths) > 3
    assert kw_stats.seeded_answers == cfg_stats.seeded_answers == 0 < seeded_stats.seeded_answers
    assert kw_stats.solver_queries == cfg_stats.solver_queries


def test_explore_and_the_cli_take_one_config(capsys):
    """``explore(config=RunConfig(...))`` runs as with the same keywords; keywords beside a config,
    or a config that is not one, are clear errors before the binary is loaded; the CLI builds its
    run's RunConfig (a bad combination of its options is one line, exit 2)."""
    from angr_ram.run.cli import main

    b = os.fspath(BUILD / "symtab_O0")
    by_config = explore(b, 2, config=RunConfig(model="dsmm", cache="aa"))
    by_keywords = explore(b, 2, model="dsmm", cache="aa")
    assert by_config.outcomes == by_keywords.outcomes and len(by_config.outcomes) >= 2
    assert by_config.stats["solver_queries"] == by_keywords.stats["solver_queries"]
    assert by_config.stats["cache_hits_aa"] == by_keywords.stats["cache_hits_aa"]
    with pytest.raises(AngrRamError, match=r"not both \(cache\)"):
        explore("/no/such/binary", 2, config=RunConfig(), cache="aa")
    with pytest.raises(AngrRamError, match=r"not both \(model\)"):
        explore("/no/such/binary", 2, config=RunConfig(), model="dsmm")
    with pytest.raises(AngrRamError, match="config must be a RunConfig"):
        explore("/no/such/binary", 2, config={"model": "dsmm"})
    assert main(["run", b, "--model", "smm", "--concrete-bases"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("needs symbolic_bases=True") and len(err.splitlines()) == 1, err


def test_the_techniques_options_are_views_of_its_one_config():
    """``tech.solver_timeout_ms`` and the other option attributes read ``tech.config``: there is no
    second copy to drift (a script that wants other options makes a new RunConfig)."""
    cfg = RunConfig.of(model="smm", solver_timeout_ms=4000, defer_ms=1500, step_seconds=3.0, context_k=2,
                       environment="fixed", uninitialized="symbolic", string_procedures=False)
    tech = angr_ram.RelocatableMemory(cfg)
    for name in ("uninitialized", "environment", "string_procedures", "solver_timeout_ms", "step_seconds",
                 "step_memory_mb", "max_symbolic_size", "symbolic_bases", "context_k"):
        assert getattr(tech, name) == getattr(cfg, name), name
        with pytest.raises(AttributeError):
            setattr(tech, name, getattr(cfg, name))
    assert tech.model == "smm" and tech.model_policy.name == "smm" and tech.defer_ms == cfg.first_pass_ms == 1500
    assert tech.scope.config is cfg
