"""The command line of the course's Slurm cluster: ``python -m jaxcourse.slurm``.

``start``, ``stop`` and ``status`` (what ``make cluster``, ``make
cluster-stop`` and ``scripts/cluster.sh`` run); an error is one line on
stderr and exit status 1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from jaxcourse.slurm.base import SlurmError
from jaxcourse.slurm.daemons import start, status, stop

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """``python -m jaxcourse.slurm start|stop|status``."""
    parser = argparse.ArgumentParser(prog="python -m jaxcourse.slurm",
                                     description="The course's own Slurm cluster.")
    parser.add_argument("command", choices=["start", "stop", "status"])
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="seconds to wait for the nodes to be idle")
    parser.add_argument("--started-file", type=Path,
                        help="(start) write 1 there if this call started the "
                             "cluster, 0 if it was up")
    args = parser.parse_args(argv)
    try:
        if args.command == "start":
            now = start(args.timeout)
            if args.started_file is not None:
                args.started_file.write_text("1\n" if now.started else "0\n")
        elif args.command == "stop":
            stop()
        else:
            now = status()
            print(now)
            return 0 if now.up else 1
    except SlurmError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0
