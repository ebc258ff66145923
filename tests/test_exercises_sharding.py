"""Chapter 4's exercises and sharding explorer, on 8 simulated CPU devices.

JAX fixes its number of devices when it starts, and this test process may
already run JAX with one device, so every check here runs in a fresh
interpreter (as in ``tests/test_devices.py``): a script asks for 8 devices,
checks realistic wrong answers (each must be rejected with a message that
names the problem) and alternative correct ones, drives the explorer
headlessly, and prints its findings as JSON for the tests to assert on.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
STUDENT = ROOT / "exercises" / "04_distributed_arrays_exercises.ipynb"
IDS = ["sharding.spec_for_target", "sharding.shard_batch", "sharding.shard_mlp_2d",
       "sharding.make_hidden_layer", "sharding.explicit_product"]
MARK = "RESULT-JSON:"


def run_script(code: str, timeout: int = 240) -> dict:
    """Run ``code`` in a fresh interpreter; return the JSON it printed after MARK."""
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True, text=True, timeout=timeout, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith(MARK))
    return json.loads(line[len(MARK):])


# ---- the answers tried, as a learner would write them ----------------------------

ANSWERS = r'''
import jax
from jaxcourse.devices import use_cpu_devices

use_cpu_devices(8)
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

# -- exercise 1: the target is P("b", "a")
def spec_transposed():
    return P("a", "b")

def spec_replicated():
    return P()

def spec_columns_only():
    return P(None, "a")

def spec_wrong_axis_name():
    return P("model", "a")

def spec_not_a_spec():
    return ("b", "a")

def spec_from_mesh_names():  # correct, spelled differently
    names = ("a", "b")
    return P(names[1], names[0])

def spec_jax_p():  # correct: jax.P is the same class
    return jax.P("b", "a")

def spec_one_axis_tuples():  # correct: a tuple of one mesh axis is that axis
    return P(("b",), ("a",))

def spec_unpacked():  # correct
    rows_then_columns = ["b", "a"]
    return P(*rows_then_columns)

# -- exercise 2
def dp_params_sharded(params, batch, mesh):
    split = NamedSharding(mesh, P("batch"))
    return jax.device_put(params, split), jax.device_put(batch, split)

def dp_batch_replicated(params, batch, mesh):
    everywhere = NamedSharding(mesh, P())
    return jax.device_put(params, everywhere), jax.device_put(batch, everywhere)

def dp_batch_by_columns(params, batch, mesh):
    return (jax.device_put(params, NamedSharding(mesh, P())),
            jax.device_put(batch, NamedSharding(mesh, P(None, "batch"))))

def dp_left_on_host(params, batch, mesh):
    return params, batch

def dp_per_leaf(params, batch, mesh):  # correct: leaf by leaf, spelled P("batch", None)
    rep = NamedSharding(mesh, P())
    rows = NamedSharding(mesh, P("batch", None))
    params = [(jax.device_put(w, rep), jax.device_put(b, rep)) for w, b in params]
    inputs, targets = batch
    return params, (jax.device_put(inputs, rows), jax.device_put(targets, rows))

def dp_seed_style(params, batch, mesh):  # correct: the seed's order, a list back
    sharding = NamedSharding(mesh, P("batch"))
    batch = jax.device_put(batch, sharding)
    params = jax.device_put(params, NamedSharding(mesh, P()))
    return [params, batch]

def dp_tree_map(params, batch, mesh):  # correct: leaf by leaf with tree.map
    replicated = NamedSharding(mesh, jax.P())
    by_rows = NamedSharding(mesh, jax.P(mesh.axis_names[0]))
    put = lambda sharding: lambda leaf: jax.device_put(leaf, sharding)
    return jax.tree.map(put(replicated), params), jax.tree.map(put(by_rows), batch)

def dp_shardings_pytree(params, batch, mesh):  # correct: one device_put, two shardings
    shardings = (NamedSharding(mesh, P()), NamedSharding(mesh, P("batch")))
    return jax.device_put((params, batch), shardings)

# -- exercise 3
def _place(specs, batch_spec):
    def place(params, batch, mesh):
        params = [(jax.device_put(w, NamedSharding(mesh, ws)),
                   jax.device_put(b, NamedSharding(mesh, bs)))
                  for (w, b), (ws, bs) in zip(params, specs)]
        return params, jax.device_put(batch, NamedSharding(mesh, batch_spec))
    return place

R = (P(), P())
mp_swapped = _place([R, (P("model", None), P()), (P(None, "model"), P("model")), R],
                    P("batch"))
mp_bias_forgotten = _place([R, (P(None, "model"), P()), (P("model", None), P()), R],
                           P("batch"))
mp_all_replicated = _place([R, R, R, R], P("batch"))
mp_batch_over_model = _place(
    [R, (P(None, "model"), P("model")), (P("model", None), P()), R], P("model"))

def mp_tree_map(params, batch, mesh):  # correct: a pytree of shardings
    specs = [(P(), P()), (P(None, "model"), P("model")), (P("model"), P(None)),
             (P(), P())]
    shardings = jax.tree.map(lambda s: NamedSharding(mesh, s), specs,
                             is_leaf=lambda s: isinstance(s, P))
    params = jax.device_put([tuple(layer) for layer in params], shardings)
    return params, jax.device_put(batch, NamedSharding(mesh, P("batch", None)))

def mp_seed_style(params, batch, mesh):  # correct: unpacked by hand, a tuple back
    def put(x, *spec):
        return jax.device_put(x, NamedSharding(mesh, P(*spec)))
    (W1, b1), (W2, b2), (W3, b3), (W4, b4) = params
    W1, b1 = put(W1), put(b1)
    W2, b2 = put(W2, None, "model"), put(b2, "model")
    W3, b3 = put(W3, "model", None), put(b3)
    W4, b4 = put(W4), put(b4)
    return ((W1, b1), (W2, b2), (W3, b3), (W4, b4)), put(batch, "batch", None)

def mp_by_index(params, batch, mesh):  # correct: a loop over the layers
    placed = []
    for i, (w, b) in enumerate(params):
        w_spec, b_spec = {1: (P(None, "model"), P("model")),
                          2: (P("model", None), P())}.get(i, (P(), P()))
        placed.append((jax.device_put(w, NamedSharding(mesh, w_spec)),
                       jax.device_put(b, NamedSharding(mesh, b_spec))))
    inputs, targets = batch
    rows = NamedSharding(mesh, P("batch"))
    return placed, (jax.device_put(inputs, rows), jax.device_put(targets, rows))

# -- exercise 4
def hidden_forgot_constraint(mesh):
    @jax.jit
    def hidden_layer(x, w):
        return jax.nn.relu(x @ w)
    return hidden_layer

def hidden_constraint_discarded(mesh):
    @jax.jit
    def hidden_layer(x, w):
        h = jax.nn.relu(x @ w)
        jax.lax.with_sharding_constraint(h, NamedSharding(mesh, P("batch", "model")))
        return h
    return hidden_layer

def hidden_transposed(mesh):
    @jax.jit
    def hidden_layer(x, w):
        h = jax.nn.relu(x @ w)
        target = NamedSharding(mesh, P("model", "batch"))
        return jax.lax.with_sharding_constraint(h, target)
    return hidden_layer

def hidden_replicated(mesh):
    @jax.jit
    def hidden_layer(x, w):
        h = jax.nn.relu(x @ w)
        return jax.lax.with_sharding_constraint(h, NamedSharding(mesh, P()))
    return hidden_layer

def hidden_split_contracting(mesh):
    @jax.jit
    def hidden_layer(x, w):
        split = NamedSharding(mesh, P("batch", "model"))
        x = jax.lax.with_sharding_constraint(x, split)
        return jax.nn.relu(x @ w)
    return hidden_layer

def hidden_split_w_rows(mesh):
    @jax.jit
    def hidden_layer(x, w):
        w = jax.lax.with_sharding_constraint(w, NamedSharding(mesh, P("model", None)))
        h = jax.nn.relu(x @ w)
        target = NamedSharding(mesh, P("batch", "model"))
        return jax.lax.with_sharding_constraint(h, target)
    return hidden_layer

def hidden_wrong_axis_name(mesh):
    @jax.jit
    def hidden_layer(x, w):
        h = jax.nn.relu(x @ w)
        target = NamedSharding(mesh, P("batch", "data"))
        return jax.lax.with_sharding_constraint(h, target)
    return hidden_layer

def hidden_split_w_columns(mesh):  # correct: constrain w's columns, h follows
    def hidden_layer(x, w):
        w = jax.lax.with_sharding_constraint(w, NamedSharding(mesh, P(None, "model")))
        h = jnp.maximum(x @ w, 0)
        target = NamedSharding(mesh, P("batch", "model"))
        return jax.lax.with_sharding_constraint(h, target)
    return jax.jit(hidden_layer)

def hidden_not_jitted(mesh):  # correct: the check compiles it anyway
    target = NamedSharding(mesh, P("batch", "model"))
    def hidden_layer(x, w):
        return jax.lax.with_sharding_constraint(jax.nn.relu(jnp.dot(x, w)), target)
    return hidden_layer

def hidden_out_shardings(mesh):  # correct: jit's out_shardings states the layout
    return jax.jit(lambda x, w: jax.nn.relu(x @ w),
                   out_shardings=NamedSharding(mesh, P("batch", "model")))

def hidden_own_fixed_mesh(mesh):  # wrong: a 4x2 mesh written in, not the one given
    from solutions.sharding import auto_mesh
    fixed = auto_mesh((4, 2), ("batch", "model"))
    @jax.jit
    def hidden_layer(x, w):
        h = jax.nn.relu(x @ w)
        target = NamedSharding(fixed, P("batch", "model"))
        return jax.lax.with_sharding_constraint(h, target)
    return hidden_layer

def dp_own_fixed_mesh(params, batch, mesh):  # wrong: an 8-device mesh written in
    from solutions.sharding import auto_mesh
    fixed = auto_mesh((8,), ("batch",))
    return (jax.device_put(params, NamedSharding(fixed, P())),
            jax.device_put(batch, NamedSharding(fixed, P("batch"))))

# -- exercise 5 (Explicit mode): x's columns and y's rows are split alike
def product_plain(x, y, spec):  # JAX refuses: the sharding is ambiguous
    return x @ y

def product_constrained(x, y, spec):  # an Auto-mode habit; still ambiguous
    return jax.lax.with_sharding_constraint(x @ y, spec)

def product_replicated(x, y, spec):
    return jnp.matmul(x, y, out_sharding=P())

def product_fixed_spec(x, y, spec):
    return jnp.matmul(x, y, out_sharding=P("X", None))

def product_swapped_spec(x, y, spec):
    rows, columns = spec
    return jnp.matmul(x, y, out_sharding=P(columns, rows))

def product_dot(x, y, spec):  # correct
    return jnp.dot(x, y, out_sharding=spec)

def product_einsum(x, y, spec):  # correct
    return jnp.einsum("ik,kj->ij", x, y, out_sharding=spec)

def product_then_reshard(x, y, spec):  # correct: replicated product, then moved
    return jax.reshard(jnp.matmul(x, y, out_sharding=P()), spec)

def product_gather_first(x, y, spec):  # correct: gather x, then the result is clear
    whole_x = jax.reshard(x, P())
    return jax.reshard(whole_x @ y, spec)

def product_auto_axes(x, y, spec):  # correct: let the compiler choose, fix the output
    return jax.sharding.auto_axes(jnp.matmul, out_sharding=spec)(x, y)
'''

WRONG = {
    "sharding.spec_for_target": [
        ("spec_transposed", "looks transposed"),
        ("spec_replicated", "replicates instead of sharding"),
        ("spec_columns_only", "the rows must be split too"),
        ("spec_wrong_axis_name", "Resource axis: model"),
        ("spec_not_a_spec", "expected a PartitionSpec, got tuple"),
    ],
    "sharding.shard_batch": [
        ("dp_params_sharded", "the parameters are split too"),
        ("dp_batch_replicated", "the batch is replicated instead of sharded"),
        ("dp_batch_by_columns", "split by columns (features)"),
        ("dp_left_on_host", "got a ndarray, not a jax.Array placed on the mesh"),
        ("dp_own_fixed_mesh", "✗ on a mesh of 4 devices"),
    ],
    "sharding.shard_mlp_2d": [
        ("mp_swapped", "look swapped (transposed specs)"),
        ("mp_bias_forgotten", "layer 1's bias is replicated"),
        ("mp_all_replicated", "replicates the model instead of sharding it"),
        ("mp_batch_over_model", "wrong mesh axis: 'model' instead of 'batch'"),
    ],
    "sharding.make_hidden_layer": [
        ("hidden_forgot_constraint", "did you forget the with_sharding_constraint"),
        ("hidden_constraint_discarded", "did you forget the with_sharding_constraint"),
        ("hidden_transposed", "spec looks transposed"),
        ("hidden_replicated", "costs an all-gather"),
        ("hidden_split_contracting", "need an all-reduce"),
        ("hidden_split_w_rows", "split w's rows, the contracted dimension"),
        ("hidden_wrong_axis_name", "Resource axis: data"),
        ("hidden_own_fixed_mesh", "✗ on a 2x4 mesh"),
    ],
    "sharding.explicit_product": [
        ("product_plain", "Please specify the output sharding via the `out_sharding`"),
        ("product_constrained", "it is ambiguous how the output should be sharded"),
        ("product_replicated", "the product comes out replicated"),
        ("product_fixed_spec", "did you write P('X', None) in instead of using spec"),
        ("product_swapped_spec", "the layout looks transposed"),
    ],
}
RIGHT = {
    "sharding.spec_for_target": ["spec_from_mesh_names", "spec_jax_p",
                                 "spec_one_axis_tuples", "spec_unpacked"],
    "sharding.shard_batch": ["dp_per_leaf", "dp_seed_style", "dp_tree_map",
                             "dp_shardings_pytree"],
    "sharding.shard_mlp_2d": ["mp_tree_map", "mp_seed_style", "mp_by_index"],
    "sharding.make_hidden_layer": ["hidden_split_w_columns", "hidden_not_jitted",
                                   "hidden_out_shardings"],
    "sharding.explicit_product": ["product_dot", "product_einsum",
                                  "product_then_reshard", "product_gather_first",
                                  "product_auto_axes"],
}


@pytest.fixture(scope="module")
def verdicts() -> dict:
    """Check every answer above (and each reference) in one 8-device process."""
    tried = {eid: [name for name, _ in WRONG[eid]] + RIGHT[eid] for eid in IDS}
    return run_script(ANSWERS + f"""
