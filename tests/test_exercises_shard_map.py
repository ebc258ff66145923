"""Chapter 5's exercises and collective explorer, on 8 simulated CPU devices.

JAX fixes its number of devices when it starts, and this test process may
already run JAX with one device, so every check here runs in a fresh
interpreter (as in ``tests/test_exercises_sharding.py``): a script asks for 8
devices, checks realistic wrong answers (each must be rejected with a message
that names the problem) and alternative correct ones (at least three per
exercise), drives the explorer headlessly, and prints its findings as JSON for
the tests to assert on.
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
STUDENT = ROOT / "exercises" / "05_shard_map_exercises.ipynb"
IDS = ["shard_map.global_mean", "shard_map.allgather_matmul",
       "shard_map.reduce_scatter_matmul", "shard_map.ring_shift",
       "shard_map.global_positions", "shard_map.data_parallel_grads"]
TESTS = (4, 4, 4, 4, 4, 3)
MARK = "RESULT-JSON:"


def run_script(code: str, timeout: int = 600) -> dict:
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
from functools import partial

import jax.numpy as jnp
from jax.sharding import PartitionSpec as P

from solutions.shard_map import linear_loss

# -- exercise 1: global_mean
def mean_device_0(x, mesh):
    return jax.shard_map(lambda b: b.mean(), mesh=mesh, in_specs=P("i"),
                         out_specs=P(), check_vma=False)(x)

def mean_sum_of_means(x, mesh):
    return jax.shard_map(lambda b: jax.lax.psum(jnp.mean(b), "i"), mesh=mesh,
                         in_specs=P("i"), out_specs=P())(x)

def mean_of_sums(x, mesh):
    return jax.shard_map(lambda b: jax.lax.pmean(jnp.sum(b), "i"), mesh=mesh,
                         in_specs=P("i"), out_specs=P())(x)

def mean_gathered(x, mesh):
    def f(b):
        return jnp.mean(jax.lax.all_gather(b, "i", tiled=True))
    return jax.shard_map(f, mesh=mesh, in_specs=P("i"), out_specs=P(),
                         check_vma=False)(x)

def mean_unchecked_promise(x, mesh):  # out_specs=P() on a varying value
    return jax.shard_map(lambda b: b.mean(), mesh=mesh, in_specs=P("i"),
                         out_specs=P())(x)

def mean_eight_written_in(x, mesh):
    return jax.shard_map(lambda b: jax.lax.psum(b.mean(), "i") / 8, mesh=mesh,
                         in_specs=P("i"), out_specs=P())(x)

def mean_pmean_of_means(x, mesh):  # correct: equal blocks
    return jax.shard_map(lambda b: jax.lax.pmean(b.mean(), "i"), mesh=mesh,
                         in_specs=P("i"), out_specs=P())(x)

def mean_count_with_psum(x, mesh):  # correct: count the entries too
    def f(b):
        total = jax.lax.psum(jnp.sum(b), "i")
        count = jax.lax.psum(b.shape[0], "i")
        return total / count
    return jax.shard_map(f, mesh=mesh, in_specs=P("i"), out_specs=P())(x)

def mean_scaled_first(x, mesh):  # correct: divide, then add up
    n = x.shape[0]
    @partial(jax.shard_map, mesh=mesh, in_specs=P("i"), out_specs=P())
    def f(b):
        return jax.lax.psum(jnp.sum(b / n), "i")
    return jax.jit(f)(x)

# -- exercise 2: allgather_matmul
def ag_diagonal(lhs, rhs, mesh):
    def f(a, b):
        k = b.shape[0]
        i = jax.lax.axis_index("i")
        return jax.lax.dynamic_slice_in_dim(a, i * k, k, axis=1) @ b
    return jax.shard_map(f, mesh=mesh, in_specs=(P("i", None), P("i", None)),
                         out_specs=P("i", None))(lhs, rhs)

def ag_replicated_output(lhs, rhs, mesh):
    def f(a, b):
        out = a @ jax.lax.all_gather(b, "i", tiled=True)
        return jax.lax.all_gather(out, "i", tiled=True)
    return jax.shard_map(f, mesh=mesh, in_specs=(P("i", None), P("i", None)),
                         out_specs=P(), check_vma=False)(lhs, rhs)

def ag_by_psum(lhs, rhs, mesh):
    def f(a, b):
        n = jax.lax.axis_size("i")
        slots = jnp.zeros((n,) + b.shape, b.dtype).at[jax.lax.axis_index("i")].set(b)
        return a @ jax.lax.psum(slots, "i").reshape(-1, b.shape[1])
    return jax.shard_map(f, mesh=mesh, in_specs=(P("i", None), P("i", None)),
                         out_specs=P("i", None))(lhs, rhs)

def ag_columns_out(lhs, rhs, mesh):
    def f(a, b):
        return a @ jax.lax.all_gather(b, "i", tiled=True)
    return jax.shard_map(f, mesh=mesh, in_specs=(P("i", None), P("i", None)),
                         out_specs=P(None, "i"))(lhs, rhs)

def ag_not_tiled(lhs, rhs, mesh):
    def f(a, b):
        return a @ jax.lax.all_gather(b, "i")
    return jax.shard_map(f, mesh=mesh, in_specs=(P("i", None), P("i", None)),
                         out_specs=P("i", None))(lhs, rhs)

def ag_stacked_then_reshaped(lhs, rhs, mesh):  # correct
    def f(a, b):
        stacked = jax.lax.all_gather(b, "i")          # (n, k / n, f)
        return a @ stacked.reshape(-1, b.shape[1])
    return jax.shard_map(f, mesh=mesh, in_specs=(P("i", None), P("i", None)),
                         out_specs=P("i", None))(lhs, rhs)

def ag_einsum_jit(lhs, rhs, mesh):  # correct: jitted, einsum, spelled P("i")
    @jax.jit
    @partial(jax.shard_map, mesh=mesh, in_specs=(P("i"), P("i")), out_specs=P("i"))
    def f(a, b):
        full = jax.lax.all_gather(b, axis_name="i", axis=0, tiled=True)
        return jnp.einsum("mk,kf->mf", a, full)
    return f(lhs, rhs)

def ag_dot(lhs, rhs, mesh):  # correct
    gather = partial(jax.lax.all_gather, axis_name="i", tiled=True)
    return jax.shard_map(lambda a, b: jnp.dot(a, gather(b)), mesh=mesh,
                         in_specs=(P("i", None), P("i", None)),
                         out_specs=P("i", None))(lhs, rhs)

# -- exercise 3: reduce_scatter_matmul
def rs_unsummed(lhs, rhs, mesh):
    def f(a, b):
        part = a @ b
        rows = part.shape[0] // jax.lax.axis_size("i")
        return jax.lax.dynamic_slice_in_dim(part, jax.lax.axis_index("i") * rows, rows)
    return jax.shard_map(f, mesh=mesh, in_specs=(P(None, "i"), P("i", None)),
                         out_specs=P("i", None))(lhs, rhs)

def rs_psum_replicated(lhs, rhs, mesh):
    return jax.shard_map(lambda a, b: jax.lax.psum(a @ b, "i"), mesh=mesh,
                         in_specs=(P(None, "i"), P("i", None)),
                         out_specs=P())(lhs, rhs)

def rs_psum_then_slice(lhs, rhs, mesh):
    def f(a, b):
        total = jax.lax.psum(a @ b, "i")
        rows = total.shape[0] // jax.lax.axis_size("i")
        return jax.lax.dynamic_slice_in_dim(total, jax.lax.axis_index("i") * rows, rows)
    return jax.shard_map(f, mesh=mesh, in_specs=(P(None, "i"), P("i", None)),
                         out_specs=P("i", None))(lhs, rhs)

def rs_columns(lhs, rhs, mesh):
    def f(a, b):
        return jax.lax.psum_scatter(a @ b, "i", scatter_dimension=1, tiled=True)
    return jax.shard_map(f, mesh=mesh, in_specs=(P(None, "i"), P("i", None)),
                         out_specs=P(None, "i"))(lhs, rhs)

def rs_default_dimension(lhs, rhs, mesh):  # correct
    return jax.shard_map(lambda a, b: jax.lax.psum_scatter(a @ b, "i", tiled=True),
                         mesh=mesh, in_specs=(P(None, "i"), P("i", None)),
                         out_specs=P("i", None))(lhs, rhs)

def rs_untiled(lhs, rhs, mesh):  # correct: cut the rows into n pieces first
    def f(a, b):
        part = jnp.matmul(a, b)
        n = jax.lax.axis_size("i")
        return jax.lax.psum_scatter(part.reshape(n, -1, part.shape[1]), "i")
    return jax.shard_map(f, mesh=mesh, in_specs=(P(None, "i"), P("i", None)),
                         out_specs=P("i", None))(lhs, rhs)

def rs_decorated(lhs, rhs, mesh):  # correct
    @jax.jit
    @partial(jax.shard_map, mesh=mesh, in_specs=(P(None, "i"), P("i")),
             out_specs=P("i"))
    def f(a, b):
        return jax.lax.psum_scatter(jnp.dot(a, b), axis_name="i",
                                    scatter_dimension=0, tiled=True)
    return f(lhs, rhs)

# -- exercise 4: ring_shift
def _ring(pairs_for):
    def shift(x, mesh):
        n = mesh.shape["i"]
        return jax.shard_map(lambda b: jax.lax.ppermute(b, "i", pairs_for(n)),
                             mesh=mesh, in_specs=P("i", None),
                             out_specs=P("i", None))(x)
    return shift

ring_backwards = _ring(lambda n: [(d, (d - 1) % n) for d in range(n)])
ring_no_wrap = _ring(lambda n: [(d, d + 1) for d in range(n - 1)])
ring_eight_written_in = _ring(lambda n: [(d, (d + 1) % 8) for d in range(8)])

def ring_by_gather(x, mesh):
    def f(b):
        everything = jax.lax.all_gather(b, "i")
        return everything[(jax.lax.axis_index("i") - 1) % everything.shape[0]]
    return jax.shard_map(f, mesh=mesh, in_specs=P("i", None),
                         out_specs=P("i", None))(x)

def ring_roll_rows(x, mesh):
    return jax.shard_map(lambda b: jnp.roll(b, 1, axis=0), mesh=mesh,
                         in_specs=P("i", None), out_specs=P("i", None))(x)

def ring_axis_size(x, mesh):  # correct: the size from inside
    def f(b):
        n = jax.lax.axis_size("i")
        return jax.lax.ppermute(b, "i", perm=[(j, (j + 1) % n) for j in range(n)])
    return jax.shard_map(f, mesh=mesh, in_specs=P("i", None),
                         out_specs=P("i", None))(x)

def ring_zip(x, mesh):  # correct: pairs from two ranges
    n = mesh.devices.size
    pairs = list(zip(range(n), [*range(1, n), 0]))
    return jax.jit(jax.shard_map(lambda b: jax.lax.ppermute(b, "i", pairs),
                                 mesh=mesh, in_specs=P("i"), out_specs=P("i")))(x)

def ring_from_mesh_shape(x, mesh):  # correct
    (n,) = mesh.devices.shape
    perm = [(src, (src + 1) % n) for src in range(n)]
    @partial(jax.shard_map, mesh=mesh, in_specs=P("i", None), out_specs=P("i", None))
    def f(block):
        return jax.lax.ppermute(block, axis_name="i", perm=perm)
    return f(x)

# -- exercise 5: global_positions
def _positions(offset, dtype=jnp.int32):
    def positions(x, mesh):
        def f(b):
            k = b.shape[0]
            return offset(jax.lax.axis_index("i"), k, x.size) + jnp.arange(k,
                                                                           dtype=dtype)
        return jax.shard_map(f, mesh=mesh, in_specs=P("i"), out_specs=P("i"))(x)
    return positions

pos_from_zero = _positions(lambda i, k, total: 0)
pos_plus_index = _positions(lambda i, k, total: i)
pos_times_total = _positions(lambda i, k, total: i * total)
pos_float = _positions(lambda i, k, total: i * k, dtype=jnp.float32)

def pos_on_one_device(x, mesh):
    return jnp.arange(x.shape[0], dtype=jnp.int32)

def pos_iota(x, mesh):  # correct: lax.iota and block.size
    def f(b):
        return jax.lax.axis_index("i") * b.size + jax.lax.iota(jnp.int32, b.size)
    return jax.shard_map(f, mesh=mesh, in_specs=P("i"), out_specs=P("i"))(x)

def pos_from_axis_size(x, mesh):  # correct: block length from the global size
    def f(b):
        k = x.shape[0] // jax.lax.axis_size("i")
        return (jnp.arange(k) + k * jax.lax.axis_index("i")).astype(jnp.int32)
    return jax.jit(jax.shard_map(f, mesh=mesh, in_specs=P("i"), out_specs=P("i")))(x)

def pos_cumsum(x, mesh):  # correct
    def f(b):
        start = jax.lax.axis_index("i") * b.shape[0]
        return start + jnp.cumsum(jnp.ones_like(b, dtype=jnp.int32)) - 1
    return jax.shard_map(f, mesh=mesh, in_specs=P("i"), out_specs=P("i"))(x)

# -- exercise 6: data_parallel_grads
SPECS = dict(in_specs=(P(), P("batch"), P("batch")), out_specs=P())

def _grads(combine, check_vma=True):
    def grads(params, inputs, targets, mesh):
        def f(p, x, y):
            return combine(jax.grad(linear_loss)(p, x, y))
        return jax.shard_map(f, mesh=mesh, check_vma=check_vma, **SPECS)(
            params, inputs, targets)
    return grads

grads_pmap_recipe = _grads(lambda g: jax.lax.pmean(g, "batch"))
grads_psum_recipe = _grads(lambda g: jax.lax.psum(g, "batch"))
grads_device_0 = _grads(lambda g: g, check_vma=False)
grads_unchecked_pmean = _grads(lambda g: jax.lax.pmean(g, "batch"),
                               check_vma=False)  # correct: pmap's convention

def grads_of_summed_loss(params, inputs, targets, mesh):
    def f(p, x, y):
        return jax.grad(lambda q: jax.lax.psum(linear_loss(q, x, y), "batch"))(p)
    return jax.shard_map(f, mesh=mesh, **SPECS)(params, inputs, targets)

def grads_divided(params, inputs, targets, mesh):  # correct: undo the sum
    def f(p, x, y):
        n = jax.lax.axis_size("batch")
        return jax.tree.map(lambda g: g / n, jax.grad(linear_loss)(p, x, y))
    return jax.shard_map(f, mesh=mesh, **SPECS)(params, inputs, targets)

def grads_value_and_grad(params, inputs, targets, mesh):  # correct
    @jax.jit
    @partial(jax.shard_map, mesh=mesh, **SPECS)
    def f(p, x, y):
        def loss(q):
            return jax.lax.pmean(linear_loss(q, x, y), axis_name="batch")
        return jax.value_and_grad(loss)(p)[1]
    return f(params, inputs, targets)

def grads_compiler(params, inputs, targets, mesh):  # correct: jit does it all
    return jax.jit(jax.grad(linear_loss))(params, inputs, targets)
'''

WRONG = {
    "shard_map.global_mean": [
        ("mean_device_0", "mean of device 0's block only"),
        ("mean_sum_of_means", "(number of devices) times the mean"),
        ("mean_of_sums", "divide the total by the number of entries"),
        ("mean_gathered", "gathered all of x onto every device"),
        ("mean_unchecked_promise", "out_specs which require replication"),
        ("mean_eight_written_in", "✗ values on a mesh of 4 devices"),
    ],
    "shard_map.allgather_matmul": [
        ("ag_diagonal", "gather all of rhs first"),
        ("ag_replicated_output", "the output is replicated"),
        ("ag_by_psum", "assembled rhs with a psum"),
        ("ag_columns_out", "along the columns"),
        ("ag_not_tiled", "raised"),
    ],
    "shard_map.reduce_scatter_matmul": [
        ("rs_unsummed", "partial products of all devices must be summed"),
        ("rs_psum_replicated", "psum leaves the whole sum on every device"),
        ("rs_psum_then_slice", "psum then slicing"),
        ("rs_columns", "split by columns"),
    ],
    "shard_map.ring_shift": [
        ("ring_backwards", "went to the previous device"),
        ("ring_no_wrap", "device 0 received nothing"),
        ("ring_by_gather", "gathered every block onto every device"),
        ("ring_roll_rows", "rolled the rows inside each device's block"),
        ("ring_eight_written_in", "✗ values on a mesh of 4 devices"),
    ],
    "shard_map.global_positions": [
        ("pos_from_zero", "every device counted from 0"),
        ("pos_plus_index", "you added the device's index"),
        ("pos_times_total", "uses the length of all of x"),
        ("pos_on_one_device", "computed on one device"),
        ("pos_float", "float32"),
    ],
    "shard_map.data_parallel_grads": [
        ("grads_pmap_recipe", "(number of devices) times too large"),
        ("grads_psum_recipe", "(number of devices)² times too large"),
        ("grads_device_0", "device 0's gradient"),
        ("grads_of_summed_loss", "(number of devices) times too large"),
    ],
}
RIGHT = {
    "shard_map.global_mean": ["mean_pmean_of_means", "mean_count_with_psum",
                              "mean_scaled_first"],
    "shard_map.allgather_matmul": ["ag_stacked_then_reshaped", "ag_einsum_jit",
                                   "ag_dot"],
    "shard_map.reduce_scatter_matmul": ["rs_default_dimension", "rs_untiled",
                                        "rs_decorated"],
    "shard_map.ring_shift": ["ring_axis_size", "ring_zip", "ring_from_mesh_shape"],
    "shard_map.global_positions": ["pos_iota", "pos_from_axis_size", "pos_cumsum"],
    "shard_map.data_parallel_grads": ["grads_unchecked_pmean", "grads_divided",
                                      "grads_value_and_grad", "grads_compiler"],
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


def test_every_exercise_is_complete() -> None:
    from jaxcourse.exercises import get

    for exercise_id, total in zip(IDS, TESTS, strict=True):
        exercise = get(exercise_id)  # importing needs no devices
        assert len(exercise.mistakes) >= 3 and len(exercise.hints) >= 3
        assert exercise.devices == 8 and exercise.chapter == "05_shard_map"
        assert len(exercise.cases) == total
        assert len(WRONG[exercise_id]) >= 3 and len(RIGHT[exercise_id]) >= 3
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
        from jaxcourse.exercises.explorers_shard_map import (
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
        "each device sends about 24 bytes (1.5 blocks, ring algorithm)",
    ]
    assert lines[4] == "device 0: [0, 1, 2, 3] -> [24, 28, 32, 36]"
    assert state["png"] > 1000 and state["html"].startswith("<pre>")
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
        from jaxcourse.exercises.explorers_shard_map import CollectiveExplorer

        e = CollectiveExplorer()
        print({MARK!r} + json.dumps([e.summary_text, repr(e)]))
    """)
    assert found == ["", "explorer: graded separately"]


