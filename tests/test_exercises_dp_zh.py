"""Chapter 7's exercises (Traditional Chinese): wrong answers are rejected with a
message that names the problem, alternative answers are accepted, every text a
learner reads is Chinese, the explorer works headlessly, and the student
notebook and the grader run on 8 devices.

Three exercises need 8 devices, and JAX in this process may already have
started with one (other tests ran first). Their checks therefore run in a
fresh interpreter that calls ``use_cpu_devices(8)`` first, imports this very
module for its answer functions, and prints the results as JSON
(:func:`run_in_8_devices`); the tests assert on that output. The exercises
that need no devices are checked here directly.
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import nbformat
import numpy as np
import pytest
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from jaxcourse.exercises import check, get
from solutions.dp_zh import data_mesh, loss_fn

ROOT = Path(__file__).resolve().parents[1]
STUDENT = ROOT / "exercises" / "07_zh_data_parallel_exercises.ipynb"
MASTER = ROOT / "solutions" / "07_zh_data_parallel_exercises.ipynb"
IDS = ["dp_zh.global_normalize", "dp_zh.split_for_devices", "dp_zh.replicate",
       "dp_zh.pmap_step", "dp_zh.data_parallel_grads", "dp_zh.shard_map_normalize"]
NEEDS_8 = {"dp_zh.global_normalize", "dp_zh.pmap_step", "dp_zh.data_parallel_grads",
           "dp_zh.shard_map_normalize"}
CJK = re.compile(r"[\u4e00-\u9fff]")

# ---- answers: 1. global_normalize ----------------------------------------------------


def _nested(per_element, outer="i", inner="j"):
    def global_normalize(grid):
        return jax.pmap(jax.vmap(per_element, axis_name=inner),
                        axis_name=outer)(grid)

    return global_normalize


normalize_rows_only = _nested(lambda x: x / lax.psum(x, "j"))
normalize_columns_only = _nested(lambda x: x / lax.psum(x, "i"))
normalize_jnp_sum = _nested(lambda x: x / jnp.sum(x))
normalize_pmean = _nested(lambda x: x / lax.pmean(x, ("i", "j")))


def normalize_without_pmap(grid):
    return grid / grid.sum()


def normalize_python_loop(grid):
    total = sum(float(v) for v in np.asarray(grid).ravel())
    return jnp.asarray(grid) / total


normalize_two_psums = _nested(lambda x: x / lax.psum(lax.psum(x, "j"), "i"))
normalize_swapped_names = _nested(lambda x: x / lax.psum(x, ("j", "i")),
                                  outer="j", inner="i")


def normalize_seed_axis_names(grid):
    # The seed's idea (psum over the axis names ('p', 'v')), inside the maps it
    # needs: its own names, single quotes, and the sum computed before dividing.
    def per_element(x):
        total_sum = jax.lax.psum(x, axis_name=('p', 'v'))
        return x / total_sum

    return jax.pmap(jax.vmap(per_element, axis_name='v'), axis_name='p')(grid)


def normalize_row_sums_then_psum(grid):
    # 每臺裝置先在自己那一列上求和（一般的 jnp.sum），再跨裝置 psum。
    def per_device(row):
        return row / lax.psum(jnp.sum(row), "i")

    return jax.pmap(per_device, axis_name="i")(grid)


# ---- 2. split_for_devices ------------------------------------------------------------


def split_swapped(array, num_devices):
    return array.reshape(array.shape[0] // num_devices, num_devices, *array.shape[1:])


def split_strided(array, num_devices):
    grouped = array.reshape(array.shape[0] // num_devices, num_devices,
                            *array.shape[1:])
    return jnp.swapaxes(grouped, 0, 1)


def split_flattened(array, num_devices):
    return array.reshape(num_devices, -1)


def split_hard_coded(array, num_devices):
    return array.reshape(8, 32, *array.shape[1:])


def split_minus_one(array, num_devices):
    return array.reshape(num_devices, -1, *array.shape[1:])


def split_np_split(array, num_devices):
    return jnp.stack(jnp.split(jnp.asarray(array), num_devices))


def split_stack_slices(array, num_devices):
    size = array.shape[0] // num_devices
    return jnp.stack([array[k * size:(k + 1) * size] for k in range(num_devices)])


# ---- 3. replicate --------------------------------------------------------------------


def replicate_last_axis(tree, num_devices):
    return jax.tree.map(lambda a: jnp.stack([a] * num_devices, axis=-1), tree)


def replicate_tile(tree, num_devices):
    return jax.tree.map(lambda a: jnp.tile(a, num_devices), tree)


def replicate_one_copy(tree, num_devices):
    return jax.tree.map(lambda a: jnp.asarray(a)[None], tree)


def replicate_not_a_tree(tree, num_devices):
    return jnp.broadcast_to(tree, (num_devices, *jnp.shape(tree)))


def replicate_float32(tree, num_devices):
    return jax.tree.map(
        lambda a: jnp.broadcast_to(jnp.asarray(a, jnp.float32),
                                   (num_devices, *jnp.shape(a))), tree)


def replicate_stack(tree, num_devices):
    return jax.tree.map(lambda a: jnp.stack([a] * num_devices), tree)


def replicate_zeros_plus(tree, num_devices):
    def copies(a):
        a = jnp.asarray(a)
        return jnp.zeros((num_devices, *a.shape), a.dtype) + a

    return jax.tree_util.tree_map(copies, tree)


def replicate_repeat(tree, num_devices):
    return jax.tree.map(lambda a: jnp.repeat(jnp.asarray(a)[None], num_devices, 0),
                        tree)


# ---- 4. pmap_step --------------------------------------------------------------------


def _step(reduce_grads, reduce_loss=True, sign=1.0):
    @functools.partial(jax.pmap, axis_name="batch", in_axes=(0, 0, 0, None))
    def pmap_step(params, images, labels, step_size):
        loss, grads = jax.value_and_grad(loss_fn)(params, images, labels)
        grads = reduce_grads(grads)
        if reduce_loss:
            loss = lax.pmean(loss, "batch")
        new = jax.tree.map(lambda p, g: p - sign * step_size * g, params, grads)
        return new, loss

    return pmap_step


step_psum = _step(lambda g: lax.psum(g, "batch"))
step_no_collective = _step(lambda g: g)
step_loss_not_averaged = _step(lambda g: lax.pmean(g, "batch"), reduce_loss=False)
step_ascent = _step(lambda g: lax.pmean(g, "batch"), sign=-1.0)
step_psum_over_n = _step(
    lambda g: jax.tree.map(lambda x: lax.psum(x, "batch") / lax.psum(1, "batch"), g))


@functools.partial(jax.pmap, axis_name="batch", in_axes=(0, 0, 0, None))
def step_grad_of_pmean_loss(params, images, labels, step_size):
    # shard_map 的寫法搬進 pmap：pmap 不追蹤複製的值，這樣得到的仍是區域梯度。
    def global_loss(p):
        return lax.pmean(loss_fn(p, images, labels), "batch")

    loss, grads = jax.value_and_grad(global_loss)(params)
    return jax.tree.map(lambda p, g: p - step_size * g, params, grads), loss


@functools.partial(jax.pmap, axis_name="batch", in_axes=(0, 0, 0, None))
def step_separate_grad(params, images, labels, step_size):
    grads = lax.pmean(jax.grad(loss_fn)(params, images, labels), "batch")
    loss = lax.pmean(loss_fn(params, images, labels), "batch")
    new_params = jax.tree_util.tree_map(lambda p, g: p - g * step_size, params, grads)
    return new_params, loss


@functools.partial(jax.pmap, axis_name="batch", in_axes=(0, 0, 0, None))
def step_optax_sgd(params, images, labels, step_size):
    import optax

    loss, grads = jax.value_and_grad(loss_fn)(params, images, labels)
    grads, loss = lax.pmean((grads, loss), "batch")
    optimizer = optax.sgd(step_size)
    updates, _ = optimizer.update(grads, optimizer.init(params), params)
    return optax.apply_updates(params, updates), loss


# ---- 5. data_parallel_grads ----------------------------------------------------------


def _in_shard_map(per_device):
    def data_parallel_grads(params, images, labels):
        return jax.jit(jax.shard_map(
            per_device, mesh=data_mesh(), in_specs=(P(), P("batch"), P("batch")),
            out_specs=P(),
        ))(params, images, labels)

    return data_parallel_grads


grads_pmean_local = _in_shard_map(
    lambda p, x, y: lax.pmean(jax.grad(loss_fn)(p, x, y), "batch"))
grads_psum_local = _in_shard_map(
    lambda p, x, y: lax.psum(jax.grad(loss_fn)(p, x, y), "batch"))
grads_local_only = _in_shard_map(lambda p, x, y: jax.grad(loss_fn)(p, x, y))


def grads_one_device(params, images, labels):
    return jax.grad(loss_fn)(params, images, labels)


def grads_sharded_jit(params, images, labels):
    mesh = data_mesh()
    data = NamedSharding(mesh, P("batch"))
    images, labels = jax.device_put((images, labels), data)
    params = jax.device_put(params, NamedSharding(mesh, P()))
    return jax.jit(jax.grad(loss_fn), out_shardings=NamedSharding(mesh, P()))(
        params, images, labels)


grads_local_over_n = _in_shard_map(
    lambda p, x, y: jax.tree.map(lambda g: g / 8, jax.grad(loss_fn)(p, x, y)))


def grads_value_and_grad(params, images, labels):
    @functools.partial(jax.shard_map, mesh=data_mesh(),
                       in_specs=(P(), P("batch"), P("batch")), out_specs=P())
    def per_device(params, images, labels):
        def global_loss(p):
            return lax.pmean(loss_fn(p, images, labels), "batch")

        return jax.value_and_grad(global_loss)(params)[1]

    return jax.jit(per_device)(params, images, labels)


# ---- answers: 6. shard_map_normalize ------------------------------------------------


BLOCKS = P("i", "j")


def _per_block(per_block, out_specs=BLOCKS, check_vma=True):
    def shard_map_normalize(grid, mesh):
        return jax.jit(jax.shard_map(per_block, mesh=mesh, in_specs=P("i", "j"),
                                     out_specs=out_specs, check_vma=check_vma))(grid)

    return shard_map_normalize


blocks_over_i_only = _per_block(lambda b: b / lax.psum(jnp.sum(b), "i"))
blocks_over_j_only = _per_block(lambda b: b / lax.psum(jnp.sum(b), "j"))
blocks_own_sum = _per_block(lambda b: b / jnp.sum(b))
blocks_elementwise_psum = _per_block(lambda b: b / lax.psum(b, ("i", "j")))
blocks_pmean = _per_block(lambda b: b / lax.pmean(jnp.sum(b), ("i", "j")))
# Promises a replicated result that is not: with the check off, device 0's block.
blocks_unchecked_replicated = _per_block(
    lambda b: b / lax.psum(jnp.sum(b), ("i", "j")), out_specs=P(), check_vma=False)


def blocks_own_mesh(grid, mesh):
    # A mesh written in (always 4 x 2) instead of the one given.
    own = jax.make_mesh((4, 2), ("i", "j"),
                        axis_types=(jax.sharding.AxisType.Explicit,) * 2)
    return _per_block(lambda b: b / lax.psum(jnp.sum(b), ("i", "j")))(
        jax.device_put(np.asarray(grid), NamedSharding(own, P("i", "j"))), own)


blocks_two_psums = _per_block(lambda b: b / lax.psum(lax.psum(jnp.sum(b), "i"), "j"))
blocks_swapped_names = _per_block(lambda b: b / lax.psum(jnp.sum(b), ("j", "i")))
blocks_pmean_times_size = _per_block(
    lambda b: b / (lax.pmean(jnp.sum(b), ("i", "j"))
                   * lax.axis_size("i") * lax.axis_size("j")))


def blocks_set_mesh(grid, mesh):
    # The docs' style: the mesh in context instead of mesh=.
    @jax.shard_map(in_specs=P("i", "j"), out_specs=P("i", "j"))
    def normalize(block):
        total = lax.psum(block.sum(), axis_name=("i", "j"))
        return block / total

    with jax.set_mesh(mesh):
        return jax.jit(normalize)(grid)


def blocks_sharded_jit(grid, mesh):
    # No shard_map: the compiler partitions the sum; same values and layout.
    return jax.jit(lambda g: g / jnp.sum(g))(grid)


WRONG = [
    ("dp_zh.global_normalize", "normalize_rows_only", "每一列各自正規化"),
    ("dp_zh.global_normalize", "normalize_columns_only", "只跨外層的 \"i\" 求和"),
    ("dp_zh.global_normalize", "normalize_jnp_sum", "每個數都只除以了自己"),
    ("dp_zh.global_normalize", "normalize_pmean", "lax.pmean 是平均，不是總和"),
    ("dp_zh.global_normalize", "normalize_without_pmap", "結果只在 1 臺裝置上"),
    ("dp_zh.global_normalize", "normalize_python_loop", "結果只在 1 臺裝置上"),
    ("dp_zh.split_for_devices", "split_swapped", "軸的順序反了"),
    ("dp_zh.split_for_devices", "split_strided", "間隔取樣的列"),
    ("dp_zh.split_for_devices", "split_flattened", "後面的軸被攤平了"),
    ("dp_zh.split_for_devices", "split_hard_coded", "拋出 TypeError"),
    ("dp_zh.replicate", "replicate_last_axis", "裝置軸要加在最前面"),
    ("dp_zh.replicate", "replicate_tile", "jnp.tile 沿最後一軸重複"),
    ("dp_zh.replicate", "replicate_one_copy", "只加了一個長度為 1 的軸"),
    ("dp_zh.replicate", "replicate_not_a_tree", "拋出"),
    ("dp_zh.replicate", "replicate_float32", "資料型別錯誤：預期 int32，得到 float32"),
    ("dp_zh.pmap_step", "step_psum", "正確的 8 倍"),
    ("dp_zh.pmap_step", "step_no_collective", "各裝置的參數不一樣了"),
    ("dp_zh.pmap_step", "step_grad_of_pmean_loss", "各裝置的參數不一樣了"),
    ("dp_zh.pmap_step", "step_loss_not_averaged", "損失也要 lax.pmean"),
    ("dp_zh.pmap_step", "step_ascent", "要減去梯度"),
    ("dp_zh.data_parallel_grads", "grads_pmean_local", "梯度是正確值的 8 倍"),
    ("dp_zh.data_parallel_grads", "grads_local_only", "梯度是正確值的 8 倍"),
    ("dp_zh.data_parallel_grads", "grads_psum_local", "梯度是正確值的 64 倍"),
    ("dp_zh.data_parallel_grads", "grads_one_device", "梯度只在 1 臺裝置上算"),
    ("dp_zh.shard_map_normalize", "blocks_over_i_only", "只跨 \"i\" 求和"),
    ("dp_zh.shard_map_normalize", "blocks_over_j_only", "只跨 \"j\" 求和"),
    ("dp_zh.shard_map_normalize", "blocks_own_sum", "每一塊只除以自己的總和"),
    ("dp_zh.shard_map_normalize", "blocks_elementwise_psum", "同一位置的元素"),
    ("dp_zh.shard_map_normalize", "blocks_pmean", "lax.pmean 是平均"),
    ("dp_zh.shard_map_normalize", "blocks_unchecked_replicated", "形狀錯誤"),
    ("dp_zh.shard_map_normalize", "blocks_own_mesh", "每臺裝置拿到的那一塊"),
]

RIGHT = [
    ("dp_zh.global_normalize", "normalize_two_psums"),
    ("dp_zh.global_normalize", "normalize_swapped_names"),
    ("dp_zh.global_normalize", "normalize_row_sums_then_psum"),
    ("dp_zh.global_normalize", "normalize_seed_axis_names"),
    ("dp_zh.split_for_devices", "split_minus_one"),
    ("dp_zh.split_for_devices", "split_stack_slices"),
    ("dp_zh.split_for_devices", "split_np_split"),
    ("dp_zh.replicate", "replicate_stack"),
    ("dp_zh.replicate", "replicate_repeat"),
    ("dp_zh.replicate", "replicate_zeros_plus"),
    ("dp_zh.pmap_step", "step_psum_over_n"),
    ("dp_zh.pmap_step", "step_optax_sgd"),
    ("dp_zh.pmap_step", "step_separate_grad"),
    ("dp_zh.data_parallel_grads", "grads_sharded_jit"),
    ("dp_zh.data_parallel_grads", "grads_local_over_n"),
    ("dp_zh.data_parallel_grads", "grads_value_and_grad"),
    ("dp_zh.shard_map_normalize", "blocks_two_psums"),
    ("dp_zh.shard_map_normalize", "blocks_swapped_names"),
    ("dp_zh.shard_map_normalize", "blocks_pmean_times_size"),
    ("dp_zh.shard_map_normalize", "blocks_set_mesh"),
    ("dp_zh.shard_map_normalize", "blocks_sharded_jit"),
]


# ---- running the 8-device checks in a fresh interpreter -----------------------------

_CHILD = """
import json, sys
import jax
from jaxcourse.devices import use_cpu_devices
use_cpu_devices(8)
sys.path.insert(0, {tests!r})
import test_exercises_dp_zh as t
print("JSON:" + json.dumps(t.checks_on_8_devices()))
"""


def run_in_8_devices(code: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter (JAX starts there, with 8 devices)."""
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=ROOT)


