# The course's commands. `make setup` once, then `make test`.
VENV ?= $(HOME)/.jax-course/venv
PY := $(VENV)/bin/python
export JAX_COURSE_VENV := $(VENV)
# Quiet TensorFlow's C++ start-up logs; errors still show.
export TF_CPP_MIN_LOG_LEVEL ?= 2

.PHONY: setup data test test-fast lint book lab clean

setup:  ## create the environment, install everything, provision the data
	bash scripts/setup.sh

data:  ## provision (or re-check) the offline dataset
	$(PY) -m jaxcourse.data

lint:  ## ruff over the code and the notebooks
	$(PY) -m ruff check .

test: lint  ## the full suite: lint, unit tests, nbval over every executed notebook
	$(PY) -m pytest

test-fast:  ## skip the slow tests
	$(PY) -m pytest -m "not slow"

book:  ## build the HTML book from the stored outputs
	$(VENV)/bin/jupyter-book build . -W -n --keep-going

lab:  ## open JupyterLab on the repository
	$(VENV)/bin/jupyter lab

clean:
	rm -rf _build
