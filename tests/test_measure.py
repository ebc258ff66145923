"""The measurements made on real chips stay honest: their predictions are today's.

A stored file (``jaxcourse/data/measured/<chip>.json``) holds what a chip did
beside what the course predicted when it was measured. If a change to the
model (the hardware table, the FLOP count, the state, the residuals) moves a
prediction, this test fails: the chapters would otherwise show an old plan
beside the chip. Regenerate the file on the chip (README, "Measuring on a real
chip").
"""

from __future__ import annotations

import json
import math

import pytest

from jaxcourse import measure
from jaxcourse.transformer import REMAT_POLICIES

FILES = measure.measured_files()


def _close(stored, fresh, path="") -> None:
    if isinstance(fresh, dict):
        assert isinstance(stored, dict) and set(stored) == set(fresh), path
        for key in fresh:
            _close(stored[key], fresh[key], f"{path}/{key}")
    elif isinstance(fresh, list):
        assert isinstance(stored, list) and len(stored) == len(fresh), path
        for i, (a, b) in enumerate(zip(stored, fresh, strict=True)):
            _close(a, b, f"{path}[{i}]")
    elif isinstance(fresh, float):
        assert math.isclose(stored, fresh, rel_tol=1e-12), (path, stored, fresh)
    else:
        assert stored == fresh, (path, stored, fresh)


def test_there_is_a_measurement_of_a_tpu_v5e():
    assert [f.name for f in FILES] == ["tpu_v5e.json"]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_the_stored_predictions_are_todays(path):
    found = json.loads(path.read_text(encoding="utf-8"))
    batches = [row["batch"] for row in found["matmul"]]
    fresh = measure.predicted(found["device_kind"], batches, found["width"],
                              found["step_config"])
    _close(found["predicted"], fresh, "predicted")


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_a_measurement_is_whole(path):
    found = json.loads(path.read_text(encoding="utf-8"))
    assert not found["quick"] and found["platform"] == "tpu"
    assert found["versions"]["jax"] and found["date"]
    assert [row["batch"] for row in found["matmul"]] == list(measure.BATCHES)
    assert found["step_config"] == measure.STEP
    assert set(found["step"]) == set(REMAT_POLICIES)
    for policy, row in found["step"].items():
        # Each policy either ran (its compile, peaks, time and losses) or the
        # chip's compiler refused it, in its own words.
        if "refused" in row:
            assert "RESOURCE_EXHAUSTED" in row["refused"], policy
            continue
        assert row["compiled"]["peak"] > row["compiled"]["arguments"] > 0
        assert row["step_seconds"] > 0 and len(row["losses"]) >= 10
        # The step trains: the last losses are below the first.
        assert sum(row["losses"][-3:]) < sum(row["losses"][:3]), policy
    # The same programs compiled ahead of time on a CPU host, for the same
    # chip, gave the same memory (or the same refusal).
    assert all(row["agrees"] for row in found["aot"]["step"].values())
