#!/usr/bin/env bash
# The course's own Slurm cluster: `make cluster` (start) and `make cluster-stop`.
#
# start: installs Debian's slurmctld, slurmd, slurm-client and munge when they
# are missing (apt-get, with sudo when not root), then starts the daemons with
# the configuration under ~/.jax-course/slurm/ and waits until the nodes are
# idle (python -m jaxcourse.slurm start). Run again while it is up, it changes
# nothing. Where the packages cannot be installed it says so in one line and
# exits 0: the chapter's Slurm cells and the Slurm tests then skip, saying why.
# stop: cancels the cluster's jobs and ends the daemons it started, by pid.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${JAX_COURSE_VENV:-$HOME/.jax-course/venv}"
PY="$VENV/bin/python"
PACKAGES=(slurmctld slurmd slurm-client munge)
# shellcheck source=scripts/pins.sh
source "$here/scripts/pins.sh"
command="${1:-start}"
shift || true

case "$command" in
  start)
    mapfile -t missing < <(missing_debs "${PACKAGES[@]}")
    if [ ${#missing[@]} -gt 0 ]; then
      if ! why="$(install_debs "${missing[@]}")"; then
        echo "no Slurm cluster: ${missing[*]} not installed, and ${why}; the Slurm cells and tests are skipped."
        exit 0
      fi
    fi
    cd "$here"
    exec "$PY" -m jaxcourse.slurm start "$@"
    ;;
  stop)
    cd "$here"
    exec "$PY" -m jaxcourse.slurm stop "$@"
    ;;
  status)
    cd "$here"
    exec "$PY" -m jaxcourse.slurm status "$@"
    ;;
  *)
    echo "usage: scripts/cluster.sh start|stop|status" >&2
    exit 2
    ;;
esac
