"""``python -m jaxcourse.exercises.grading``: :func:`.cli.main`."""

import sys

from .cli import main

sys.exit(main())
