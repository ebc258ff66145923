"""Chapter 6's exercises and batch-split explorer.

Realistic wrong answers are rejected with a message that names the problem,
alternative correct answers are accepted. The first three exercises are
checked in this process; ``multiprocess.run_epoch`` launches its answers in
2 real JAX processes, so those tests are marked slow and check, like
``tests/test_launch.py``, that no process outlives them (including a hang,
which the launcher ends after 20 s).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import jax
import jax.numpy as jnp
import nbformat
import numpy as np
import psutil
import pytest
from jax.experimental import multihost_utils
from processes import assert_no_children_left

from jaxcourse.exercises import check
from jaxcourse.exercises.explorers_multiprocess import (
    BatchSplitExplorer,
    draw_layout,
    layout_table,
    row_layout,
    split_problem,
)
from solutions import multiprocess

ROOT = Path(__file__).resolve().parents[1]
STUDENT = ROOT / "exercises" / "06_multi_process_exercises.ipynb"
IDS = ["multiprocess.process_rows", "multiprocess.common_num_steps",
       "multiprocess.sum_metrics", "multiprocess.run_epoch",
       "multiprocess.global_batch"]


@pytest.fixture()
def no_children_left() -> Iterator[None]:
    yield
    assert_no_children_left("a check left processes behind")


def failures(result) -> str:
    return " | ".join(f.message for f in result.feedback if not f.passed)


# ---- exercise 1: process_rows -------------------------------------------------


def rows_ignoring_remainder(num_records, process_index, process_count):
    per = num_records // process_count
    return np.arange(process_index * per, (process_index + 1) * per)


def rows_interleaved(num_records, process_index, process_count):
    return np.arange(process_index, num_records, process_count)


def rows_rest_to_last(num_records, process_index, process_count):
    per = num_records // process_count
    last = process_index == process_count - 1
    stop = num_records if last else (process_index + 1) * per
    return np.arange(process_index * per, stop)


def rows_rounded_up(num_records, process_index, process_count):
    per = -(-num_records // process_count)
    return np.arange(process_index * per, min((process_index + 1) * per, num_records))


def rows_one_based_rank(num_records, process_index, process_count):
    return np.array_split(np.arange(num_records), process_count)[
        (process_index + 1) % process_count]


def rows_array_split(num_records, process_index, process_count):  # correct
    return np.array_split(np.arange(num_records), process_count)[process_index]


def rows_jnp_loop(num_records, process_index, process_count):  # correct
    sizes = [num_records // process_count + (p < num_records % process_count)
             for p in range(process_count)]
    start = sum(sizes[:process_index])
    return jnp.arange(start, start + sizes[process_index], dtype=jnp.int32)


@pytest.mark.parametrize(("answer", "named"), [
    (rows_ignoring_remainder, "never loaded"),
    (rows_interleaved, "interleaved"),
    (rows_rest_to_last, "last process gets all the leftovers"),
    (rows_rounded_up, "rounding the share up"),
])
def test_process_rows_rejects_wrong_answers(answer, named: str) -> None:
    result = check("multiprocess.process_rows", answer)
    assert not result.passed
    assert named in failures(result)


def test_process_rows_rejects_an_off_by_one_rank() -> None:
    result = check("multiprocess.process_rows", rows_one_based_rank)
    assert not result.passed
    assert "wrong shape" in failures(result) or "wrong values" in failures(result)


def rows_as_list(num_records, process_index, process_count):  # correct: a list
    share, left = divmod(num_records, process_count)
    first = sum(share + (p < left) for p in range(process_index))
    return list(range(first, first + share + (process_index < left)))


@pytest.mark.parametrize("answer", [rows_array_split, rows_jnp_loop, rows_as_list])
def test_process_rows_accepts_other_correct_answers(answer) -> None:
    assert check("multiprocess.process_rows", answer).passed


def test_process_rows_reference_covers_every_record_once() -> None:
    for n, count in [(10, 4), (5, 8), (1000, 3), (97, 7)]:
        shares = [multiprocess.process_rows(n, p, count) for p in range(count)]
        assert np.array_equal(np.concatenate(shares), np.arange(n))
        sizes = [len(s) for s in shares]
        assert max(sizes) - min(sizes) <= 1


# ---- exercise 2: common_num_steps ---------------------------------------------


@pytest.mark.parametrize(("answer", "named"), [
    (lambda sizes, b: max(s // b for s in sizes), "the largest count"),
    (lambda sizes, b: sizes[0] // b, "process 0's own count"),
    (lambda sizes, b: min(-(-s // b) for s in sizes), "partial last batch"),
    (lambda sizes, b: sum(sizes) // b // len(sizes), "the average count"),
    (lambda sizes, b: sum(sizes) // b, "number of global batches"),
])
def test_common_num_steps_rejects_wrong_answers(answer, named: str) -> None:
    result = check("multiprocess.common_num_steps", answer)
    assert not result.passed
    assert named in failures(result)


def steps_with_numpy(local_sizes, batch_size):  # correct
    return int(np.min(np.asarray(local_sizes)) // batch_size)


def steps_with_jnp(local_sizes, batch_size):  # correct, a JAX integer
    return jnp.min(jnp.asarray(local_sizes) // batch_size)


def steps_with_a_loop(local_sizes, batch_size):  # correct, a NumPy integer
    fewest = np.int64(local_sizes[0] // batch_size)
    for size in local_sizes[1:]:
        fewest = min(fewest, np.int64(size // batch_size))
    return fewest


@pytest.mark.parametrize("answer", [steps_with_numpy, steps_with_jnp,
                                    steps_with_a_loop])
def test_common_num_steps_accepts_other_correct_answers(answer) -> None:
    assert check("multiprocess.common_num_steps", answer).passed


# ---- exercise 3: sum_metrics --------------------------------------------------


def metrics_in_dict_order(local_metrics, allreduce):
    return {name: allreduce(value) for name, value in local_metrics.items()}


def metrics_in_set_order(local_metrics, allreduce):
    return {name: allreduce(local_metrics[name]) for name in set(local_metrics)}


def metrics_not_reduced(local_metrics, allreduce):
    return dict(sorted(local_metrics.items()))


def metrics_one_array_dict_order(local_metrics, allreduce):
    names = list(local_metrics)
    return dict(zip(names, allreduce(np.array([local_metrics[n] for n in names])),
                    strict=True))


def metrics_skipping_zeros(local_metrics, allreduce):
    # Skips a collective where this process's value happens to be 0: a hang.
    return {n: allreduce(v) for n, v in sorted(local_metrics.items()) if v > 0.5}


@pytest.mark.parametrize(("answer", "named"), [
    (metrics_in_dict_order, "dict order"),
    (metrics_in_set_order, "set order"),
    (metrics_not_reduced, "not summed over the processes"),
    (metrics_one_array_dict_order, "entries of one collective's array"),
    (metrics_skipping_zeros, "different numbers of times"),
])
def test_sum_metrics_rejects_wrong_answers(answer, named: str) -> None:
    result = check("multiprocess.sum_metrics", answer)
    assert not result.passed
    assert named in failures(result)


def metrics_sorted_items(local_metrics, allreduce):  # correct
    return {name: float(allreduce(value))
            for name, value in sorted(local_metrics.items())}


def metrics_one_sorted_array(local_metrics, allreduce):  # correct: one collective
    names = sorted(local_metrics)
    totals = allreduce(jnp.array([local_metrics[n] for n in names], jnp.float32))
    return {n: t for n, t in zip(names, np.asarray(totals), strict=True)}


def metrics_plain_string_keys(local_metrics, allreduce):  # correct, fixed names
    return {name: allreduce(local_metrics[name])
            for name in sorted(str(k) for k in local_metrics)}


@pytest.mark.parametrize("answer", [metrics_sorted_items, metrics_one_sorted_array,
                                    metrics_plain_string_keys])
def test_sum_metrics_accepts_other_correct_answers(answer) -> None:
    assert check("multiprocess.sum_metrics", answer).passed


def test_simulated_processes_really_iterate_sets_differently() -> None:
    orders = {tuple(set(multiprocess._metrics_of(p, multiprocess.MORE_METRICS[p])))
              for p in range(4)}
    assert len(orders) > 1


# ---- exercise 4: run_epoch, launched -------------------------------------------
# Module-level functions: the checker copies their source into a worker script.


def epoch_local_count(local_data, batch_size, step):
    return [step(local_data[i * batch_size:(i + 1) * batch_size])
            for i in range(len(local_data) // batch_size)]


def epoch_max_count(local_data, batch_size, step):
    counts = multihost_utils.process_allgather(np.int32(len(local_data) // batch_size))
    return [step(local_data[i * batch_size:(i + 1) * batch_size])
            for i in range(int(np.max(counts)))]


def epoch_only_process_zero_steps(local_data, batch_size, step):
    counts = multihost_utils.process_allgather(np.int32(len(local_data) // batch_size))
    if jax.process_index() != 0:
        return []
    return [step(local_data[i * batch_size:(i + 1) * batch_size])
            for i in range(int(np.min(counts)))]


def epoch_always_first_batch(local_data, batch_size, step):
    counts = multihost_utils.process_allgather(np.int32(len(local_data) // batch_size))
    return [step(local_data[:batch_size]) for _ in range(int(np.min(counts)))]


def epoch_overlapping(local_data, batch_size, step):
    counts = multihost_utils.process_allgather(np.int32(len(local_data) // batch_size))
    return [step(local_data[i:i + batch_size]) for i in range(int(counts.min()))]


def epoch_one_short(local_data, batch_size, step):
    counts = multihost_utils.process_allgather(np.int32(len(local_data) // batch_size))
    last = int(np.min(counts)) - 1
    return [step(local_data[i * batch_size:(i + 1) * batch_size]) for i in range(last)]


def epoch_with_break(local_data, batch_size, step):  # correct
    sizes = multihost_utils.process_allgather(jnp.int32(local_data.shape[0]))
    results = []
    for start in range(0, len(local_data), batch_size):
        if start + batch_size > int(sizes.min()):
            break
        results.append(step(local_data[start:start + batch_size]))
    return results


def epoch_while_loop(local_data, batch_size, step):  # correct
    mine = np.array(len(local_data) // batch_size)
    everyone = multihost_utils.process_allgather(mine)
    results, i = [], 0
    while i < int(everyone.min()):
        results.append(step(local_data[i * batch_size:(i + 1) * batch_size]))
        i += 1
    return results


def epoch_reshaped(local_data, batch_size, step):  # correct: a tuple of results
    counts = multihost_utils.process_allgather(jnp.array(len(local_data) // batch_size))
    steps = int(jnp.min(counts))
    batches = np.asarray(local_data[:steps * batch_size]).reshape(steps, batch_size)
    return tuple(step(batch) for batch in batches)


def test_run_epoch_refuses_lambdas_before_launching() -> None:
    answer = lambda d, b, s: [s(d[i * b:(i + 1) * b]) for i in range(len(d) // b)]  # noqa: E731
    result = check("multiprocess.run_epoch", answer)
    assert not result.passed
    assert "not lambda" in failures(result)


def test_not_attempted_launches_nothing() -> None:
    def run_epoch(local_data, batch_size, step):
        raise NotImplementedError()

    result = check("multiprocess.run_epoch", run_epoch)
    assert result.status == "not_attempted"
    assert not psutil.Process().children(recursive=True)


def test_run_epoch_in_one_process_catches_partial_batches() -> None:
    def ceil_batches(local_data, batch_size, step):
        n = -(-len(local_data) // batch_size)
        return [step(local_data[i * batch_size:(i + 1) * batch_size]) for i in range(n)]

    with pytest.raises(ValueError, match="pass full batches only"):
        multiprocess._in_one_process(ceil_batches, 10, 4)


@pytest.mark.slow
@pytest.mark.usefixtures("no_children_left")
@pytest.mark.parametrize(("answer", "named"), [
    (epoch_local_count, "different numbers of times (process 0 3 times, process 1 "
                        "2 times)"),
    (epoch_max_count, "process 1 failed: ValueError: process 1 passed step() a batch "
                      "of shape (1,), not (4,)"),
    (epoch_always_first_batch, "every step got the first batch"),
    (epoch_overlapping, "the batches overlap"),
    (epoch_one_short, "one step short"),
])
def test_run_epoch_rejects_wrong_answers(answer, named: str) -> None:
    result = check("multiprocess.run_epoch", answer)
    assert not result.feedback[1].passed  # launched in 2 processes
    assert named in failures(result)


@pytest.mark.slow
@pytest.mark.usefixtures("no_children_left")
def test_run_epoch_reports_a_real_hang() -> None:
    result = check("multiprocess.run_epoch", epoch_only_process_zero_steps)
    message = failures(result)
    assert "hung and were ended after 20 s" in message
    assert "process 0 called step() 1 times in scenario 1 and was still waiting" \
        in message
    # Process 1 returned [] at once and waits in scenario 2's process_allgather.
    assert "process 1 called step() 0 times" in message


@pytest.mark.slow
@pytest.mark.usefixtures("no_children_left")
@pytest.mark.parametrize("answer", [multiprocess.run_epoch, epoch_with_break,
                                    epoch_while_loop, epoch_reshaped])
def test_run_epoch_accepts_correct_answers(answer) -> None:
    assert check("multiprocess.run_epoch", answer).passed


# ---- exercise 5: global_batch, in one process and launched ---------------------
# Module-level functions: the checker copies their source into a worker script.


def global_not_padded(local_batch, max_len, sharding):
    return jax.make_array_from_process_local_data(sharding, local_batch)


def global_pad_every_axis(local_batch, max_len, sharding):
    extra = max_len - local_batch.shape[-1]
    return jax.make_array_from_process_local_data(sharding, np.pad(local_batch, extra))


def global_zeros_first(local_batch, max_len, sharding):
    zeros = np.zeros((local_batch.shape[0], max_len - local_batch.shape[1]),
                     local_batch.dtype)
    padded = np.concatenate([zeros, local_batch], axis=1)
    shape = (padded.shape[0] * jax.process_count(), max_len)
    return jax.make_array_from_process_local_data(sharding, padded, shape)


def global_left_on_host(local_batch, max_len, sharding):
    return np.pad(local_batch, ((0, 0), (0, max_len - local_batch.shape[1])))


def global_shape_of_this_process(local_batch, max_len, sharding):
    padded = np.pad(local_batch, ((0, 0), (0, max_len - local_batch.shape[1])))
    return jax.make_array_from_process_local_data(sharding, padded, padded.shape)


def global_rows_per_device(local_batch, max_len, sharding):
    rows, length = local_batch.shape
    padded = np.pad(local_batch, ((0, 0), (0, max_len - length)))
    shape = (rows * jax.device_count(), max_len)
    return jax.make_array_from_process_local_data(sharding, padded, shape)


def global_with_jnp(local_batch, max_len, sharding):  # correct
    rows, length = local_batch.shape
    padded = jnp.zeros((rows, max_len), local_batch.dtype).at[:, :length].set(
        local_batch)
    return jax.make_array_from_process_local_data(
        sharding, padded, (jax.process_count() * rows, max_len))


def global_shape_inferred(local_batch, max_len, sharding):  # correct once padded
    width = max_len - local_batch.shape[1]
    return jax.make_array_from_process_local_data(
        sharding, np.pad(local_batch, [(0, 0), (0, width)]))


def global_from_mesh_and_spec(local_batch, max_len, sharding):  # correct (docs)
    padded = np.zeros((len(local_batch), max_len), np.float32)
    padded[:, :local_batch.shape[1]] = local_batch
    return multihost_utils.host_local_array_to_global_array(
        padded, sharding.mesh, sharding.spec)


@pytest.mark.slow  # the check launches these answers too
@pytest.mark.usefixtures("no_children_left")
@pytest.mark.parametrize(("answer", "named"), [
    (global_not_padded, "not padded to max_len"),
    (global_pad_every_axis, "pads both ends of every axis"),
    (global_zeros_first, "the zeros are on the left"),
    (global_left_on_host, "got a ndarray, not a global jax.Array"),
])
def test_global_batch_rejects_wrong_answers_in_one_process(answer, named: str) -> None:
    result = check("multiprocess.global_batch", answer)
    assert not result.feedback[0].passed
    assert named in failures(result)


@pytest.mark.slow
@pytest.mark.usefixtures("no_children_left")
@pytest.mark.parametrize(("answer", "named"), [
    (global_shape_of_this_process, "the global shape is this process's own shape"),
    (global_rows_per_device, "Invalid host data"),
])
def test_global_batch_rejects_answers_only_wrong_across_processes(
        answer, named: str) -> None:
    result = check("multiprocess.global_batch", answer)
    assert all(f.passed for f in result.feedback[:3])  # right in one process
    assert not result.feedback[3].passed
    assert named in failures(result)


@pytest.mark.slow
@pytest.mark.usefixtures("no_children_left")
@pytest.mark.parametrize("answer", [multiprocess.global_batch, global_with_jnp,
                                    global_shape_inferred, global_from_mesh_and_spec])
def test_global_batch_accepts_correct_answers(answer) -> None:
    result = check("multiprocess.global_batch", answer)
    assert result.passed, result.report()


def test_global_batch_launch_varies_lengths_and_rows() -> None:
    rows = {r for r, _, _ in multiprocess.GLOBAL_SCENARIOS}
    assert len(rows) > 1
    for _, lengths, _ in multiprocess.GLOBAL_SCENARIOS:
        assert len(set(lengths)) == 2
    assert multiprocess.GLOBAL_DEVICES_PER_PROCESS > 1  # devices != processes


# ---- the explorer ---------------------------------------------------------------


def test_layout_matches_the_chapter() -> None:
    # Chapter 6's load_data.py: 10,000 rows, 4 processes x 2 devices.
    blocks = row_layout(10_000, 4, 2)
    assert [(b.process, b.local_device, b.start, b.stop) for b in blocks[2:4]] == [
        (1, 0, 2500, 3750), (1, 1, 3750, 5000)]
    assert split_problem(10_000, 4, 2) == ""


def test_uneven_batch_is_explained() -> None:
    problem = split_problem(30, 4, 2)
    assert "do not split evenly over 8 devices" in problem
    assert "drop to 24 rows or pad to 32" in problem
    with pytest.raises(ValueError, match="split evenly"):
        row_layout(30, 4, 2)
    assert "⚠" in layout_table(30, 4, 2)
    assert draw_layout(30, 4, 2) is None


def test_explorer_redraws_when_the_sliders_move() -> None:
    import matplotlib

    matplotlib.use("Agg")
    explorer = BatchSplitExplorer(processes=4, devices_per_process=2, global_batch=32)
    assert explorer.even and "Each process loads 8 rows" in explorer.table.value
    assert "<td>4:8</td>" in explorer.table.value  # device 1 of process 0
    explorer.processes.value = 3  # 32 rows over 6 devices
    assert not explorer.even and "⚠" in explorer.table.value
    explorer.batch.value = 36
    assert explorer.even and "Each process loads 12 rows" in explorer.table.value
    explorer.devices.value = 1
    assert "each device holds 12" in explorer.table.value
    assert explorer.text().startswith("Batch-split explorer")


# ---- the student notebook -------------------------------------------------------


def test_student_notebook_is_stripped() -> None:
    student = nbformat.read(STUDENT, as_version=4)
    text = "\n".join(cell.source for cell in student.cells)
    assert "BEGIN SOLUTION" not in text and "divmod(num_records" not in text
    assert text.count("    # YOUR CODE HERE\n    raise NotImplementedError()") == 5
    assert not any(cell.get("outputs") for cell in student.cells
                   if cell.cell_type == "code")


@pytest.mark.slow
@pytest.mark.usefixtures("no_children_left")
def test_student_notebook_runs_and_reports_not_attempted(execute_notebook) -> None:
    texts = execute_notebook(STUDENT)
    for exercise_id, total in zip(IDS, (6, 7, 2, 2, 4), strict=True):
        assert f"{exercise_id}: not attempted yet (0/{total} tests)" in texts