def checks_on_8_devices() -> dict:
    """Check every 8-device answer and drive the explorer (run in the child)."""
    from jaxcourse.exercises.explorers_zh import AXES_CHOICES, DataParallelExplorer

    module = sys.modules[__name__]
    out: dict = {"devices": jax.device_count(), "checks": {}}
    answers = [(e, n) for e, n, _ in WRONG] + list(RIGHT)
    answers += [(e, f"reference:{e}") for e in sorted(NEEDS_8)]
    for exercise_id, name in answers:
        if exercise_id not in NEEDS_8:
            continue
        function = get(exercise_id).reference if name.startswith("reference:") \
            else getattr(module, name)
        result = check(exercise_id, function)
        out["checks"][f"{exercise_id}/{name}"] = {
            "status": result.status, "score": result.score,
            "messages": result.messages, "summary": result.summary(),
        }
    explorer = DataParallelExplorer()
    first = explorer.exploration
    states = {"initial": [first.num_devices, first.per_device, first.total,
                          first.result_devices, explorer.status.value,
                          explorer.image.value[:4].hex()]}
    explorer.num_devices.value = 3
    explorer.per_device.value = 5
    for label, axes in AXES_CHOICES.items():
        explorer.axes.value = label
        e = explorer.exploration
        states[str(axes)] = [e.global_batch, list(e.shard_shape),
                             [round(float(s), 4) for s in e.row_sums],
                             round(e.total, 4), e.result_devices,
                             explorer.status.value]
    out["explorer"] = states
    return out


