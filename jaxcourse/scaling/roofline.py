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
sends**, one way, summed over the links a ring collective along one mesh axis
uses at once. A ring that closes (wraparound, or a switch) sends half of its
pieces each way round, over two links; a line without wraparound forwards
every piece the same way, over one (the scaling book's convention; see
``book/references.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from .communication import ring_bytes
from .layouts import check_layout
from .model import Size, param_count

__all__ = ["HARDWARE", "Hardware", "axis_bandwidth", "best_fsdp_tp",
           "compute_bound_above", "critical_batch", "phase_bytes", "step_flops",
           "step_time"]


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
        Whether a mesh axis closes into a ring, so that a collective uses both
        directions (a TPU axis of a full pod does; an 8-chip slice does not).
    switch : bool
        The chips meet in a switch (NVLink's NVSwitch): a collective along any
        axis uses all of a chip's links.
    node_chips : int
        Chips per node behind one switch; 0 when the interconnect is one torus.
    network_bandwidth : float
        Between nodes: bytes/s one way per chip (one network card per GPU).
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


#: Real chips (dense bf16 peak; see ``book/references.md``). The TPUs' link
#: figures are the scaling book's, one way per link; their axes wrap around,
#: as a full pod's do.
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
        links=4, axes=2, wraparound=True),
    "TPU v5p": Hardware(
        "TPU v5p", 459e12, 95e9, 2.765e12, 90e9,
        "Google Cloud TPU v5p: 459 TFLOP/s bf16, 95 GB HBM2e at 2,765 GB/s; ICI 6 "
        "links of 90 GB/s each way (the scaling book), a 3-D torus",
        links=6, axes=3, wraparound=True),
}


def axis_bandwidth(hw: Hardware, across_nodes: bool = False,
                   wraparound: bool | None = None) -> float:
    """Return the bytes/s one chip sends in a ring collective along one mesh axis.

    Parameters
    ----------
    hw : Hardware
        The chip.
    across_nodes : bool
        The axis spans nodes (GPUs): each chip's network card sets the pace.
    wraparound : bool or None
        For a torus, override ``hw.wraparound`` (an 8-chip slice has none).

    Returns
    -------
    float
        A switch: all of a chip's links; a torus axis that wraps around: its two
        links along the axis, one each way round; a line: one link.
    """
    if across_nodes:
        if not hw.network_bandwidth:
            raise ValueError(f"{hw.name} has no network between nodes in this table")
        return hw.network_bandwidth
    if hw.switch:
        return hw.links * hw.link_bandwidth
    closes = hw.wraparound if wraparound is None else wraparound
    return hw.link_bandwidth * (2 if closes else 1)


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


def _bandwidths(hw: Hardware, across_nodes: bool, wraparound: bool | None,
                data_axes: int, model_axes: int) -> dict[str, float]:
    # The model axis stays inside a node; the data axis crosses nodes when
    # asked. An axis laid over k mesh axes of a torus has k times the links.
    return {"data": data_axes * axis_bandwidth(hw, across_nodes, wraparound),
            "model": model_axes * axis_bandwidth(hw, False, wraparound)}


def step_time(size: Size, layout: str, batch: int, hw: Hardware, data: int = 1,
              model: int = 1, itemsize: int = 2, across_nodes: bool = False,
              wraparound: bool | None = None, data_axes: int = 1, model_axes: int = 1,
              exact_rings: bool = True) -> dict[str, float]:
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
        The ``"data"`` axis spans nodes (GPUs); ``"model"`` stays inside one.
    wraparound : bool or None
        For a torus, override whether the axes wrap around.
    data_axes, model_axes : int
        How many of the torus's mesh axes each logical axis is laid over.
    exact_rings : bool
        See :func:`phase_bytes`.

    Returns
    -------
    dict
        ``compute`` and ``communication`` (whole-step sums), ``step``, and the
        same per pass (``forward_compute``, ``forward_communication``, ...).
    """
    chips = data * model
    flops = step_flops(size, batch) / chips / hw.flops
    compute = {"forward": flops / 3, "backward": 2 * flops / 3}
    beta = _bandwidths(hw, across_nodes, wraparound, data_axes, model_axes)
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
                   model_axes: int = 1, exact_rings: bool = True) -> float:
    """Return the batch **per chip** above which every pass is compute-bound.

    In each pass the FLOPs grow with the batch, and so do tensor parallelism's
    bytes (activations), while the weights' bytes do not: communication time
    is ``a + c B`` against compute time ``k B``, so the pass is compute-bound
    above ``B = a / (k - c)``. The result is the largest over the two passes,
    divided by the number of chips. ``0`` means compute-bound at every batch,
    ``inf`` never.
    """
    probe = float(max(data, 1) * 1024)
    times = [step_time(size, layout, b, hw, data, model, itemsize, across_nodes,
                       wraparound, data_axes, model_axes, exact_rings)
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
                 data_axes: int = 1, model_axes: int = 1, exact_rings: bool = True
                 ) -> tuple[float, tuple[int, int]]:
    """Return FSDP + TP's smallest critical batch per chip over ``data × model`` meshes.

    Every factorisation of ``chips`` with both sides at least 2 is tried; on a
    GPU cluster the ``"model"`` axis must fit in a node. FSDP moves weights,
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
    for model in range(2, chips // 2 + 1):
        if chips % model or (hw.node_chips and model > hw.node_chips):
            continue
        value = critical_batch(size, "FSDP + TP", hw, chips // model, model, itemsize,
                               across_nodes, wraparound, data_axes, model_axes,
                               exact_rings)
        if value < best[0]:
            best = (value, (chips // model, model))
    return best
