"""JAX's persistent compilation cache: its folder, its key, who uses it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import jax

from jaxcourse import compile_cache

PROGRAM = """
import time
from jaxcourse import compile_cache
folder = compile_cache.enable()
import jax, jax.numpy as jnp
start = time.perf_counter()
jax.jit(lambda x: jnp.tanh(x @ x.T).sum())(jnp.ones((64, 64))).block_until_ready()
print(folder)
"""


def _run(env: dict[str, str]) -> str:
    result = subprocess.run([sys.executable, "-c", PROGRAM], env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.strip()


def test_the_folder_is_keyed_to_the_versions_and_the_cpu(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(compile_cache.CACHE_DIR_ENV, str(tmp_path))
    folder = compile_cache.cache_dir()
    assert folder.parent == tmp_path / "jax"
    key = folder.name
    assert f"jax{jax.__version__}-" in key
    assert f"py{sys.version_info.major}.{sys.version_info.minor}-" in key
    # Another CPU (other flags) gets another folder.
    monkeypatch.setattr(compile_cache, "_cpu_description", lambda: "x86_64|flags=sse2")
    assert compile_cache.machine_key() != key


def test_the_grader_runs_without_it() -> None:
    env = {"PATH": "/bin", **{k: "x" for k in compile_cache.JAX_SETTINGS}}
    assert compile_cache.without(env) == {"PATH": "/bin"}


def test_a_second_process_reuses_the_first_ones_programs(tmp_path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in compile_cache.JAX_SETTINGS}
    env[compile_cache.CACHE_DIR_ENV] = str(tmp_path)
    folder = Path(_run(env))
    assert folder.is_relative_to(tmp_path)
    entries = sorted(p.name for p in folder.iterdir())
    assert entries, "the first process wrote nothing to the cache"
    assert Path(_run(env)) == folder
    # The same programs: found, not written again.
    assert sorted(p.name for p in folder.iterdir()) == entries
