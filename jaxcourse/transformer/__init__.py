"""A transformer at scale: LLaMA-3's shape in plain JAX, counted, laid out and planned.

The chapter after the scaling chapter asks chapter 6's questions of the model
people train: does an 8-billion-parameter model fit on one node, what does
70B need, how much do activations take, how do attention's heads and the
sequence split, what does a pipeline's bubble cost. Each is answered by a
formula and checked against the program XLA compiles. The package's modules,
each importing only the ones before it:

* :mod:`.attention_forms`: attention computed four ways, by name: the
  chapter's whole score matrix, in chunks of queries, JAX's Pallas splash
  kernel, ``jax.nn.dot_product_attention``;
* :mod:`.config`: :class:`Config`, the published LLaMA-3 configs, the exact
  parameter count and the FLOPs per token;
* :mod:`.model`: the decoder (RMSNorm, rotary embeddings, causal
  grouped-query attention, SwiGLU), blocks run by ``jax.lax.scan``, remat
  policies, and the :class:`Hooks` a layout steps in through;
* :mod:`.training`: precision schemes and their bytes per parameter, Adam,
  the step, gradient accumulation, and a derived tolerance for gradients;
* :mod:`.text`: a character-level tokenizer and a training loop on the
  course's corpus (:func:`jaxcourse.data.load_corpus`);
* :mod:`.layouts`: data parallelism, FSDP, tensor and sequence parallelism
  and FSDP + TP, run per device with ``jax.shard_map``;
* :mod:`.communication`: each layout's collectives, predicted;
* :mod:`.memory`: the state per device, ZeRO's stages, activations per token;
* :mod:`.zero`: ZeRO-1 and ZeRO-2's steps (Adam's state, then the
  gradients, split over ``"data"``) and their collectives;
* :mod:`.pipeline`: a GPipe schedule, its bubble read from the run, its
  backward pass and its activation memory against 1F1B's;
* :mod:`.planning`: roofline, critical batches, and the real-shaped step
  compiled from shapes (in a subprocess for 64 devices).

Everything public is re-exported here: ``from jaxcourse import transformer``.
"""

from __future__ import annotations

from .attention_forms import ATTENTION_FORMS, DEFAULT_BLOCKS, attend
from .communication import predicted_collectives
from .config import (
    LLAMA3_8B,
    LLAMA3_70B,
    PUBLISHED_PARAMS,
    Config,
    flops_per_token,
    matmul_params,
    param_count,
    param_parts,
)
from .layouts import (
    DATA,
    LAYOUTS,
    MODEL,
    Layout,
    batch_spec,
    check_vocab,
    layout_hooks,
    layout_switches,
    param_specs,
    place,
    sharded_grad_fn,
    sharded_step,
    spec_tree,
    vocab_lookup,
    vocab_target_logp,
)
from .memory import (
    activation_bytes,
    attention_bytes,
    attention_hbm_bytes,
    gathered_bytes,
    residuals_per_token,
    state_bytes,
    zero_bytes,
)
from .model import (
    PLAIN,
    REMAT_POLICIES,
    Hooks,
    attention,
    block,
    blocks,
    forward,
    init_params,
    loss,
    mlp,
    rms_norm,
    rope,
)
from .pipeline import (
    SCHEDULES,
    STAGE,
    bubble_fraction,
    default_feed,
    gpipe,
    gpipe_grad,
    gpipe_grad_memory,
    in_flight,
    micro_batch_residuals,
)
from .planning import (
    CONFIGS,
    compile_in_subprocess,
    compile_report,
    compile_step,
    critical_batch,
    memory_plan,
    phase_bytes,
    step_time,
)
from .text import CharTokenizer, batches, train
from .training import (
    PRECISIONS,
    Precision,
    bytes_per_param,
    gradient_tolerance,
    init_state,
    make_grad_fn,
    make_step,
    optimizer_for,
    per_example_grad_sum,
)
from .zero import zero_collectives, zero_specs, zero_step

__all__ = [
    "ATTENTION_FORMS", "CONFIGS", "DATA", "DEFAULT_BLOCKS", "LAYOUTS", "LLAMA3_70B",
    "LLAMA3_8B", "MODEL", "PLAIN",
    "PRECISIONS", "PUBLISHED_PARAMS", "REMAT_POLICIES", "SCHEDULES", "STAGE",
    "CharTokenizer",
    "Config", "Hooks", "Layout", "Precision", "activation_bytes", "attend",
    "attention", "attention_bytes", "attention_hbm_bytes", "gathered_bytes",
    "batch_spec", "batches", "check_vocab", "block", "blocks", "bubble_fraction",
    "bytes_per_param",
    "default_feed", "gpipe_grad", "gpipe_grad_memory", "in_flight",
    "micro_batch_residuals",
    "compile_in_subprocess", "compile_report", "compile_step", "critical_batch",
    "flops_per_token", "forward", "gpipe", "gradient_tolerance", "init_params",
    "init_state", "layout_hooks", "layout_switches", "loss", "make_grad_fn",
    "make_step", "matmul_params", "memory_plan", "mlp", "optimizer_for",
    "param_count", "param_parts",
    "param_specs", "per_example_grad_sum", "phase_bytes", "place",
    "predicted_collectives", "residuals_per_token", "rms_norm", "rope",
    "sharded_grad_fn", "sharded_step",
    "spec_tree", "state_bytes", "step_time", "train", "zero_bytes",
    "vocab_lookup", "vocab_target_logp",
    "zero_collectives", "zero_specs", "zero_step",
]