@pytest.fixture(scope="module")
def eight() -> dict:
    proc = run_in_8_devices(_CHILD.format(tests=str(Path(__file__).parent)))
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("JSON:"))
    return json.loads(line[len("JSON:"):])


def _result(eight: dict, exercise_id: str, name: str) -> dict:
    if exercise_id in NEEDS_8:
        return eight["checks"][f"{exercise_id}/{name}"]
    result = check(exercise_id, globals()[name])
    return {"status": result.status, "score": result.score,
            "messages": result.messages, "summary": result.summary()}


@pytest.mark.parametrize(("exercise_id", "name", "fragment"), WRONG,
                         ids=[f"{e}-{n}" for e, n, _ in WRONG])
def test_wrong_answer_is_rejected_and_named(request, exercise_id, name,
                                            fragment) -> None:
    eight = request.getfixturevalue("eight") if exercise_id in NEEDS_8 else {}
    result = _result(eight, exercise_id, name)
    assert result["status"] == "failed" and result["score"] < 1.0
    text = " | ".join(result["messages"])
    assert fragment in text, text


@pytest.mark.parametrize(("exercise_id", "name"), RIGHT,
                         ids=[f"{e}-{n}" for e, n in RIGHT])
def test_alternative_correct_answer_is_accepted(request, exercise_id, name) -> None:
    eight = request.getfixturevalue("eight") if exercise_id in NEEDS_8 else {}
    result = _result(eight, exercise_id, name)
    assert result["status"] == "passed", "\n".join(result["messages"])