import json
from jaxcourse.exercises import check, get

out = {{}}
for eid, names in {tried!r}.items():
    ref = check(eid, get(eid).reference)
    out[eid + ":reference"] = [ref.passed, ref.report()]
    for name in names:
        result = check(eid, globals()[name])
        out[eid + ":" + name] = [result.passed, result.report()]
print({MARK!r} + json.dumps(out))
""")


@pytest.mark.parametrize("exercise_id", IDS)
def test_reference_passes(verdicts: dict, exercise_id: str) -> None:
    passed, report = verdicts[exercise_id + ":reference"]
    assert passed, report


@pytest.mark.parametrize(
    ("exercise_id", "name", "fragment"),
    [(eid, name, fragment) for eid in IDS for name, fragment in WRONG[eid]],
)
def test_wrong_answer_is_named(verdicts: dict, exercise_id: str, name: str,
                               fragment: str) -> None:
    passed, report = verdicts[f"{exercise_id}:{name}"]
    assert not passed, report
    assert fragment in report, report


@pytest.mark.parametrize(
    ("exercise_id", "name"), [(eid, name) for eid in IDS for name in RIGHT[eid]]
)
def test_alternative_answer_is_accepted(verdicts: dict, exercise_id: str,
                                        name: str) -> None:
    passed, report = verdicts[f"{exercise_id}:{name}"]
    assert passed, report


def test_every_exercise_has_three_named_mistakes() -> None:
    from jaxcourse.exercises import get

    for exercise_id in IDS:
        exercise = get(exercise_id)  # importing needs no devices
        assert len(exercise.mistakes) >= 3 and len(exercise.hints) >= 3
        assert exercise.devices == 8 and exercise.chapter == "04_distributed_arrays"
        assert len(WRONG[exercise_id]) >= 3 and len(RIGHT[exercise_id]) >= 3


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
            check("sharding.shard_batch", sharding.shard_batch)
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
        from jaxcourse.exercises.sharding_explorer import (
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
    assert state["layout"].startswith("<pre>P(&#x27;a&#x27;, None) on the 4×2 mesh: "
                                      "4 pieces of shape (2, 8), each stored on 2 "
                                      "devices")
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
        from jaxcourse.exercises.sharding_explorer import ShardingExplorer

        e = ShardingExplorer()
        print({MARK!r} + json.dumps([e.array is None, repr(e)]))
    """)
    assert found == [True, "explorer: graded separately"]


