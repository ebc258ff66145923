"""Chapter 6's exercises beyond the contract.

Every exercise's contract (the reference passes its check, wrong answers are
named, alternatives accepted, the student notebook, grading) is checked for
every chapter by ``tests/test_exercise_contract.py``, with the answers of
``tests/exercise_answers/scaling.py``. Here: each exercise is complete, its
cases cannot be passed by a constant, the references agree with the formulas
of :mod:`jaxcourse.scaling` the chapter uses, and (in a fresh interpreter
with 8 devices, ``processes.run_script``) the tensor-parallel block compiles
to exactly one all-reduce while gathering the weights does not, and its Check
compiles one program per mesh and names the error ``jax.shard_map`` raises.
"""

from __future__ import annotations

from collections import Counter

import jax
import numpy as np
import pytest
from exercise_answers import right, wrong
from jax.sharding import PartitionSpec as P
from processes import MARK, run_script

from jaxcourse import scaling

IDS = ["scaling.state_bytes_per_device", "scaling.step_memory", "scaling.remat_policy",
       "scaling.fsdp_specs", "scaling.tp_mlp", "scaling.layout_bytes",
       "scaling.best_layout", "scaling.critical_batch"]
#: The exercises whose answer is a rule: each tries at least 20 random cases.
RULES = {"scaling.remat_policy": 24, "scaling.fsdp_specs": 20,
         "scaling.layout_bytes": 24, "scaling.best_layout": 24,
         "scaling.critical_batch": 24}
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


def _outputs(exercise, case) -> list:
    """The reference's outputs on a case, one per call (a random case makes many)."""
    args = case.make_inputs()
    if case.runner is not None:
        out = case.runner(exercise.reference, *args)
    else:
        out = exercise.reference(*args)
        out = case.extract(out) if case.extract else out
    values = out.values() if isinstance(out, dict) else [out]
    return [tuple(np.ravel(np.asarray(v, dtype=object))) for v in values]


@pytest.mark.parametrize("exercise_id", sorted(set(IDS) - EIGHT - {
    "scaling.step_memory"}))
def test_no_constant_passes(exercise_id: str) -> None:
    """The formula exercises' cases expect different outputs."""
    import solutions.scaling  # noqa: F401
    from jaxcourse.exercises import get

    exercise = get(exercise_id)
    outputs = [_outputs(exercise, case) for case in exercise.cases]
    shown = [o[0] for o in outputs if len(o) == 1]
    if exercise_id in RULES:
        # A rule's shown cases may repeat a choice (the bounds of a budget);
        # its random case, tested below, is what a constant cannot pass.
        assert len(set(shown)) >= min(len(shown), 4), shown
    else:
        assert len(set(shown)) == len(shown), shown


@pytest.mark.parametrize("exercise_id", sorted(RULES))
def test_rules_meet_many_random_cases(exercise_id: str) -> None:
    """A rule is tried on at least 20 random cases, whose answers vary."""
    import solutions.scaling  # noqa: F401
    from jaxcourse.exercises import get

    exercise = get(exercise_id)
    random = exercise.cases[-1]
    assert "random" in random.description
    (calls,) = random.make_inputs()
    leaves = sum(len(tree) for tree, _ in calls) if exercise_id.endswith(
        "fsdp_specs") else len(calls)
    assert leaves >= RULES[exercise_id]
    if exercise_id.endswith("fsdp_specs"):
        return  # its answers are checked in test_fsdp_specs_random_trees_vary
    answers = set(_outputs(exercise, random))
    # Not one answer for all: every outcome of a choice, many numbers.
    assert len(answers) >= (4 if exercise_id.endswith(("remat_policy",
                                                       "best_layout")) else 12)


def test_fsdp_specs_random_trees_vary() -> None:
    """The random trees need every kind of answer: split first, later, or none."""
    from exercise_kit.scaling_checks import random_trees
    from solutions.scaling import fsdp_specs

    (trees,) = random_trees()(np.random.default_rng(0))
    kinds = Counter()
    for tree, n in trees:
        for spec in jax.tree.leaves(fsdp_specs(tree, n),
                                    is_leaf=lambda s: isinstance(s, P)):
            kinds[len(tuple(spec))] += 1  # 0: whole, 1: first dim, 2+: later
    assert kinds[0] >= 2 and kinds[1] >= 2 and kinds[2] + kinds[3] >= 2, kinds


def test_state_bytes_is_the_chapters_formula() -> None:
    from solutions.scaling import MESHES, state_bytes_per_device

    for size in (scaling.Size(64, 2), scaling.Size(1024, 8)):
        for layout in scaling.LAYOUTS:
            for data, model in MESHES:
                assert state_bytes_per_device(size, layout, data, model) == \
                    scaling.state_bytes(size, layout, data, model)["total"]


def test_layout_bytes_is_the_chapters_prediction() -> None:
    """The reference's reasoning agrees with predicted_collectives, priced on rings."""
    from solutions.scaling import MESHES, layout_bytes

    for size in (scaling.Size(64, 2), scaling.Size(1024, 8)):
        for layout in scaling.LAYOUTS:
            for data, model in MESHES:
                for regather in (False, True):
                    chapter = sum(scaling.ring_bytes(c.kind, c.nbytes, c.group)
                                  for c in scaling.predicted_collectives(
                                      size, layout, 256, data, model,
                                      regather=regather))
                    assert layout_bytes(size, layout, 256, data, model, regather) \
                        == pytest.approx(chapter, rel=1e-12)


