"""The roofline: real chips, the FLOPs of a step, and when communication sets its time.

:data:`HARDWARE` holds each chip's figures, its interconnect described as the
formulas need it: the bandwidth of one link, how many links and mesh axes a
chip has, and whether an axis closes into a ring (wraparound).
:func:`axis_bandwidth` turns that into the one number a ring collective over
one mesh axis sees. :func:`phase_bytes` splits a layout's communication into
the forward and the backward pass, since each can only hide behind its own
pass's FLOPs; :func:`step_time`, :func:`critical_batch` (per chip) and
:func:`best_fsdp_tp` build on it.

The convention, stated once: a bandwidth here is **bytes per second one chip
sends**, summed over the links a ring collective along one mesh axis uses at
once (what it receives meanwhile is not added). A ring that closes
(wraparound, or a switch) sends half of its pieces each way round, over two
links: the figure the scaling book's table calls *bidi* (bidirectional); a
line without wraparound forwards every piece the same way, over one link:
the book's *one-way* figure (*How to Think About TPUs*; see
``book/references.md``).

Which axes wrap around is the scaling book's rule (*How to Think About TPUs*):
a TPU v5e or v6e axis only when it spans a full 16 chips of the pod, a v5p
axis when it is a multiple of 4 (whole 4 × 4 × 4 cubes, joined by optical
switches). Between GPU nodes, a collective is priced by the node's egress as
the scaling book's GPU chapter does (*How to Think About GPUs*, "Rooflines
for LLM Scaling on GPUs": ``W_collective`` is the GPU's NVLink egress inside a
node, the node's network egress, 8 cards of 50 GB/s for 8 H100s, across
nodes). Per chip, an axis that crosses nodes gets one network card for each
of its chips inside a node, at most the chip's own NVLink bandwidth: 400 GB/s
when the axis takes whole nodes (FSDP over all the GPUs), 50 GB/s when each
node holds one chip of its ring (FSDP beside 8-way tensor parallelism inside
the node). The book's Pop Quiz 3 says the same from the node's side: the
rings of an outer axis share the node's egress, so an 8-way inner axis makes
the outer gather's pieces 8 times smaller and leaves its time as it was.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from .communication import ring_bytes
from .layouts import check_layout
from .model import Size, param_count

__all__ = ["HARDWARE", "Hardware", "axis_bandwidth", "best_fsdp_tp",
           "compute_bound_above", "critical_batch", "mesh_bandwidths", "phase_bytes",
           "step_flops", "step_time"]


class Hardware(NamedTuple):
    """One accelerator and its interconnect, from published figures.

    Attributes
    ----------
    name : str
        The chip.
    flops : float
        Peak dense bfloat16 matrix FLOP/s per chip.
    hbm : float
        Memory per chip, bytes.
    hbm_bandwidth : float
        Memory bandwidth, bytes/s.
    link_bandwidth : float
        One link's bandwidth, bytes/s one way.
    source : str
        Where the numbers come from (``book/references.md`` gives the pages).
    links : int
        The chip's interconnect links (ports).
    axes : int
        The interconnect's mesh axes (a TPU torus: 2 or 3); 1 for a switch.
    wraparound : bool
        Whether an axis of a full pod closes into a ring, so that a collective
        uses both directions: the default when an axis's length is not given.
    switch : bool
        The chips meet in a switch (NVLink's NVSwitch): a collective along any
        axis uses all of a chip's links.
    node_chips : int
        Chips per node behind one switch; 0 when the interconnect is one torus.
    network_bandwidth : float
        Between nodes: bytes/s one way per chip (one network card per GPU).
    wrap_at : int
        A torus axis wraps around when its length is a multiple of this
        (the scaling book: 16 on a v5e, the full axis of its pod; 4 on a
        v5p, whose cubes of 4 × 4 × 4 close their axes by optical switches);
        0 for a switch.
    """

    name: str
    flops: float
    hbm: float
    hbm_bandwidth: float
    link_bandwidth: float
    source: str
    links: int = 1
    axes: int = 1
    wraparound: bool = False
    switch: bool = False
    node_chips: int = 0
    network_bandwidth: float = 0.0
    wrap_at: int = 0


#: Real chips (dense bf16 peak; see ``book/references.md``). The TPUs' link
#: figures are the scaling book's, one way per link; a full pod's axes wrap
#: around, a shorter axis only as ``wrap_at`` says.
HARDWARE: dict[str, Hardware] = {
    "H100 SXM": Hardware(
        "H100 SXM", 989e12, 80e9, 3.35e12, 25e9,
        "NVIDIA H100 datasheet: 989 TFLOP/s bf16 dense, 80 GB HBM3 at 3.35 TB/s, "
        "NVLink 900 GB/s (18 links of 25 GB/s each way) through NVSwitch, 8 GPUs "
        "a node; between nodes one 400 Gb/s InfiniBand card per GPU (50 GB/s)",
        links=18, switch=True, node_chips=8, network_bandwidth=50e9),
    "A100 SXM 80GB": Hardware(
        "A100 SXM 80GB", 312e12, 80e9, 2.039e12, 25e9,
        "NVIDIA A100 datasheet: 312 TFLOP/s bf16 dense, 80 GB HBM2e at 2,039 GB/s, "
        "NVLink 600 GB/s (12 links of 25 GB/s each way) through NVSwitch, 8 GPUs "
        "a node; between nodes one 200 Gb/s InfiniBand card per GPU (25 GB/s)",
        links=12, switch=True, node_chips=8, network_bandwidth=25e9),
    "TPU v5e": Hardware(
        "TPU v5e", 197e12, 16e9, 819e9, 45e9,
        "Google Cloud TPU v5e: 197 TFLOP/s bf16, 16 GB HBM2 at 819 GB/s; ICI 4 "
        "links of 45 GB/s each way (the scaling book), a 2-D torus (16 × 16 pod)",
        links=4, axes=2, wraparound=True, wrap_at=16),
    "TPU v5p": Hardware(
        "TPU v5p", 459e12, 95e9, 2.765e12, 90e9,
        "Google Cloud TPU v5p: 459 TFLOP/s bf16, 95 GB HBM2e at 2,765 GB/s; ICI 6 "
        "links of 90 GB/s each way (the scaling book), a 3-D torus",
        links=6, axes=3, wraparound=True, wrap_at=4),
}


def axis_bandwidth(hw: Hardware, across_nodes: bool = False,
                   wraparound: bool | None = None, chips: int | None = None,
                   per_node: int | None = None, axes: int = 1) -> float:
    """Return the bytes/s one chip sends in a ring collective along one mesh axis.

    Parameters
    ----------
    hw : Hardware
        The chip.
    across_nodes : bool
        The axis spans nodes (GPUs): the network cards set the pace.
    wraparound : bool or None
        For a torus, say whether the axis closes into a ring; ``None``: from
        its length (``chips``) and ``hw.wrap_at``, or, without a length, as
        a full pod's axis (``hw.wraparound``).
    chips : int or None
        The axis's length in chips, for a torus.
    per_node : int or None
        Across nodes: the chips of this axis inside one node; ``None`` for
        whole nodes (``hw.node_chips``).
    axes : int
        The torus's physical axes the mesh axis is laid over, each
        ``chips ** (1 / axes)`` long (64 chips over the 3 axes of a v5p
        cube: 4 each); each adds its own links. The axis wraps around when
        ``chips`` is a multiple of ``hw.wrap_at ** axes``. A v5p slice
        smaller than a cube (``2x2x4``) has no wraparound at all: say
        ``wraparound=False``.

    Returns
    -------
    float
        A switch inside a node: all of a chip's links. Across nodes: one
        network card per chip of the axis in a node, capped at the chip's
        links (the node's egress shared by its chips on the axis, as the
        scaling book prices it). A torus axis that wraps around: two links
        per physical axis, one each way round; a line: one.

    Raises
    ------
    ValueError
        If a torus is asked across nodes.
    """
    if across_nodes:
        if not hw.network_bandwidth:
            raise ValueError(f"{hw.name} has no network between nodes in this table")
        cards = hw.node_chips if per_node is None else per_node
        if cards < 1:
            raise ValueError(f"an axis across nodes has at least 1 chip per node, "
                             f"not {cards}")
        return min(cards * hw.network_bandwidth, hw.links * hw.link_bandwidth)
    if hw.switch:
        return hw.links * hw.link_bandwidth
    closes = wraparound
    if closes is None and chips is not None:
        # Each of its physical axes wraps when a multiple of wrap_at long: for
        # equal axes, when the length is a multiple of wrap_at ** axes.
        closes = bool(hw.wrap_at) and chips % hw.wrap_at ** axes == 0
    if closes is None:
        closes = hw.wraparound
    return axes * hw.link_bandwidth * (2 if closes else 1)


def mesh_bandwidths(hw: Hardware, data: int = 1, model: int = 1,
                    across_nodes: bool = False, wraparound: bool | None = None,
                    data_axes: int = 1, model_axes: int = 1,
                    node_chips: int | None = None) -> dict[str, float]:
    """Return β along each axis of a ``data × model`` mesh, bytes/s per chip.

    On GPUs the ``"model"`` axis takes the innermost chips, inside a node:
    a node of ``node_chips`` chips of the mesh (``hw.node_chips`` unless
    said) holds ``node_chips / model`` chips of each ``"data"`` ring, whose
    network cards that ring uses when ``across_nodes``; a ``"model"`` axis
    longer than the node crosses nodes too. On a torus each axis's length
    says whether it wraps around (:func:`axis_bandwidth`).
    """
    if hw.switch:
        node = (hw.node_chips or model) if node_chips is None else node_chips
        return {"data": axis_bandwidth(hw, across_nodes,
                                       per_node=max(1, node // model)),
                "model": axis_bandwidth(hw, model > node,
                                        per_node=max(1, min(node, model)))}
    return {"data": axis_bandwidth(hw, False, wraparound, data, axes=data_axes),
            "model": axis_bandwidth(hw, False, wraparound, model, axes=model_axes)}


def step_flops(size: Size, batch: int) -> float:
    """Return the FLOPs of one training step: 6 per parameter per example.

    A matrix product of ``(b, m) @ (m, n)`` costs ``2 b m n`` FLOPs; the
    forward pass does one per weight (2 per parameter per example), the
    backward pass two (the gradient for the input and for the weight: 4).
    The elementwise work is left out. For a transformer an "example" is a
    token, and attention adds FLOPs that grow with the sequence.
    """
    return 6.0 * batch * param_count(size)


def phase_bytes(size: Size, layout: str, batch: int, data: int = 1, model: int = 1,
                itemsize: int = 2, exact_rings: bool = True
                ) -> dict[str, dict[str, float]]:
    """Return the bytes one chip sends in each pass, along each mesh axis.

    ZeRO-3 is assumed for the FSDP layouts: each weight is gathered in the
    forward pass and again in the backward pass, and its gradient
    reduce-scattered. Data parallelism's all-reduce of the gradients happens in
    the backward pass only; tensor parallelism all-reduces a ``(batch / data,
    d)`` activation per block forward and per block but the first backward.
    The loss's one-number sum is left out.

    Parameters
    ----------
    size, layout, batch, data, model, itemsize
        As for :func:`jaxcourse.scaling.predicted_collectives`.
    exact_rings : bool
        Price each collective on a ring of its group's size (``(n - 1) / n``
        of the operand); ``False`` drops that factor, as the scaling book's
        closed forms do.

    Returns
    -------
    dict
        ``{"forward": {"data": bytes, "model": bytes}, "backward": {...}}``.
    """
    check_layout(layout)
    weights = size.layers * 2 * size.width * size.hidden * itemsize  # every weight

    def ring(kind: str, nbytes: float, group: int) -> float:
        if group <= 1:
            return 0.0
        if exact_rings:
            return ring_bytes(kind, nbytes, group)
        return nbytes * (2 if kind == "all-reduce" else 1)  # (n - 1) / n -> 1

    out = {"forward": {"data": 0.0, "model": 0.0},
           "backward": {"data": 0.0, "model": 0.0}}
    if layout == "data parallel":
        out["backward"]["data"] = ring("all-reduce", weights, data)
    if layout in ("FSDP", "FSDP + TP"):
        piece = weights / (model if layout == "FSDP + TP" else 1)
        gather = ring("all-gather", piece, data)
        out["forward"]["data"] = gather
        out["backward"]["data"] = gather + ring("reduce-scatter", piece, data)
    if layout in ("tensor parallel", "FSDP + TP"):
        activation = batch / data * size.width * itemsize
        out["forward"]["model"] = size.layers * ring("all-reduce", activation, model)
        out["backward"]["model"] = (size.layers - 1) * ring("all-reduce", activation,
                                                            model)
        if layout == "tensor parallel":
            out["backward"]["data"] = ring("all-reduce", weights / model, data)
    return out


def step_time(size: Size, layout: str, batch: int, hw: Hardware, data: int = 1,
              model: int = 1, itemsize: int = 2, across_nodes: bool = False,
              wraparound: bool | None = None, data_axes: int = 1, model_axes: int = 1,
              exact_rings: bool = True, node_chips: int | None = None
              ) -> dict[str, float]:
    """Return the roofline estimate of one step, per chip, in seconds.

    Each pass's communication can hide only behind that pass's own FLOPs (a
    third of the step forward, two thirds backward), so the step takes
    ``max(forward compute, forward communication) + max(backward compute,
    backward communication)``. Communication along the two mesh axes is
    added, as the scaling book does (a conservative choice: on a torus they
    use different links). bfloat16 by default.

    Parameters
    ----------
    size, layout, batch, data, model, itemsize
        The model, its layout, the global batch, the mesh and bytes per number.
    hw : Hardware
        The chip.
    across_nodes : bool
        The ``"data"`` axis spans nodes (GPUs), with ``node_chips / model``
        of its chips in each (:func:`mesh_bandwidths`); ``"model"`` stays
        inside one node unless it is longer.
    wraparound : bool or None
        For a torus, override whether the axes wrap around (by default each
        axis's length decides, :func:`axis_bandwidth`).
    data_axes, model_axes : int
        How many of the torus's physical axes each mesh axis is laid over.
    exact_rings : bool
        See :func:`phase_bytes`.
    node_chips : int or None
        GPUs of the mesh in one node, when fewer than ``hw.node_chips`` (1:
        each node holds one chip of the ``"data"`` axis).

    Returns
    -------
    dict
        ``compute`` and ``communication`` (whole-step sums), ``step``, and the
        same per pass (``forward_compute``, ``forward_communication``, ...).
    """
    chips = data * model
    flops = step_flops(size, batch) / chips / hw.flops
    compute = {"forward": flops / 3, "backward": 2 * flops / 3}
    beta = mesh_bandwidths(hw, data, model, across_nodes, wraparound, data_axes,
                           model_axes, node_chips)
    sent = phase_bytes(size, layout, batch, data, model, itemsize, exact_rings)
    result = {}
    for phase in ("forward", "backward"):
        result[f"{phase}_compute"] = compute[phase]
        result[f"{phase}_communication"] = sum(
            sent[phase][axis] / beta[axis] for axis in ("data", "model"))
    result["compute"] = flops
    result["communication"] = (result["forward_communication"]
                               + result["backward_communication"])
    result["step"] = sum(max(result[f"{p}_compute"], result[f"{p}_communication"])
                         for p in ("forward", "backward"))
    return result


def critical_batch(size: Size, layout: str, hw: Hardware, data: int = 1,
                   model: int = 1, itemsize: int = 2, across_nodes: bool = False,
                   wraparound: bool | None = None, data_axes: int = 1,
                   model_axes: int = 1, exact_rings: bool = True,
                   node_chips: int | None = None) -> float:
    """Return the batch **per chip** above which every pass is compute-bound.

    In each pass the FLOPs grow with the batch, and so do tensor parallelism's
    bytes (activations), while the weights' bytes do not: communication time
    is ``a + c B`` against compute time ``k B``, so the pass is compute-bound
    above ``B = a / (k - c)``. The result is the largest over the two passes,
    divided by the number of chips. ``0`` means compute-bound at every batch,
    ``inf`` never. The parameters are :func:`step_time`'s.
    """
    probe = float(max(data, 1) * 1024)
    times = [step_time(size, layout, b, hw, data, model, itemsize, across_nodes,
                       wraparound, data_axes, model_axes, exact_rings, node_chips)
             for b in (probe, 2 * probe)]
    return compute_bound_above(times, probe) / (data * model)


def compute_bound_above(times: Sequence[dict[str, float]], probe: float) -> float:
    """Return the work (examples or tokens) above which both passes are compute-bound.

    ``times`` are two :func:`step_time`-like results, for ``probe`` and
    ``2 probe``: in each pass communication takes ``a + c x`` and compute
    ``k x``, so the pass is compute-bound above ``x = a / (k - c)``. The
    result is the larger over the two passes: ``0`` when both always are,
    ``inf`` when one never is (``c >= k``).
    """
    needed = 0.0
    for phase in ("forward", "backward"):
        comm = [t[f"{phase}_communication"] for t in times]
        slope = (comm[1] - comm[0]) / probe   # seconds per unit of work sent
        fixed = comm[0] - slope * probe       # seconds that do not grow
        per_unit = times[0][f"{phase}_compute"] / probe
        if fixed <= 0 and slope <= per_unit:
            continue
        if per_unit <= slope:
            return float("inf")
        needed = max(needed, fixed / (per_unit - slope))
    return needed


def best_fsdp_tp(size: Size, hw: Hardware, chips: int, itemsize: int = 2,
                 across_nodes: bool = False, wraparound: bool | None = None,
                 data_axes: int = 1, model_axes: int = 1, exact_rings: bool = True,
                 node_chips: int | None = None) -> tuple[float, tuple[int, int]]:
    """Return FSDP + TP's smallest critical batch per chip over ``data × model`` meshes.

    Every factorisation of ``chips`` with both sides at least 2 is tried; on a
    GPU cluster the ``"model"`` axis must fit in a node (of ``node_chips``
    chips of the mesh, when given). FSDP moves weights,
    whose bytes shrink as ``model`` grows; tensor parallelism moves
    activations, whose bytes shrink as ``data`` grows: the optimum lies
    between (the scaling book's "mixed FSDP and model parallelism").

    The other parameters are :func:`critical_batch`'s.

    Returns
    -------
    tuple
        ``(batch per chip, (data, model))``; ``(inf, (chips, 1))`` when no
        mesh is ever compute-bound.
    """
    best = (float("inf"), (chips, 1))
    node = hw.node_chips if node_chips is None else node_chips
    for model in range(2, chips // 2 + 1):
        if chips % model or (hw.node_chips and model > node):
            continue
        value = critical_batch(size, "FSDP + TP", hw, chips // model, model, itemsize,
                               across_nodes, wraparound, data_axes, model_axes,
                               exact_rings, node_chips)
        if value < best[0]:
            best = (value, (chips // model, model))
    return best
