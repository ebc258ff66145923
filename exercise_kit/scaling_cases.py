"""Chapter 6's random cases: the inputs of the memory, network and layout exercises.

The checking side of :mod:`solutions.scaling` is :mod:`exercise_kit.scaling_checks`
(what is compared, how a case is run); this module draws the random calls of
``state_bytes_per_device``, ``remat_policy``, ``critical_batch``,
``layout_bytes`` and ``best_layout``, each across the boundaries its rule
depends on (the budget at exactly a policy's bytes, the network regimes of
published chips, meshes with a ``"model"`` axis beside data parallelism).
"""

from __future__ import annotations

import numpy as np

from exercise_kit.scaling_checks import Inputs, random_size, show_size
from exercise_kit.scaling_meshes import MESHES, uses
from jaxcourse import scaling
from jaxcourse.exercises import random_calls

__all__ = ["NETWORK_REGIMES", "best_layout_calls", "critical_calls",
           "layout_bytes_calls", "remat_calls", "state_calls"]


def state_calls(count: int = 24) -> Inputs:
    """Build inputs: random sizes, layouts and meshes of 8 (state_bytes_per_device)."""
    def make(rng: np.random.Generator, _: int) -> tuple:
        data, model = MESHES[int(rng.integers(len(MESHES)))]
        return (random_size(rng, (1, 33), (1, 13)), str(rng.choice(scaling.LAYOUTS)),
                data, model)

    def show(size, layout, data, model) -> str:
        return f"{show_size(size)}, {layout!r}, data={data}, model={model}"

    return random_calls("state_bytes_per_device", make, show, count)