# ---- the student notebook, and grading ---------------------------------------------

STUB = "    # YOUR CODE HERE\n    raise NotImplementedError()"


def test_student_notebook_is_stripped() -> None:
    student = nbformat.read(STUDENT, as_version=4)
    text = "\n".join(cell.source for cell in student.cells)
    assert "BEGIN SOLUTION" not in text and "psum_scatter(partial" not in text
    assert text.count(STUB) == len(IDS)
    assert not any(cell.get("outputs") for cell in student.cells
                   if cell.cell_type == "code")


@pytest.mark.slow
def test_student_notebook_runs_and_reports_not_attempted(execute_notebook) -> None:
    texts = execute_notebook(STUDENT)
    for exercise_id, total in zip(IDS, TESTS, strict=True):
        assert f"{exercise_id}: not attempted yet (0/{total} tests)" in texts


BODIES = {
    "global_mean": "    return jax.shard_map(lambda b: jax.lax.pmean(b.mean(), 'i'), "
                   "mesh=mesh, in_specs=P('i'), out_specs=P())(x)",
    # Wrong: the pmap recipe, 8 (or 4) times too large; the layout is right.
    "data_parallel_grads": "    return jax.shard_map(lambda p, x, y: jax.lax.pmean("
                           "jax.grad(linear_loss)(p, x, y), 'batch'), mesh=mesh, "
                           "in_specs=(P(), P('batch'), P('batch')), "
                           "out_specs=P())(params, inputs, targets)",
}


