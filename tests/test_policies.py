"""Each multiple-resolution model decides on its own what happens to an access with several
targets; the memory layer only carries the decision out. RamMemory is angr's DefaultMemory with
angr-ram's layers inserted."""

import claripy
from angr.storage.memory_mixins import AddressConcretizationMixin, DefaultMemory

from angr_ram.core.errors import Target
from angr_ram.memory.address_space import AddressSpace
from angr_ram.memory.ram_memory import RamMemory
from angr_ram.memory.strategies.models import MODELS, make_model
from angr_ram.memory.strategies.plans import ForkModel
from angr_ram.memory.strategies.resolution import Hit
from angr_ram.procedures.heap import allocate
from angr_ram.run.runner import prepare

from .conftest import BUILD


def hits_and_targets(state, n=2):
    objs = [state.ram.objects[allocate(state, 16, zero=True).id] for _ in range(n)]
    hits = [Hit("object", o.addr, o.addr + 8, o) for o in objs]
    targets = [Target(claripy.BoolS(f"t{i}"), "object", obj_id=o.id) for i, o in enumerate(objs)]
    return objs, hits, targets


def test_each_model_plans_its_own_resolution(ram_state):
    objs, hits, targets = hits_and_targets(ram_state)
    plans = {}

    def plan(name, forking):
        s = ram_state.copy()
        own = [Hit(h.kind, h.lo, h.hi, s.ram.objects[h.obj.id]) for h in hits]
        return make_model(name).plan(s.ram, own, targets, 0x401000, forking=forking), own, s

    for name in MODELS:
        (inside, _, s), (outside, own_out, _) = plan(name, True), plan(name, False)
        plans[name] = (inside, outside, s)
        if name in ("fork", "ite"):
            assert outside.access == own_out
    fork_in, fork_out, _ = plans["fork"]
    assert fork_in.fork == targets and fork_out.fork is None            # outside a step: an ite, as complete
    ite_in, ite_out, _ = plans["ite"]
    assert ite_in.access is not None and ite_in.fork is None and ite_in.segment is None
    for name in ("dsmm", "smm", "flat"):
        plan, _, s = plans[name]
        seg = plan.segment
        assert seg is not None and seg.kind == "segment" and set(seg.members) == {o.id for o in objs}, name
        assert s.ram.objects[seg.id] is seg
    assert all(ram_state.ram.objects[o.id].placed for o in objs)        # the copies' segments stay theirs


def test_error_targets_fork_apart_from_one_state_for_the_good_ones():
    good = [Target(claripy.BoolS("a"), "object"), Target(claripy.BoolS("b"), "object")]
    bad = [Target(claripy.BoolS("e"), "error", "out-of-bounds", "past the end")]
    assert make_model("fork").with_error_paths(good, bad) == [*good, *bad]
    for name in ("ite", "dsmm", "smm", "flat"):
        union, err = make_model(name).with_error_paths(good, bad)
        assert union.kind == "object" and union.constraint.op == "Or" and err is bad[0], name


def test_ram_memory_keeps_every_default_memory_layer_in_order():
    ours = [c for c in RamMemory.__mro__ if c in DefaultMemory.__mro__ and c is not DefaultMemory]
    stock = [c for c in DefaultMemory.__mro__ if c is not DefaultMemory]
    assert ours == stock
    names = [c.__name__ for c in RamMemory.__mro__]
    at = names.index("RelocatableMixin")     # its fixed-region base, the faults, the heap overflows, then angr's concretization
    assert names[at + 1:at + 5] == ["FixedRegionMixin", "FaultMixin", "HeapOverflowMixin",
                                    AddressConcretizationMixin.__name__]
    assert names.index("MultiWriteMixin") + 1 == names.index("SizeConcretizationMixin")
    assert names.index("SpeculativeFindMixin") + 1 == names.index("SmartFindMixin")


def test_the_memory_model_is_one_object_from_its_name_to_every_state():
    """The name (CLI, ``explore(model=)``, ``RelocatableMemory(model=)``) becomes one model object
    made once per run; every state's address space holds that object, and an address space made
    without one has the fork model (there is no 'no model' value)."""
    for name in MODELS:
        simgr, tech = prepare(str(BUILD / "matrix3_O0"), 2, model=name)
        simgr.run(n=3)
        states = simgr.active + simgr.deadended
        assert states and tech.model == name and tech.model_policy.name == name
        assert all(s.ram.model is tech.model_policy for s in states), name
        assert f"model {name}" in repr(states[0].ram) and f"model={name}" in repr(tech)
    bare = AddressSpace()
    assert type(bare.model) is ForkModel and "model fork" in repr(bare)
    assert bare.copy({}).model is bare.model
