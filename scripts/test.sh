#!/usr/bin/env bash
# make test's last step: pytest on two workers, with the light job beside it.
#
# The light job (scripts/light_job.sh) spends much of its time installing the
# course into a fresh folder (disk, not CPU), so it runs at the same time as
# pytest; its log is printed when both are done, and either failing fails this.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${JAX_COURSE_VENV:-$HOME/.jax-course/venv}/bin/python"
log="$(mktemp -t jaxcourse-light.XXXXXX)"
trap 'rm -f "$log"' EXIT

bash "$here/scripts/light_job.sh" >"$log" 2>&1 &
light=$!
"$PY" -m pytest -n "${TEST_JOBS:-3}" --dist loadgroup --no-loadscope-reorder \
  --durations=25 "$@"
tests=$?
wait "$light"
light_status=$?
echo "==> The light job (it ran beside pytest), exit status $light_status:"
cat "$log"
if [ "$tests" -ne 0 ] || [ "$light_status" -ne 0 ]; then
  echo "make test: pytest exit status $tests, light job exit status $light_status" >&2
  exit 1
fi
