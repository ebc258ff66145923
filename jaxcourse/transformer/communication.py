"""The collectives of each layout's step, predicted from the layout.

:func:`predicted_collectives` lists them by reasoning, in the form chapter
6's :func:`jaxcourse.scaling.compiled_collectives` reads them from a
compiled program's HLO, so that the two lists can be compared as they are.
"""

from __future__ import annotations

import math

import jax

from jaxcourse.scaling.communication import Collective

from .config import Config
from .layouts import MODEL, layout_switches, param_specs
from .model import init_params

__all__ = ["Collective", "predicted_collectives"]


def predicted_collectives(cfg: Config, layout: str, batch: int, seq: int,
                          data: int = 1, model: int = 1, itemsize: int = 4
                          ) -> list[Collective]:
    """Return the collectives of one step of ``layout``, as the HLO prints them.

    The blocks run in a ``scan``: XLA compiles one forward and one backward
    loop, and prints each loop's body once, so a block's collectives are
    listed once here and happen ``cfg.layers`` times per step.

    Parameters
    ----------
    cfg : Config
        The model.
    layout : str
        One of :data:`jaxcourse.transformer.LAYOUTS`.
    batch, seq : int
        The global batch (sequences) and the sequence length.
    data, model : int
        The mesh's sizes.
    itemsize : int
        Bytes per number inside the step (4 for float32, 2 for bfloat16).

    Returns
    -------
    list of Collective
        For every weight (a block's as one layer's slice): with FSDP, an
        all-gather of its piece over ``"data"`` (the forward pass) and a
        reduce-scatter of its gradient (the transpose, in the backward pass);
        otherwise an all-reduce of its gradient over the devices that saw
        different tokens (``"data"``, and ``"model"`` too under sequence
        parallelism for a weight that is not split over it). A piece split
        by tensor parallelism is ``1/model`` of the weight. For each
        sub-block (two per block): tensor parallelism all-reduces the
        ``(batch/data, seq, d)`` activation over ``"model"`` once forward and
        once backward; sequence parallelism instead all-gathers it forward
        and reduce-scatters it forward, and the transposes of the two
        backward. Tensor parallelism splits the vocabulary too (Megatron-LM's
        ``VocabParallelEmbedding`` and ``vocab_parallel_cross_entropy``):
        the embedding's lookup is summed over ``"model"`` (an all-reduce of
        the ``(batch/data, seq, d)`` activation; with sequence parallelism a
        reduce-scatter, after an all-gather of the int32 tokens), the loss
        takes three all-reduces of one float32 number per token (the
        logits' maximum, the sum of their exponentials, the target's logit),
        and the output layer's input gradient is all-reduced backward (with
        sequence parallelism the input is all-gathered forward, the targets
        too, and its gradient reduce-scattered backward). Last, the loss (a
        float32 number) is averaged over ``"data"``: with the vocabulary
        split, every ``"model"`` device scores the same tokens.
    """
    lay = layout_switches(layout)
    specs = param_specs(layout)
    shapes = jax.eval_shape(lambda: init_params(jax.random.key(0), cfg))
    leaves = dict(shapes["layers"]) | {k: v for k, v in shapes.items() if k != "layers"}
    found: list[Collective] = []
    for name, leaf in leaves.items():
        shape = leaf.shape[1:] if name in shapes["layers"] else leaf.shape
        split = model if MODEL in tuple(specs[name]) else 1
        piece = math.prod(shape) * itemsize // split
        if lay.fsdp:
            found += [Collective("all-gather", piece, data),
                      Collective("reduce-scatter", piece, data)]
            continue
        group = data * (model if lay.sp and split == 1 else 1)
        if group > 1:
            found.append(Collective("all-reduce", piece, group))
    activation = batch // data * seq * cfg.d_model * itemsize
    per_token = batch // data * seq * 4          # a float32 (or an int32) a token
    if lay.sp:
        # The blocks' four gathers and four scatters, and the two ends':
        # the embedding's scatter forward (its gather backward), the output
        # layer's gather forward (its scatter backward); the tokens and the
        # targets gathered.
        found += [Collective("all-gather", activation, model)] * 6
        found += [Collective("reduce-scatter", activation, model)] * 6
        found += [Collective("all-gather", per_token, model)] * 2
    elif lay.tp:
        # The blocks' four, the embedding's sum, the output layer's backward.
        found += [Collective("all-reduce", activation, model)] * 6
    if lay.tp:
        found += [Collective("all-reduce", per_token, model)] * 3
    if data > 1:
        found.append(Collective("all-reduce", 4, data))
    return [c for c in found if c.group > 1]