@pytest.mark.parametrize("exercise_id", IDS)
def test_reference_passes_its_own_check(request, exercise_id) -> None:
    if exercise_id in NEEDS_8:
        result = request.getfixturevalue("eight")["checks"][
            f"{exercise_id}/reference:{exercise_id}"]
        assert result["status"] == "passed", result["messages"]
        assert result["summary"].endswith("項測試通過")
    else:
        assert check(exercise_id, get(exercise_id).reference).passed


def test_every_exercise_has_three_wrong_answers_and_an_alternative() -> None:
    from collections import Counter

    wrong = Counter(e for e, _, _ in WRONG)
    right = Counter(e for e, _ in RIGHT)
    assert set(wrong) == set(right) == set(IDS)
    assert min(wrong.values()) >= 3
    assert min(right.values()) >= 3


def _normalized(code: str) -> str:
    return re.sub(r"\s+", "", code).replace("'", '"').replace('\\"', '"')


def _statements(function) -> list[str]:
    """Every statement of ``function``'s body (nested ones too), normalized."""
    import ast
    import inspect

    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and not isinstance(
                node, (ast.FunctionDef, ast.ClassDef)):
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
                continue  # a docstring
            # Four expression nodes or more: `return new_params, loss` (three)
            # is what the exercise's text asks for, not its solution.
            if sum(isinstance(n, ast.expr) for n in ast.walk(node)) < 4:
                continue
            out.append(_normalized(ast.unparse(node)))
            if isinstance(node, (ast.Return, ast.Assign)) and node.value is not None:
                out.append(_normalized(ast.unparse(node.value)))
    return out


