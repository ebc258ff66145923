"""The roofline: real chips, the FLOPs of a step, and when communication sets its time.

:data:`HARDWARE` holds the vendors' figures; :func:`step_flops`,
:func:`step_time` and :func:`critical_batch` compare a layout's compute with
its communication (:mod:`jaxcourse.scaling.communication`).
"""

from __future__ import annotations

from typing import NamedTuple

from .communication import predicted_collectives, ring_bytes
from .model import Size, param_count

__all__ = ["HARDWARE", "Hardware", "critical_batch", "step_flops", "step_time"]


class Hardware(NamedTuple):
    """One accelerator, from its vendor's published specifications.

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
        Bandwidth for collectives between chips, bytes/s one way per chip
        (NVLink, or the TPU's inter-chip interconnect).
    source : str
        Where the numbers come from (``book/references.md`` gives the pages).
    """

    name: str
    flops: float
    hbm: float
    hbm_bandwidth: float
    link_bandwidth: float
    source: str


#: Real chips (dense bf16 peak; see ``book/references.md``).
HARDWARE: dict[str, Hardware] = {
    "H100 SXM": Hardware("H100 SXM", 989e12, 80e9, 3.35e12, 450e9,
                         "NVIDIA H100 datasheet: 989 TFLOP/s bf16 dense, 80 GB HBM3 "
                         "at 3.35 TB/s, NVLink 900 GB/s (450 GB/s each way)"),
    "A100 SXM 80GB": Hardware("A100 SXM 80GB", 312e12, 80e9, 2.039e12, 300e9,
                              "NVIDIA A100 datasheet: 312 TFLOP/s bf16 dense, 80 GB "
                              "HBM2e at 2,039 GB/s, NVLink 600 GB/s (300 each way)"),
    "TPU v5e": Hardware("TPU v5e", 197e12, 16e9, 819e9, 200e9,
                        "Google Cloud TPU v5e: 197 TFLOP/s bf16, 16 GB HBM2 at "
                        "819 GB/s, ICI 1,600 Gbps per chip"),
    "TPU v5p": Hardware("TPU v5p", 459e12, 95e9, 2.765e12, 600e9,
                        "Google Cloud TPU v5p: 459 TFLOP/s bf16, 95 GB HBM2e at "
                        "2,765 GB/s, ICI 4,800 Gbps per chip"),
}


def step_flops(size: Size, batch: int) -> float:
    """Return the FLOPs of one training step: 6 per parameter per example.

    A matrix product of ``(b, m) @ (m, n)`` costs ``2 b m n`` FLOPs; the
    forward pass does one per weight, the backward pass two (the gradient
    for the input and for the weight). The elementwise work is left out.
    """
    return 6.0 * batch * param_count(size)


def step_time(size: Size, layout: str, batch: int, hw: Hardware, data: int = 1,
              model: int = 1, itemsize: int = 2) -> dict[str, float]:
    """Return the roofline estimate of one step, per device, in seconds.

    ``compute`` is the device's share of :func:`step_flops` at ``hw.flops``;
    ``communication`` the bytes :func:`predicted_collectives` sends (ZeRO-3's
    re-gather for FSDP) over ``hw.link_bandwidth``; ``step`` their maximum,
    as if the two overlap perfectly (the best case). bfloat16 by default.
    """
    devices = data * model
    compute = step_flops(size, batch) / devices / hw.flops
    sent = sum(ring_bytes(c.kind, c.nbytes, c.group) for c in predicted_collectives(
        size, layout, batch, data, model, itemsize, regather=True))
    communication = sent / hw.link_bandwidth
    return {"compute": compute, "communication": communication,
            "step": max(compute, communication)}


def critical_batch(size: Size, layout: str, hw: Hardware, data: int = 1,
                   model: int = 1, itemsize: int = 2) -> float:
    """Return the batch per data-parallel group above which a step is compute-bound.

    For data parallelism and FSDP the bytes sent do not grow with the batch
    and the FLOPs do, so compute wins above a batch; solving
    ``compute = communication`` gives it. Tensor parallelism's bytes grow with
    the batch too, so its ratio does not depend on the batch: the result is
    ``0`` when it is compute-bound at every batch and ``inf`` when never.
    """
    probe = max(data, 1) * 1024
    t = step_time(size, layout, probe, hw, data, model, itemsize)
    if layout == "tensor parallel" and data == 1:
        return 0.0 if t["compute"] >= t["communication"] else float("inf")
    fixed = t["communication"]
    if layout in ("tensor parallel", "FSDP + TP"):
        # Separate the part that grows with the batch (activations).
        grows = step_time(size, layout, 2 * probe, hw, data, model, itemsize)
        slope = grows["communication"] - fixed
        fixed = fixed - slope
        per_example = t["compute"] / probe - slope / probe
        if per_example <= 0:
            return float("inf")
        return fixed / per_example / max(data, 1)
    return fixed / (t["compute"] / probe) / max(data, 1)
