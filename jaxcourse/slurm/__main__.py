"""``python -m jaxcourse.slurm start|stop|status``: see :mod:`jaxcourse.slurm.cli`."""

import sys

from jaxcourse.slurm.cli import main

sys.exit(main())
