"""The walk-through of angr's "Simulation Managers" page on its login program: ``step()`` while
one state is active, ``run()`` to the end, then ``move()`` the deadended states that printed the
welcome into a stash of their own and read an input back from one of them."""
import angr

PROGRAM = "sc_backdoor_O0"
EXPECT = b"Welcome to the admin console"


def solve(binary, attach):
    proj = angr.Project(binary, auto_load_libs=False)
    state = proj.factory.entry_state()
    simgr = proj.factory.simulation_manager(state)
    attach(simgr)
    steps = 0
    while len(simgr.active) == 1 and steps < 500:
        simgr.step()
        steps += 1
    assert len(simgr.active) > 1, simgr        # the first branch on the input
    simgr.run()
    simgr.move(from_stash="deadended", to_stash="authenticated",
               filter_func=lambda s: b"Welcome" in s.posix.dumps(1))
    assert simgr.authenticated and simgr.deadended, simgr     # both answers are reachable
    inputs = sorted(s.posix.dumps(0) for s in simgr.authenticated)
    master = [i for i in inputs if i[8:16] == b"SOSNEAKY"]
    assert master, inputs
    return {"stdin": master[0],
            "observed": {"steps_to_branch": steps, "authenticated": len(simgr.authenticated)}}
