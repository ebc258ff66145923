# The course's commands. `make setup` once, then `make test`.
VENV ?= $(HOME)/.jax-course/venv
PY := $(VENV)/bin/python
export JAX_COURSE_VENV := $(VENV)
# Quiet TensorFlow's C++ start-up logs; errors still show.
export TF_CPP_MIN_LOG_LEVEL ?= 2
# Compile-only TPU slices (jaxcourse/slices.py): libtpu lets one process at a
# time load it unless every process starts with this set; on a machine without
# a TPU there is no chip to guard, and notebooks and test workers compile at once.
export ALLOW_MULTIPLE_LIBTPU_LOAD ?= 1

.PHONY: setup self data test test-fast lint light book lab exercises release bench clean \
	cluster cluster-stop hub hub-stop help

setup:  ## create the environment, install everything, provision the data
	bash scripts/setup.sh

# Every target runs this checkout's code: its folder goes first on PYTHONPATH,
# exported to every command and to every process they start (kernels, the
# grader's sandboxes, the hub's servers), ahead of the shared environment's
# editable install, which may point at another clone. No target re-points that
# install (only `make setup` does): running one here never changes what
# `import jaxcourse` finds in another clone.
export PYTHONPATH := $(CURDIR)$(if $(PYTHONPATH),:$(PYTHONPATH))

# The environment must hold the course's metadata as this checkout declares it
# (the entry point through which the engine finds the course); it never
# re-installs, it says to run `make setup` when it does not.
self:
	@$(PY) scripts/installed_here.py

data:  ## provision (or re-check) the offline dataset
	$(PY) -m jaxcourse.data

lint:  ## ruff over the code and the notebooks; actionlint over the workflow
	$(PY) -m ruff check .
	$(VENV)/bin/actionlint -no-color .github/workflows/*.yml

light:  ## the Colab job: Python 3.12, Colab's packages, the first cell installs the course
	bash scripts/light_job.sh

# pytest on three pytest-xdist workers (TEST_JOBS): the suite is mostly one thread
# at a time (imports, compiling, waiting on a kernel, a browser or a process), and
# on two workers a 2-core machine sat a third idle (user CPU 45 of 67 core-minutes).
# Each file runs whole on one worker, longest first, and the files that share
# the Slurm cluster or Chromium share a worker (tests/conftest.py). The light
# job runs beside it (scripts/test.sh). TEST_JOBS=0 runs pytest in one process.
# --durations: CI's log then says where the time went.
TEST_JOBS ?= 3
test: self lint  ## the full suite: lint, the Colab job, unit tests, nbval over every notebook
	TEST_JOBS=$(TEST_JOBS) bash scripts/test.sh

# No notebook, no process (tests/conftest.py marks those slow, and
# --forbid-processes fails anything that starts one): the edit-and-retest loop.
test-fast: self  ## unit and contract tests in this process only (no notebook, no process)
	$(PY) -m pytest -m "not slow" --forbid-processes

# The course's own Slurm cluster (~/.jax-course/slurm): chapter 8's Slurm
# section and `grading --slurm` run on it. The tests start it themselves when
# they need it, and stop it afterwards if they started it. It ends with the
# line that points your shell's squeue and sacct at it (export SLURM_CONF=...);
# `python -m jaxcourse.slurm squeue|sacct` needs none. One cluster per home:
# every clone uses the same one, and cluster-stop cancels every job on it.
cluster: self  ## start the course's single-machine Slurm cluster (installs Slurm if missing); prints its SLURM_CONF line
	bash scripts/cluster.sh start

cluster-stop:  ## stop the course's Slurm cluster: one per home, shared by every clone; ends everyone's jobs on it
	bash scripts/cluster.sh stop

# A class on a local JupyterHub (127.0.0.1, state in ~/.jax-course/hub): a
# teacher and three students, chapter 3's class release behind an nbgitpuller
# link, collection and grading from the teacher's notebook
# (book/for_teachers.md, "Rehearsing on a local JupyterHub").
HUB_PORT ?= 8765
hub: self  ## start a local JupyterHub with a teacher, three students and chapter 3's release; prints the link
	$(PY) -m jaxcourse.hub start --port $(HUB_PORT)

hub-stop:  ## stop the local JupyterHub and every process it started (nothing else)
	$(PY) -m jaxcourse.hub stop

book: self  ## build the HTML book from the stored outputs
	bash scripts/fetch_widget_js.sh
	$(VENV)/bin/jupyter-book build . -W -n --keep-going

lab: self  ## open JupyterLab on the repository
	$(VENV)/bin/jupyter lab

exercises: self  ## regenerate the student notebooks and the stored reference outputs
	$(PY) -m jaxcourse.exercises.authoring

# A class release for an assignment: the student notebooks and the course
# without its reference answers (book/for_teachers.md, "A class release").
release: self  ## a class release: make release DIR=<folder> [CHAPTERS="03_bayes 06_scaling"] [SOLUTIONS_AFTER=YYYY-MM-DD]
	@test -n "$(DIR)" || { echo 'usage: make release DIR=<folder> [CHAPTERS="03_bayes 06_scaling"] [SOLUTIONS_AFTER=YYYY-MM-DD]' >&2; exit 2; }
	$(PY) -m jaxcourse.exercises.release "$(DIR)" $(if $(CHAPTERS),--chapters $(CHAPTERS)) $(if $(SOLUTIONS_AFTER),--solutions-after $(SOLUTIONS_AFTER))

bench: self  ## training-loop speed as ratios to the device-resident limit; the fast step's MFU
	$(PY) benchmarks/loops.py
	$(PY) benchmarks/fast_step.py

clean:  ## remove the built book (_build)
	rm -rf _build

# Every target with a `## ` comment, in the Makefile's order.
help:  ## list the targets and what each does
	@awk -F ':.*## ' '/^[a-z][a-z-]*:.*## / {printf "  make %-13s %s\n", $$1, $$2}' $(MAKEFILE_LIST)
