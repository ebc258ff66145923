"""Relations of form: a wrong array's shape, order or type, a structure, an error.

Issue #65 asks the checks to name a slip by how the wrong value relates to
the right one, for arrays, specs and structures as for numbers, from one
mechanism and not from a table of answers seen. Each test here makes the
slip on random arrays (any shape, any values), and shows it named by
:mod:`jaxcourse.exercises.checking.shapes`, by the structure relations of
:mod:`~jaxcourse.exercises.checking.comparison`, or, for a raised error, by
:mod:`~jaxcourse.exercises.checking.errors`; and that values unrelated to the
right ones, or too uniform to tell, get no relation at all.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from jaxcourse.exercises.checking.comparison import compare
from jaxcourse.exercises.checking.errors import read_error
from jaxcourse.exercises.checking.observation import Node, Spec
from jaxcourse.exercises.checking.shapes import (
    dtype_relation,
    order_relation,
    shape_relation,
)
from jaxcourse.exercises.checking.spec import Case
from jaxcourse.messages import MESSAGES

CASE = Case("a test", lambda: ())
SEEDS = range(12)


def _key(said: str) -> str:
    """The catalogue key whose English text ``said`` is (its fields filled).

    Of the texts that match, the one with the most words of its own: "{where}:
    {problem}" matches anything.
    """
    found = []
    for key, text in MESSAGES["en"].items():
        parts = re.split(r"\{[^{}]*\}", text)
        if re.fullmatch(".*?".join(map(re.escape, parts)), said, re.S):
            found.append((sum(map(len, parts)), key))
    return max(found)[1] if found else ""


def _array(rng: np.random.Generator, ndim: int | None = None) -> np.ndarray:
    ndim = int(rng.integers(1, 4)) if ndim is None else ndim
    shape = tuple(int(n) for n in rng.integers(2, 6, size=ndim))
    return rng.normal(size=shape).astype(np.float32)


@pytest.mark.parametrize("seed", SEEDS)
def test_another_shape_of_the_right_values_is_named(seed: int) -> None:
    rng = np.random.default_rng(seed)
    rows = int(rng.integers(2, 6))
    exp = rng.normal(size=(rows, rows + int(rng.integers(1, 4)))).astype(np.float32)
    assert _key(shape_relation(exp, exp.T.copy(), CASE, "en")) == "rel_transposed"
    assert _key(shape_relation(exp, exp[None], CASE, "en")) == "rel_unit_axis_extra"
    column = exp[..., None]
    assert _key(shape_relation(exp, column, CASE, "en")) == "rel_unit_axis_extra"
    assert _key(shape_relation(exp[None], exp, CASE, "en")) == "rel_unit_axis_missing"
    flat = exp.reshape(-1)
    assert _key(shape_relation(exp, flat, CASE, "en")) == "rel_reshaped"


@pytest.mark.parametrize("seed", SEEDS)
def test_a_reduction_too_many_or_left_out_is_named_by_its_operation(seed: int) -> None:
    rng = np.random.default_rng(seed)
    exp = _array(rng, 2)
    for op, word in ((np.sum, "sum"), (np.mean, "mean"), (np.max, "maximum"),
                     (np.min, "minimum")):
        axis = int(rng.integers(0, 2))
        said = shape_relation(exp, op(exp, axis=axis), CASE, "en")
        assert _key(said) == "rel_reduced" and word in said and str(axis) in said
        said = shape_relation(op(exp, axis=axis), exp, CASE, "en")
        assert _key(said) == "rel_not_reduced" and word in said
    assert _key(shape_relation(exp, np.asarray(exp.sum()), CASE, "en")) == \
        "rel_reduced_all"


def test_a_uniform_value_is_no_reduction() -> None:
    # A one-hot matrix's minimum over either axis is zeros, as is a
    # learner's zeros of any slip: nothing is named from them.
    exp = np.eye(4, dtype=np.float32)
    assert shape_relation(exp, np.zeros(4, np.float32), CASE, "en") == ""
    assert shape_relation(exp, np.asarray(0.0, np.float32), CASE, "en") == ""


@pytest.mark.parametrize("seed", SEEDS)
def test_a_part_more_or_copies_along_an_axis_are_named(seed: int) -> None:
    rng = np.random.default_rng(seed)
    exp = _array(rng, 2)
    n = exp.shape[0]
    assert _key(shape_relation(exp, exp[:n - 1], CASE, "en")) == "rel_first_part"
    assert _key(shape_relation(exp, exp[1:], CASE, "en")) == "rel_last_part"
    more = np.concatenate([exp, rng.normal(size=(1, exp.shape[1]))]).astype(np.float32)
    assert _key(shape_relation(exp, more, CASE, "en")) == "rel_more_after"
    copies = np.concatenate([exp] * 3, axis=1)
    assert _key(shape_relation(exp, copies, CASE, "en")) == "rel_repeated"


@pytest.mark.parametrize("seed", SEEDS)
def test_the_right_values_in_another_order_are_named(seed: int) -> None:
    rng = np.random.default_rng(seed)
    exp = _array(rng, 1)
    exp = np.concatenate([exp, exp[::-1] + 3])  # at least four, not sorted
    assert _key(order_relation(exp, exp[::-1].copy(), CASE, "en")) == "rel_reversed"
    assert _key(order_relation(exp, np.sort(exp), CASE, "en")) == "rel_sorted"
    shuffled = exp[rng.permutation(exp.size)]
    if not np.allclose(shuffled, exp) and not np.allclose(shuffled, np.sort(exp)) \
            and not np.allclose(shuffled, exp[::-1]):
        assert _key(order_relation(exp, shuffled, CASE, "en")) in (
            "rel_reordered", "rel_sorted")
    grid = _array(rng, 2)
    rows = grid[np.roll(np.arange(grid.shape[0]), 1)]
    assert order_relation(grid, rows, CASE, "en") != ""
    square = rng.normal(size=(4, 4))
    assert _key(order_relation(square, square.T.copy(), CASE, "en")) == "rel_transposed"
    once = np.broadcast_to(grid[:1], grid.shape).copy()
    assert _key(order_relation(grid, once, CASE, "en")) == "rel_same_slices"


@pytest.mark.parametrize("seed", SEEDS)
def test_unrelated_values_get_no_relation(seed: int) -> None:
    rng = np.random.default_rng(seed)
    exp, got = _array(rng, 2), _array(rng, 2)
    assert order_relation(exp, rng.normal(size=exp.shape), CASE, "en") == ""
    if got.shape != exp.shape:
        assert _key(shape_relation(exp, got, CASE, "en")) in (
            "", "rel_axis_times", "rel_axis_part")


def test_numbers_of_another_type_are_named() -> None:
    exp = np.array([0.75, 1.5, 2.25], np.float32)
    assert _key(dtype_relation(exp, np.array([0, 1, 2], np.int32), CASE, "en")) == \
        "rel_truncated"
    labels = np.array([3, 1, 4], np.int32)
    said = dtype_relation(labels, labels.astype(np.float32), CASE, "en")
    assert _key(said) == "rel_float_for_int" and "float32" in said
    assert dtype_relation(exp, np.array([5, 1, 2], np.int32), CASE, "en") == ""


def _pairs(rng: np.random.Generator, n: int) -> Node:
    return Node("list", tuple(Node("tuple", (_array(rng, 2), _array(rng, 1)))
                              for _ in range(n)))


@pytest.mark.parametrize("seed", SEEDS)
def test_a_structure_holding_the_right_value_is_named(seed: int) -> None:
    rng = np.random.default_rng(seed)
    exp = _pairs(rng, 3)
    loss = np.asarray(rng.normal(), np.float32)
    said = compare(exp, Node("tuple", (loss, exp)), CASE)
    assert _key(said.partition(" — ")[2]) == "rel_extra_items"
    said = compare(exp, Node("list", exp.items[:2]), CASE)
    assert _key(said.partition(" — ")[2]) == "rel_items_fewer"
    empty = Node("tuple", (np.zeros((0, 3), np.float32), np.zeros(0, np.float32)))
    said = compare(exp, Node("list", (*exp.items, empty)), CASE)
    assert _key(said.partition(" — ")[2]) == "rel_items_more_empty"
    said = compare(exp, exp.items[0], CASE)
    assert _key(said.partition(" — ")[2]) == "rel_only_part"
    other = _pairs(rng, 2)
    assert " — " not in compare(exp, other, CASE)


def test_a_list_of_trees_for_a_tree_of_stacked_arrays_is_named() -> None:
    rng = np.random.default_rng(0)
    stacked = Node("dict", (rng.normal(size=(8, 3)), rng.normal(size=(8, 2, 2))),
                   ("b", "w"))
    copies = Node("list", tuple(Node("dict", (stacked.items[0][i], stacked.items[1][i]),
                                     ("b", "w")) for i in range(8)))
    said = compare(stacked, copies, CASE)
    assert _key(said.partition(" — ")[2]) == "rel_unstacked"


def test_a_spec_with_its_axes_swapped_is_named() -> None:
    said = compare(Spec(("'data'", "'model'")), Spec(("'model'", "'data'")), CASE)
    assert "spec_swapped" == _key(said.partition(" — ")[2])
    moved = compare(Spec(("'data'", "None")), Spec(("None", "'model'")), CASE)
    assert " — " not in moved


@pytest.mark.parametrize(("error", "devices", "key"), [
    ("ValueError: Resource axis: data of P('data',) is not found in mesh: "
     "('rows', 'cols').", 8, "err_axis_not_in_mesh"),
    ("NameError: Found an unbound axis name: j. To fix this", 8, "err_unbound_axis"),
    ("ValueError: vmap got inconsistent sizes for array axes to be mapped:", 1,
     "err_vmap_sizes"),
    ("ValueError: vmap was requested to map its argument along axis 0, which "
     "implies that its rank should be at least 1, but is only 0", 1, "err_vmap_rank"),
    ("ValueError: cannot reshape array of size 35 into shape (784,)", 1,
     "err_reshape"),
    ("TypeError: mul got incompatible shapes for broadcasting: (4, 10), (32, 10).",
     8, "err_block_and_whole"),
    ("TypeError: dot_general requires contracting dimensions to have the same "
     "shape, got (32,) and (4,).", 8, "err_block_and_whole"),
    ("TypeError: dot_general requires contracting dimensions to have the same "
     "shape, got (784,) and (5,).", 1, "err_contracting"),
    ("ValueError: ppermute sources and destinations must be unique, got ((0, 1), "
     "(1, 2), (2, 3), (3, 4), (4, 5), (5, 6), (6, 7), (7, 0)).", 4, "err_ring_count"),
    ("ValueError: The truth value of an array with more than one element is "
     "ambiguous. Use a.any() or a.all()", 1, "err_truth_value"),
    ("ProcessesOutOfStepError: process 1 failed: ValueError: process 1 passed "
     "step() a batch of shape (1,), not (4,): every process must pass full batches",
     1, "err_partial_batch"),
    ("ProcessesOutOfStepError: process 1 failed: ValueError: Invalid host data, "
     "each dimension should match either global or process shape. In dimension 0, "
     "the process data has 4 elements. Process addresses 8 elements and "
     "global_shape=(16, 10).", 1, "err_host_rows"),
])
def test_an_errors_words_name_the_slip(error: str, devices: int, key: str) -> None:
    assert _key(read_error(error, devices, "en")) == key
    for language in ("zh-Hant", "zh-Hans"):
        assert read_error(error, devices, language)


@pytest.mark.parametrize(("error", "devices"), [
    ("TypeError: mul got incompatible shapes for broadcasting: (3, 10), (5, 10).", 8),
    ("ValueError: ppermute sources and destinations must be unique, got ((0, 1), "
     "(0, 1)).", 4),
    ("ValueError: some other failure", 8),
    ("AssertionError", 8),
])
def test_an_error_no_rule_reads_is_left_in_its_own_words(error: str,
                                                        devices: int) -> None:
    assert read_error(error, devices, "en") == ""


def test_a_scan_over_the_examples_is_no_batched_computation() -> None:
    # lax.map traces to one scan as long as the batch: the same operations
    # at every size, so counting them saw no loop (a held-out answer passed).
    import jax

    from jaxcourse.exercises import check, get
    from jaxcourse.mlp import predict

    def with_map(params, images):
        return jax.lax.map(lambda image: predict(params, image), images)

    assert check("mlp.batched_predict", get("mlp.batched_predict").reference).passed
    result = check("mlp.batched_predict", with_map)
    said = [f.problem for f in result.feedback if not f.passed]
    assert len(said) == 1 and "scans over its" in said[0], said
