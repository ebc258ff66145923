#!/usr/bin/env bash
# The light job: the course as a Colab learner gets it, on Colab's Python.
#
# 1. A Python 3.12 virtual environment (cached outside the checkout, like the
#    main one) with only what a Colab runtime already has: JAX, NumPy, SciPy,
#    matplotlib, ipywidgets (scripts/colab-requirements.txt). No TensorFlow, no
#    PyTorch, and no course package: that is removed first, every run.
# 2. The Colab simulation (scripts/colab_sim.py): chapter 3 and its exercise
#    notebook run in a folder outside any checkout, their first cell installing
#    the course from a git+file:// address of this repository instead of the
#    public one (the only substitution).
# 3. The exercise system's unit tests, the contract tests of every exercise that
#    needs neither TensorFlow nor PyTorch (its reference and its alternative
#    correct answers pass), and chapter 3 under nbval.
#
# JAX_COURSE_LIGHT_PYTHON picks another version (3.13 works the same way).
set -euo pipefail
# A Colab runtime has nothing of the course on its path; the Makefile puts this
# checkout on PYTHONPATH, where the simulation would find the course before
# its first cell installs it.
unset PYTHONPATH

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
version="${JAX_COURSE_LIGHT_PYTHON:-3.12}"
VENV="${JAX_COURSE_LIGHT_VENV:-$HOME/.jax-course/venv-py$version}"
started=$SECONDS

find_python() {
  # As scripts/setup.sh finds 3.11: a pythonX.Y on PATH that really is X.Y
  # (pyenv's shims answer for versions that are not active, so ask it), then
  # pyenv's own installs.
  local candidate
  for candidate in "python$version" "$(pyenv root 2>/dev/null)"/versions/"$version"*/bin/"python$version"; do
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c "import sys; sys.exit(sys.version_info[:2] != tuple(map(int, '$version'.split('.'))))" 2>/dev/null; then
      echo "$candidate"; return 0
    fi
  done
  return 1
}

if [ ! -x "$VENV/bin/python" ]; then
  python="$(find_python)" || { echo "error: Python $version is required for the light job" >&2; exit 1; }
  "$python" -m venv "$VENV"
fi
# shellcheck source=scripts/pins.sh
source "$here/scripts/pins.sh"
install_pins "$VENV" "$here/scripts/colab-requirements.txt" "light job: Colab's packages"
# A fresh Colab runtime has no course: the first cell must install it.
"$VENV/bin/python" -m pip uninstall --quiet --yes jaxcourse >/dev/null 2>&1 || true
echo "light job: Python $("$VENV/bin/python" -c 'import platform; print(platform.python_version())'), environment ready in $((SECONDS - started)) s"

"$VENV/bin/python" "$here/scripts/colab_sim.py"
echo "light job: Colab simulation done at $((SECONDS - started)) s"

cd "$here"
# -p no:cacheprovider: the main run's cache is not this job's business.
# Every reference and every alternative correct answer is checked here on
# Colab's Python; the wrong answers' messages come from the same judging code
# on every Python, and the main run checks all of them.
"$VENV/bin/python" -m pytest -p no:cacheprovider -q \
  -m "not slow and not tensorflow and not torch" \
  -k "not test_wrong_answer_is_rejected_and_named" \
  tests/test_exercise_contract.py \
  tests/test_exercises_core.py tests/test_exercises_widgets.py \
  tests/test_exercises_notebooks.py \
  tests/test_exercises_mlp.py tests/test_exercises_bayes.py \
  tests/test_exercises_sharding.py tests/test_exercises_shard_map.py \
  tests/test_exercises_dp_zh.py tests/test_exercises_multiprocess.py \
  tests/test_mesh_axis_types.py
# On its own: with the tests above, tests/conftest.py would mark it slow.
"$VENV/bin/python" -m pytest -p no:cacheprovider -q book/03_bayes.ipynb
echo "light job: took $((SECONDS - started)) s"
