"""``python -m jaxcourse.i18n``: run the editions' command line (:mod:`.cli`)."""

import sys

from .cli import main

sys.exit(main())
