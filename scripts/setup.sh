#!/usr/bin/env bash
# Set up everything the course needs, idempotently: system packages (where
# apt is available), a Python 3.11 virtual environment outside the checkout,
# the pinned packages, the course package itself, and the offline dataset.
# A second run only checks, so CI can call it every time.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${JAX_COURSE_VENV:-$HOME/.jax-course/venv}"
NBGRADER_VENV="${JAX_COURSE_NBGRADER_VENV:-$HOME/.jax-course/venv-nbgrader}"
APT_PACKAGES=(dataset-fashion-mnist openmpi-bin fonts-noto-cjk chromium chromium-driver)

step() { printf '\n==> %s\n' "$*"; }

step "System packages: ${APT_PACKAGES[*]}"
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$pkg")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "all present"
elif command -v apt-get >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
else
  echo "warning: no apt-get; missing ${missing[*]}." >&2
  echo "  Without dataset-fashion-mnist, set JAX_COURSE_MNIST_DIR to MNIST files." >&2
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
stamp="$VENV/.jaxcourse-requirements.sha256"
want="$(sha256sum "$here/requirements.txt" | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "installing the pinned packages (several GB the first time) …"
  "$VENV/bin/python" -m pip install --quiet -r "$here/requirements.txt"
  echo "$want" > "$stamp"
else
  echo "pinned packages already installed"
fi
# Always re-point the editable install at this checkout (a clone elsewhere
# may have taken it over); it takes a few seconds.
"$VENV/bin/python" -m pip install --quiet --no-deps --no-build-isolation -e "$here"
"$VENV/bin/python" "$here/scripts/installed_here.py" --stamp

step "nbgrader environment: $NBGRADER_VENV"
# Apart from the course's environment: installed there, nbgrader would turn on
# its server and JupyterLab extensions in every learner's JupyterLab. It grades
# with the course's Python as the notebooks' kernel (book/for_teachers.md).
[ -x "$NBGRADER_VENV/bin/python" ] || "$VENV/bin/python" -m venv "$NBGRADER_VENV"
nb_stamp="$NBGRADER_VENV/.jaxcourse-nbgrader-requirements.sha256"
nb_want="$(sha256sum "$here/scripts/nbgrader-requirements.txt" | cut -d' ' -f1)"
if [ "$(cat "$nb_stamp" 2>/dev/null)" != "$nb_want" ]; then
  echo "installing nbgrader's pinned packages …"
  "$NBGRADER_VENV/bin/python" -m pip install --quiet -r "$here/scripts/nbgrader-requirements.txt"
  echo "$nb_want" > "$nb_stamp"
else
  echo "pinned packages already installed"
fi

step "Offline dataset"
"$VENV/bin/python" -m jaxcourse.data

step "Done. Run the tests with: make test"
