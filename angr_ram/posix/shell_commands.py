"""``system``, ``popen`` and ``pclose`` for the shell's ``echo``: the command a program passes to
itself through the shell (a "covert propagation" logic bomb: ``sprintf(cmd, "echo %d", x)``,
then ``popen(cmd, "r")`` or ``system("echo ... > file")``).

angr's ``system`` returns an unconstrained status and runs nothing; ``popen`` is a stub: the value
never came back. Here a command of the form ``echo [-n] words [> file | >> file]`` (white space
around, a trailing newline) is run by the model as ``/bin/sh`` (dash) runs it: its output is the words joined by one space and a
newline (none with ``-n``), each byte as the command held it (symbolic bytes included), written
to the file it names (created or truncated, or appended to), to the program's stdout (``system``)
or to the stream ``popen`` returns. A symbolic byte must be a byte of a word (no white space,
quote, ``$``, glob or other character the shell reads); any other command, or one whose bytes may
be such characters, keeps angr's behaviour and names the function among the path's stubs.
``system``'s output goes straight to stdout: natively, output the program buffered before the
call (stdout not a terminal) comes after it."""

from __future__ import annotations

import errno

import angr
import claripy
from angr.storage.file import Flags

from angr_ram.posix.pipes import open_pipe
from angr_ram.posix.temp_files import stream_of
from angr_ram.procedures.byte_scan import Bytes
from angr_ram.procedures.libc import set_errno, single_value
from angr_ram.procedures.stubs import record

MAX_COMMAND = 4096
BLANKS = b" \t"
SPECIAL = b"\"'`$\\*?[]{}~;&|<>()#\n\r\v\f\0" + BLANKS


def _command(state, ptr) -> list | None:
    """The command's bytes before its NUL (8-bit expressions), or None when a symbolic byte may be
    one the shell reads specially (or the NUL)."""
    data, out = Bytes(state, ptr, MAX_COMMAND), []
    for i in range(MAX_COMMAND):
        b = data[i]
        if b is None:
            return None
        if not b.symbolic:
            if b.concrete_value == 0:
                return out
        elif state.solver.satisfiable(extra_constraints=[claripy.Or(*[b == c for c in SPECIAL])]):
            return None
        out.append(b)
    return None


def _words(cmd: list) -> list[list]:
    words, cur = [], []
    for b in cmd:
        if not b.symbolic and b.concrete_value in BLANKS + b"\n":
            if cur:
                words.append(cur)
            cur = []
            if b.concrete_value == 0x0A:
                words.append(None)          # the end of the (first) command
        else:
            cur.append(b)
    if cur:
        words.append(cur)
    while words and words[-1] is None:
        words.pop()
    return words


def _text(word: list) -> bytes | None:
    return bytes(b.concrete_value for b in word) if all(not b.symbolic for b in word) else None


def echo(state, ptr):
    """``(output, file name or None, append)`` of the ``echo`` command at ``ptr``, or None when it is
    another command or one this model does not read (see the module doc)."""
    cmd = _command(state, ptr)
    words = _words(cmd) if cmd is not None else None
    if not words or None in words or _text(words[0]) != b"echo":
        return None
    args, target, append = words[1:], None, False
    if len(args) >= 2 and _text(args[-2]) in (b">", b">>"):
        append, target = _text(args[-2]) == b">>", _text(args[-1])
        args = args[:-2]
        if not target:
            return None
    if any(not b.symbolic and b.concrete_value in SPECIAL for w in args for b in w):
        return None
    if args and len(args[0]) == 2 and _text(args[0]) is None and state.solver.satisfiable(
            extra_constraints=[claripy.Concat(*args[0]) == int.from_bytes(b"-n", "big")]):
        return None                                 # dash's echo: only a first word "-n" is an option
    newline = not (args and _text(args[0]) == b"-n")
    args = args[1:] if not newline else args
    parts = []
    for i, w in enumerate(args):
        parts += ([claripy.BVV(b" ")] if i else []) + w
    parts += [claripy.BVV(b"\n")] if newline else []
    return (claripy.Concat(*parts) if parts else None), target, append


def _write_file(state, name: bytes, data, append: bool) -> bool:
    flags = Flags.O_WRONLY | Flags.O_CREAT | (Flags.O_APPEND if append else Flags.O_TRUNC)
    fd = state.posix.open(name, flags)
    if fd is None:
        return False
    fd = single_value(state, fd)
    if data is not None:
        simfd = state.posix.get_fd(fd)
        if append:
            simfd.seek(0, "end")
        simfd.write_data(data)
    state.posix.close(fd)
    return True


class System(angr.SimProcedure):
    """``system(command)``."""

    def run(self, command):  # pylint: disable=arguments-differ
        if self.state.solver.is_true(command == 0):
            return claripy.BVV(1, 32)               # a shell is there
        found = echo(self.state, command)
        if found is None:
            record(self.state, "system")
            return self.state.solver.Unconstrained("system_returncode", 8, key=("api", "system")).zero_extend(24)
        data, target, append = found
        if target is not None:
            if not _write_file(self.state, target, data, append):
                return claripy.BVV(1 << 8, 32)      # the shell's redirection failed: exit 1
        elif data is not None:
            self.state.posix.get_fd(1).write_data(data)
        return claripy.BVV(0, 32)


class Popen(angr.SimProcedure):
    """``popen(command, "r")``: a stream reading the command's output."""

    def run(self, command, mode):  # pylint: disable=arguments-differ
        state = self.state
        m = single_value(state, state.memory.load(mode, 1))
        found = echo(state, command) if m == ord("r") else None
        if found is None:
            record(state, "popen")
            return state.solver.Unconstrained("popen", self.arch.bits, key=("api", "popen"))
        data, target, append = found
        if target is not None:              # the output went to the file: the stream reads nothing
            _write_file(state, target, data, append)
        ends = open_pipe(state, data if target is None else None, ends=1)
        if ends is None:
            set_errno(state, errno.EMFILE)
            return claripy.BVV(0, self.arch.bits)
        return stream_of(self, ends[0])


class Pclose(angr.SimProcedure):
    """``pclose(stream)``: closes it; the command's status (0: echo succeeded)."""

    def run(self, stream):  # pylint: disable=arguments-differ
        self.inline_call(angr.SIM_PROCEDURES["libc"]["fclose"], stream)
        return claripy.BVV(0, 32)


SHELL_PROCEDURES = {"system": System, "popen": Popen, "pclose": Pclose}
