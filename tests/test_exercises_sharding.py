"""Chapter 4's exercises beyond the contract, and the sharding explorer.

Every exercise's contract (the reference passes its check, wrong answers are
named, alternatives accepted, the student notebook, grading) is checked for
every chapter by ``tests/test_exercise_contract.py``, with the answers of
``tests/exercise_answers/sharding.py``. JAX fixes its number of devices when
it starts, and this test process may already run JAX with one device, so what
needs 8 devices here runs in a fresh interpreter (``processes.run_script``): a
script asks for 8 devices, drives the explorer headlessly, and prints its
findings as JSON for the tests to assert on.
"""

from __future__ import annotations

from collections import Counter

import pytest
from exercise_answers import right, wrong
from processes import MARK, run_script

IDS = ["sharding.spec_for_target", "sharding.shard_mlp_2d",
       "sharding.make_hidden_layer", "sharding.collective_free_specs",
       "sharding.cheaper_product"]


def test_every_exercise_has_three_named_mistakes() -> None:
    from jaxcourse.exercises import get

    for exercise_id in IDS:
        exercise = get(exercise_id)  # importing needs no devices
        assert len(exercise.mistakes) >= 3 and len(exercise.hints) >= 3
        assert exercise.devices == 8 and exercise.chapter == "04_sharding"
    # More than the contract asks: three alternatives too.
    wrong_ones = Counter(r.exercise_id for r in wrong("sharding"))
    right_ones = Counter(r.exercise_id for r in right("sharding"))
    assert all(wrong_ones[e] >= 3 and right_ones[e] >= 3 for e in IDS)


def test_cheaper_products_random_shapes_cross_every_boundary() -> None:
    """The random products put the batch on both sides of each rule's boundary.

    The true one (m <= n: x is the smaller operand) against two a learner may
    fit to the shown cases: the batch against the contracted dimension
    (m <= k), and a threshold of 100 rows. Drawn as the case draws them.
    """
    import numpy as np

    from exercise_kit.sharding_checks import _PRODUCT_TURNS

    rng = np.random.default_rng(3)
    shapes = [_PRODUCT_TURNS[t % len(_PRODUCT_TURNS)](
        lambda lo, hi: int(rng.integers(lo, hi))) for t in range(200)]
    for m, _, n in shapes:
        assert m % 8 == 0 and n % 8 == 0 and m != n  # splits evenly; no tie
    truth = [m < n for m, _, n in shapes]
    for rule in ([m <= k for m, k, _ in shapes], [m < 100 for m, _, _ in shapes]):
        disagree = [r != t for r, t in zip(rule, truth, strict=True)]
        # Both ways wrong: x gathered where w is smaller, and the reverse.
        assert any(d and t for d, t in zip(disagree, truth, strict=True))
        assert any(d and not t for d, t in zip(disagree, truth, strict=True))
    # Every turn crosses at least one rule's boundary, so each of the 8 calls
    # can tell a rule apart.
    for turn in _PRODUCT_TURNS:
        m, k, n = turn(lambda lo, hi: lo)
        assert (m <= k) != (m < n) or (m < 100) != (m < n)


def test_too_few_devices_is_a_clear_error() -> None:
    found = run_script(f"""
        import json
        import jax.numpy as jnp
        from jaxcourse.devices import DeviceSetupError
        from jaxcourse.exercises import check
        from solutions import sharding

        jnp.ones(2)  # JAX starts with one device
        try:
            sharding.auto_mesh((4, 2), ("a", "b"))
        except Exception as err:
            mesh_error = f"{{type(err).__name__}}: {{err}}"
        try:
            check("sharding.shard_mlp_2d", sharding.shard_mlp_2d)
        except DeviceSetupError as err:  # the course's error, not a crash
            check_error = str(err)
        print({MARK!r} + json.dumps([mesh_error, check_error]))
    """)
    mesh_error, check_error = found
    assert mesh_error.startswith("DeviceSetupError: this exercise needs 8 devices")
    assert "use_cpu_devices(8)" in mesh_error
    assert "use_cpu_devices(8)" in check_error


# ---- the explorer, headless -------------------------------------------------------


