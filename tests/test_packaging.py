"""The wheel carries what an installed graphmode needs: built from this tree, installed in
a fresh virtualenv, and run from a directory outside the checkout. Slow (a wheel build),
and skipped when the build backend cannot be fetched (no network, no cache)."""
from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "--disable-pip-version-check",
                           "-w", str(out), str(ROOT)], capture_output=True, text=True, timeout=300, check=False)
    if proc.returncode != 0:
        pytest.skip(f"cannot build the wheel here (offline?): {proc.stderr.strip().splitlines()[-1:]}")
    (found,) = out.glob("graphmode-*.whl")
    return found


def test_the_wheel_ships_license_typing_markers_grammar_and_templates(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), names
    for package in ("gmbase", "gmnative", "gmops", "eager", "static", "codegen", "graphmode"):
        assert f"{package}/py.typed" in names
    assert any(n.startswith("static/ir/") and n.endswith(".lark") for n in names)
    assert any(n.startswith("codegen/templates/") and n.endswith(".j2") for n in names)
    assert "graphmode/__main__.py" in names and not any(n.startswith("tests/") for n in names)
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "License-Expression: MIT" in metadata and "Requires-Dist: numpy>=2" in metadata
    assert "Programming Language :: Python :: 3.10" in metadata
    entry_points = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "graphmode = graphmode.cli:main" in entry_points


def test_the_installed_command_runs_outside_the_checkout(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    # the dependencies come from this interpreter's site-packages, graphmode from the wheel
    deps = [p for p in sys.path if p.endswith("site-packages")]
    Path(site, "deps.pth").write_text("\n".join(deps) + "\n")
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(site)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "GRAPHMODE_LOGS")}
    env["GRAPHMODE_CACHE_DIR"] = str(tmp_path / "cache")
    workdir = tmp_path / "elsewhere"
    workdir.mkdir()
    code = ("import graphmode, static, codegen, eager; print(graphmode.__file__); "
            "f = static.compile(lambda x: (x * x).sum(), backend='numpy'); print(float(f(eager.ones(3))))")
    proc = subprocess.run([str(python), "-c", code], capture_output=True, text=True, cwd=workdir, env=env,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    where, value = proc.stdout.split()
    assert where.startswith(site) and value == "3.0"
    proc = subprocess.run([str(python), "-m", "graphmode", "cache", "info"], capture_output=True, text=True,
                          cwd=workdir, env=env, timeout=300, check=False)
    assert proc.returncode == 0 and str(tmp_path / "cache") in proc.stdout, proc.stderr


def test_the_sdist_ships_the_license_and_builds_the_same_packages(tmp_path):
    out = tmp_path / "sdist"
    code = ("import sys; from setuptools import build_meta; "
            "print(build_meta.build_sdist(sys.argv[1]))")
    proc = subprocess.run([sys.executable, "-c", code, str(out)], capture_output=True, text=True, cwd=ROOT,
                          timeout=300, check=False)
    if proc.returncode != 0:  # an interpreter without setuptools>=77 (it reads the SPDX license fields)
        pytest.skip(f"cannot build the sdist here: {proc.stderr.strip().splitlines()[-1:]}")
    (archive,) = out.glob("graphmode-*.tar.gz")
    with tarfile.open(archive) as tf:
        names = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
        pkg_info = tf.extractfile(next(m for m in tf.getmembers() if m.name.endswith("/PKG-INFO"))).read().decode()
    assert {"LICENSE", "README.md", "pyproject.toml"} <= names
    assert any(n.startswith("codegen/templates/") and n.endswith(".j2") for n in names)
    assert any(n.startswith("static/ir/") and n.endswith(".lark") for n in names)
    assert "License-Expression: MIT" in pkg_info and "License-File: LICENSE" in pkg_info