@pytest.mark.slow
def test_grading_a_submission(tmp_path: Path) -> None:
    nb = nbformat.read(STUDENT, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code" and STUB in cell.source:
            name = cell.source.split("def ", 1)[1].split("(", 1)[0]
            if name in BODIES:
                cell.source = cell.source.replace(STUB, BODIES[name])
    nbformat.write(nb, tmp_path / "bob.ipynb")
    # A fresh process, as a teacher runs it: the grader gives JAX its 8 devices.
    proc = subprocess.run(
        [sys.executable, "-m", "jaxcourse.exercises.grading",
         str(tmp_path / "bob.ipynb"), "--out", str(tmp_path / "out"),
         "--timeout", "240"],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    grades = json.loads((tmp_path / "out" / "grades.json").read_text())
    assert grades["exercises"] == IDS
    row = grades["submissions"][0]
    assert row["status"] == "graded", row
    assert row["scores"] == {
        "shard_map.global_mean": 1.0,
        "shard_map.allgather_matmul": 0.0,
        "shard_map.reduce_scatter_matmul": 0.0,
        "shard_map.ring_shift": 0.0,
        "shard_map.global_positions": 0.0,
        "shard_map.data_parallel_grads": round(1 / 3, 4),
    }
    assert "already summed over the devices" in " ".join(
        row["feedback"]["shard_map.data_parallel_grads"])
