"""The TPU's collectives beside the prediction, each difference with its reason.

:func:`match_prediction` lays the collectives :mod:`.tpu_collectives` read
from a program compiled for a TPU slice beside a prediction
(:func:`.communication.predicted_collectives`) and names the reason for
every byte that differs; :func:`axis_bytes` sums both, per mesh axis, in the
bytes one device sends on a ring (:func:`jaxcourse.scaling.ring_bytes`);
:func:`step_bytes` counts a loop's body once per trip; :func:`from_rows`
reads the rows :mod:`.slice_plans` stores.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from jaxcourse.scaling.communication import Collective, ring_bytes

from .tpu_collectives import TpuCollective

__all__ = ["AS_PREDICTED", "GATHER_AS_ALL_REDUCE", "NOT_FOUND", "NOT_PREDICTED",
           "PADDED", "REALIGNED", "RECOMPUTED", "SCATTER_AS_ALL_REDUCE", "Matched",
           "axis_bytes", "from_rows", "match_prediction", "predicted_axes",
           "step_bytes"]

#: The reasons :func:`match_prediction` gives, one per found or predicted collective.
AS_PREDICTED = "as predicted"
GATHER_AS_ALL_REDUCE = "all-gather done as an all-reduce of a zero-padded piece (2x)"
SCATTER_AS_ALL_REDUCE = "reduce-scatter done as an all-reduce, then sliced (2x)"
PADDED = "reduce-scatter of a padded operand"
REALIGNED = "collective-permute setting a padded reduce-scatter's pieces right"
RECOMPUTED = "again in the backward pass: remat recomputes the forward"
NOT_PREDICTED = "not predicted"
NOT_FOUND = "predicted, not found"


class Matched(NamedTuple):
    """A found collective beside the predicted one it answers, and why they differ.

    ``found`` is ``None`` for a predicted collective the program lacks;
    ``predicted`` is ``None`` for one it has and the prediction lacks.
    """

    axes: str
    reason: str
    found: TpuCollective | None
    predicted: Collective | None

    @property
    def found_bytes(self) -> float:
        """Bytes one device sends for the found collective, in its TPU form."""
        return self.found.sent() if self.found else 0.0

    @property
    def predicted_bytes(self) -> float:
        """Bytes one device sends for the predicted collective."""
        p = self.predicted
        if p is None or self.reason == RECOMPUTED:
            return 0.0
        return ring_bytes(p.kind, p.nbytes, p.group)


def predicted_axes(found: Collective, data: int, model: int) -> tuple[str, ...]:
    """Return the mesh axes a predicted collective's group may span, by its size.

    One reading, but where ``data == model`` (both over 1): then a group of
    that size is over either axis, and the found collective's replica
    groups say which.

    Raises
    ------
    ValueError
        If no axis of the mesh has the group's size.
    """
    named = {"data": data, "model": model}
    if data > 1 and model > 1:
        named["data,model"] = data * model
    fits = tuple(axes for axes, size in named.items()
                 if size == found.group and size > 1)
    if not fits:
        raise ValueError(f"a group of {found.group} on a {data}×{model} mesh: no axis")
    return fits


def match_prediction(found: Iterable[TpuCollective], predicted: Iterable[Collective],
                     data: int, model: int) -> list[Matched]:
    """Lay the found collectives beside the predicted ones, naming each difference.

    On each mesh axis, in this order: a found collective of the predicted
    kind and operand is :data:`AS_PREDICTED`, or :data:`PADDED` where the
    TPU moves a padded operand; an all-reduce of a zero-padded
    piece answers a predicted all-gather of the same operand
    (:data:`GATHER_AS_ALL_REDUCE`), an all-reduce a predicted reduce-scatter
    (:data:`SCATTER_AS_ALL_REDUCE`); what is left and does again what a
    predicted one does (its role and operand) is :data:`RECOMPUTED` (full
    remat runs each block forward again in the backward pass; its
    ``predicted_bytes`` are 0, the prediction has none); the
    collective-permutes that set a padded reduce-scatter's pieces right are
    :data:`REALIGNED`; then :data:`NOT_PREDICTED` and :data:`NOT_FOUND`.
    """
    todo = list(found)
    left: list[tuple[tuple[str, ...], Collective]] = [
        (predicted_axes(p, data, model), p) for p in predicted]
    done: list[Matched] = []

    def take(test: Any, reason: str) -> None:
        for f in list(todo):
            for i, (axes, p) in enumerate(left):
                if f.axes in axes and p.nbytes == f.nbytes and test(f, p):
                    done.append(Matched(f.axes, reason, f, p))
                    todo.remove(f)
                    del left[i]
                    break

    take(lambda f, p: f.kind == p.kind == f.role and not f.moved, AS_PREDICTED)
    take(lambda f, p: f.kind == p.kind == f.role, PADDED)
    take(lambda f, p: f.role == "all-gather" == p.kind and f.kind == "all-reduce",
         GATHER_AS_ALL_REDUCE)
    take(lambda f, p: f.kind == "all-reduce" and "sliced" in f.form
         and p.kind == "reduce-scatter",
         SCATTER_AS_ALL_REDUCE)
    answered = [(m.axes, m.predicted) for m in done]
    for f in list(todo):
        again = next((p for axes, p in answered if axes == f.axes
                      and p.nbytes == f.nbytes and p.kind == f.role), None)
        if again is not None:
            done.append(Matched(f.axes, RECOMPUTED, f, again))
            todo.remove(f)
    done += [Matched(f.axes, REALIGNED if "re-aligns" in f.form else NOT_PREDICTED, f,
                     None) for f in todo]
    done += [Matched(" or ".join(axes), NOT_FOUND, None, p) for axes, p in left]
    return done


def axis_bytes(matched: Iterable[Matched]) -> dict[str, dict[str, float]]:
    """Sum the bytes one device sends, per mesh axis: predicted, found, and by reason.

    Returns ``{axes: {"predicted": ..., "found": ..., reason: found bytes
    ...}}``; ``found - predicted`` is the sum, over the reasons, of what
    each reason adds (a 2x form adds its predicted bytes once more).
    """
    out: dict[str, dict[str, float]] = {}
    for m in matched:
        row = out.setdefault(m.axes, {"predicted": 0.0, "found": 0.0})
        row["predicted"] += m.predicted_bytes
        row["found"] += m.found_bytes
        row[m.reason] = row.get(m.reason, 0.0) + m.found_bytes
    return out


def step_bytes(found: Iterable[TpuCollective], layers: int) -> dict[str, float]:
    """Return the bytes one device sends in a whole step, per mesh axis.

    A collective inside a loop's body is printed once and runs once per
    trip: the course's step has its blocks in a ``scan`` (one loop forward,
    one backward), so each runs ``layers`` times (the loss in chunks adds a
    loop of its own, which this does not count).
    """
    out: dict[str, float] = {}
    for c in found:
        out[c.axes] = out.get(c.axes, 0.0) + c.sent() * (layers if c.in_loop else 1)
    return out


def from_rows(rows: Iterable[Sequence[Any]]) -> list[TpuCollective]:
    """Return collectives stored as rows: a :class:`TpuCollective`'s fields, a count.

    The form :mod:`.planning`'s child writes them in for a TPU slice
    (``tpu_collectives`` in :mod:`.slice_plans`' stored runs).
    """
    found = []
    for *fields, count in rows:
        found += [TpuCollective(*fields)] * int(count)
    return found
