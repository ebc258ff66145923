"""Chapter 5's exercises beyond the contract, and the collective explorer.

Every exercise's contract (the reference passes its check, wrong answers are
named, alternatives accepted, the student notebook, grading) is checked for
every chapter by ``tests/test_exercise_contract.py``, with the answers of
``tests/exercise_answers/shard_map.py``. What needs 8 devices here runs in a
fresh interpreter (``processes.run_script``, as in
``tests/test_exercises_sharding.py``): a script asks for 8 devices, drives the
explorer headlessly, and prints its findings as JSON for the tests to assert on.
"""

from __future__ import annotations

from collections import Counter

import pytest
from exercise_answers import right, wrong
from processes import MARK, run_script

IDS = ["shard_map.global_mean", "shard_map.allgather_matmul",
       "shard_map.reduce_scatter_matmul", "shard_map.ring_shift",
       "shard_map.global_positions", "shard_map.data_parallel_grads"]
TESTS = (4, 4, 4, 4, 4, 4)  # data_parallel_grads: 3 and its advice


def test_every_exercise_is_complete() -> None:
    from jaxcourse.exercises import get

    wrong_ones = Counter(r.exercise_id for r in wrong("shard_map"))
    right_ones = Counter(r.exercise_id for r in right("shard_map"))
    for exercise_id, total in zip(IDS, TESTS, strict=True):
        exercise = get(exercise_id)  # importing needs no devices
        assert len(exercise.mistakes) >= 3 and len(exercise.hints) >= 3
        assert exercise.devices == 8 and exercise.chapter == "05_shard_map"
        assert len(exercise.cases) == total
        # More than the contract asks: three alternatives too.
        assert wrong_ones[exercise_id] >= 3 and right_ones[exercise_id] >= 3
        # Hints lead; the Show-solution button gives the solution.
        source = exercise.solution_source()
        body = [line.strip() for line in source.splitlines()[1:] if line.strip()]
        for hint in exercise.hints:
            assert not any(len(line) > 30 and line in hint for line in body), hint


def test_too_few_devices_is_a_clear_error() -> None:
    found = run_script(f"""
        import json
        import jax.numpy as jnp
        from jaxcourse.devices import DeviceSetupError
        from jaxcourse.exercises import check
        from solutions import shard_map

        jnp.ones(2)  # JAX starts with one device
        try:
            check("shard_map.ring_shift", shard_map.ring_shift)
        except DeviceSetupError as err:  # the course's error, not a crash
            print({MARK!r} + json.dumps(str(err)))
    """)
    assert "use_cpu_devices(8)" in found


# ---- the explorer, headless -------------------------------------------------------


@pytest.fixture(scope="module")
def explorer_states() -> dict:
    return run_script(f"""
        import json
        import jax
        from jaxcourse.devices import use_cpu_devices

        use_cpu_devices(8)
        from jaxcourse.exercises.widgets.explorers_shard_map import (
            CollectiveExplorer, describe, problem)

        states = {{}}

        def snap(name, explorer):
            states[name] = {{
                "settings": list(explorer.settings),
                "summary": explorer.summary_text,
                "html": explorer.summary.value,
                "png": len(explorer.drawing.value),
                "text": repr(explorer),
            }}

        e = CollectiveExplorer()
        snap("initial", e)
        e.collective.value = "all_gather"
        snap("all_gather 4", e)
        e.devices.value = 8
        snap("all_gather 8", e)
        e.collective.value = "psum_scatter"
        snap("psum_scatter 8x4", e)
        e.length.value = 16
        snap("psum_scatter 8x16", e)
        e.collective.value = "ppermute"
        e.devices.value = 2
        e.length.value = 3
        snap("ppermute 2x3", e)
        e.collective.value = "all_to_all"
        e.devices.value = 4
        e.length.value = 4
        snap("all_to_all 4x4", e)
        extra = {{
            "problem": problem("all_to_all", 4, 6),
            "fine": problem("psum", 4, 6),
            "describe": describe("psum", 2, 2),
        }}
        print({MARK!r} + json.dumps({{"states": states, "extra": extra}}))
    """)


def test_explorer_starts_with_psum(explorer_states: dict) -> None:
    state = explorer_states["states"]["initial"]
    assert state["settings"] == ["psum", 4, 4]
    lines = state["summary"].splitlines()
    assert lines[:4] == [
        "psum over 4 devices, blocks of 4 float32 (16 bytes)",
        "compiled to: all-reduce",
        "matches the NumPy model of the collective: yes",
        "each device sends about 24 bytes (1.5 blocks, one-way ring)",
    ]
    assert lines[4] == "device 0: [0, 1, 2, 3] -> [24, 28, 32, 36]"
    # Marked with its language (lang), as every text of an explorer.
    assert state["png"] > 1000 and state["html"].startswith('<div lang="en"><pre>')
    assert state["text"].startswith("Collective explorer:")


def test_explorer_follows_the_controls(explorer_states: dict) -> None:
    states = explorer_states["states"]
    gather_4, gather_8 = states["all_gather 4"], states["all_gather 8"]
    assert "compiled to: all-gather" in gather_4["summary"]
    # An all-gather sends n - 1 blocks per device: more devices, more bytes.
    assert "about 48 bytes (3 blocks" in gather_4["summary"]
    assert "about 112 bytes (7 blocks" in gather_8["summary"]
    assert "device 7: [28, 29, 30, 31] -> [0, 1, 2, 3, 4, 5, 6, 7, ... (32 entries)]" \
        in gather_8["summary"]
    scatter = states["psum_scatter 8x16"]["summary"]
    assert "compiled to: reduce-scatter" in scatter
    assert "device 0: [0, 1, 2, 3, 4, 5, 6, 7, ... (16 entries)] -> [448, 456]" \
        in scatter
    ring = states["ppermute 2x3"]["summary"]
    assert "compiled to: collective-permute" in ring
    assert "device 0: [0, 1, 2] -> [3, 4, 5]" in ring
    swap = states["all_to_all 4x4"]["summary"]
    assert "compiled to: all-to-all" in swap
    assert "device 1: [4, 5, 6, 7] -> [1, 5, 9, 13]" in swap
    assert all("matches the NumPy model of the collective: yes" in s["summary"]
               for k, s in states.items() if k != "psum_scatter 8x4")


def test_explorer_explains_impossible_settings(explorer_states: dict) -> None:
    state = explorer_states["states"]["psum_scatter 8x4"]
    assert state["summary"] == (
        "psum_scatter over 8 devices cuts every block into 8 equal pieces: the block "
        "length must be a multiple of 8, and 4 is not")
    assert state["png"] == 0
    assert "multiple of 4, and 6 is not" in explorer_states["extra"]["problem"]
    assert explorer_states["extra"]["fine"] == ""
    assert explorer_states["extra"]["describe"].splitlines()[-1] == \
        "device 1: [2, 3] -> [2, 4]"


def test_explorer_defers_while_grading() -> None:
    found = run_script(f"""
        import json, os
        os.environ["JAXCOURSE_GRADING"] = "1"
        from jaxcourse.exercises.widgets.explorers_shard_map import CollectiveExplorer

        e = CollectiveExplorer()
        print({MARK!r} + json.dumps([e.summary_text, repr(e)]))
    """)
    assert found == ["", "explorer: graded separately"]
