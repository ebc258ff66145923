# The course's commands. `make setup` once, then `make test`.
VENV ?= $(HOME)/.jax-course/venv
PY := $(VENV)/bin/python
export JAX_COURSE_VENV := $(VENV)
# Quiet TensorFlow's C++ start-up logs; errors still show.
export TF_CPP_MIN_LOG_LEVEL ?= 2

.PHONY: setup self data test test-fast lint light book lab exercises bench clean

setup:  ## create the environment, install everything, provision the data
	bash scripts/setup.sh

# The shared environment's editable install may point at another clone (CI
# clones elsewhere); re-point it at this checkout when it does (a few seconds).
self:
	@$(PY) -c "import jaxcourse, pathlib, sys; sys.exit(pathlib.Path(jaxcourse.__file__).resolve().parents[1] != pathlib.Path.cwd().resolve())" 2>/dev/null \
	  || $(PY) -m pip install --quiet --no-deps --no-build-isolation -e .

data:  ## provision (or re-check) the offline dataset
	$(PY) -m jaxcourse.data

lint:  ## ruff over the code and the notebooks; actionlint over the workflow
	$(PY) -m ruff check .
	$(VENV)/bin/actionlint -no-color .github/workflows/*.yml

light:  ## the Colab job: Python 3.12, Colab's packages, the first cell installs the course
	bash scripts/light_job.sh

test: self lint light  ## the full suite: lint, the Colab job, unit tests, nbval over every notebook
	$(PY) -m pytest

test-fast: self  ## skip the slow tests
	$(PY) -m pytest -m "not slow"

book: self  ## build the HTML book from the stored outputs
	bash scripts/fetch_widget_js.sh
	$(VENV)/bin/jupyter-book build . -W -n --keep-going

lab: self  ## open JupyterLab on the repository
	$(VENV)/bin/jupyter lab

exercises: self  ## regenerate the student notebooks from solutions/
	$(PY) -m jaxcourse.exercises.authoring

bench: self  ## training-loop speed as ratios to the device-resident limit
	$(PY) benchmarks/loops.py

clean:
	rm -rf _build