@pytest.mark.parametrize("exercise_id", IDS)
def test_no_hint_states_the_reference_solution(exercise_id) -> None:
    # The hints lead; the Show-solution button gives the answer.
    exercise = get(exercise_id)
    statements = _statements(exercise.reference)
    assert statements
    for hint in exercise.hints:
        text = _normalized(hint)
        assert not [s for s in statements if s in text], hint


def test_eight_device_exercises_declare_their_devices() -> None:
    for exercise_id in IDS:
        assert get(exercise_id).devices == (8 if exercise_id in NEEDS_8 else 1)


# ---- everything a learner reads is Chinese -----------------------------------------


@pytest.mark.parametrize("exercise_id", IDS)
def test_texts_are_traditional_chinese(exercise_id) -> None:
    exercise = get(exercise_id)
    assert exercise.language == "zh-Hant"
    assert exercise.chapter == "07_zh_data_parallel"
    texts = [exercise.title, *exercise.hints, *(m.message for m in exercise.mistakes),
             *(c.description for c in exercise.cases)]
    assert all(CJK.search(t) for t in texts), [t for t in texts if not CJK.search(t)]
    # Simplified forms that must not appear in Taiwan usage.
    simplified = "设备数据并参调试与为这个练习维轴组"
    assert not [t for t in texts if any(ch in t for ch in simplified)]


