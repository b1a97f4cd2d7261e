"""The models that compute with this machine's glibc give the C locale's text whatever locale the
analysing process chose (angr_ram/procedures/host_libc.py): a replay runs in the C locale."""

import os
import subprocess
import sys

import pytest

from .conftest import ROOT

CODE = """
import ctypes, locale, struct
locale.setlocale(locale.LC_ALL, "de_DE.UTF-8")
libc = ctypes.CDLL(None)
def native():
    buf = ctypes.create_string_buffer(32)
    libc.snprintf(buf, 32, b"%.2f", ctypes.c_double(1.5))
    return buf.value.decode()
from angr_ram.procedures.float_text import double_text
from angr_ram.posix.float_scan import host_scan
from angr_ram.posix.float_parsing import read_number
before = native()
bits = struct.unpack("<Q", struct.pack("<d", 1.5))[0]
print(before, double_text(b"f", b"", None, 2, bits).decode(), host_scan(b"1,5", b"%lf", 8)[2],
      host_scan(b"1.5", b"%lf", 8)[2], read_number(b"1,5")[1], native())
"""


@pytest.fixture(scope="module")
def comma_locale(tmp_path_factory):
    out = tmp_path_factory.mktemp("locales")
    try:
        subprocess.run(["localedef", "-i", "de_DE", "-f", "UTF-8", os.fspath(out / "de_DE.UTF-8")],
                       capture_output=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired):
        pass
    if not (out / "de_DE.UTF-8").is_dir():
        pytest.skip("no localedef or no de_DE locale source on this machine")
    return out


def test_printf_and_scanf_floats_are_the_c_locales_under_a_comma_locale(comma_locale):
    r = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=120, cwd=ROOT,
                       env={**os.environ, "LOCPATH": os.fspath(comma_locale)}, check=False)
    assert r.returncode == 0, r.stderr[-2000:]
    # the process's own snprintf writes a comma; the models write glibc's C-locale text, and
    # scanf in the C locale stops at the comma; the thread's locale is the script's again after
    assert r.stdout.split() == ["1,50", "1.50", "1", "3", "1", "1,50"]
