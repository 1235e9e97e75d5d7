"""The compiler's logs: GRAPHMODE_LOGS and static.set_logs over Python's logging."""
from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import static
from static import logs

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = textwrap.dedent("""
    import eager, static
    f = static.compile(lambda x: (x * x).sum())
    f(eager.ones(3))
    f(eager.ones(4))
""")


def _run(spec: str | None, cache: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, GRAPHMODE_CACHE_DIR=str(cache),
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    env.pop("GRAPHMODE_LOGS", None)
    if spec is not None:
        env["GRAPHMODE_LOGS"] = spec
    return subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, env=env, timeout=120,
                          check=False)


@pytest.fixture(autouse=True)
def _logs_off_afterwards():
    yield
    static.set_logs()


def test_environment_variable_switches_each_log_on(tmp_path):
    quiet = _run(None, tmp_path / "c0")
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr
    cold = _run("recompiles,cache,source", tmp_path / "c1")
    assert cold.returncode == 0, cold.stderr
    err = cold.stderr
    assert "[graphmode.recompiles] <lambda>: first trace" in err
    assert "[graphmode.recompiles] <lambda>: retraced because argument leaf 0 changed shape (3,) -> (4,)" in err
    assert err.count("[graphmode.cache] miss: numpy module") == 2 and "[graphmode.source]" in err
    assert str(tmp_path / "c1") in err and "[graphmode.stages]" not in err
    warm = _run("cache", tmp_path / "c1")
    assert warm.stderr.count("[graphmode.cache] hit: numpy module") == 2 and "recompiles" not in warm.stderr


def test_all_includes_the_graph_after_each_stage(tmp_path):
    proc = _run("all", tmp_path / "c")
    assert "[graphmode.stages] after dce" in proc.stderr and "[graphmode.stages] after fuse" in proc.stderr
    assert "func @" in proc.stderr


def test_a_typo_in_the_environment_warns_and_the_program_runs(tmp_path):
    proc = _run("recompile", tmp_path / "c")
    assert proc.returncode == 0
    assert "unknown log 'recompile'" in proc.stderr and "recompiles" in proc.stderr


def test_set_logs_replaces_the_setting_and_names_bad_logs():
    static.set_logs(recompiles=True, cache=True)
    assert logs.enabled() == {"recompiles", "cache"}
    static.set_logs("stages")
    assert logs.enabled() == {"stages"}
    static.set_logs("all")
    assert logs.enabled() == set(logs.NAMES)
    static.set_logs()
    assert logs.enabled() == set()
    assert logging.getLogger("graphmode").propagate  # our handler is gone with the last log
    with pytest.raises(ValueError, match="unknown log 'graphs'"):
        static.set_logs("graphs")


def test_set_logs_messages_reach_stderr(capfd):
    static.set_logs(recompiles=True)
    import eager  # noqa: PLC0415

    f = static.compile(lambda x: (x + 1).sum())
    f(eager.ones(2))
    assert "[graphmode.recompiles] <lambda>: first trace" in capfd.readouterr().err
