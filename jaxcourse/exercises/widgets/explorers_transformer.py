"""The transformer explorer: plan a LLaMA-3-shaped run, and check it by compiling.

:class:`TransformerExplorer` lets a learner pick a LLaMA-3-shaped config
(:data:`CONFIGS`: the published 8B and 70B, and the same widths with fewer
blocks), a cluster (a chip of :data:`CHIPS`, a number of nodes, and a mesh
``FSDP × TP`` of all their chips), a precision scheme
(:data:`jaxcourse.transformer.PRECISIONS`), a remat policy
(:data:`jaxcourse.transformer.REMAT_POLICIES`), micro-batches, the global
batch, the sequence length and attention's form (:data:`ATTENTIONS`). It
shows what the transformer chapter computes for that choice: the memory per
device (the training state, the weights FSDP gathers, the activations a step
keeps for its backward pass and one block's attention scores in HBM: each
head's whole matrix for the chapter's form, one chunk's, or none for the
splash kernel) against the chip's, the bytes each device
sends per step, the roofline's step time and the critical batch. For
configs of up to :data:`COMPILE_LAYERS` blocks, when the kernel has a
simulated device for every chip and the attention is not the TPU's splash
kernel, it also compiles the step from shapes alone
(:func:`jaxcourse.transformer.compile_step`, seconds) and shows the compiled
program's memory and collectives beside the formulas; it says which rows come
from where, and why it did not compile when it did not. Beside the table,
bar charts (:mod:`.explorer_charts`) show the memory per device part by part
against the chip's, XLA's peak under it when compiled, and the compute and
communication time.

Where the figures come from:

* the state: :func:`jaxcourse.transformer.state_bytes` (what is stored
  between steps, counted weight by weight under the layout) and
  :func:`jaxcourse.transformer.bytes_per_param` (the compute copy and the
  gradients made inside the step, per parameter);
* the activations: :func:`activation_bytes_per_sequence`, JAX's own list of
  the residuals a step keeps (:func:`jaxcourse.scaling.saved_residuals`,
  traced from shapes, nothing allocated), for the code one device runs;
* bytes and time: :func:`jaxcourse.transformer.phase_bytes`,
  :func:`~jaxcourse.transformer.step_time` and
  :func:`~jaxcourse.transformer.critical_batch`, priced per micro-batch:
  under FSDP each micro-batch gathers the weights and scatters their
  gradients again, so a step of ``m`` micro-batches is ``m`` steps of
  ``tokens / m``. Across GPU nodes the ``"data"`` axis is priced by the
  node's network egress shared by its GPUs on that axis, and on a TPU v5p
  slice an axis wraps around only in whole cubes (:func:`torus_placement`),
  as the scaling book says.

The work is done by :func:`transformer_report`, a plain function; the widget
only wires the controls to it, so tests drive it without a browser.
"""

from __future__ import annotations

import functools
import html
import inspect
import math
from typing import Any

import ipywidgets as widgets
import jax
import numpy as np

from jaxcourse import transformer
from jaxcourse.scaling import HARDWARE, collective_summary
from jaxcourse.scaling.memory import residual_bytes, saved_residuals

from ...messages import message
from .explorer_base import (
    Explorer,
    bytes_text,
    controls_row,
    dropdown_style,
    seconds_text,
)
from .explorer_charts import beside, memory_chart, time_chart

__all__ = ["ATTENTIONS", "CHIPS", "COMPILE_LAYERS", "CONFIGS", "TransformerExplorer",
           "activation_bytes_per_sequence", "meshes", "node_chips",
           "torus_placement", "transformer_explorer", "transformer_report"]

