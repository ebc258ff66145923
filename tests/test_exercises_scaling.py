"""Chapter 6's exercises beyond the contract.

Every exercise's contract (the reference passes its check, wrong answers are
named, alternatives accepted, the student notebook, grading) is checked for
every chapter by ``tests/test_exercise_contract.py``, with the answers of
``tests/exercise_answers/scaling.py``. Here: each exercise is complete, its
cases cannot be passed by a constant, the references agree with the formulas
of :mod:`jaxcourse.scaling` the chapter uses, and (in a fresh interpreter
with 8 devices, ``processes.run_script``) the tensor-parallel block compiles
to exactly one all-reduce while gathering the weights does not.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from exercise_answers import right, wrong
from processes import MARK, run_script

from jaxcourse import scaling

IDS = ["scaling.state_bytes_per_device", "scaling.fsdp_specs", "scaling.tp_mlp",
       "scaling.collective_bytes", "scaling.best_layout", "scaling.critical_batch"]
EIGHT = {"scaling.fsdp_specs", "scaling.tp_mlp"}


def test_every_exercise_is_complete() -> None:
    import solutions.scaling  # noqa: F401  registers the exercises
    from jaxcourse.exercises import get

    wrong_ones = Counter(r.exercise_id for r in wrong("scaling"))
    right_ones = Counter(r.exercise_id for r in right("scaling"))
    for exercise_id in IDS:
        exercise = get(exercise_id)  # importing needs no devices
        assert exercise.chapter == "06_scaling"
        assert exercise.devices == (8 if exercise_id in EIGHT else 1)
        assert len(exercise.mistakes) >= 3 and len(exercise.hints) == 3
        assert len(exercise.cases) >= 2
        assert wrong_ones[exercise_id] >= 3 and right_ones[exercise_id] >= 3
        # Hints lead; the Show-solution button gives the solution.
        source = exercise.solution_source()
        body = [line.strip() for line in source.splitlines()[1:] if line.strip()]
        for hint in exercise.hints:
            assert not any(len(line) > 30 and line in hint for line in body), hint


@pytest.mark.parametrize("exercise_id", sorted(set(IDS) - EIGHT))
def test_no_constant_passes(exercise_id: str) -> None:
    """The formula exercises' cases expect different outputs."""
    import solutions.scaling  # noqa: F401
    from jaxcourse.exercises import get

    exercise = get(exercise_id)
    outputs = []
    for case in exercise.cases:
        out = exercise.reference(*case.make_inputs())
        outputs.append(tuple(np.ravel(case.extract(out) if case.extract else out)))
    assert len(set(outputs)) == len(outputs), outputs


def test_state_bytes_is_the_chapters_formula() -> None:
    from solutions.scaling import MESHES, state_bytes_per_device

    for size in (scaling.Size(64, 2), scaling.Size(1024, 8)):
        for layout in scaling.LAYOUTS:
            for data, model in MESHES:
                assert state_bytes_per_device(size, layout, data, model) == \
                    scaling.state_bytes(size, layout, data, model)["total"]


def test_collective_bytes_is_ring_bytes() -> None:
    from solutions.scaling import collective_bytes

    # Powers of two: every step of either formula is exact in float64.
    for kind in ("all-reduce", "all-gather", "reduce-scatter"):
        for n in (1, 2, 4, 8):
            assert collective_bytes(kind, 1 << 20, n) == \
                scaling.ring_bytes(kind, 1 << 20, n)


def test_critical_batch_agrees_with_the_chapter() -> None:
    """The formula's batch is the chapter's, with β the bandwidth along the axis."""
    from solutions.scaling import critical_batch

    size = scaling.Size(1024, 8)
    for hw in scaling.HARDWARE.values():
        for n in (2, 4, 8):
            ours = critical_batch(hw.flops, scaling.axis_bandwidth(hw), 2, n)
            chapter = scaling.critical_batch(size, "FSDP", hw, data=n, itemsize=2)
            # The chapter solves each pass apart (both give the same batch) and
            # leaves out the loss's one-number sum; what is left is float64
            # rounding of sums over some 50 collectives, within 64 eps.
            assert ours == pytest.approx(chapter, rel=64 * np.finfo(np.float64).eps)
            # Compute-bound above it, communication-bound below it.
            above = scaling.step_time(size, "FSDP", int(2 * ours) * n, hw, data=n)
            below = scaling.step_time(size, "FSDP", max(int(ours / 2), 1) * n, hw,
                                      data=n)
            assert above["compute"] > above["communication"]
            assert below["compute"] < below["communication"]


def test_best_layout_fits_and_sends_the_least() -> None:
    from solutions.scaling import MESHES, best_layout

    size, batch, budget = scaling.Size(256, 4), 4096, 10e6
    layout, (data, model) = best_layout(size, batch, budget)
    assert scaling.state_bytes(size, layout, data, model)["total"] <= budget
    assert best_layout(size, batch, 1.0) is None  # nothing fits
    assert (data, model) in MESHES


def test_tp_mlp_compiles_to_one_all_reduce() -> None:
    found = run_script(f"""
        import json
        from jaxcourse.devices import use_cpu_devices

        use_cpu_devices(8)
        import numpy as np
        from solutions import scaling_mistakes as wrong
        from solutions.scaling import tp_mlp, tp_tolerance
        from solutions.scaling_checks import compiled_kinds, mlp_inputs

        args = mlp_inputs(2, 4, 16, 32)(np.random.default_rng(0))
        x, w_in, w_out, _ = args
        expected = np.maximum(np.asarray(x) @ np.asarray(w_in), 0) @ np.asarray(w_out)
        print({MARK!r} + json.dumps({{
            "close": bool(np.allclose(tp_mlp(*args), expected, rtol=0,
                                     atol=tp_tolerance(32))),
            "reference": compiled_kinds(tp_mlp, *args)["collectives"].tolist(),
            "gathered": compiled_kinds(wrong.tp_gathered_weights,
                                       *args)["collectives"].tolist(),
        }}))
    """)
    assert found["close"]
    kinds = dict(zip(scaling.KINDS, found["reference"], strict=True))
    assert kinds == {"all-reduce": 1, "all-gather": 0, "reduce-scatter": 0,
                     "all-to-all": 0, "collective-permute": 0}
    gathered = dict(zip(scaling.KINDS, found["gathered"], strict=True))
    assert gathered["all-gather"] >= 1 and gathered["all-reduce"] == 0
