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

An error is one line on stderr and exit status 1; Slurm not installed, 3
(:mod:`jaxcourse.cli`). ``python -m jaxcourse.slurm COMMAND --help`` says
what each command takes.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from pathlib import Path

from jaxcourse import cli as commandline
from jaxcourse.slurm.base import SlurmUnavailableError, client_env, cluster
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


#: Each command's line in ``--help``.
_HELP = {
    "start": "start the cluster (installs nothing; `make cluster` installs Slurm)",
    "stop": "stop the cluster: only the daemons it started",
    "status": "say whether the cluster is up (exit code 1 when it is not)",
    "env": "print the line that points your shell's Slurm commands at it",
    "sacct": "the finished jobs, an array one row per task (sacct --help)",
    **{c: f"Slurm's {c} on the course's cluster; what follows is {c}'s "
          f"({c} --help: its own help)" for c in PASSED_ON},
}


def _parser() -> argparse.ArgumentParser:
    parser = commandline.parser("python -m jaxcourse.slurm",
                                "The course's own Slurm cluster.")
    commands = parser.add_subparsers(dest="command", required=True,
                                     metavar="COMMAND")
    for name, line in _HELP.items():
        # sacct and Slurm's commands read their own options (sacct's parser,
        # Slurm itself): their --help is theirs.
        own = name not in ("sacct", *PASSED_ON)
        sub = commands.add_parser(name, help=line, description=line, add_help=own)
        if name == "start":
            sub.add_argument("--timeout", type=float, default=60.0,
                             help="seconds to wait for the nodes to be idle")
            sub.add_argument("--started-file", type=Path,
                             help="write 1 there if this call started the "
                                  "cluster, 0 if it was up")
    return parser


def main(argv: list[str] | None = None) -> int:
    """``python -m jaxcourse.slurm start|stop|status|env|sacct|squeue|...``.

    Exit codes as every command of the course (:mod:`jaxcourse.cli`): 1 for
    Slurm's own failure or a cluster that is down, 2 for a bad command line,
    3 where Slurm is not installed.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    # Everything after sacct or a Slurm command is that command's: argparse
    # would take its options (-j) for ours.
    split = next((i for i, a in enumerate(argv) if a in ("sacct", *PASSED_ON)),
                 len(argv))
    args = _parser().parse_args(argv[:split + 1])
    rest = argv[split + 1:]
    return commandline.run(lambda: _command(args, rest))


def _command(args: argparse.Namespace, rest: list[str]) -> int:
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
    return 0