#: LLaMA-3-shaped configs: the two published ones, and the same widths, heads
#: and vocabulary with fewer blocks (few enough to compile here).
CONFIGS: dict[str, transformer.Config] = {
    "LLaMA-3 8B": transformer.LLAMA3_8B,
    "LLaMA-3 70B": transformer.LLAMA3_70B,
    "LLaMA-3 8B, 16 layers": transformer.LLAMA3_8B.with_layers(16),
    "LLaMA-3 8B, 2 layers": transformer.LLAMA3_8B.with_layers(2),
    "LLaMA-3 70B, 4 layers": transformer.LLAMA3_70B.with_layers(4),
}

#: Chips of :data:`jaxcourse.scaling.HARDWARE` whose node is known: the GPUs'
#: (``node_chips``) and TPU v5p's host of 4 chips (Cloud TPU v5p's
#: documentation: a ``2x2x1`` slice is 4 chips on 1 host). A TPU slice is one
#: torus: its hosts do not add a slower network between them.
CHIPS: dict[str, int] = {
    **{name: hw.node_chips for name, hw in HARDWARE.items() if hw.node_chips},
    "TPU v5p": 4,
}

#: The deepest config the explorer compiles (compiling grows with the depth).
COMPILE_LAYERS = 16

#: Attention's forms the explorer plans (:data:`jaxcourse.transformer.ATTENTION_FORMS`):
#: the chapter's, one chunk of queries at a time, and the TPU's splash kernel.
ATTENTIONS = ("plain", "chunked", "splash")

#: Choices offered by the controls.
NODES = (1, 2, 4, 8, 16)
MICRO = (1, 2, 4, 8, 16)
BATCHES = (8, 16, 32, 64, 128, 256, 512, 1024)
SEQS = (1024, 2048, 4096, 8192)

# ``compile_step`` compiles one batch at a time; when it takes ``micro``, the
# accumulated step is compiled too.
_COMPILES_MICRO = "micro" in inspect.signature(transformer.compile_step).parameters


def node_chips(chip: str) -> int:
    """Return the chips of one node (one host of a TPU slice) of ``chip``."""
    if chip not in CHIPS:
        raise ValueError(f"unknown chip {chip!r}; expected one of {list(CHIPS)}")
    return CHIPS[chip]


def meshes(chip: str, nodes: int) -> list[str]:
    """Return the meshes ``"fsdp×tp"`` of all the chips of ``nodes`` nodes.

    Tensor parallelism sends activations twice per sub-block, so its axis
    stays inside a node: ``tp`` runs over the powers of two up to a node's
    chips, and LLaMA-3's 8 key/value heads split over at most 8.
    """
    chips = nodes * node_chips(chip)
    return [f"{chips // tp}×{tp}" for tp in (1, 2, 4, 8)
            if tp <= node_chips(chip) and chips % tp == 0]


def _itemsize(dtype: Any) -> int:
    return int(np.dtype(dtype).itemsize)


def torus_placement(chip: str, data: int, model: int) -> dict[str, Any]:
    """Return how a ``data × model`` mesh lies on a TPU slice, for the roofline.

    The slice of ``data · model`` v5p chips is whole 4 × 4 × 4 cubes only
    from 64 chips on; a smaller one has no wraparound at all (the scaling
    book, *How to Think About TPUs*). A mesh axis whose length is a power of
    4 is laid over that many physical axes of 4 (16: two, 64: three); any
    other length is priced on one. GPUs: nothing to say (``{}``).
    """
    if HARDWARE[chip].switch:
        return {}

    def over(n: int) -> int:
        k = round(math.log(n, 4)) if n > 1 else 1
        return k if k >= 1 and 4 ** k == n else 1

    whole_cubes = (data * model) % 64 == 0
    return {"data_axes": over(data), "model_axes": over(model),
            "wraparound": None if whole_cubes else False}


def _layout(model: int) -> str:
    return "FSDP" if model == 1 else "FSDP + TP"