def test_remat_policy_counts_the_residuals_jax_lists() -> None:
    """The reference's bytes per policy are what saved_residuals lists."""
    import jax

    from solutions import scaling as exercises

    policies = {"no remat": False,
                "checkpoint_dots": jax.checkpoint_policies.checkpoint_dots,
                "full remat": True}
    for size, batch in ((scaling.Size(32, 1), 8), (scaling.Size(64, 3), 40)):
        params = scaling.init_params(jax.random.key(0), size)
        x, y = scaling.make_batch(jax.random.key(1), size, batch)
        kept = {}
        for name, remat in policies.items():
            rows = scaling.saved_residuals(
                lambda p, remat=remat, x=x, y=y: scaling.loss(p, x, y, remat=remat),
                params)
            kept[name] = scaling.residual_bytes(
                [r for r in rows if not r[1].startswith("from")])
        for name, need in kept.items():
            # At exactly its bytes a policy fits; a byte less and it does not.
            assert exercises.remat_policy(size, batch, need) == name or \
                kept[exercises.remat_policy(size, batch, need)] <= need
            cheaper = [p for p in exercises.REMAT_POLICIES
                       if exercises.REMAT_POLICIES.index(p)
                       < exercises.REMAT_POLICIES.index(name)]
            if not cheaper or all(kept[p] > need for p in cheaper):
                assert exercises.remat_policy(size, batch, need) == name
                assert exercises.remat_policy(size, batch, need - 1) != name


def test_critical_batch_agrees_with_the_chapter() -> None:
    """The closed form is the chapter's pass-by-pass roofline, on random cases."""
    from exercise_kit.scaling_cases import critical_calls
    from solutions.scaling import critical_batch

    (calls,) = critical_calls(60)(np.random.default_rng(1))
    for _, (layout, size, data, model, flops, beta, itemsize) in calls:
        ours = critical_batch(layout, size, data, model, flops, beta, itemsize)
        line = scaling.Hardware("a line", flops, 0.0, 0.0, beta, "")
        chapter = scaling.critical_batch(size, layout, line, data, model, itemsize)
        if np.isinf(ours) or ours == 0:
            assert chapter == ours
            continue
        # The chapter solves each pass from two probes of step_time: float64
        # rounding of sums over a few hundred collectives.
        assert ours == pytest.approx(chapter, rel=1e-9)
        # Compute-bound above it, communication-bound below it.
        global_batch = ours * data * model
        above = scaling.step_time(size, layout, 2 * global_batch, line, data,
                                  model, itemsize)
        below = scaling.step_time(size, layout, global_batch / 2, line, data,
                                  model, itemsize)
        assert above["step"] == pytest.approx(above["compute"], rel=1e-12)
        assert below["step"] > below["compute"] * (1 + 1e-9)
    # The chapter's H100 figure per chip: data parallelism needs FSDP's batch.
    h100 = scaling.HARDWARE["H100 SXM"]
    beta = scaling.axis_bandwidth(h100)
    big = scaling.Size(8192, 32)
    assert critical_batch("data parallel", big, 8, 1, h100.flops, beta, 2) == \
        critical_batch("FSDP", big, 8, 1, h100.flops, beta, 2)


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
        from exercise_kit import scaling_mistakes as wrong
        from solutions.scaling import tp_mlp
        from exercise_kit.scaling_checks import tp_tolerance
        from exercise_kit.scaling_checks import compiled_kinds, mlp_inputs

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


def test_tp_mlp_check_compiles_two_programs_and_names_shard_maps_error() -> None:
    """One program per mesh; the out_specs error named, in the panel's language.

    The cases on the 2 × 4 mesh (values, layout, collectives, shard_map) read
    one compiled program, so a Check lowers two (2 × 4 and 1 × 4) where each
    case used to compile its own, and a shard_map called as is compiled each
    operation apart. A mistake recognised by its error still raises that
    error (its ``raises`` follows JAX's wording), and a Traditional-Chinese
    panel says the mistake's message, not JAX's cut-off English line.
    """
    found = run_script(f"""
        import json, os
        from jaxcourse.devices import use_cpu_devices

        use_cpu_devices(8)
        import jax
        import numpy as np
        from jaxcourse.exercises import check, get, observe_all
        from jaxcourse.exercises.authoring.warm_cache import fresh_copy
        from exercise_kit.scaling_checks import mlp_inputs

        exercise = get("scaling.tp_mlp")
        lowered = []
        jax.monitoring.register_event_duration_secs_listener(
            lambda event, seconds, **kwargs: lowered.append(event))
        answer = fresh_copy(exercise.reference)
        passed = all(o.kind == "value" for o in observe_all(exercise, answer))
        lowerings = lowered.count("/jax/core/compile/jaxpr_to_mlir_module_duration")
        raising = [m for m in exercise.mistakes if m.raises]
        args = mlp_inputs(2, 4, 16, 32)(np.random.default_rng(0))
        raised = []
        for mistake in raising:
            try:
                mistake.function(*args)
                raised.append("")
            except Exception as error:
                raised.append(f"{{type(error).__name__}}: {{error}}".splitlines()[0])
        os.environ["JAX_COURSE_LANGUAGE"] = "zh-Hant"
        edition = get("scaling.tp_mlp")
        print({MARK!r} + json.dumps({{
            "passed": passed, "lowerings": lowerings,
            "raises": [m.raises for m in raising], "raised": raised,
            "named": edition.mistakes[exercise.mistakes.index(raising[0])].message,
            "report": check("scaling.tp_mlp", fresh_copy(raising[0].function)
                            ).messages[0],
        }}))
    """)
    assert found["passed"] and found["lowerings"] == 2, found
    assert found["raises"], "no tp_mlp mistake is recognised by its error"
    for fragment, line in zip(found["raises"], found["raised"], strict=True):
        assert fragment in line, (fragment, line)
    report = found["report"]
    assert "ValueError（值不合要求） — " + found["named"] in report, report
    assert "statically inferred" not in report and "_rem_singleton" not in report
