"""The command line as a user meets it (issue 84): each case is ``angr-ram`` run in its own process
exactly as typed, and the table shows what the user sees: the exit code, paths and tests, the
time the summary prints beside the command's wall time, replay mismatches, the size of the output
and the first line of any error. ``python -m bench.cli OLD`` runs the ``angr_ram`` of the checkout
OLD instead (same cases, same samples), to set an earlier version's answers beside these.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from elftools.elf.elffile import ELFFile

from . import sample_path

TIMEOUT = 300.0
CODE: str | None = None        # a checkout whose angr_ram the commands run (None: this one)


def _cli(args: list[str], cwd: str | None = None) -> tuple[int, str, str, float]:
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "angr_ram.run.cli", *args], capture_output=True, text=True,
                       timeout=TIMEOUT, cwd=cwd,
                       env={**os.environ, **({"PYTHONPATH": CODE} if CODE else {})})
    return r.returncode, r.stdout, r.stderr, time.perf_counter() - t0


def _first_error(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    if any(ln.startswith("Traceback") for ln in lines):
        return "traceback: " + lines[-1][:70]
    return lines[0][:90] if lines else ""


def _replay(d: str, binary: str) -> str:
    rc, out, err, _ = _cli(["replay", d, binary])
    last = out.strip().splitlines()[-1] if out.strip() else _first_error(err)
    return f"rc {rc}: {last}"


def _main_offset(binary: str) -> int:
    with open(binary, "rb") as f:
        return next(s["st_value"] for s in ELFFile(f).get_section_by_name(".symtab").iter_symbols()
                    if s.name == "main")


def cases(samples_dir: Path | None) -> list[tuple[str, str, str]]:
    """(item, command, what the user saw) per case."""
    rows = []
    fileread = str(sample_path("fileread_O0", samples_dir))
    wordsplit2 = str(sample_path("wordsplit_O2", samples_dir))
    wordsplit0 = str(sample_path("wordsplit_O0", samples_dir))
    branches = str(sample_path("branches_O0", samples_dir))
    with tempfile.TemporaryDirectory() as tmp:
        d = os.path.join(tmp, "files")
        rc, out, err, _ = _cli(["run", fileread, "--emit-tests", d, "--json"])
        got = json.loads(out) if rc == 0 else None
        seen = (f"{len(got['outcomes'])} outcomes {sorted({o['exit'] for o in got['outcomes']})}; replay "
                f"{_replay(d, fileread)}" if got else f"rc {rc}: {_first_error(err)}")
        rows.append(("1 undeclared file", "run fileread_O0 (opens input.dat)", seen))
        d = os.path.join(tmp, "max")
        rc, out, err, wall = _cli(["run", wordsplit2, "--stdin-bytes", "5", "--max-paths", "10", "--emit-tests", d,
                                   "--json"])
        got = json.loads(out) if rc == 0 else None
        seen = (f"{got['stats']['paths']} paths, {got['tests']} tests in {wall:.1f}s; replay {_replay(d, wordsplit2)}"
                if got else f"rc {rc}: {_first_error(err)}")
        rows.append(("2 --max-paths", "run wordsplit_O2 --stdin-bytes 5 --max-paths 10 --emit-tests", seen))
    off = _main_offset(fileread)
    for what, target in (("PIE offset of main (nm)", hex(off)), ("unmapped", "0x7777777"),
                         ("mid-instruction", hex(0x400000 + off + 2)), ("never reached", "fclose")):
        rc, out, err, _ = _cli(["run", fileread, "--find", target])
        m = re.search(r"paths that reached a find target: (\d+)", out)
        seen = f"rc {rc}; found {m.group(1) if m else 0}; " + (_first_error(err) or "no message")
        rows.append((f"4 --find {what}", f"run fileread_O0 --find {target}", seen))
    rc, out, err, _ = _cli(["run", wordsplit0, "--stdin-bytes", "5", "--find", "long_word", "--json"])
    got = json.loads(out) if rc == 0 else {}
    rows.append(("4 found input", "run wordsplit_O0 --stdin-bytes 5 --find long_word --json",
                 f"found {got.get('found')}; found_inputs: {got.get('found_inputs', 'not in the JSON')}"))
    rc, out, err, wall = _cli(["run", branches, "--stdin-bytes", "2"])
    m = re.search(r"paths in ([\d.]+)s", out)
    rows.append(("5 printed time", "run branches_O0 --stdin-bytes 2",
                 f"printed {m.group(1) if m else '?'} s, command {wall:.1f} s"))
    rc, out, err, _ = _cli(["run", branches, "--stdin-bytes", "5", "--solver-timeout-ms", "5"])
    m = re.search(r": (\d+) paths", out)
    rows.append(("6 --solver-timeout-ms 5", "run branches_O0 --stdin-bytes 5 --solver-timeout-ms 5",
                 f"rc {rc}; " + (f"{m.group(1)} paths (of 36)" if m else _first_error(err))))
    rc, out, err, _ = _cli(["run", branches, "--stdin-bytes", "2"])
    rows.append(("7 summary size", "run branches_O0 --stdin-bytes 2",
                 f"{len(out.splitlines())} lines, longest {max(len(ln) for ln in out.splitlines())} characters"))
    rc, out, err, _ = _cli(["run", wordsplit2, "--stdin-bytes", "4", "--progress", "1"])
    lines = [ln for ln in err.splitlines() if "paths" in ln]
    rows.append(("8 progress when piped", "run wordsplit_O2 --stdin-bytes 4 --progress 1 2>log",
                 f"rc {rc}; {len(lines)} progress lines" + (f", last: {lines[-1].strip()}" if lines else
                                                             f" ({_first_error(err)})")))
    return rows


def cli_table(samples_dir: Path | None = None) -> int:
    """Print the cases' table."""
    rows = cases(samples_dir)
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    print(f"{'item':<{w0}}  {'command':<{w1}}  what the user sees")
    for item, cmd, seen in rows:
        print(f"{item:<{w0}}  {cmd:<{w1}}  {seen}")
    return 0


if __name__ == "__main__":
    CODE = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else None
    sys.exit(cli_table())
