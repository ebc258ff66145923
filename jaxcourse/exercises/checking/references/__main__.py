"""``python -m jaxcourse.exercises.checking.references``: write the stale stores."""

import sys

from .writer import main

sys.exit(main())