def test_panel_and_feedback_are_chinese() -> None:
    from jaxcourse.exercises.widgets import CheckPanel

    def split_for_devices(array, num_devices):
        raise NotImplementedError()

    panel = CheckPanel("dp_zh.split_for_devices", split_for_devices)
    buttons = (panel.check_button, panel.hint_button, panel.solution_button)
    assert [b.description for b in buttons] == ["檢查", "提示", "顯示解答"]
    assert panel.text() == "dp_zh.split_for_devices：尚未作答（0/5 項測試）"
    panel.hint_button.click()
    assert "提示 1／3" in panel.hints.value
    panel.solution_button.click()
    assert panel.solution_button.description == "隱藏解答"
    assert "def split_for_devices(array, num_devices):" in panel.solution.value
    wrong = check("dp_zh.split_for_devices", split_swapped)
    assert wrong.summary() == "dp_zh.split_for_devices：2/5 項測試通過"
    assert "形狀錯誤：預期 (8, 32, 784)，得到 (32, 8, 784)" in wrong.messages[0]
    assert wrong.messages[2].endswith("：通過")


# ---- the explorer, headless ----------------------------------------------------------


def test_explorer_functions_on_this_process_devices() -> None:
    from jaxcourse.exercises.explorers_zh import (
        DataParallelExplorer,
        explore,
        plot_exploration,
        summary_html,
    )

    e = explore(1, 6)
    assert e.global_batch == 6 and e.shard_shape == (6, 28, 28)
    assert e.images_shape == (1, 6, 28, 28)
    assert abs(e.total - 1.0) < 1e-5
    assert abs(explore(1, 6, None).total - 6.0) < 1e-5
    assert "全域批次" in summary_html(e)
    assert plot_exploration(e).startswith(b"\x89PNG")
    with pytest.raises(ValueError, match="num_devices must be between"):
        explore(jax.device_count() + 1, 2)

    explorer = DataParallelExplorer(run=False)
    assert explorer.exploration is None
    explorer.per_device.value = 7  # a slider's callback recomputes
    assert explorer.exploration.per_device == 7
    assert f"{explorer.num_devices.value * 7} 筆" in explorer.status.value
    assert bytes(explorer.image.value).startswith(b"\x89PNG")
    assert repr(explorer).startswith("資料平行探索器")
    assert explorer.num_devices.description == "裝置數"


