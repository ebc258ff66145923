"""``python -m jaxcourse.slurm COMMAND``: see :mod:`jaxcourse.slurm.cli`."""

import sys

from jaxcourse.slurm.cli import main

sys.exit(main())
