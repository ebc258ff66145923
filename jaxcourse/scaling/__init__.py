"""Scaling a model: its training state, its layouts, their communication and cost.

Chapter 6 asks the questions of a first large training run (does the model
fit, what does each device hold, which layout sends the fewest bytes, when
does communication set the step time) and answers each twice: by a formula,
and by reading the program XLA compiled. This module holds both halves, so
the chapter, its exercises and its explorer share one definition:

* the model: :class:`Size` and a stack of residual MLP blocks
  (:func:`init_params`, :func:`forward`, :func:`loss`), trained with Adam;
* the layouts (:data:`LAYOUTS`): where each parameter lives
  (:func:`param_specs`) and a training step written with shardings
  (:func:`make_step`), or per device with ``shard_map``
  (:func:`fsdp_step_shard_map`, :func:`tp_step_shard_map`);
* memory: :func:`state_bytes` (the formula) against
  :func:`compiled_memory` (XLA's ``memory_analysis()``);
* communication: :func:`predicted_collectives` (from the layout) against
  :func:`compiled_collectives` (from the compiled HLO), both priced by
  :func:`ring_bytes`;
* the roofline: :data:`HARDWARE`, :func:`mesh_bandwidths` (the scaling
  book's network: wraparound where a TPU axis has it, the node's egress
  across GPU nodes), :func:`step_flops`,
  :func:`step_time` and :func:`critical_batch`.

The model is deliberately plain, a deep MLP with the transformer's block shape
(width ``d``, hidden ``4 d``, a residual connection), so that every byte can be
counted by hand. Its size is one number, the width; the depth is fixed per
chapter. Everything is float32 here; real runs keep parameters in bfloat16 or
float32 and the formulas take the item size as an argument.

The package's modules follow those halves: :mod:`.model`, :mod:`.layouts`,
:mod:`.memory`, :mod:`.communication` and :mod:`.roofline`, each importing
only the ones before it; everything is re-exported here, so
``from jaxcourse import scaling`` gives the whole of it.
"""

from __future__ import annotations

from .communication import (
    KINDS,
    Collective,
    collective_steps,
    collective_summary,
    compiled_collectives,
    predicted_collectives,
    ring_bytes,
)
from .layouts import (
    fsdp_step_shard_map,
    make_step,
    param_specs,
    place,
    spec_tree,
    tp_step_shard_map,
)
from .memory import (
    compile_from_shapes,
    compiled_memory,
    residual_bytes,
    saved_residuals,
    state_bytes,
)
from .model import (
    DATA,
    F32,
    LAYOUTS,
    MODEL,
    Size,
    forward,
    init_params,
    loss,
    make_batch,
    param_count,
)
from .roofline import (
    HARDWARE,
    Hardware,
    axis_bandwidth,
    best_fsdp_tp,
    critical_batch,
    mesh_bandwidths,
    phase_bytes,
    step_flops,
    step_time,
)

__all__ = [
    "DATA",
    "F32",
    "KINDS",
    "MODEL",
    "HARDWARE",
    "LAYOUTS",
    "Collective",
    "Hardware",
    "Size",
    "axis_bandwidth",
    "best_fsdp_tp",
    "collective_steps",
    "collective_summary",
    "compile_from_shapes",
    "compiled_collectives",
    "compiled_memory",
    "critical_batch",
    "fsdp_step_shard_map",
    "forward",
    "init_params",
    "loss",
    "make_batch",
    "make_step",
    "mesh_bandwidths",
    "param_count",
    "param_specs",
    "phase_bytes",
    "place",
    "predicted_collectives",
    "residual_bytes",
    "ring_bytes",
    "saved_residuals",
    "state_bytes",
    "step_flops",
    "spec_tree",
    "step_time",
    "tp_step_shard_map",
]