def test_explorer_on_8_devices(eight) -> None:
    states = eight["explorer"]
    devices, per_device, total, on, status, png = states["initial"]
    assert (devices, per_device, on) == (8, 4, 8)
    assert abs(total - 1.0) < 1e-5 and png == b"\x89PNG".hex()
    assert "8 臺裝置 × 每臺 4 筆 = 32 筆" in status
    assert "(8, 4, 28, 28)" in status
    both = states["('i', 'j')"]
    assert both[:2] == [15, [5, 28, 28]] and abs(both[3] - 1.0) < 1e-4
    assert both[4] == 3
    rows = states["('j',)"]
    assert rows[2] == [1.0, 1.0, 1.0] and abs(rows[3] - 3.0) < 1e-4
    assert abs(states["('i',)"][3] - 5.0) < 1e-4  # one per column
    assert states["None"][2] == [5.0, 5.0, 5.0] and states["None"][3] == 15.0
    assert "不求和" in states["None"][5]


def test_explorer_does_nothing_while_grading(monkeypatch) -> None:
    from jaxcourse.exercises.core import GRADING_ENV
    from jaxcourse.exercises.explorers_zh import DataParallelExplorer

    monkeypatch.setenv(GRADING_ENV, "1")
    explorer = DataParallelExplorer()
    assert explorer.exploration is None
    assert repr(explorer) == "資料平行探索器：另行評分"


