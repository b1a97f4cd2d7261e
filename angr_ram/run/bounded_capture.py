"""A native run whose output is kept up to a bound: the first bytes, the length and a digest.

A test's native run may print without end (``seq`` on a solved argument prints a sequence of
gigabytes within its time-out): holding all of it took the replay past 2 GB. Here each stream is
read as it comes, its first :data:`OUTPUT_CAP` bytes kept, the rest only counted and hashed, so a
prediction is still compared exactly (:meth:`Captured.equals`) and memory stays bounded.
"""

from __future__ import annotations

import hashlib
import subprocess
import threading
from dataclasses import dataclass, field

OUTPUT_CAP = 1 << 16          # bytes of each native stream kept for the report
CHUNK = 1 << 16


@dataclass
class Captured:
    """One output stream: ``head`` its first bytes, ``tail`` its last ones (a sanitizer's report
    ends the stream), ``length`` its size, ``digest`` its sha256."""

    head: bytes = b""
    length: int = 0
    tail: bytes = b""
    digest: bytes = field(default_factory=lambda: hashlib.sha256(b"").digest())

    @property
    def clipped(self) -> bool:
        """True when the stream was longer than what was kept."""
        return self.length > len(self.head)

    def equals(self, data: bytes) -> bool:
        """Whether the whole stream equals ``data``."""
        if len(data) != self.length:
            return False
        return data == self.head if not self.clipped else hashlib.sha256(data).digest() == self.digest

    def __contains__(self, text: bytes) -> bool:
        return text in self.head or text in self.tail


def _drain(stream, cap: int, into: list) -> None:
    head, tail, length, h = bytearray(), b"", 0, hashlib.sha256()
    while chunk := stream.read(CHUNK):
        length += len(chunk)
        h.update(chunk)
        if len(head) < cap:
            head += chunk[: cap - len(head)]
        tail = (tail + chunk)[-cap:]
    stream.close()
    into.append(Captured(bytes(head), length, tail, h.digest()))


def _feed(stream, data: bytes) -> None:
    try:
        stream.write(data)
    except (BrokenPipeError, OSError):
        pass                  # the program exited without reading all of its input
    finally:
        try:
            stream.close()
        except OSError:
            pass


def run_captured(argv, stdin: bytes, timeout: float, cap: int = OUTPUT_CAP, **popen):
    """(return code, stdout, stderr) of ``argv`` fed ``stdin``, the streams as :class:`Captured`;
    the return code is None when the run outlived ``timeout`` seconds (it is then killed)."""
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **popen)
    outs: list = []
    errs: list = []
    workers = [threading.Thread(target=_drain, args=(p.stdout, cap, outs), daemon=True),
               threading.Thread(target=_drain, args=(p.stderr, cap, errs), daemon=True),
               threading.Thread(target=_feed, args=(p.stdin, stdin or b""), daemon=True)]
    for w in workers:
        w.start()
    try:
        code = p.wait(timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        code = None
    for w in workers:
        w.join(timeout=5)     # a grandchild holding the pipe open must not hold up the replay
    return code, (outs or [Captured()])[0], (errs or [Captured()])[0]
