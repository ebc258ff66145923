"""``python -m jaxcourse.exercises.release``: :func:`.cli.main`."""

import sys

from .cli import main

sys.exit(main())
