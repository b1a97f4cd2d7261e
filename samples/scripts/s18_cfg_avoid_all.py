"""``CFGFast`` to find every call site of ``fail``, then ``explore(find=, avoid=[...])`` from a
``blank_state`` at ``main`` with stdin given to the state (the issue's Explorer with many avoid
addresses)."""
import angr
import claripy

PROGRAM = "sc_manyfails_O0"
EXPECT = b"flag ok"


def solve(binary, attach):
    proj = angr.Project(binary, auto_load_libs=False)
    cfg = proj.analyses.CFGFast(normalize=True)
    fail = proj.loader.find_symbol("fail").rebased_addr
    avoid = [site for site in cfg.kb.functions["main"].get_call_sites()
             if cfg.kb.functions["main"].get_call_target(site) == fail]
    puts_ok = [b.addr for b in cfg.kb.functions["main"].blocks
               if any(i.mnemonic == "call" and i.op_str == hex(proj.loader.main_object.plt["puts"])
                      for i in b.capstone.insns)]
    data = claripy.BVS("data", 8 * 10)
    state = proj.factory.blank_state(addr=proj.loader.find_symbol("main").rebased_addr,
                                     stdin=angr.SimFileStream(name="stdin", content=data, size=10, has_end=True))
    simgr = proj.factory.simulation_manager(state)
    attach(simgr)
    simgr.explore(find=puts_ok, avoid=avoid)
    return {"stdin": simgr.found[0].solver.eval(data, cast_to=bytes)}
