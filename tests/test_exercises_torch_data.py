"""Chapter 2's reference feeds a DataLoader; the loader explorer works headlessly.

Every exercise's contract (the reference passes its check, wrong answers are
named, alternatives accepted, the student notebook) is checked for every
chapter by ``tests/test_exercise_contract.py``, with the answers of
``tests/exercise_answers/torch_data.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

from solutions import torch_data


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
    from jaxcourse.exercises.widgets.explorers_torch_data import time_loaders

    timing = time_loaders(*small_images, batch_size=32)
    assert timing.batch_size == 32 and timing.num_examples == 256
    assert timing.per_sample > 0 and timing.batched > 0
    assert timing.speedup == timing.per_sample / timing.batched  # the same division


def test_loader_explorer_slider_retimes_and_redraws(small_images) -> None:
    from jaxcourse.exercises.widgets.explorers_torch_data import LoaderExplorer

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
    from jaxcourse.exercises.widgets.explorers_torch_data import LoaderExplorer

    monkeypatch.setenv("JAXCOURSE_GRADING", "1")
    explorer = LoaderExplorer(*small_images)
    assert explorer.timings == []
