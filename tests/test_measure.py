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


def test_the_chips_activation_compiles_are_stored_with_todays_plan():
    # The step's gradient compiled by the TPU v5e's compiler at one and two
    # sequences (python -m jaxcourse.measure --activations): the plan beside
    # it must be today's formula, and the formula's list JAX's own.
    stored = measure.load_activations()
    assert stored["device_kind"] == "TPU v5 lite"
    assert stored["versions"]["libtpu"]
    assert stored["planned"] == measure.activation_predictions(stored["step_config"])
    compiled = [r for r in stored["runs"] if "compiled" in r]
    assert {(r["seq"], r["remat"]) for r in stored["runs"]} == {
        (seq, remat) for seq in measure.ACTIVATION_SEQS for remat in REMAT_POLICIES}
    for row in compiled:
        planned = stored["planned"][row["remat"]]
        if planned is not None:
            assert row["listed"] == planned
            # What the chapter states: the compiler's growth per token lies
            # within a factor of 2 of the plan, either way.
            assert 0.5 < row["compiled"] / planned < 2, row
    # Without remat the 0.48B step's temporaries at 2,048 tokens pass the chip's HBM.
    [refused] = [r for r in stored["runs"] if "refused" in r]
    assert (refused["remat"], refused["seq"]) == ("none", 2048)
    assert "RESOURCE_EXHAUSTED" in refused["refused"]


def test_the_activation_program_runs_here():
    # The same program on this CPU, at tiny sizes and one length: every
    # policy compiled at one and two sequences, its list the plan's formula.
    found = measure.measure_activations(measure._QUICK_STEP, (8,))
    assert [r["remat"] for r in found["runs"]] == [*REMAT_POLICIES]
    for row in found["runs"]:
        assert row["compiled"] > 0 and row["listed"] > 0
        if row["remat"] != "none":
            assert row["listed"] == found["planned"][row["remat"]]
