"""Chapter 6's meshes of 8 devices, and which of them a layout uses.

Shared by the chapter's checks (:mod:`exercise_kit.scaling_checks`) and their
random cases: a layout "uses" a mesh when every device does something the
layout needs (tensor parallelism needs a "model" axis, data parallelism and
FSDP do without one, FSDP + TP needs both).
"""

from __future__ import annotations

__all__ = ["MESHES", "uses"]

#: The ``(data, model)`` shapes of the chapter's 8-device meshes.
MESHES = ((8, 1), (4, 2), (2, 4), (1, 8))


def uses(layout: str, data: int, model: int) -> bool:
    """Say whether each device of a ``data × model`` mesh does what ``layout`` needs."""
    uses_model = layout in ("tensor parallel", "FSDP + TP")
    return uses_model == (model > 1) and not (layout == "FSDP + TP" and data == 1)
