"""The command line of the course's Slurm cluster: ``python -m jaxcourse.slurm``.

- ``start``, ``stop`` and ``status``: what ``make cluster``, ``make
  cluster-stop`` and ``scripts/cluster.sh`` run. ``start`` and ``status``
  end with the line that points a shell's own Slurm commands at the cluster
  (``export SLURM_CONF=...``): a bare ``squeue`` looks for a system-wide
  Slurm, finds none, and fails with "Could not establish a configuration
  source".
- ``env``: that line alone, for ``eval "$(python -m jaxcourse.slurm env)"``.
- ``squeue``, ``sinfo``, ``scontrol``, ``scancel``: Slurm's own command, run
  against the course's cluster, with the arguments that follow
  (``python -m jaxcourse.slurm squeue -r -j 82``: every task of array 82).
- ``sacct [-j JOB[,JOB...]]``: the finished jobs of the cluster's job
  completion log, an array one row per task (``sacct -c`` itself knows no
  array: :func:`jaxcourse.slurm.jobs.finished_jobs`).

An error is one line on stderr and exit status 1.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from pathlib import Path

from jaxcourse.slurm.base import SlurmError, SlurmUnavailableError, client_env, cluster
from jaxcourse.slurm.daemons import start, status, stop
from jaxcourse.slurm.jobs import finished_jobs, sacct_table

__all__ = ["PASSED_ON", "env_line", "main"]

#: Slurm's commands that ``python -m jaxcourse.slurm`` runs for you, as is.
PASSED_ON = ("squeue", "sinfo", "scontrol", "scancel")


def env_line() -> str:
    """Return the shell line that points Slurm's own commands at the cluster."""
    return f"export SLURM_CONF={shlex.quote(str(cluster().conf))}"


def _reach_it() -> str:
    return (f"for squeue, sinfo, sacct -c in your shell: {env_line()} "
            "(or: python -m jaxcourse.slurm squeue|sacct)")


def _passed_on(command: str, args: list[str]) -> int:
    """Run Slurm's ``command`` on the course's cluster; its output is the user's."""
    try:
        # No time limit: `squeue -i 5` repeats until Ctrl-C, as it should.
        code = subprocess.run([command, *args], env=client_env()).returncode
    except FileNotFoundError:
        raise SlurmUnavailableError(f"{command} not found: `make cluster` installs "
                                    "Slurm") from None
    if code != 0:
        now = status()
        if not now.up:
            print(f"error: {now}", file=sys.stderr)
    return code


def _sacct(args: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m jaxcourse.slurm sacct",
        description="Finished jobs of the course's cluster (its job completion "
                    "log), an array one row per task.")
    parser.add_argument("-j", "--jobs", default="",
                        help="jobs or array tasks, comma-separated (82, 82_1)")
    found = parser.parse_args(args)
    wanted = [j for j in found.jobs.split(",") if j]
    rows = finished_jobs(wanted)
    if wanted and not rows:
        print(f"no finished job {found.jobs} in {cluster().jobs_log}; a job that "
              f"is queued or running: python -m jaxcourse.slurm squeue -r -j "
              f"{found.jobs}", file=sys.stderr)
        return 1
    print(sacct_table(rows))
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m jaxcourse.slurm start|stop|status|env|sacct|squeue|...``."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(prog="python -m jaxcourse.slurm",
                                     description="The course's own Slurm cluster.")
    parser.add_argument("command", choices=["start", "stop", "status", "env",
                                            "sacct", *PASSED_ON])
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="(start) seconds to wait for the nodes to be idle")
    parser.add_argument("--started-file", type=Path,
                        help="(start) write 1 there if this call started the "
                             "cluster, 0 if it was up")
    # Everything after sacct or a Slurm command is that command's: argparse
    # would take its options (-j) for ours.
    split = next((i for i, a in enumerate(argv) if a in ("sacct", *PASSED_ON)),
                 len(argv))
    args = parser.parse_args(argv[:split + 1])
    rest = argv[split + 1:]
    try:
        if args.command == "start":
            now = start(args.timeout)
            if args.started_file is not None:
                args.started_file.write_text("1\n" if now.started else "0\n")
            print(_reach_it())
        elif args.command == "stop":
            stop()
        elif args.command == "status":
            now = status()
            print(now)
            if now.up:
                print(_reach_it())
            return 0 if now.up else 1
        elif args.command == "env":
            print(env_line())
        elif args.command == "sacct":
            return _sacct(rest)
        else:
            return _passed_on(args.command, rest)
    except SlurmError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0
