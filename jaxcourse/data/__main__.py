"""``python -m jaxcourse.data``: provision (or check) the course's dataset."""

import sys

from jaxcourse.data.cli import main

sys.exit(main())
