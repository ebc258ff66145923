"""Exit 0 when the environment's editable install is this checkout, up to date.

``make self`` re-installs the course package (``pip install -e .``, a few
seconds) when this fails, then runs it with ``--stamp``. The shared environment
may point at another clone (CI clones elsewhere), or its metadata may predate a
change of pyproject.toml (such as the entry point through which the engine
finds the course).
"""

import hashlib
import importlib.metadata
import json
import sys
from pathlib import Path

here = Path(__file__).resolve().parents[1]
# pip records nothing about pyproject.toml's content, so compare a digest kept
# in the environment, written by ``--stamp`` right after an install.
stamp = Path(sys.prefix) / ".jaxcourse-pyproject.json"
digest = hashlib.sha256((here / "pyproject.toml").read_bytes()).hexdigest()
if sys.argv[1:] == ["--stamp"]:
    stamp.write_text(json.dumps({"sha256": digest}) + "\n")
    sys.exit(0)
try:
    import jaxcourse
except ImportError:
    sys.exit(1)
if Path(jaxcourse.__file__).resolve().parents[1] != here:
    sys.exit(1)
if not importlib.metadata.entry_points(group="jaxcourse.course"):
    sys.exit(1)
try:
    if json.loads(stamp.read_text())["sha256"] != digest:
        sys.exit(1)
except (OSError, ValueError, KeyError):
    sys.exit(1)
