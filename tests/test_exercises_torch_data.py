"""Chapter 2's exercises: realistic wrong answers are rejected with a message that
names the problem; alternative correct answers are accepted; the loader
explorer works headlessly."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import nbformat
import numpy as np
import pytest
import torch
from torch.utils.data import default_collate

from jaxcourse.exercises import check
from solutions import torch_data

ROOT = Path(__file__).resolve().parents[1]
STUDENT = ROOT / "exercises" / "02_mlp_torch_data_exercises.ipynb"
IDS = ["torch_data.numpy_collate", "torch_data.flatten_and_cast",
       "torch_data.batches", "torch_data.shuffled_batches", "torch_data.make_loader"]

# ---- wrong answers ------------------------------------------------------------


def collate_torch(batch):
    return default_collate(batch)


def collate_no_recursion(batch):
    return tuple(np.stack([np.asarray(v) for v in field])
                 for field in zip(*batch, strict=True))


def collate_wrong_axis(batch):
    first = batch[0]
    if isinstance(first, (tuple, list)):
        return type(first)(collate_wrong_axis(list(f))
                           for f in zip(*batch, strict=True))
    return np.stack([np.asarray(x) for x in batch], axis=-1)


def collate_lists(batch):
    return tuple(list(field) for field in zip(*batch, strict=True))


def collate_only_pairs(batch):
    images, labels = zip(*batch, strict=True)
    return np.stack(images), np.array(labels)


def flatten_no_cast(pic):
    return np.asarray(pic).reshape(-1)


def flatten_float64(pic):
    return np.asarray(pic).astype(float).ravel()


def flatten_reshape_method(pic):
    return pic.reshape(-1).astype(np.float32)


def flatten_hard_coded(pic):
    return np.asarray(pic, dtype=np.float32).reshape(784)


def flatten_scaled(pic):
    return np.asarray(pic, dtype=np.float32).ravel() / 255.0


def flatten_to_tensor(pic):
    return torch.flatten(torch.as_tensor(np.asarray(pic), dtype=torch.float32))


def flatten_jax(pic):
    return jnp.ravel(jnp.asarray(np.asarray(pic), dtype=jnp.float32))


def batches_drop_last(images, labels, batch_size):
    n = len(images) // batch_size
    return [(images[i * batch_size:(i + 1) * batch_size],
             labels[i * batch_size:(i + 1) * batch_size]) for i in range(n)]


def batches_off_by_one(images, labels, batch_size):
    return [(images[s:s + batch_size - 1], labels[s:s + batch_size - 1])
            for s in range(0, len(images), batch_size)]


def batches_per_example(images, labels, batch_size):
    out = []
    for start in range(0, len(images), batch_size):
        rows = [images[i] for i in range(start, min(start + batch_size, len(images)))]
        ys = [labels[i] for i in range(start, min(start + batch_size, len(images)))]
        out.append((np.stack(rows), np.array(ys)))
    return out


def batches_zip_loop(images, labels, batch_size):
    pairs = list(zip(images, labels, strict=True))
    return [torch_data.numpy_collate(pairs[s:s + batch_size])
            for s in range(0, len(pairs), batch_size)]


def batches_labels_unsliced(images, labels, batch_size):
    return [(images[s:s + batch_size], labels)
            for s in range(0, len(images), batch_size)]


def shuffled_with_replacement(num_examples, batch_size, seed):
    idx = np.random.default_rng(seed).integers(0, num_examples, num_examples)
    return [idx[s:s + batch_size] for s in range(0, num_examples, batch_size)]


def shuffled_not_shuffled(num_examples, batch_size, seed):
    idx = np.arange(num_examples)
    return [idx[s:s + batch_size] for s in range(0, num_examples, batch_size)]


def shuffled_global_seed(num_examples, batch_size, seed):
    np.random.seed(seed)
    idx = np.random.permutation(num_examples)
    return [idx[s:s + batch_size] for s in range(0, num_examples, batch_size)]


def shuffled_unseeded(num_examples, batch_size, seed):
    idx = np.random.default_rng().permutation(num_examples)
    return [idx[s:s + batch_size] for s in range(0, num_examples, batch_size)]


def shuffled_drop_last(num_examples, batch_size, seed):
    idx = np.random.default_rng(seed).permutation(num_examples)
    return [idx[i * batch_size:(i + 1) * batch_size]
            for i in range(num_examples // batch_size)]


def loader_default_collate(dataset, batch_size, collate_fn):
    from torch.utils.data import DataLoader

    return DataLoader(dataset, batch_size=batch_size)


def loader_drop_last(dataset, batch_size, collate_fn):
    from torch.utils.data import DataLoader

    return DataLoader(dataset, batch_size=batch_size, collate_fn=collate_fn,
                      drop_last=True)


def loader_batch_128(dataset, batch_size, collate_fn):
    from torch.utils.data import DataLoader

    return DataLoader(dataset, batch_size=128, collate_fn=collate_fn)


def loader_list(dataset, batch_size, collate_fn):
    # Batches, but not a DataLoader: the exercise asks for a real one.
    return [collate_fn(dataset[s:s + batch_size])
            for s in range(0, len(dataset), batch_size)]


WRONG = [
    ("torch_data.make_loader", loader_default_collate,
     "returned a Tensor where an array was expected"),
    ("torch_data.make_loader", loader_drop_last, "drop_last drops it"),
    ("torch_data.make_loader", loader_batch_128, "wrong structure"),
    ("torch_data.make_loader", loader_list, "expected True, got False"),
    ("torch_data.numpy_collate", collate_torch,
     "returned a Tensor where an array was expected"),
    ("torch_data.numpy_collate", collate_no_recursion,
     "recurse into nested tuples and lists"),
    ("torch_data.numpy_collate", collate_wrong_axis,
     "the batch axis comes first"),
    ("torch_data.numpy_collate", collate_lists,
     "each field is still a Python list"),
    ("torch_data.numpy_collate", collate_only_pairs, "wrong structure"),
    ("torch_data.flatten_and_cast", flatten_no_cast,
     "wrong dtype: expected float32, got uint8 — the pixels are still uint8"),
    ("torch_data.flatten_and_cast", flatten_float64,
     "astype(float) gives float64"),
    ("torch_data.flatten_and_cast", flatten_reshape_method,
     "AttributeError: 'Image' object has no attribute 'reshape'"),
    ("torch_data.flatten_and_cast", flatten_hard_coded,
     "cannot reshape array of size 35"),
    ("torch_data.flatten_and_cast", flatten_scaled,
     "keep the raw 0..255 pixels"),
    ("torch_data.flatten_and_cast", flatten_to_tensor,
     "returned a Tensor where an array was expected"),
    ("torch_data.flatten_and_cast", flatten_jax, "not a NumPy array"),
    ("torch_data.batches", batches_drop_last,
     "the last, partial batch is missing"),
    ("torch_data.batches", batches_off_by_one, "off by one"),
    ("torch_data.batches", batches_per_example,
     "a Python loop over the examples"),
    ("torch_data.batches", batches_zip_loop, "a Python loop over the examples"),
    ("torch_data.batches", batches_labels_unsliced, "wrong shape"),
    ("torch_data.shuffled_batches", shuffled_with_replacement,
     "samples with replacement"),
    ("torch_data.shuffled_batches", shuffled_not_shuffled,
     "the indices are in order"),
    ("torch_data.shuffled_batches", shuffled_global_seed,
     "legacy global generator"),
    ("torch_data.shuffled_batches", shuffled_unseeded, "wrong values"),
    ("torch_data.shuffled_batches", shuffled_drop_last,
     "the last, partial batch is missing"),
]


@pytest.mark.parametrize(("exercise_id", "answer", "fragment"), WRONG,
                         ids=[f"{e}-{a.__name__}" for e, a, _ in WRONG])
def test_wrong_answer_is_rejected_and_named(exercise_id, answer, fragment) -> None:
    state = np.random.get_state()
    result = check(exercise_id, answer)
    np.random.set_state(state)
    assert not result.passed and result.status == "failed"
    text = " | ".join(result.messages)
    assert fragment in text, text


def test_every_exercise_has_three_wrong_answers() -> None:
    from collections import Counter

    counts = Counter(e for e, _, _ in WRONG)
    assert set(counts) == set(IDS)
    assert min(counts.values()) >= 3


# ---- alternative correct answers ---------------------------------------------


def collate_tree_map(batch):
    return jax.tree.map(lambda *leaves: np.stack(leaves), *batch)


def collate_asarray(batch):
    if isinstance(batch[0], (tuple, list)):
        return type(batch[0])(collate_asarray([ex[i] for ex in batch])
                              for i in range(len(batch[0])))
    return np.array(batch)


def collate_seed(batch):
    # The seed's version (and the current JAX docs' "Training a simple neural
    # network, with PyTorch data loading"): torch's default_collate, then every
    # leaf turned into NumPy. It returns lists where the reference keeps tuples.
    return jax.tree.map(np.asarray, default_collate(batch))


def collate_old_docs(batch):
    # The older docs' recursive version: lists for every container.
    if isinstance(batch[0], np.ndarray):
        return np.stack(batch)
    if isinstance(batch[0], (tuple, list)):
        return [collate_old_docs(list(samples)) for samples in zip(*batch, strict=True)]
    return np.array(batch)


def flatten_reshape(pic):
    return np.array(pic).reshape(-1).astype(np.float32)


def flatten_float32_ravel(pic):
    return np.asarray(pic).astype(np.float32).ravel()


def batches_generator(images, labels, batch_size):
    for start in range(0, len(images), batch_size):
        stop = start + batch_size
        yield images[start:stop], labels[start:stop]


def batches_array_split(images, labels, batch_size):
    cuts = range(batch_size, len(images), batch_size)
    return list(zip(np.array_split(images, cuts), np.array_split(labels, cuts),
                    strict=True))


def batches_fancy_index(images, labels, batch_size):
    order = np.arange(len(images))
    parts = (order[s:s + batch_size] for s in range(0, len(order), batch_size))
    return [(images[i], labels[i]) for i in parts]


def shuffled_shuffle(num_examples, batch_size, seed):
    order = np.arange(num_examples)
    np.random.default_rng(seed).shuffle(order)
    return np.array_split(order, range(batch_size, num_examples, batch_size))


def shuffled_lists(num_examples, batch_size, seed):
    order = np.random.default_rng(seed).permutation(num_examples)
    return [order[s:s + batch_size] for s in range(0, num_examples, batch_size)]


def loader_keywords(dataset, batch_size, collate_fn):
    from torch.utils.data import DataLoader

    return DataLoader(dataset=dataset, batch_size=batch_size, shuffle=False,
                      collate_fn=collate_fn, drop_last=False)


def loader_sampler(dataset, batch_size, collate_fn):
    # The docs' NumpyLoader idea: an explicit sequential sampler.
    from torch.utils.data import DataLoader, SequentialSampler

    return DataLoader(dataset, batch_size=batch_size,
                      sampler=SequentialSampler(dataset), collate_fn=collate_fn)


def loader_batch_sampler(dataset, batch_size, collate_fn):
    from torch.utils.data import BatchSampler, DataLoader, SequentialSampler

    sampler = BatchSampler(SequentialSampler(dataset), batch_size, drop_last=False)
    return DataLoader(dataset, batch_sampler=sampler, collate_fn=collate_fn)


RIGHT = [
    ("torch_data.make_loader", loader_keywords),
    ("torch_data.make_loader", loader_sampler),
    ("torch_data.make_loader", loader_batch_sampler),
    ("torch_data.numpy_collate", collate_tree_map),
    ("torch_data.numpy_collate", collate_asarray),
    ("torch_data.numpy_collate", collate_seed),
    ("torch_data.numpy_collate", collate_old_docs),
    ("torch_data.flatten_and_cast", flatten_reshape),
    ("torch_data.flatten_and_cast", flatten_float32_ravel),
    ("torch_data.batches", batches_generator),
    ("torch_data.batches", batches_array_split),
    ("torch_data.batches", batches_fancy_index),
    ("torch_data.shuffled_batches", shuffled_shuffle),
    ("torch_data.shuffled_batches", shuffled_lists),
]


@pytest.mark.parametrize(("exercise_id", "answer"), RIGHT,
                         ids=[f"{e}-{a.__name__}" for e, a in RIGHT])
def test_alternative_correct_answer_is_accepted(exercise_id, answer) -> None:
    result = check(exercise_id, answer)
    assert result.passed, result.report()


@pytest.mark.parametrize("exercise_id", IDS)
def test_reference_passes_its_own_check(exercise_id) -> None:
    name = exercise_id.split(".", 1)[1]
    assert check(exercise_id, getattr(torch_data, name)).passed


def test_reference_collate_feeds_a_dataloader() -> None:
    from torch.utils.data import DataLoader

    data = [(np.full(3, i, np.float32), i) for i in range(10)]
    loader = DataLoader(data, batch_size=4, collate_fn=torch_data.numpy_collate)
    sizes = [(type(x).__name__, x.shape, y.tolist()) for x, y in loader]
    assert sizes[0] == ("ndarray", (4, 3), [0, 1, 2, 3])
    assert sizes[-1] == ("ndarray", (2, 3), [8, 9])


# ---- the loader explorer -------------------------------------------------------

PNG = b"\x89PNG"


@pytest.fixture(scope="module")
def small_images():
    rng = np.random.default_rng(0)
    return (rng.integers(0, 256, size=(256, 28, 28), dtype=np.uint8),
            rng.integers(0, 10, size=256))


def test_time_loaders_returns_both_timings(small_images) -> None:
    from jaxcourse.exercises.explorers_loading import time_loaders

    timing = time_loaders(*small_images, batch_size=32)
    assert timing.batch_size == 32 and timing.num_examples == 256
    assert timing.per_sample > 0 and timing.batched > 0
    assert timing.speedup == pytest.approx(timing.per_sample / timing.batched)


def test_loader_explorer_slider_retimes_and_redraws(small_images) -> None:
    from jaxcourse.exercises.explorers_loading import LoaderExplorer

    explorer = LoaderExplorer(*small_images)
    assert [t.batch_size for t in explorer.timings] == [128]
    first = explorer.image.value
    assert bytes(first).startswith(PNG)
    explorer.batch_size.value = 16
    assert sorted(t.batch_size for t in explorer.timings) == [16, 128]
    assert explorer.image.value != first
    assert "batch size 16" in explorer.status.value
    explorer.batch_size.value = 128  # measured again, replacing the old point
    assert sorted(t.batch_size for t in explorer.timings) == [16, 128]
    explorer.clear_button.click()
    assert [t.batch_size for t in explorer.timings] == [128]
    assert explorer._repr_mimebundle_()["text/plain"] == (
        "Loader explorer: 256 examples per measurement; move the slider to "
        "time another batch size."
    )


def test_loader_explorer_defers_while_grading(monkeypatch, small_images) -> None:
    from jaxcourse.exercises.explorers_loading import LoaderExplorer

    monkeypatch.setenv("JAXCOURSE_GRADING", "1")
    explorer = LoaderExplorer(*small_images)
    assert explorer.timings == []


# ---- the student notebook ------------------------------------------------------


def test_student_notebook_is_generated_and_stripped() -> None:
    from jaxcourse.exercises import authoring

    master = nbformat.read(ROOT / "solutions" / STUDENT.name, as_version=4)
    student = authoring.student_notebook(master, STUDENT.name)
    text = nbformat.writes(student)
    assert "BEGIN SOLUTION" not in text
    assert text.count("raise NotImplementedError()") >= len(IDS)
    assert STUDENT.read_text() == nbformat.writes(student) + "\n"


@pytest.mark.slow
def test_student_notebook_runs_and_reports_not_attempted(
    raw_root: Path, execute_notebook
) -> None:
    texts = execute_notebook(STUDENT)
    for exercise_id in IDS:
        assert any(f"{exercise_id}: not attempted yet" in t for t in texts), texts
