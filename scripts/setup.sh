#!/usr/bin/env bash
# Set up everything the course needs, idempotently: system packages (where
# apt is available), a Python 3.11 virtual environment outside the checkout,
# the pinned packages, the course package itself, and the offline dataset.
# A second run only checks, so CI can call it every time.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${JAX_COURSE_VENV:-$HOME/.jax-course/venv}"
NBGRADER_VENV="${JAX_COURSE_NBGRADER_VENV:-$HOME/.jax-course/venv-nbgrader}"
# slurmctld, slurmd, slurm-client and munge: the course's own Slurm cluster
# (make cluster; chapter 8 and grading --slurm). Installing them does not
# start a system-wide Slurm that the course uses: it runs its own daemons.
# bubblewrap: the wall the grader runs each submission in (read-only files,
# no network); without it the grader refuses unless told --no-sandbox.
# fortunes-min: the text corpus of the transformer chapter (jaxcourse/data/corpus.py).
APT_PACKAGES=(dataset-fashion-mnist openmpi-bin fonts-noto-cjk chromium chromium-driver
              slurmctld slurmd slurm-client munge bubblewrap fortunes-min)

# shellcheck source=scripts/pins.sh
source "$here/scripts/pins.sh"

step() { printf '\n==> %s\n' "$*"; }

step "System packages: ${APT_PACKAGES[*]}"
mapfile -t missing < <(missing_debs "${APT_PACKAGES[@]}")
if [ ${#missing[@]} -eq 0 ]; then
  echo "all present"
else
  echo "installing: ${missing[*]}"
  if ! why="$(install_debs "${missing[@]}")"; then
    echo "warning: ${why}; missing ${missing[*]}." >&2
    echo "  Without dataset-fashion-mnist, set JAX_COURSE_MNIST_DIR to MNIST files." >&2
  fi
fi

step "Python environment: $VENV"
if [ ! -x "$VENV/bin/python" ]; then
  python=""
  for candidate in python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
      python="$candidate"; break
    fi
  done
  [ -n "$python" ] || { echo "error: Python 3.11 is required" >&2; exit 1; }
  "$python" -m venv "$VENV"
fi
install_pins "$VENV" "$here/requirements.txt" \
  "the pinned packages (several GB the first time)"
# Always re-point the editable install at this checkout (a clone elsewhere
# may have taken it over); it takes a few seconds.
"$VENV/bin/python" -m pip install --quiet --no-deps --no-build-isolation -e "$here"
"$VENV/bin/python" "$here/scripts/installed_here.py" --stamp

step "libtpu, the TPU compiler, apart from the environment (compile-only TPU slices)"
# requirements.txt pins it behind a marker that `pip install -r` skips; here it
# is unpacked into a folder of its own, which jaxcourse.slices loads by path
# when a chapter compiles for a TPU slice (and nothing else ever imports).
libtpu_pin="$(grep -oE '^libtpu==[0-9.]+' "$here/requirements.txt")"
LIBTPU_DIR="$HOME/.jax-course/libtpu/${libtpu_pin#libtpu==}"
if [ -f "$LIBTPU_DIR/libtpu/libtpu.so" ]; then
  echo "$libtpu_pin: already in $LIBTPU_DIR"
else
  rm -rf "$LIBTPU_DIR.partial"
  if "$VENV/bin/python" -m pip install --quiet --no-deps --no-compile \
       --target "$LIBTPU_DIR.partial" "$libtpu_pin"; then
    rm -rf "$LIBTPU_DIR" && mv "$LIBTPU_DIR.partial" "$LIBTPU_DIR"
    echo "$libtpu_pin: unpacked into $LIBTPU_DIR"
  else
    echo "warning: $libtpu_pin could not be installed; compiling for TPU slices" \
         "(chapters 6 and 7) needs it." >&2
  fi
fi

step "nbgrader environment: $NBGRADER_VENV"
# Apart from the course's environment: installed there, nbgrader would turn on
# its server and JupyterLab extensions in every learner's JupyterLab. It grades
# with the course's Python as the notebooks' kernel (book/for_teachers.md).
[ -x "$NBGRADER_VENV/bin/python" ] || "$VENV/bin/python" -m venv "$NBGRADER_VENV"
install_pins "$NBGRADER_VENV" "$here/scripts/nbgrader-requirements.txt" \
  "nbgrader's pinned packages"

step "JupyterHub's proxy: configurable-http-proxy (npm), for make hub"
# npm's package, pinned, in the course's folder (never in the clone); Debian's
# nodejs and npm where no npm is installed. Only a warning when it cannot be
# installed: learners never need it; make hub says what is missing.
PROXY_DIR="${JAX_COURSE_PROXY_DIR:-$HOME/.jax-course/proxy}"
PROXY_VERSION=5.3.0
if [ "$("$PROXY_DIR/node_modules/.bin/configurable-http-proxy" --version 2>/dev/null)" = "$PROXY_VERSION" ]; then
  echo "configurable-http-proxy $PROXY_VERSION: already installed"
else
  command -v npm >/dev/null 2>&1 || install_debs nodejs npm \
    || echo "warning: npm is not installed and could not be (nodejs, npm)." >&2
  if command -v npm >/dev/null 2>&1; then
    npm install --silent --no-audit --no-fund --prefix "$PROXY_DIR" \
      "configurable-http-proxy@$PROXY_VERSION" \
      || echo "warning: npm could not install configurable-http-proxy; make hub needs it." >&2
  fi
fi

step "The grader's sandbox (bubblewrap)"
# Only a warning: learners never need it; a teacher grading here does (a
# kernel or container that forbids user namespaces says so here, not later).
"$VENV/bin/python" -c '
from jaxcourse.exercises.grading.isolation import unavailable_reason
reason = unavailable_reason()
print("bubblewrap walls submissions in" if reason is None else
      f"warning: the grader cannot wall submissions in here: {reason}")'

step "Offline dataset and text corpus"
"$VENV/bin/python" -m jaxcourse.data

step "OpenCC's Taiwan dictionaries, as text (the zh-Hant editions and their lint)"
# Written once per OpenCC version into ~/.jax-course/cache, so that converting
# and linting start no process afterwards (make test-fast starts none).
"$VENV/bin/python" -c '
from jaxcourse.i18n.words import DICTIONARIES, dictionary_text
for name in DICTIONARIES:
    print(dictionary_text(name))'

step "Compilation cache: the reference answers' programs, compiled ahead"
# Only saves the learner's first Check time: never a reason to fail the setup.
"$VENV/bin/python" -m jaxcourse.exercises.authoring.warm_cache || true

step "Done. Run the tests with: make test"