def _device_shapes(cfg: transformer.Config, layout: str, model: int,
                   dtype: Any) -> Any:
    """Return the weights one device computes with: FSDP's gathered, TP's slice."""
    specs = transformer.param_specs(layout)

    def piece(path: Any, leaf: jax.ShapeDtypeStruct) -> jax.ShapeDtypeStruct:
        spec = tuple(specs[path[-1].key])
        # A block's weights carry the layers axis first; its spec does too.
        shape = tuple(n // model if axis == transformer.MODEL else n
                      for n, axis in zip(leaf.shape, spec + (None,) * leaf.ndim,
                                         strict=False))
        return jax.ShapeDtypeStruct(shape, dtype)

    shapes = jax.eval_shape(lambda: transformer.init_params(jax.random.key(0), cfg))
    return jax.tree_util.tree_map_with_path(piece, shapes)


@functools.lru_cache(maxsize=64)
def activation_bytes_per_sequence(config: str | transformer.Config, remat: str,
                                  seq: int, precision: str = "mixed", model: int = 1
                                  ) -> float:
    """Return the bytes one device keeps for the backward pass, per sequence.

    The residuals JAX lists for the gradient of the loss
    (:func:`jaxcourse.scaling.saved_residuals`, as
    :func:`jaxcourse.transformer.activation_bytes` reads them), traced from
    shapes alone for one and two sequences of ``seq`` tokens: their
    difference is what grows with the tokens (the weights' copies do not).
    With ``model``-way tensor parallelism the one-device code is traced on
    one device's slice of the heads and hidden units (it counts the heads
    from the weights' shapes), the residual stream and the logits whole.

    Parameters
    ----------
    config : str or Config
        A key of :data:`CONFIGS`, or a config.
    remat : str
        A key of :data:`jaxcourse.transformer.REMAT_POLICIES`.
    seq : int
        Tokens per sequence.
    precision : str
        A key of :data:`jaxcourse.transformer.PRECISIONS`.
    model : int
        The tensor-parallel axis's size.
    """
    cfg = CONFIGS[config] if isinstance(config, str) else config
    p = transformer.PRECISIONS[precision]
    weights = _device_shapes(cfg, _layout(model), model, p.store)
    kept = []
    for b in (1, 2):
        tokens = np.zeros((b, seq), np.int32)

        def loss(stored: Any, tokens: np.ndarray = tokens) -> jax.Array:
            cast = jax.tree.map(lambda w: w.astype(p.compute), stored)
            return transformer.loss(cast, tokens, tokens, cfg, remat=remat)

        kept.append(residual_bytes(saved_residuals(loss, weights)))
    return float(kept[1] - kept[0])


@functools.lru_cache(maxsize=32)
def _compiled(config: str, data: int, model: int, batch: int, seq: int, precision: str,
              remat: str, micro: int, attention: str = "plain") -> dict[str, Any]:
    """Compile one choice from shapes; return :func:`compile_report`'s figures."""
    extra = {"micro": micro} if _COMPILES_MICRO else {}
    cfg = CONFIGS[config].with_attention(attention)
    compiled = transformer.compile_step(cfg, _layout(model), data, model,
                                        batch, seq, precision=precision, remat=remat,
                                        **extra)
    return transformer.compile_report(compiled)


def _why_not_compiled(cfg: transformer.Config, chips: int, micro: int) -> str | None:
    if cfg.attention == "splash":
        # Off a TPU the kernel runs in Pallas's interpreter: far too slow here.
        return "splash"
    if cfg.layers > COMPILE_LAYERS:
        return "deep"
    if len(jax.devices()) < chips:
        return "devices"
    if micro > 1 and not _COMPILES_MICRO:
        return "micro"
    return None


def _label(language: str, key: str, **values: object) -> str:
    return message(f"tfx_{key}", language, **values)


def _count(n: float) -> str:
    return "∞" if math.isinf(n) else f"{n:,.0f}"


