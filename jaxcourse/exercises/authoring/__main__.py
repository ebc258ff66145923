"""``python -m jaxcourse.exercises.authoring``: :func:`.cli.main`."""

import sys

from .cli import main

sys.exit(main())