@pytest.fixture(scope="module")
def explorer_states() -> dict:
    return run_script(f"""
        import json
        import jax
        from jaxcourse.devices import use_cpu_devices

        use_cpu_devices(8)
        from jax.sharding import PartitionSpec as P
        from jaxcourse.exercises.widgets.explorers_sharding import (
            ShardingExplorer, collectives, describe_layout, place)

        states = {{}}

        def snap(name, explorer):
            states[name] = {{
                "spec": repr(explorer.spec),
                "layout": explorer.layout_text.value,
                "communication": explorer.communication.value,
                "error": explorer.error,
                "pieces": None if explorer.array is None
                else len(explorer.array.sharding.devices_indices_map((8, 8))),
                "text": repr(explorer),
            }}

        e = ShardingExplorer()
        snap("initial", e)
        e.operation.value = "x.sum(axis=0)"
        snap("sum rows", e)
        e.operation.value = "x.sum(axis=1)"
        snap("sum columns", e)
        e.mesh.value = "2×4"
        e.rows.value = "None"
        e.columns.value = "'b'"
        snap("2x4 columns over b", e)
        e.columns.value = "('a', 'b')"
        e.rows.value = "'a'"
        snap("axis used twice", e)
        e.rows.value = "None"
        e.operation.value = "x @ x.T"
        snap("contract split columns", e)
        e.mesh.value = "8×1"
        e.rows.value = "'a'"
        e.columns.value = "None"
        e.operation.value = "jnp.roll(x, 1, axis=0)"
        snap("roll rows", e)
        e.operation.value = "jnp.sin(x)"
        snap("sin", e)
        extra = {{
            "describe": describe_layout(place((4, 2), P(None, "b"))),
            "matmul": collectives(lambda a: a.T @ a, place((4, 2), P("a", None))),
        }}
        print({MARK!r} + json.dumps({{"states": states, "extra": extra}}))
    """)


def test_explorer_draws_the_initial_layout(explorer_states: dict) -> None:
    state = explorer_states["states"]["initial"]
    assert state["spec"] == "P('a', None)"
    assert state["layout"].startswith('<div lang="en"><pre>P(&#x27;a&#x27;, None) '
                                      "on the 4×2 mesh: 4 pieces of shape (2, 8), "
                                      "each stored on 2 devices")
    assert "CPU 0,1: rows 0:2, columns 0:8" in state["layout"]
    assert "no communication" in state["communication"]
    assert state["text"].startswith("Sharding explorer:")


def test_explorer_says_which_operations_communicate(explorer_states: dict) -> None:
    states = explorer_states["states"]
    assert "communicates (all-reduce)" in states["sum rows"]["communication"]
    assert "no communication" in states["sum columns"]["communication"]
    assert "communicates (all-reduce)" in states["contract split columns"][
        "communication"]
    assert "collective-permute" in states["roll rows"]["communication"]
    assert "no communication" in states["sin"]["communication"]
    assert explorer_states["extra"]["matmul"] == ["all-reduce"]


def test_explorer_follows_the_mesh_dropdown(explorer_states: dict) -> None:
    state = explorer_states["states"]["2x4 columns over b"]
    assert state["spec"] == "P(None, 'b')"
    assert "on the 2×4 mesh: 4 pieces of shape (8, 2), each stored on 2 devices" \
        in state["layout"]
    assert "CPU 0,4: rows 0:8, columns 0:2" in state["layout"]


def test_explorer_reports_an_invalid_spec(explorer_states: dict) -> None:
    state = explorer_states["states"]["axis used twice"]
    assert state["pieces"] is None
    assert "is not a valid layout here" in state["layout"]
    assert "duplicate entries" in state["error"]
    assert state["communication"] == ""


def test_describe_layout_in_words(explorer_states: dict) -> None:
    assert explorer_states["extra"]["describe"].splitlines() == [
        "2 pieces of shape (8, 4), each stored on 4 devices",
        "CPU 0,2,4,6: rows 0:8, columns 0:4",
        "CPU 1,3,5,7: rows 0:8, columns 4:8",
    ]


def test_explorer_defers_while_grading() -> None:
    found = run_script(f"""
        import json, os
        os.environ["JAXCOURSE_GRADING"] = "1"
        from jaxcourse.exercises.widgets.explorers_sharding import ShardingExplorer

        e = ShardingExplorer()
        print({MARK!r} + json.dumps([e.array is None, repr(e)]))
    """)
    assert found == [True, "explorer: graded separately"]