def remat_calls(count: int = 24) -> Inputs:
    """Build inputs: random sizes, batches and budgets around each policy's bytes.

    The cases take turns: a budget near what "no remat", "checkpoint_dots"
    or "full remat" keeps (exactly it, since "at most" includes it, or from
    0.8 to 1.25 times it), or below all three; every other "no remat" turn
    is 8.5 bytes per hidden unit, where its 9 (relu's mask too) do not fit.
    """
    def make(rng: np.random.Generator, k: int) -> tuple:
        size = random_size(rng, (1, 33), (1, 13))
        batch = int(rng.integers(1, 65)) * 16
        rows = batch * size.layers
        kept = [rows * (size.width * 4 + size.hidden * extra) for extra in (9, 4, 0)]
        if k % 4 == 3:
            return size, batch, float(int(kept[2] * rng.uniform(0.2, 0.95)))
        if k % 8 == 4:
            return size, batch, float(kept[0] - rows * size.hidden // 2)
        target = kept[k % 4]
        if rng.random() < 1 / 3:
            return size, batch, float(target)
        return size, batch, float(int(target * rng.uniform(0.8, 1.25)))

    def show(size: scaling.Size, batch: int, budget: float) -> str:
        return f"{show_size(size)}, batch={batch}, budget_bytes={budget:.0f}"

    return random_calls("remat_policy", make, show, count)


#: Published chips and the β one mesh axis of theirs sees (bytes/s per chip),
#: in the regimes chapter 6 prices: a GPU node; an axis across nodes with 8,
#: 4, 2 or 1 of its GPUs in each node (one network card per GPU of the axis
#: in a node, the node's egress shared); TPU v5e axes of 8 (a line) and 16 (a
#: ring); v5p axes of 4, 16 and 64 chips over 1, 2 and 3 axes of a cube, and
#: a line of a slice smaller than a cube.
NETWORK_REGIMES: tuple[tuple[str, float], ...] = (
    *(("H100 SXM", scaling.axis_bandwidth(scaling.HARDWARE["H100 SXM"], across,
                                          per_node=k))
      for across, k in ((False, None), (True, 8), (True, 4), (True, 2), (True, 1))),
    *(("A100 SXM 80GB", scaling.axis_bandwidth(scaling.HARDWARE["A100 SXM 80GB"],
                                               across, per_node=k))
      for across, k in ((False, None), (True, 8), (True, 1))),
    *(("TPU v5e", scaling.axis_bandwidth(scaling.HARDWARE["TPU v5e"], chips=n))
      for n in (8, 16)),
    *(("TPU v5p", scaling.axis_bandwidth(scaling.HARDWARE["TPU v5p"], chips=n, axes=k))
      for n, k in ((4, 1), (16, 2), (64, 3))),
    ("TPU v5p", scaling.axis_bandwidth(scaling.HARDWARE["TPU v5p"], wraparound=False)),
)


def critical_calls(count: int = 24) -> Inputs:
    """Build inputs: random layouts, meshes, models and chips for critical_batch.

    The layouts take turns, each with a mesh it uses (data parallel and FSDP
    ``n × 1``, tensor parallel ``1 × n``, FSDP + TP both sides at least 2);
    every other case is a published chip in one of :data:`NETWORK_REGIMES`
    (its FLOP/s and the β of an axis across nodes, of a v5e line or ring, of
    a v5p cube's axes), the others draw FLOP/s and bandwidths across today's
    accelerators; the numbers are 2 or 4 bytes in turn. Where tensor
    parallelism takes part, the width is drawn from half to twice the width
    at which its activations would use all the FLOPs (``8 d = itemsize · α ·
    (model - 1)``), below and above it in turn, so that some cases are
    compute-bound at every batch and some at none.
    """
    def make(rng: np.random.Generator, k: int) -> tuple:
        layout = scaling.LAYOUTS[k % len(scaling.LAYOUTS)]
        n = int(rng.choice((2, 4, 8, 16, 32, 64)))
        data, model = {"data parallel": (n, 1), "FSDP": (n, 1),
                       "tensor parallel": (1, n),
                       "FSDP + TP": (int(rng.choice((2, 4, 8, 16))),
                                     int(rng.choice((2, 4, 8))))}[layout]
        if k % 2:
            chip, bandwidth = NETWORK_REGIMES[int(rng.integers(len(NETWORK_REGIMES)))]
            flops = scaling.HARDWARE[chip].flops
        else:
            flops = float(f"{rng.uniform(1e14, 2e15):.3g}")
            bandwidth = float(f"{rng.uniform(2e10, 9e11):.3g}")
        # Every layout meets both sizes of number, and tensor parallelism's
        # widths fall below and above the balance in turn, with each size.
        itemsize = (2, 4)[k // 4 % 2]
        width = int(rng.integers(1, 17)) * 1024
        if model > 1:
            balance = itemsize * flops / bandwidth * (model - 1) / 8
            low, high = ((0.5, 1.0), (1.0, 2.0))[k // 8 % 2]
            width = max(256, int(balance * rng.uniform(low, high)) // 256 * 256)
        size = scaling.Size(width, int(rng.integers(1, 97)))
        return (layout, size, data, model, flops, bandwidth, itemsize)

    def show(layout, size, data, model, flops, bandwidth, itemsize) -> str:
        return (f"{layout!r}, {show_size(size)}, data={data}, model={model}, "
                f"flops={flops:.3g}, axis_bandwidth={bandwidth:.3g}, "
                f"itemsize={itemsize}")

    return random_calls("critical_batch", make, show, count)


def layout_bytes_calls(count: int = 24) -> Inputs:
    """Build inputs: random sizes, layouts, meshes of 8, batches and re-gathers."""
    def make(rng: np.random.Generator, k: int) -> tuple:
        layout = str(rng.choice(scaling.LAYOUTS))
        meshes = [m for m in MESHES if uses(layout, *m)]
        if k % 6 == 0:  # data parallelism or FSDP beside a "model" axis
            layout, meshes = ("data parallel", "FSDP")[k // 6 % 2], MESHES[1:]
        data, model = meshes[int(rng.integers(len(meshes)))]
        batch = int(rng.integers(1, 33)) * 64
        return (random_size(rng, (1, 33), (1, 13)), layout, batch, data, model,
                bool(rng.random() < 0.5))

    def show(size, layout, batch, data, model, regather) -> str:
        return (f"{show_size(size)}, {layout!r}, batch={batch}, data={data}, "
                f"model={model}, regather={regather}")

    return random_calls("layout_bytes", make, show, count)


def best_layout_calls(count: int = 24) -> Inputs:
    """Build inputs: random sizes and batches, budgets near some layout's state.

    The budget is 0.9 to 1.3 times a random layout's state on a random mesh,
    below every layout's (one case in eight: ``None``), or exactly the least
    (one in four: "fits" means at most the budget, and FSDP + TP fits).
    """
    def make(rng: np.random.Generator, k: int) -> tuple:
        size = random_size(rng, (2, 33), (1, 13))
        batch = int(2 ** rng.integers(4, 16))
        layout = str(rng.choice(scaling.LAYOUTS))
        state = scaling.state_bytes(size, layout, *MESHES[rng.integers(4)])["total"]
        least = scaling.state_bytes(size, "FSDP + TP", 2, 4)["total"]  # the least
        if rng.random() < 1 / 8:
            return size, batch, float(int(least * rng.uniform(0.3, 0.95)))
        if k % 4 == 1:
            return size, batch, float(least)
        return size, batch, float(int(max(state, least) * rng.uniform(0.9, 1.3)))

    def show(size, batch, budget) -> str:
        return f"{show_size(size)}, batch={batch}, budget_bytes={budget:.0f}"

    return random_calls("best_layout", make, show, count)
