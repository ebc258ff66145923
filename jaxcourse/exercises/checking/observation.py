"""Observations: what a function did on one case, as plain data.

An :class:`Observation` holds a value (a tree of :class:`Node`, NumPy arrays
and :class:`Bad` leaves), an error, a timeout or nothing, and travels between
processes as JSON (:meth:`Observation.to_json`): the classroom grader observes
in a submission's process and judges in its own, and the stored reference
outputs (:mod:`jaxcourse.exercises.checking.references`) hold observations too.
Recording one from a call is :mod:`jaxcourse.exercises.checking.observe`'s part.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Bad", "Choice", "Node", "Observation", "Spec", "choice", "spec"]


@dataclass(frozen=True)
class Bad:
    """A returned leaf that is not an array (None, a string, a tracer...)."""

    type: str


@dataclass(frozen=True)
class Choice:
    """A categorical answer (a policy, an ending, a fix, None), by its name.

    ``name`` is how the answer reads in Python (``'no remat'``, ``None``):
    two choices are equal when their names are, and a wrong one is said as
    "expected 'no remat', got 'full remat'", never as an index into a list.
    An exercise's ``extract`` makes one with :func:`choice`. ``outside``,
    when not empty, names the list of answers the value is not one of
    (``"ENDINGS"``), said beside the difference.
    """

    name: str
    outside: str = ""


@dataclass(frozen=True)
class Spec:
    """A ``PartitionSpec``: for each dimension, the mesh axis it is split over.

    ``axes`` holds, per dimension, the axis as Python writes it (``'model'``,
    ``None`` for a dimension kept whole, ``('data', 'model')``), padded with
    ``None`` to the array's rank, so that ``P('data')`` and ``P('data', None)``
    of a matrix are the same. Compared dimension by dimension, by name.
    """

    axes: tuple[str, ...]


def choice(value: Any, among: Any = None, among_name: str = "") -> Choice:
    """Return ``value`` (a name, names and numbers, None) as a :class:`Choice`.

    Numbers are written as Python ints or floats (a NumPy ``int32(8)`` reads
    ``8``), so that an answer built from NumPy values reads as one built from
    Python's. ``among``, when given, holds the possible answers, and
    ``among_name`` what the exercise calls them: a value outside them is
    marked so (:attr:`Choice.outside`).
    """
    plain = _plain(value)
    try:
        outside = among is not None and plain not in among
    except TypeError:  # an unhashable or uncomparable value is in no list
        outside = True
    return Choice(_plain_repr(value)[:200], among_name if outside else "")


def spec(entries: Any, rank: int | None = None) -> Spec:
    """Return a ``PartitionSpec`` (or any sequence of axis entries) as a :class:`Spec`.

    ``rank``, when given, pads it with ``None`` to that many dimensions. An
    entry that is a tuple of one axis is that axis (``('model',)`` is
    ``'model'``) and an empty tuple is ``None``, as JAX reads them.
    """
    axes = []
    for entry in tuple(entries):
        if isinstance(entry, tuple) and len(entry) <= 1:
            entry = entry[0] if entry else None
        axes.append(_plain_repr(entry)[:60])
    if rank is not None:
        axes += ["None"] * (rank - len(axes))
    return Spec(tuple(axes))


def _plain(value: Any) -> Any:
    # NumPy scalars as Python's, tuples and lists inside as tuples.
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (tuple, list)):
        return tuple(_plain(v) for v in value)
    return value


def _plain_repr(value: Any) -> str:
    return repr(_plain(value))


@dataclass(frozen=True)
class Node:
    """A returned container: ``kind`` is "list", "tuple" or "dict"."""

    kind: str
    items: tuple
    keys: tuple = ()


@dataclass(frozen=True)
class Observation:
    """What one call did: a value, an error, a timeout, or nothing.

    ``kind`` is one of "value", "error", "not_attempted", "timeout", "skipped"
    and "missing". A value is a tree of :class:`Node`, NumPy arrays and
    :class:`Bad` leaves, so it can be compared and sent between processes.
    """

    kind: str
    value: Any = None
    error: str = ""
    category: str = ""
    mutated: int = 0
    printed: int = 0
    seconds: float = 0.0
    echoed: int = 0
    inputs: tuple = ()
    #: A timeout's seconds on the wall clock, from the Check's first case
    #: to the stop: what the learner waited (0 when not measured).
    wall: float = 0.0

    def to_json(self) -> dict:
        """Encode as JSON-compatible data (arrays as base64)."""
        return {
            "kind": self.kind,
            "value": _encode(self.value) if self.kind == "value" else None,
            "error": self.error,
            "category": self.category,
            "mutated": self.mutated,
            "printed": self.printed,
            "seconds": self.seconds,
            "echoed": self.echoed,
            "inputs": [list(shape) for shape in self.inputs],
            "wall": self.wall,
        }

    @classmethod
    def from_json(cls, data: dict) -> Observation:
        """Decode :meth:`to_json`'s output, strictly (it may come from a learner)."""
        kind = data["kind"]
        if kind not in ("value", "error", "not_attempted", "timeout", "skipped",
                        "missing"):
            raise ValueError(f"unknown observation kind {kind!r}")
        return cls(
            kind=kind,
            value=_decode(data["value"]) if kind == "value" else None,
            error=str(data["error"])[:500],
            category=str(data["category"])[:40],
            mutated=int(data["mutated"]),
            printed=int(data["printed"]),
            seconds=float(data["seconds"]),
            echoed=int(data.get("echoed", 0)),
            inputs=tuple(tuple(int(n) for n in shape)
                         for shape in data.get("inputs", ())[:16]),
            wall=float(data.get("wall", 0.0)),
        )


def _encode(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return {
            "t": "a",
            "dtype": value.dtype.name,
            "shape": list(value.shape),
            "data": base64.b64encode(np.ascontiguousarray(value).tobytes()).decode(),
        }
    if isinstance(value, Node):
        return {"t": value.kind, "items": [_encode(v) for v in value.items],
                "keys": list(value.keys)}
    if isinstance(value, Choice):
        return {"t": "choice", "name": value.name, "outside": value.outside}
    if isinstance(value, Spec):
        return {"t": "spec", "axes": list(value.axes)}
    return {"t": "bad", "type": value.type}


def _decode(data: Any) -> Any:
    t = data["t"]
    if t == "a":
        dtype = np.dtype(data["dtype"])
        if dtype.kind not in "biufc" and dtype.name != "bfloat16":
            raise ValueError(f"unexpected dtype {dtype}")
        shape = tuple(int(s) for s in data["shape"])
        raw = base64.b64decode(data["data"])
        return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
    if t in ("list", "tuple", "dict"):
        return Node(t, tuple(_decode(v) for v in data["items"]),
                    tuple(str(k) for k in data["keys"]))
    if t == "bad":
        return Bad(str(data["type"])[:60])
    if t == "choice":
        return Choice(str(data["name"])[:200], str(data.get("outside", ""))[:60])
    if t == "spec":
        return Spec(tuple(str(a)[:60] for a in data["axes"][:16]))
    raise ValueError(f"unexpected value tag {t!r}")
