"""``python -m jaxcourse.exercises.references``: write the stale stores."""

import sys

from .writer import main

sys.exit(main())
