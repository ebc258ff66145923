"""What a raised error says about the answer: the slip behind JAX's and NumPy's words.

An error's own message locates a problem in the library's terms ("vmap got
inconsistent sizes for array axes to be mapped", "Resource axis: data of
P('data',) is not found in mesh"). :func:`read_error` reads the families of
messages that learners' slips raise and says, in the exercise's language,
what the slip is: a mesh axis name written in, a collective over an axis
nothing binds, an argument mapped that all items share, a size written in,
a device's block meeting the whole array, a Python ``if`` on an array...

Each rule reads only the error's text and the exercise's device count: the
numbers it names come from the message itself (the sizes that did not
match, the axes the mesh has), so a rule holds for any answer that raises
the same error, not for a list of answers seen before. An error no rule
reads gets "" and is shown in its own words, as before.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ...messages import message

__all__ = ["read_error"]

_Rule = Callable[[re.Match, int | None, str], str]


def _ints(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"-?\d+", text)]


def _sizes(match: re.Match, devices: int | None, language: str) -> str:
    """Two shapes that should agree: a device's block met the whole, or axes crossed."""
    first, second = _ints(match["a"]), _ints(match["b"])
    if devices and devices > 1:
        for small, large in ((a, b) for a in first + second for b in first + second):
            if small > 0 and large == small * devices:
                return message("err_block_and_whole", language, small=small,
                               large=large, k=devices)
    if match["kind"] == "dot_general":
        return message("err_contracting", language, a=match["a"].strip(", "),
                       b=match["b"].strip(", "))
    return ""


def _reshape(match: re.Match, devices: int | None, language: str) -> str:
    size = int(match["size"])
    wanted = [n for n in _ints(match["shape"]) if n > 0]
    product = 1
    for n in wanted:
        product *= n
    if product and size % product == 0 and "-1" not in match["shape"] \
            and "newaxis" not in match["shape"]:
        return ""  # a shape that fits in number: not what went wrong
    return message("err_reshape", language, size=size, shape=match["shape"])


def _pairs(match: re.Match, devices: int | None, language: str) -> str:
    named = max(_ints(match["pairs"]), default=0) + 1
    if devices and named > devices:
        return message("err_ring_count", language, named=named, devices=devices)
    return ""


def _partial(match: re.Match, devices: int | None, language: str) -> str:
    # A batch shorter than the step's: the records ran out before the steps.
    if int(match["got"]) < int(match["size"]):
        return message("err_partial_batch", language, got=match["got"],
                       size=match["size"])
    return ""


def _fixed(key: str) -> _Rule:
    def said(match: re.Match, devices: int | None, language: str) -> str:
        return message(key, language, **match.groupdict())
    return said


#: (pattern over the error's text, what it says). The first that matches
#: and says something is said.
_RULES: tuple[tuple[re.Pattern, _Rule], ...] = (
    (re.compile(r"Resource axis: (?P<axis>\S+) of .* is not found in mesh: "
                r"(?P<axes>\(.*?\))"), _fixed("err_axis_not_in_mesh")),
    (re.compile(r"unbound axis name: (?P<axis>[^.\s]+)", re.I),
     _fixed("err_unbound_axis")),
    (re.compile(r"vmap got inconsistent sizes for array axes to be mapped"),
     _fixed("err_vmap_sizes")),
    (re.compile(r"vmap was requested to map its argument along axis (?P<axis>\d+), "
                r"which implies that its rank should be at least"),
     _fixed("err_vmap_rank")),
    (re.compile(r"cannot reshape array of (?:shape \([^)]*\) \()?size (?P<size>\d+)"
                r"\)? into shape (?P<shape>\([^)]*\))"), _reshape),
    (re.compile(r"truth value of an array with more than one element is ambiguous"),
     _fixed("err_truth_value")),
    (re.compile(r"(?P<kind>tuple|list) indices must be integers or slices, not str"),
     _fixed("err_index_by_name")),
    (re.compile(r"(?P<kind>dot_general) requires contracting dimensions to have the "
                r"same shape, got \((?P<a>[^)]*)\) and \((?P<b>[^)]*)\)"), _sizes),
    (re.compile(r"(?P<kind>\w+) got incompatible shapes for broadcasting: "
                r"\((?P<a>[^)]*)\), \((?P<b>[^)]*)\)"), _sizes),
    (re.compile(r"The 'sharding' attribute is not available on traced array"),
     _fixed("err_tracer_sharding")),
    (re.compile(r"not evenly divisible by the corresponding mesh axis sizes"),
     _fixed("err_not_divisible")),
    (re.compile(r"out_specs which require replication which can't be statically "
                r"inferred"), _fixed("err_out_replication")),
    (re.compile(r"ppermute sources and destinations must be unique, got "
                r"(?P<pairs>\(.*\))"), _pairs),
    (re.compile(r"scatter dimension size (?P<size>\d+) must match shard count "
                r"(?P<count>\d+)"), _fixed("err_scatter_untiled")),
    (re.compile(r"(?:passed step\(\)|step\(\) got) a batch of shape "
                r"\((?P<got>\d+),?\), not \((?P<size>\d+),?\)"), _partial),
    (re.compile(r"Invalid host data, each dimension should match either global or "
                r"process shape\. In dimension (?P<dim>\d+), the process data has "
                r"(?P<has>\d+) elements\. Process addresses (?P<addr>\d+) elements "
                r"and global_shape=(?P<shape>\([^)]*\))"), _fixed("err_host_rows")),
    (re.compile(r"zero-dimensional arrays cannot be concatenated"),
     _fixed("err_concatenate_numbers")),
    (re.compile(r"all input arrays must have the same shape"),
     _fixed("err_stack_shapes")),
    (re.compile(r"setting an array element with a sequence"),
     _fixed("err_ragged")),
)


def read_error(error: str, devices: int | None = None, language: str = "en") -> str:
    """Say what slip an error's message shows ("" when no rule reads it).

    Parameters
    ----------
    error : str
        The error as observed: its type, a colon, its first line.
    devices : int, optional
        How many devices the exercise's cases use: a size that is another
        times this many is a device's block beside the whole array.
    language : str
        The exercise's language.
    """
    for pattern, rule in _RULES:
        match = pattern.search(error)
        if match:
            said = rule(match, devices, language)
            if said:
                return said
    return ""