def _table(rows: list[tuple[str, str]], red: set[int], note: str, chart: str) -> str:
    colour = " style='color:#cf222e'"
    body = "".join(
        f"<tr{colour if i in red else ''}>"
        f"<th style='text-align:left'>{html.escape(k)}</th>"
        f"<td>{html.escape(v)}</td></tr>" for i, (k, v) in enumerate(rows))
    return (beside(f"<table>{body}</table>", [chart])
            + f"<p><i>{html.escape(note)}</i></p>")


def transformer_report(config: str, chip: str, nodes: int, mesh: str,
                       precision: str = "mixed", remat: str = "full", micro: int = 1,
                       batch: int = 16, seq: int = 8192, language: str = "en",
                       attention: str = "plain") -> dict[str, Any]:
    """Compute what the explorer shows for one choice.

    Parameters
    ----------
    config : str
        A key of :data:`CONFIGS`.
    chip : str
        A key of :data:`CHIPS`.
    nodes : int
        Nodes (GPUs) or hosts (TPU) of ``node_chips(chip)`` chips each.
    mesh : str
        ``"fsdp×tp"``, one of :func:`meshes`; the layout is ``"FSDP"`` when
        ``tp`` is 1, else ``"FSDP + TP"``.
    precision, remat : str
        Keys of :data:`jaxcourse.transformer.PRECISIONS` and
        :data:`jaxcourse.transformer.REMAT_POLICIES`.
    micro : int
        Micro-batches accumulated per step.
    batch, seq : int
        The global batch in sequences, and tokens per sequence.
    language : {"en", "zh-Hant", "zh-Hans"}
        Language of the table.
    attention : str
        One of :data:`ATTENTIONS`: how the model computes attention, which
        sets the scores one block holds in HBM
        (:func:`jaxcourse.transformer.attention_hbm_bytes`).

    Returns
    -------
    dict
        ``valid`` (False when the batch does not split; then only ``html``
        follows), ``layout``, ``params``, ``state`` (bytes per device between
        steps) and ``step_state`` (during the step), ``activations`` (kept
        for the backward pass), ``scores`` (one block's attention scores in
        HBM), ``gathered`` (:func:`jaxcourse.transformer.gathered_bytes`),
        ``memory`` (their sum),
        ``hbm`` (the chip's), ``fits``, ``sent`` (bytes per device per step),
        ``time`` (the step's roofline parts, summed over the micro-batches),
        ``critical`` (tokens per chip) and ``tokens_per_chip`` (per
        micro-batch), ``source``
        (``"compiled"`` or ``"formula"``), ``compiled`` (the compiled
        program's :func:`~jaxcourse.transformer.compile_report`, or
        ``None``), ``why`` (why it was not compiled, or ``None``), ``chart``
        (two inline SVGs, :mod:`.explorer_charts`: the memory's parts and
        XLA's peak when compiled, against the chip's HBM; the compute and
        communication time) and ``html`` (the table with the charts beside
        it, then the note).

    Raises
    ------
    ValueError
        For a config, chip, precision, remat policy or mesh the explorer
        does not offer.
    """
    if config not in CONFIGS:
        raise ValueError(f"unknown config {config!r}; expected one of {list(CONFIGS)}")
    if mesh not in meshes(chip, nodes):
        raise ValueError(f"mesh {mesh!r} is not one of {meshes(chip, nodes)} for "
                         f"{nodes} node(s) of {chip}")
    if precision not in transformer.PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; expected one of "
                         f"{list(transformer.PRECISIONS)}")
    if remat not in transformer.REMAT_POLICIES:
        raise ValueError(f"unknown remat policy {remat!r}; expected one of "
                         f"{list(transformer.REMAT_POLICIES)}")
    if attention not in ATTENTIONS:
        raise ValueError(f"unknown attention {attention!r}; expected one of "
                         f"{list(ATTENTIONS)}")
    cfg, hw = CONFIGS[config].with_attention(attention), HARDWARE[chip]
    data, model = (int(n) for n in mesh.split("×"))
    chips, layout = data * model, _layout(model)
    if batch % (data * micro):
        text = _label(language, "invalid_batch", batch=batch, data=data, micro=micro)
        return {"valid": False, "html": f"<p style='color:#cf222e'>"
                                        f"{html.escape(text)}</p>"}
    p = transformer.PRECISIONS[precision]
    stored = transformer.state_bytes(cfg, layout, precision, data, model)
    numbers = stored["params"] // _itemsize(p.store)        # weights on one device
    per = transformer.bytes_per_param(precision)
    step_state = numbers * per["total"] + stored["count"]
    sequences = batch // data // micro              # one micro-batch, one device
    kept = sequences * activation_bytes_per_sequence(config, remat, seq, precision,
                                                     model)
    # The plain form writes each head's whole seq × seq scores in float32;
    # the chunked one a chunk's; the splash kernel keeps its tile on chip.
    scores = transformer.attention_hbm_bytes(cfg, sequences, seq, model)
    gathered = transformer.gathered_bytes(cfg, layout, data, model,
                                          _itemsize(p.compute))
    memory = step_state + gathered + kept + scores
    fits = memory <= hw.hbm

    tokens = batch * seq
    itemsize = _itemsize(p.compute)
    across = nodes > 1 and hw.node_chips > 0      # a TPU slice is one torus
    passes = transformer.phase_bytes(cfg, layout, tokens / micro, data, model, itemsize)
    axes = {axis: micro * sum(passes[phase][axis] for phase in passes)
            for axis in ("data", "model")}
    sent = axes["data"] + axes["model"]
    # Across GPU nodes the "data" axis shares each node's network cards; on a
    # TPU slice an axis wraps around only in whole cubes.
    placement = torus_placement(chip, data, model)
    one = transformer.step_time(cfg, layout, tokens / micro, hw, seq, data, model,
                                itemsize, across, **placement)
    time = {key: micro * value for key, value in one.items()}
    critical = transformer.critical_batch(cfg, layout, hw, seq, data, model, itemsize,
                                          across, **placement)
    per_chip = tokens / micro / chips
    bound = ("bound_compute" if all(one[f"{p_}_compute"] >= one[f"{p_}_communication"]
                                    for p_ in ("forward", "backward"))
             else "bound_comm")
    dtype = np.dtype(p.compute).name
    rows = [
        (_label(language, "params"), f"{transformer.param_count(cfg):,}"),
        (_label(language, "cluster"),
         _label(language, "cluster_line", chips=chips, chip=chip, nodes=nodes,
                per=node_chips(chip), data=data, model=model, layout=layout)),
        (_label(language, "state", precision=precision),
         _label(language, "state_line", stored=bytes_text(stored["total"]),
                step=bytes_text(step_state), dtype=dtype)),
        (_label(language, "activations", remat=remat, micro=micro),
         _label(language, "activations_line", kept=bytes_text(kept),
                tokens=f"{sequences * seq:,}",
                per_token=bytes_text(kept / (sequences * seq)),
                scores=bytes_text(scores), attention=attention)),
        (_label(language, "gathered"),
         _label(language, "gathered_line", gathered=bytes_text(gathered),
                dtype=np.dtype(p.compute).name)),
        (_label(language, "memory"),
         _label(language, "memory_line", memory=bytes_text(memory),
                pct=f"{memory / hw.hbm:.0%}", hbm=bytes_text(hw.hbm),
                verdict=_label(language, "fits" if fits else "too_big"))),
        (_label(language, "sent", dtype=dtype),
         _label(language, "sent_line", sent=bytes_text(sent),
                data=bytes_text(axes["data"]),
                model=bytes_text(axes["model"]))),
        (_label(language, "compute"), seconds_text(time["compute"])),
        (_label(language, "comm"), seconds_text(time["communication"])),
        (_label(language, "step"), f"{seconds_text(time['step'])}, "
                                   f"{_label(language, bound)}"),
        (_label(language, "critical"),
         _label(language, "critical_line", tokens=_count(per_chip),
                critical=_count(critical))),
    ]
    red = set() if fits else {i for i, (key, _) in enumerate(rows)
                              if key == _label(language, "memory")}
    why = _why_not_compiled(cfg, chips, micro)
    compiled = compiled_parts = None
    if why is None:
        compiled = _compiled(config, data, model, batch, seq, precision, remat, micro,
                             attention)
        found = compiled["memory"]
        # The bar is the row's headline, XLA's peak: the arguments (live from
        # the start) and what else is live at that moment.
        compiled_parts = [("arguments", found["arguments"]),
                          ("at_peak", found["peak"] - found["arguments"])]
        # The arguments: the stored state and this device's tokens (inputs
        # and targets, int32, split over "data" only).
        arguments = stored["total"] + 2 * batch * seq * 4 // data
        predicted = collective_summary(transformer.predicted_collectives(
            cfg, layout, batch, seq, data, model))["counts"]
        counts = lambda c: ", ".join(f"{n} {k}" for k, n in c.items()) or "—"  # noqa: E731
        rows += [
            (_label(language, "compiled_memory"),
             _label(language, "compiled_memory_line",
                    arguments=bytes_text(found["arguments"]),
                    formula=bytes_text(arguments),
                    temp=bytes_text(found["temp"]),
                    inside=bytes_text(memory - stored["total"]),
                    peak=bytes_text(found["peak"]))),
            (_label(language, "compiled_collectives"),
             _label(language, "compiled_collectives_line",
                    counts=counts(compiled["summary"]["counts"]),
                    predicted=counts(predicted))),
        ]
        note = _label(language, "source_compiled")
    else:
        reason = _label(language, f"not_compiled_{why}", layers=COMPILE_LAYERS,
                        chips=chips)
        note = f"{_label(language, 'source')} {reason}"
    # The plan's parts add up to ``memory``: the compute copy and a separate
    # stored copy, the gradients, Adam's moments and step count, then what
    # the step gathers and keeps.
    plan = [("params", numbers * (per["weights"] + per["master"])),
            ("grads", numbers * per["grads"]),
            ("optimizer", numbers * per["adam"] + stored["count"]),
            ("gathered", gathered), ("activations", kept), ("scores", scores)]
    chart = (memory_chart(language, plan, compiled_parts, hw.hbm, chip)
             + time_chart(language, time))
    return {"valid": True, "layout": layout, "params": transformer.param_count(cfg),
            "state": stored["total"], "step_state": step_state, "activations": kept,
            "scores": scores, "gathered": gathered, "memory": memory, "hbm": hw.hbm,
            "fits": fits, "sent": sent, "time": time, "critical": critical,
            "tokens_per_chip": per_chip,
            "source": "compiled" if compiled else "formula", "compiled": compiled,
            "why": why, "chart": chart, "html": _table(rows, red, note, chart)}