# ---- the student notebook and the grader (slow) ------------------------------------


def test_student_notebook_is_generated_and_stripped() -> None:
    from jaxcourse.exercises import authoring

    master = nbformat.read(MASTER, as_version=4)
    student = authoring.student_notebook(master, MASTER.name)
    assert nbformat.writes(student) + "\n" == STUDENT.read_text(encoding="utf-8")
    text = STUDENT.read_text(encoding="utf-8")
    assert "BEGIN SOLUTION" not in text and "lax.psum(x, axis_name=(" not in text
    assert text.count("raise NotImplementedError()") == 6 + 1  # + the intro's mention


@pytest.mark.slow
def test_student_notebook_runs_and_reports_not_attempted(execute_notebook) -> None:
    texts = execute_notebook(STUDENT)
    for exercise_id in IDS:
        total = len(get(exercise_id).cases)
        assert f"{exercise_id}：尚未作答（0/{total} 項測試）" in texts


def _submission(bodies: dict[str, str]) -> nbformat.NotebookNode:
    nb = nbformat.read(STUDENT, as_version=4)
    stub = "    # YOUR CODE HERE\n    raise NotImplementedError()"
    for cell in nb.cells:
        if cell.cell_type == "code" and stub in cell.source:
            name = cell.source.split("def ", 1)[1].split("(", 1)[0]
            if name in bodies:
                cell.source = cell.source.replace(stub, textwrap.indent(
                    textwrap.dedent(bodies[name]).strip("\n"), "    "))
    return nb


@pytest.mark.slow
def test_grading_on_8_devices(tmp_path: Path) -> None:
    folder = tmp_path / "submissions"
    folder.mkdir()
    nbformat.write(nbformat.read(MASTER, as_version=4), folder / "a_master.ipynb")
    partly = {
        "global_normalize": """
            return jax.pmap(jax.vmap(lambda x: x / lax.psum(x, "j"), axis_name="j"),
                            axis_name="i")(grid)
        """,
        "split_for_devices": "return array.reshape(num_devices, -1, *array.shape[1:])",
        "pmap_step": """
            loss, grads = jax.value_and_grad(loss_fn)(params, images, labels)
            grads = lax.psum(grads, "batch")
            loss = lax.pmean(loss, "batch")
            return jax.tree.map(lambda p, g: p - step_size * g, params, grads), loss
        """,
    }
    nbformat.write(_submission(partly), folder / "b_partly.ipynb")
    out = tmp_path / "grades"
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env.pop("XLA_FLAGS", None)
    proc = subprocess.run(
        [sys.executable, "-m", "jaxcourse.exercises.grading", str(folder),
         "--out", str(out), "--timeout", "240"],
        capture_output=True, text=True, timeout=600, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads((out / "grades.json").read_text(encoding="utf-8"))
    assert data["exercises"] == IDS
    rows = {r["submission"]: r for r in data["submissions"]}
    assert rows["a_master"]["scores"] == dict.fromkeys(IDS, 1.0)
    assert rows["a_master"]["status"] == "graded"
    assert rows["b_partly"]["scores"] == {
        "dp_zh.global_normalize": 0.0, "dp_zh.split_for_devices": 1.0,
        "dp_zh.replicate": 0.0, "dp_zh.pmap_step": 0.0,
        "dp_zh.data_parallel_grads": 0.0, "dp_zh.shard_map_normalize": 0.0,
    }
    feedback = rows["b_partly"]["feedback"]
    assert "每一列各自正規化" in " ".join(feedback["dp_zh.global_normalize"])
    assert "正確的 8 倍" in " ".join(feedback["dp_zh.pmap_step"])
    assert "尚未作答" in feedback["dp_zh.replicate"][0]
