"""``srun`` with the interface of the course's launcher (:func:`launch_srun`).

Runs a program as ``num_processes`` Slurm tasks on the course's cluster and
returns what :func:`jaxcourse.launch.launch` returns, so that chapter 8 and
the multi-process checks can launch through Slurm when the cluster is up and
through the course's launcher otherwise. A rank that failed is read from
srun's own report, passing over ranks that only failed because another did.
"""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from jaxcourse.launch.output import SrunLines, lost_a_peer, tail
from jaxcourse.launch.result import LaunchResult, LaunchTimeoutError, RankFailedError
from jaxcourse.launch.start import _child_env, _command, free_port
from jaxcourse.launch.supervise import supervise
from jaxcourse.launch.worker import (
    COORDINATOR_ENV,
    LOOPBACK,
    NUM_PROCESSES_ENV,
    PROCESS_ID_ENV,
)
from jaxcourse.slurm.base import _run, client_env, cluster
from jaxcourse.slurm.daemons import _configured_nodes
from jaxcourse.slurm.jobs import _TASK_FAILED, _require_cluster

__all__ = ["launch_srun"]


def launch_srun(
    script: str | os.PathLike[str],
    num_processes: int = 4,
    devices_per_process: int = 2,
    *,
    args: Sequence[str] = (),
    timeout: float = 60.0,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    echo: bool = True,
    check: bool = True,
    grace: float = 1.0,
):
    """Run ``script`` as ``num_processes`` Slurm tasks: ``srun -n N python script``.

    The interface and the result are :func:`jaxcourse.launch.launch`'s, so a
    check can launch through Slurm when the course's cluster is up and
    through the course's launcher otherwise. The tasks start on one node,
    with ``--overcommit`` (more tasks than cores) and ``--kill-on-bad-exit``
    (a task that fails ends the others); a bare ``jax.distributed.initialize()``
    reads Slurm's variables. The coordinator gets a free port on 127.0.0.1
    (``JAX_COORDINATOR_PORT``, ``JAX_COORDINATOR_BIND_ADDRESS``), rather than
    the one JAX derives from the job id.

    Raises
    ------
    SlurmUnavailableError
        If the course's cluster is not running.
    RankFailedError, LaunchTimeoutError
        As for :func:`~jaxcourse.launch.launch`; the failed rank is read from
        ``srun``'s report. On a timeout the job is cancelled too.
    """
    if num_processes < 1 or devices_per_process < 1:
        raise ValueError("num_processes and devices_per_process must be >= 1")
    _command(script, cwd)  # fail early on a missing script
    _require_cluster()
    port = free_port()
    name = f"jaxcourse-{secrets.token_hex(4)}"
    first_node = _configured_nodes(cluster())[0][0]
    argv = [
        "srun", f"--job-name={name}", "--nodes=1", f"--nodelist={first_node}",
        f"--ntasks={num_processes}", "--overcommit", "--kill-on-bad-exit=1",
        "--label", f"--time={max(1, int(timeout // 60) + 1)}",
        "python", "-u", os.fspath(script), *args,
    ]  # fmt: skip
    child = client_env(_child_env(devices_per_process, env, 0))
    child.update({"JAX_COORDINATOR_PORT": str(port),
                  "JAX_COORDINATOR_BIND_ADDRESS": f"{LOOPBACK}:{port}"})
    for var in (COORDINATOR_ENV, NUM_PROCESSES_ENV, PROCESS_ID_ENV):
        child.pop(var, None)
    result = LaunchResult(command=list(argv), num_processes=num_processes,
                          devices_per_process=devices_per_process,
                          coordinator=f"{first_node}:{port}")
    try:
        result = supervise([(argv, child)], result, timeout, cwd, echo, False, grace,
                           num_processes, lines=SrunLines())
    finally:
        # srun ended by the launcher leaves its allocation to Slurm: release it.
        _run(["scancel", f"--name={name}"], timeout=10)
    if result.error is not None and result.error.startswith("mpirun exited"):
        workdir = Path(cwd) if cwd is not None else Path.cwd()
        code = next((c for c in result.returncodes if c), 1) or 1
        rank, how = _first_failure(result, code)
        lines = result.lines(rank, "stderr") if rank >= 0 else []
        summary = tail(lines, workdir) if lines else ""
        message = how + (f":\n{summary}" if summary else "")
        message += "\nEvery other rank was ended (srun --kill-on-bad-exit)."
        result.error = message
        if check:
            raise RankFailedError(message, result, rank, code)
    elif result.error is not None and check:
        raise LaunchTimeoutError(result.error, result, list(range(num_processes)))
    return result


_SRUN_OWN = re.compile(r"^(srun: |slurmstepd: |\S*: \*\*\* (STEP|JOB) )")


def _first_failure(result: Any, code: int) -> tuple[int, str]:
    """Return the rank that failed first, from srun's report, and how it ended.

    Every failed task is named on a line of srun's (``task 1: Exited with
    exit code 1``), in the order srun saw them end. When one rank dies its
    partners soon fail too, and on a loaded machine one of them may end
    first: a rank whose last words are a lost peer's is passed over for one
    that failed on its own.
    """
    failed: list[tuple[int, str]] = []
    for line in result.stderr[0].splitlines():
        hit = _TASK_FAILED.search(line)
        if hit:
            for part in hit[1].split(","):
                first, _, last = part.partition("-")
                ranks = range(int(first), int(last or first) + 1)
                failed += [(r, hit[2]) for r in ranks]
    if not failed:
        return -1, f"srun exited with code {code}"

    def knock_on(rank: int) -> bool:
        return lost_a_peer([x for x in result.lines(rank, "stderr")
                            if not _SRUN_OWN.match(x)])

    rank, what = next(((r, w) for r, w in failed if not knock_on(r)), failed[0])
    return rank, f"rank {rank} {what[0].lower()}{what[1:]}"