class TransformerExplorer(Explorer):
    """Controls for a LLaMA-3-shaped run's plan; a table of what follows.

    Parameters
    ----------
    config, chip : str
        Initial config and chip (keys of :data:`CONFIGS` and :data:`CHIPS`).
    nodes : int
        Initial number of nodes.
    mesh : str or None
        Initial mesh (one of :func:`meshes`); ``None``: all chips on FSDP.
    precision, remat : str
        Initial precision scheme and remat policy.
    micro, batch, seq : int
        Initial micro-batches, global batch (sequences) and sequence length.
    attention : str
        Initial attention form (one of :data:`ATTENTIONS`).
    language : {"en", "zh-Hant", "zh-Hans"}
        Language of the labels.
    run : bool
        Compute once right away.
    """

    def __init__(self, config: str = "LLaMA-3 8B", chip: str = "H100 SXM",
                 nodes: int = 1, mesh: str | None = None, precision: str = "mixed",
                 remat: str = "full", micro: int = 1, batch: int = 16,
                 seq: int = 8192, attention: str = "plain", *, language: str = "en",
                 run: bool = True) -> None:
        super().__init__(language)

        def dropdown(key: str, options: list[Any], value: Any) -> widgets.Dropdown:
            return widgets.Dropdown(options=options, value=value, **dropdown_style(
                _label(self.language, key), options))

        every_mesh = [m for c in CHIPS for n in NODES for m in meshes(c, n)]
        self.config = dropdown("config", list(CONFIGS), config)
        self.seq = dropdown("seq", list(SEQS), seq)
        self.batch = dropdown("batch", list(BATCHES), batch)
        self.chip = dropdown("chip", list(CHIPS), chip)
        self.nodes = dropdown("nodes", list(NODES), nodes)
        self.mesh = widgets.Dropdown(options=meshes(chip, nodes),
                                     value=mesh or meshes(chip, nodes)[0],
                                     **dropdown_style(_label(self.language, "mesh"),
                                                      every_mesh))
        self.precision = dropdown("precision", list(transformer.PRECISIONS), precision)
        self.remat = dropdown("remat", list(transformer.REMAT_POLICIES), remat)
        self.micro = dropdown("micro", list(MICRO), micro)
        self.attention = dropdown("attention", list(ATTENTIONS), attention)
        self.table = widgets.HTML()
        self.report: dict[str, Any] = {}
        self._refitting = False
        self._on_change(self._cluster_changed, self.chip, self.nodes)
        self._on_change(self._changed, self.config, self.seq, self.batch, self.mesh,
                        self.precision, self.remat, self.micro, self.attention)
        self._assemble([controls_row(self.config, self.seq, self.batch),
                        controls_row(self.chip, self.nodes, self.mesh),
                        controls_row(self.precision, self.remat, self.micro),
                        controls_row(self.attention)],
                       [self.table])
        self._start(run, self.redraw)

    def _changed(self) -> None:
        if not self._refitting:
            self.redraw()

    def _cluster_changed(self) -> None:
        # A new chip or node count has other meshes: keep the tensor-parallel
        # size where the new cluster allows it, then compute once.
        tp = self.mesh.value.split("×")[1]
        options = meshes(self.chip.value, self.nodes.value)
        same = [m for m in options if m.split("×")[1] == tp]
        self._refitting = True
        try:
            self.mesh.options = options
            self.mesh.value = same[0] if same else options[0]
        finally:
            self._refitting = False
        self.redraw()

    def choice(self) -> str:
        """Describe the controls' current choice, in the explorer's language."""
        return _label(self.language, "choice", config=self.config.value,
                      nodes=self.nodes.value, chip=self.chip.value,
                      mesh=self.mesh.value, precision=self.precision.value,
                      remat=self.remat.value, micro=self.micro.value,
                      batch=self.batch.value, seq=self.seq.value,
                      attention=self.attention.value)

    def redraw(self) -> str:
        """Recompute the table; return its HTML.

        The busy cue names the new choice and the old table is greyed until
        the new one replaces it: a compilation takes seconds.
        """
        with self._computing(_label(self.language, "busy", choice=self.choice()),
                             self.table):
            self.report = transformer_report(
                self.config.value, self.chip.value, self.nodes.value, self.mesh.value,
                self.precision.value, self.remat.value, self.micro.value,
                self.batch.value, self.seq.value, self.language, self.attention.value)
            self.table.value = self.report["html"]
        return self.table.value

    def live_text(self) -> str:
        """Return a deterministic plain-text form (for stored notebook outputs)."""
        return _label(self.language, "text")


def transformer_explorer(**initial: Any) -> TransformerExplorer:
    """Build the transformer explorer (computed right away)."""
    return TransformerExplorer(**initial)
