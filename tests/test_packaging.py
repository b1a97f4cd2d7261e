"""The package as a user installs it: a non-editable install, used from outside the checkout."""

import os
import shutil
import subprocess
import sys

import pytest

from .conftest import BUILD, ROOT


@pytest.mark.slow
def test_installed_package_runs_outside_the_checkout_and_benches_only_from_it(tmp_path):
    target = tmp_path / "site"
    src = tmp_path / "src"            # a copy: setuptools writes its build/ directory into the source tree
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "angr_ram", src / "angr_ram", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "--target", os.fspath(target), os.fspath(src)], check=True, capture_output=True, timeout=600)
    assert (target / "angr_ram" / "run" / "cli.py").is_file()
    assert not (target / "bench").exists() and not (target / "angr_ram" / "bench").exists()   # not installed
    assert not (target / "angr_ram" / "groundtruth.py").exists()       # test helpers stay in tests/
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = dict(os.environ, PYTHONPATH=os.fspath(target))
    env.pop("ANGR_RAM_SAMPLES", None)

    def cli(*args, cwd=work):      # -P: the installed package, not one in the current directory
        return subprocess.run([sys.executable, "-P", "-m", "angr_ram.run.cli", *args], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=600)

    where = subprocess.run([sys.executable, "-c", "import angr_ram; print(angr_ram.__file__)"], cwd=work, env=env,
                           capture_output=True, text=True, check=True).stdout
    assert where.startswith(os.fspath(target))
    r = cli("run", os.fspath(BUILD / "matrix3_O0"), "--stdin-bytes", "2")
    assert r.returncode == 0 and "paths" in r.stdout, r.stderr
    r = cli("bench", "uaf", "--samples-dir", os.fspath(BUILD), "--timeout", "120")   # no checkout here
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "runs from a checkout" in r.stderr, r.stderr
    r = cli("bench", "uaf", "--samples-dir", os.fspath(BUILD), "--timeout", "120", cwd=ROOT)   # from the checkout
    assert r.returncode == 0 and "ram-symbolic" in r.stdout, r.stderr
    r = cli("bench", "uaf", "--samples-dir", os.fspath(tmp_path / "none"), "--timeout", "120", cwd=ROOT)
    assert r.returncode == 2 and "sample binary not found" in r.stderr and "--samples-dir" in r.stderr
