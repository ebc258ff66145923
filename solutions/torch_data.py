"""Reference code for chapter 2's exercises: feeding JAX from PyTorch-style loaders.

Importing this module registers the exercises ``torch_data.numpy_collate``,
``torch_data.flatten_and_cast``, ``torch_data.batches``,
``torch_data.shuffled_batches`` and ``torch_data.make_loader`` with
:mod:`jaxcourse.exercises`. Each is a
reference function below plus its checker spec at the end of the file.

Everything here is NumPy, not JAX: a data loader runs on the host, before any
array reaches a device. So the checks call the functions plainly (no ``jit``)
and look at what they return: NumPy arrays (not torch tensors, not lists),
shapes, dtypes, and whether the batches are cut with one slice each or read
one example at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import jax.numpy as jnp
import numpy as np
from PIL import Image

from jaxcourse.exercises import Case, Exercise, Mistake, register

CHAPTER = "02_torch_data"


# --------------------------------------------------------------------------
# Reference solutions
# --------------------------------------------------------------------------


def numpy_collate(batch):
    """Stack a list of examples into NumPy arrays, recursing into tuples and lists."""
    first = batch[0]
    if isinstance(first, (tuple, list)):
        # [(x0, y0), (x1, y1), ...] -> ([x0, x1, ...], [y0, y1, ...]), then recurse.
        fields = zip(*batch, strict=True)
        return type(first)(numpy_collate(list(field)) for field in fields)
    return np.stack([np.asarray(example) for example in batch])


def flatten_and_cast(pic):
    """One image (PIL or ``(h, w)`` uint8 array) -> flat float32 vector, 0..255."""
    return np.ravel(np.asarray(pic, dtype=np.float32))


def batches(images, labels, batch_size):
    """Cut ``(images, labels)`` into consecutive batches; keep the last, partial one."""
    return [
        (images[start:start + batch_size], labels[start:start + batch_size])
        for start in range(0, len(images), batch_size)
    ]


def shuffled_batches(num_examples, batch_size, seed):
    """One shuffled epoch: index arrays of ``batch_size`` (the last may be shorter)."""
    order = np.random.default_rng(seed).permutation(num_examples)
    return [order[start:start + batch_size]
            for start in range(0, num_examples, batch_size)]


def make_loader(dataset, batch_size, collate_fn):
    """Return an in-order ``DataLoader`` over ``dataset`` that uses ``collate_fn``."""
    from torch.utils.data import DataLoader  # PyTorch only where it is used

    return DataLoader(dataset, batch_size=batch_size, collate_fn=collate_fn)


# --------------------------------------------------------------------------
# Checker helpers
# --------------------------------------------------------------------------


class _CountingArray(np.ndarray):
    """An array that counts how often one example (an integer index) is read.

    Slices and index arrays, which read a whole batch at once, are not
    counted; ``arr[i]`` and iterating over the rows are. The count lives on
    the class, reset by :func:`_counted_inputs` each time a case is built.
    """

    reads = 0

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, (int, np.integer)):
            _CountingArray.reads += 1
        return super().__getitem__(key)

    def __iter__(self) -> Iterator[Any]:
        for i in range(len(self)):
            yield self[i]


_COUNTED_N = 400


def _counted_inputs(rng: np.random.Generator) -> tuple:
    _CountingArray.reads = 0
    images = rng.normal(size=(_COUNTED_N, 6)).astype(np.float32)
    labels = rng.integers(0, 10, size=_COUNTED_N)
    return images.view(_CountingArray), labels.view(_CountingArray), 50


def _as_batches(out: Any) -> Any:
    # Accept a list or a generator of (x, y) pairs, or of [x, y] lists.
    if out is None or isinstance(out, np.ndarray) or not hasattr(out, "__iter__"):
        return out
    return [tuple(item) if isinstance(item, (tuple, list)) else item for item in out]


def _reads_whole_batches(out: Any) -> np.ndarray:
    _as_batches(out)  # run a generator to the end before counting
    return np.array(_CountingArray.reads < _COUNTED_N // 2)


def _covers_once(out: Any) -> Any:
    # The order is random by design: compare the sorted indices and the sizes.
    if out is None or not hasattr(out, "__iter__"):
        return out
    parts = [np.asarray(part) for part in out]
    flat = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    return np.sort(flat).astype(np.int64), np.array([len(p) for p in parts])


def _examples(n: int, shape: tuple[int, ...] = (3,)):
    def make(rng: np.random.Generator) -> tuple:
        return ([(rng.normal(size=shape).astype(np.float32), int(rng.integers(10)))
                 for _ in range(n)],)

    return make


def _nested(rng: np.random.Generator) -> tuple:
    return ([(rng.normal(size=(2, 2)).astype(np.float32),
              (int(rng.integers(10)), float(rng.uniform())))
             for _ in range(5)],)


def _lists(rng: np.random.Generator) -> tuple:
    return ([[rng.integers(0, 255, size=4).astype(np.uint8), [i, 2 * i]]
             for i in range(3)],)


def _pil(height: int, width: int):
    def make(rng: np.random.Generator) -> tuple:
        pixels = rng.integers(0, 256, size=(height, width), dtype=np.uint8)
        return (Image.fromarray(pixels),)

    return make


def _uint8(height: int, width: int):
    return lambda rng: (rng.integers(0, 256, size=(height, width), dtype=np.uint8),)


def _data(n: int, features: int, batch_size: int):
    def make(rng: np.random.Generator) -> tuple:
        images = rng.normal(size=(n, features)).astype(np.float32)
        return images, rng.integers(0, 10, size=n), batch_size

    return make


def _loader_inputs(n: int, shape: tuple[int, ...], batch_size: int):
    def make(rng: np.random.Generator) -> tuple:
        return (*_examples(n, shape)(rng), batch_size)

    return make


def _import_torch() -> None:
    # A case's `prepare`: PyTorch is imported before the time limit starts, as
    # the learner's notebook has done before its first Check.
    import torch.utils.data  # noqa: F401


def _with_collate(function, examples, batch_size):
    # The learner's loader gets a collate function that returns NumPy; the
    # inputs stay plain data. Neither the reference numpy_collate nor a named
    # mistake of that exercise, whose bodies a class release withholds: these
    # examples are flat (array, label) pairs, which this one stacks as they are.
    return function(examples, batch_size, _stack_pairs)


def _stack_pairs(batch):
    images, labels = zip(*batch, strict=True)
    return np.stack(images), np.stack(labels)


def _seed_collate(batch):
    # The seed's collate function: torch's default_collate, then NumPy leaves.
    import jax
    from torch.utils.data import default_collate

    return jax.tree.map(np.asarray, default_collate(batch))


def _with_seed_collate(function, examples, batch_size):
    return function(examples, batch_size, _seed_collate)


def _is_loader(out: Any) -> np.ndarray:
    from torch.utils.data import DataLoader

    return np.array(isinstance(out, DataLoader))


def _loader_drop_last(dataset, batch_size, collate_fn):
    from torch.utils.data import DataLoader

    return DataLoader(dataset, batch_size=batch_size, collate_fn=collate_fn,
                      drop_last=True)


def _loader_fixed_size(dataset, batch_size, collate_fn):
    from torch.utils.data import DataLoader

    return DataLoader(dataset, batch_size=4, collate_fn=collate_fn)


def _loader_shuffled(dataset, batch_size, collate_fn):
    import torch
    from torch.utils.data import DataLoader

    return DataLoader(dataset, batch_size=batch_size, collate_fn=collate_fn,
                      shuffle=True, generator=torch.Generator().manual_seed(0))


# Known wrong answers, named when a learner's output matches theirs.


def _collate_no_recursion(batch):
    fields = zip(*batch, strict=True)
    return tuple(np.stack([np.asarray(v) for v in field]) for field in fields)


def _collate_lists(batch):
    return tuple(list(field) for field in zip(*batch, strict=True))


def _collate_last_axis(batch):
    first = batch[0]
    if isinstance(first, (tuple, list)):
        fields = zip(*batch, strict=True)
        return type(first)(_collate_last_axis(list(f)) for f in fields)
    return np.stack([np.asarray(x) for x in batch], axis=-1)


def _per_example_batches(images, labels, batch_size):
    out = []
    for start in range(0, len(images), batch_size):
        stop = min(start + batch_size, len(images))
        out.append((np.stack([images[i] for i in range(start, stop)]),
                    np.stack([labels[i] for i in range(start, stop)])))
    return out


register(
    Exercise(
        id="torch_data.numpy_collate",
        title="A collate function that returns NumPy arrays",
        chapter=CHAPTER,
        reference=numpy_collate,
        cases=[
            Case("4 examples (image (3,), int label) -> (images (4, 3), labels (4,))",
                 _examples(4)),
            Case("a batch of one example keeps its batch axis: (1, 28, 28)",
                 _examples(1, (28, 28))),
            Case("nested examples (image, (label, weight)) -> "
                 "(images, (labels, weights))", _nested),
            Case("examples that are lists [pixels, [i, 2i]] -> "
                 "(pixels (3, 4) uint8, (i's, 2i's)); a list or a tuple both do",
                 _lists),
            Case("8 examples of (28, 28) float32 images and int labels",
                 _examples(8, (28, 28)), seed=1),
            Case("a batch of plain arrays (no tuples) -> one stacked array",
                 lambda rng: ([rng.normal(size=(2, 3)) for _ in range(4)],)),
        ],
        hints=[
            "Look at the first example: if it is a tuple or a list, the batch is a "
            "list of tuples that must be regrouped field by field; otherwise it "
            "is a list of arrays (or numbers) to stack.",
            "zip(*batch) regroups [(x0, y0), (x1, y1)] into (x0, x1) and (y0, y1). "
            "Each group is itself a batch, of one field: what function already "
            "knows how to turn a batch into arrays, nested or not?",
            "For a group of arrays or numbers, NumPy has a function that adds a "
            "new leading axis and puts them side by side. torch.stack and "
            "default_collate do the same but return tensors: if you use them, "
            "convert every leaf back to NumPy.",
        ],
        mistakes=[
            Mistake("the inner tuple was stacked as one array: recurse into nested "
                    "tuples and lists instead of stacking them",
                    _collate_no_recursion),
            Mistake("each field is still a Python list: stack it into one array",
                    _collate_lists),
            Mistake("stacked along the last axis: the batch axis comes first "
                    "(np.stack's default axis=0)", _collate_last_axis),
        ],
    ),
    Exercise(
        id="torch_data.flatten_and_cast",
        title="A per-sample transform: flatten and cast",
        chapter=CHAPTER,
        reference=flatten_and_cast,
        cases=[
            Case("a 28x28 PIL image -> float32 vector of shape (784,)", _pil(28, 28)),
            Case("a 28x28 uint8 NumPy array -> (784,) float32", _uint8(28, 28)),
            Case("another image size: 5x7 PIL image -> (35,)", _pil(5, 7), seed=1),
            Case("pixel 255 stays 255.0 (raw values, no scaling, no overflow)",
                 lambda rng: (np.full((2, 2), 255, np.uint8),)),
            Case("returns a NumPy array (True), not a torch or JAX array",
                 _pil(4, 4), extract=lambda out: np.array(type(out) is np.ndarray)),
        ],
        hints=[
            "torchvision hands the transform a PIL image; np.asarray(pic) turns it "
            "into a (height, width) uint8 array.",
            "np.asarray takes a dtype argument, so it converts and casts in one "
            "step; np.ravel flattens any shape to one axis.",
            "Keep the raw 0..255 values (the chapter's model was trained on them), "
            "and float32, not Python's float (float64).",
        ],
        mistakes=[
            Mistake("the pixels are still uint8: cast to np.float32",
                    lambda pic: np.ravel(np.asarray(pic))),
            Mistake("astype(float) gives float64; the model wants float32",
                    lambda pic: np.ravel(np.asarray(pic, dtype=np.float64))),
            Mistake("the image is not flattened: np.ravel or reshape(-1)",
                    lambda pic: np.asarray(pic, dtype=np.float32)),
            Mistake("the values were scaled to [0, 1]; keep the raw 0..255 pixels",
                    lambda pic: np.ravel(np.asarray(pic, dtype=np.float32)) / 255),
            Mistake("not a NumPy array: a per-sample transform should return NumPy "
                    "(np.asarray, np.ravel), not torch or jax.numpy arrays",
                    lambda pic: jnp.ravel(jnp.asarray(np.asarray(pic), jnp.float32))),
        ],
    ),
    Exercise(
        id="torch_data.batches",
        title="A batched loader: one slice per batch",
        chapter=CHAPTER,
        reference=batches,
        cases=[
            Case("10 examples, batch_size 4 -> batches of 4, 4 and 2, in order",
                 _data(10, 3, 4), extract=_as_batches),
            Case("12 examples, batch_size 4 -> exactly 3 full batches",
                 _data(12, 3, 4), seed=1, extract=_as_batches),
            Case("batch_size larger than the data set -> one batch of 5",
                 _data(5, 2, 8), seed=2, extract=_as_batches),
            Case("300 examples of 784 pixels, batch_size 128 -> 128, 128, 44",
                 _data(300, 784, 128), seed=3, extract=_as_batches),
            Case("vectorised (True): each batch is cut with one slice, not read "
                 "example by example (400 examples)", _counted_inputs,
                 extract=_reads_whole_batches),
        ],
        hints=[
            "Batch k holds the examples start = k * batch_size up to (not "
            "including) start + batch_size.",
            "range(0, len(images), batch_size) gives every start, including the "
            "last partial batch; slicing past the end simply stops at the end.",
            "One slice of the images array copies a whole batch in one call; never "
            "build a batch from images[i] one example at a time.",
        ],
        mistakes=[
            Mistake("the last, partial batch is missing (range(len(images) // "
                    "batch_size) drops it)",
                    lambda x, y, b: [(x[i * b:(i + 1) * b], y[i * b:(i + 1) * b])
                                     for i in range(len(x) // b)]),
            Mistake("off by one: the slice stops one example short "
                    "(the end of a slice is already excluded)",
                    lambda x, y, b: [(x[s:s + b - 1], y[s:s + b - 1])
                                     for s in range(0, len(x), b)]),
            Mistake("a Python loop over the examples: cut each batch with one "
                    "slice, images[start:start + batch_size]", _per_example_batches),
        ],
    ),
    Exercise(
        id="torch_data.shuffled_batches",
        title="A shuffled epoch from a seeded generator",
        chapter=CHAPTER,
        reference=shuffled_batches,
        cases=[
            Case("10 examples, batch_size 4: every index exactly once, "
                 "sizes 4, 4, 2", lambda rng: (10, 4, 0), extract=_covers_once),
            Case("shuffled_batches(10, 4, seed=0): the order of default_rng(0)",
                 lambda rng: (10, 4, 0)),
            Case("shuffled_batches(1000, 128, seed=1): another seed, same rule",
                 lambda rng: (1000, 128, 1)),
            Case("8 examples, batch_size 4 -> exactly two batches",
                 lambda rng: (8, 4, 3), extract=_covers_once),
        ],
        hints=[
            "A shuffled epoch visits every example once: a permutation of "
            "0..num_examples-1, cut into batches.",
            "np.random.default_rng(seed) creates a private generator, so the same "
            "seed gives the same epoch and nothing global changes; its "
            "permutation(num_examples) method shuffles the indices.",
            "Then cut the shuffled indices into batches exactly as in the batches "
            "exercise, keeping the last, partial one.",
        ],
        mistakes=[
            Mistake("indices repeat: that samples with replacement; use a "
                    "permutation so each example appears once per epoch",
                    lambda n, b, s: [part for part in np.array_split(
                        np.random.default_rng(s).integers(0, n, n),
                        range(b, n, b))]),
            Mistake("the indices are in order: shuffle them",
                    lambda n, b, s: [np.arange(n)[i:i + b] for i in range(0, n, b)]),
            Mistake("that is the legacy global generator (np.random.seed); use "
                    "np.random.default_rng(seed)",
                    lambda n, b, s: [np.random.RandomState(s).permutation(n)[i:i + b]
                                     for i in range(0, n, b)]),
            Mistake("the last, partial batch is missing",
                    lambda n, b, s: [np.random.default_rng(s).permutation(n)[
                        i * b:(i + 1) * b] for i in range(n // b)]),
        ],
    ),
    Exercise(
        id="torch_data.make_loader",
        title="A real DataLoader with your collate function",
        chapter=CHAPTER,
        reference=make_loader,
        cases=[
            Case("10 examples, batch_size 4 -> NumPy batches of 4, 4 and 2, in "
                 "order", _loader_inputs(10, (3,), 4), runner=_with_collate,
                 extract=_as_batches, prepare=_import_torch),
            Case("12 examples of (28, 28), batch_size 3 -> 4 batches of 3",
                 _loader_inputs(12, (28, 28), 3), seed=1, runner=_with_collate,
                 extract=_as_batches, prepare=_import_torch),
            Case("5 examples, batch_size 8 -> one batch of 5 (kept)",
                 _loader_inputs(5, (3,), 8), seed=2, runner=_with_collate,
                 extract=_as_batches, prepare=_import_torch),
            Case("with another collate function (the seed's: default_collate, "
                 "then NumPy), 7 examples, batch_size 2", _loader_inputs(7, (3,), 2),
                 seed=3, runner=_with_seed_collate, extract=_as_batches,
                 prepare=_import_torch),
            Case("returns a torch.utils.data.DataLoader (True)",
                 _loader_inputs(4, (2,), 2), runner=_with_collate, extract=_is_loader,
                 prepare=_import_torch),
        ],
        hints=[
            "torch.utils.data.DataLoader takes the dataset first; any object with "
            "__len__ and __getitem__ will do, a Python list included.",
            "Its keyword arguments set the size of a batch and the function that "
            "turns a list of examples into one batch.",
            "Leave the order and the last, partial batch as they are: the defaults "
            "(no shuffling, no drop_last) are what this loader needs.",
        ],
        mistakes=[
            Mistake("the last, partial batch is missing: drop_last drops it",
                    _loader_drop_last),
            Mistake("the batch size is written in: use the batch_size argument",
                    _loader_fixed_size),
            Mistake("the examples were shuffled: keep their order here",
                    _loader_shuffled),
        ],
    ),
)