# ---- the student notebook, and grading ---------------------------------------------

STUB = "    # YOUR CODE HERE\n    raise NotImplementedError()"


def test_student_notebook_is_stripped() -> None:
    student = nbformat.read(STUDENT, as_version=4)
    text = "\n".join(cell.source for cell in student.cells)
    assert "BEGIN SOLUTION" not in text and 'P("b", "a")' not in text
    assert text.count(STUB) == 5
    assert not any(cell.get("outputs") for cell in student.cells
                   if cell.cell_type == "code")


@pytest.mark.slow
def test_student_notebook_runs_and_reports_not_attempted(execute_notebook) -> None:
    texts = execute_notebook(STUDENT)
    for exercise_id, total in zip(IDS, (2, 4, 4, 4, 5), strict=True):
        assert f"{exercise_id}: not attempted yet (0/{total} tests)" in texts


BODIES = {
    "spec_for_target": '    return P("b", "a")',
    "shard_batch": "    return (jax.device_put(params, NamedSharding(mesh, P())),\n"
                   "            jax.device_put(batch, NamedSharding(mesh, "
                   "P('batch'))))",
    # Wrong: forgets the constraint.
    "make_hidden_layer": "    return jax.jit(lambda x, w: jax.nn.relu(x @ w))",
}


@pytest.mark.slow
def test_grading_a_submission(tmp_path: Path) -> None:
    nb = nbformat.read(STUDENT, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code" and STUB in cell.source:
            name = cell.source.split("def ", 1)[1].split("(", 1)[0]
            if name in BODIES:
                cell.source = cell.source.replace(STUB, BODIES[name])
    nbformat.write(nb, tmp_path / "alice.ipynb")
    # A fresh process, as a teacher runs it: the grader gives JAX its 8 devices.
    proc = subprocess.run(
        [sys.executable, "-m", "jaxcourse.exercises.grading",
         str(tmp_path / "alice.ipynb"), "--out", str(tmp_path / "out"),
         "--timeout", "120"],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    grades = json.loads((tmp_path / "out" / "grades.json").read_text())
    assert grades["exercises"] == IDS
    row = grades["submissions"][0]
    assert row["status"] == "graded", row
    assert row["scores"] == {
        "sharding.spec_for_target": 1.0,
        "sharding.shard_batch": 1.0,
        "sharding.shard_mlp_2d": 0.0,
        "sharding.make_hidden_layer": 0.5,
        "sharding.explicit_product": 0.0,
    }
    assert "forget the with_sharding_constraint" in " ".join(
        row["feedback"]["sharding.make_hidden_layer"])
