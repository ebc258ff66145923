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
command="${1:-start}"
shift || true

case "$command" in
  start)
    missing=()
    for pkg in "${PACKAGES[@]}"; do
      dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" \
        || missing+=("$pkg")
    done
    if [ ${#missing[@]} -gt 0 ]; then
      sudo=""
      if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
          sudo="sudo"
        else
          echo "no Slurm cluster: ${missing[*]} not installed, and installing needs root or sudo; the Slurm cells and tests are skipped."
          exit 0
        fi
      fi
      if ! command -v apt-get >/dev/null 2>&1; then
        echo "no Slurm cluster: ${missing[*]} not installed, and there is no apt-get here; the Slurm cells and tests are skipped."
        exit 0
      fi
      echo "installing ${missing[*]}"
      $sudo apt-get update -qq
      DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
        --no-install-recommends "${missing[@]}" >/dev/null
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
