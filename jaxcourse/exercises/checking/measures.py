"""Measurements in words: how a learner's compiled program or layout differs.

Some cases extract measurements rather than returned values: how many
collectives the learner's compiled program runs, the bytes each device sends,
one device's share of the work, whether it uses ``jax.shard_map`` or
``jax.jit``, where the pieces of a placed array live. Under the keys of
:data:`MEASURES`, :func:`_measured` says in words how such a measurement
differs from the reference's, instead of printing two arrays of numbers.
"""

from __future__ import annotations

import numpy as np

from ...messages import message

__all__ = ["MEASURES"]

#: Keys of an extracted dict that hold measurements rather than returned
#: values (see :func:`_measured`): of the learner's compiled program,
#: ``collectives`` (counts in the order of ``explorers_sharding.COLLECTIVES``),
#: ``bytes_sent`` (per device) and ``work_share`` (one device's share of the
#: operations), ``shard_map`` (1 if the program has a ``jax.shard_map``) and
#: ``jitted`` (1 if a returned function is compiled with ``jax.jit``);
#: of a placed array, ``layout`` (for every device in id order, the start and
#: stop of its slice in each dimension: ``(devices, ndim, 2)``).
MEASURES = ("collectives", "bytes_sent", "work_share", "shard_map", "jitted",
            "layout")
_COLLECTIVE_NAMES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all",
                     "collective-permute")


def _counted(counts: np.ndarray, language: str) -> str:
    parts = [message("count_of", language, n=int(n), name=name)
             for n, name in zip(counts.ravel(), _COLLECTIVE_NAMES, strict=False) if n]
    return message("list_joiner", language).join(parts) if parts else message(
        "no_collective", language)


def _share(value: float, language: str) -> str:
    inverse = 1 / value if value > 0 else 0
    if value > 0 and abs(inverse - round(inverse)) <= 0.02 * inverse:
        return f"1/{round(inverse)}" if round(inverse) > 1 else message(
            "share_all", language)
    return f"{value:.3g}"


def _pieces(layout: np.ndarray, language: str) -> str:
    """Say how many pieces each dimension of a layout is cut into."""
    counts = [len({tuple(span) for span in layout[:, dim]})
              for dim in range(layout.shape[1])]
    if all(n == 1 for n in counts):
        return message("layout_whole", language)
    return message("list_joiner", language).join(
        message("layout_pieces", language, n=n, dim=dim)
        for dim, n in enumerate(counts) if n > 1)


def _measured(key: str, exp: np.ndarray, got: np.ndarray, language: str) -> str:
    """Say how a measurement differs from the reference's, in words."""
    if key == "layout":
        said, wanted = _pieces(got, language), _pieces(exp, language)
        if said == wanted:
            return message("layout_elsewhere", language, pieces=said)
        return message("layout_split", language, got=said, expected=wanted)
    if key == "shard_map":
        return message("no_shard_map" if int(exp) else "shard_map_not_needed",
                       language)
    if key == "jitted":
        return message("not_jitted" if int(exp) else "jitted_not_needed", language)
    if key == "collectives":
        return message("measured_collectives", language,
                       got=_counted(got, language), expected=_counted(exp, language))
    if key == "bytes_sent":
        return message("measured_bytes", language, got=f"{float(got):,.0f}",
                       expected=f"{float(exp):,.0f}",
                       ratio=f"{float(got) / float(exp):.3g}" if float(exp) else "∞")
    return message("measured_share", language, got=_share(float(got), language),
                   expected=_share(float(exp), language))
