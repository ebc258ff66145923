"""Wrong answers written from the exercise text alone (chapters 8-9): see benchmarks/named_mistakes.py."""  # noqa: E501

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.experimental import multihost_utils
from jax.sharding import AxisType
from jax.sharding import PartitionSpec as P

# ---------------------------------------------------------------------------
# multiprocess.process_rows
# ---------------------------------------------------------------------------


def process_rows__ceil_everywhere(num_records, process_index, process_count):
    """Gives every process ceil(n / count) rows, so the last one runs past the end."""
    per = -(-num_records // process_count)
    return np.arange(process_index * per, (process_index + 1) * per)


def process_rows__floor_drops_remainder(num_records, process_index, process_count):
    """Gives every process n // count rows, silently dropping the leftover records."""
    per = num_records // process_count
    return np.arange(process_index * per, (process_index + 1) * per)


def process_rows__last_takes_remainder(num_records, process_index, process_count):
    """Gives the whole remainder to the last process: shares differ by more than 1."""
    per = num_records // process_count
    start = process_index * per
    stop = num_records if process_index == process_count - 1 else start + per
    return np.arange(start, stop)


def process_rows__interleaved(num_records, process_index, process_count):
    """Takes every process_count-th record (strided) instead of a contiguous block."""
    return np.arange(process_index, num_records, process_count)


def process_rows__extras_to_last(num_records, process_index, process_count):
    """Hands the leftover records to the last processes instead of the first ones."""
    per, rem = divmod(num_records, process_count)
    first_big = process_count - rem
    start = process_index * per + max(0, process_index - first_big)
    size = per + (1 if process_index >= first_big else 0)
    return np.arange(start, start + size)


def process_rows__extra_off_by_one(num_records, process_index, process_count):
    """Uses <= rem for the extra record, so process rem also grabs one and overlaps."""
    per, rem = divmod(num_records, process_count)
    start = process_index * per + min(process_index, rem)
    extra = 1 if process_index <= rem else 0
    return np.arange(start, start + per + extra)


def process_rows__rounded_share(num_records, process_index, process_count):
    """Rounds n / count to the nearest integer and clips, losing or shifting rows."""
    per = round(num_records / process_count)
    start = process_index * per
    return np.arange(min(start, num_records), min(start + per, num_records))


def process_rows__count_as_block_size(num_records, process_index, process_count):
    """Uses process_count as the block length instead of the share size."""
    records = np.arange(num_records)
    return records[process_index * process_count : (process_index + 1) * process_count]


def process_rows__linspace_bounds(num_records, process_index, process_count):
    """Cuts at int(linspace) boundaries: no loss, but extras land on wrong processes."""
    bounds = np.linspace(0, num_records, process_count + 1).astype(int)
    return np.arange(bounds[process_index], bounds[process_index + 1])


# ---------------------------------------------------------------------------
# multiprocess.common_num_steps
# ---------------------------------------------------------------------------


def common_num_steps__max_batches(local_sizes, batch_size):
    """Takes the largest count of batches, so the short processes run out (hang)."""
    return int(max(size // batch_size for size in local_sizes))


def common_num_steps__total_batches(local_sizes, batch_size):
    """Counts the batches in all the data together, not per process."""
    return int(sum(local_sizes) // batch_size)


def common_num_steps__average_share(local_sizes, batch_size):
    """Divides the total evenly among processes, as if the shares were equal."""
    return int(sum(local_sizes) // (batch_size * len(local_sizes)))


def common_num_steps__ceil_partial_batch(local_sizes, batch_size):
    """Counts a partial last batch as a step (ceil instead of floor)."""
    return int(min(-(-size // batch_size) for size in local_sizes))


def common_num_steps__first_process_only(local_sizes, batch_size):
    """Uses process 0's own number of batches for everyone."""
    return int(local_sizes[0] // batch_size)


def common_num_steps__rounded_ratio(local_sizes, batch_size):
    """Rounds min(size) / batch_size instead of flooring it."""
    return int(round(min(local_sizes) / batch_size))


def common_num_steps__minus_one_guard(local_sizes, batch_size):
    """Subtracts one record 'to be safe', losing a step when sizes divide evenly."""
    return int((min(local_sizes) - 1) // batch_size)


def common_num_steps__batch_split_by_processes(local_sizes, batch_size):
    """Treats batch_size as the global batch and splits it among the processes."""
    return int(min(local_sizes) // (batch_size // len(local_sizes)))


# ---------------------------------------------------------------------------
# multiprocess.sum_metrics
# ---------------------------------------------------------------------------


def sum_metrics__dict_order(local_metrics, allreduce):
    """Iterates the dict in its own insertion order, which differs between processes."""
    return {name: allreduce(value) for name, value in local_metrics.items()}


def sum_metrics__set_order(local_metrics, allreduce):
    """Iterates a set of the names, whose order depends on the process's hash seed."""
    return {name: allreduce(local_metrics[name]) for name in set(local_metrics)}


def sum_metrics__array_in_dict_order(local_metrics, allreduce):
    """Packs the values into one array in dict order: positions mean different names."""
    names = list(local_metrics)
    totals = allreduce(np.array([local_metrics[name] for name in names]))
    return {name: float(total) for name, total in zip(names, totals, strict=True)}


def sum_metrics__sorted_by_value(local_metrics, allreduce):
    """Sorts the metrics by their local values, an order that differs per process."""
    items = sorted(local_metrics.items(), key=lambda item: item[1])
    return {name: allreduce(value) for name, value in items}


def sum_metrics__no_allreduce(local_metrics, allreduce):
    """Sorts the names but forgets the collective: returns the local values."""
    return {name: local_metrics[name] for name in sorted(local_metrics)}


def sum_metrics__mean_not_sum(local_metrics, allreduce):
    """Divides each sum by the number of processes: a mean (pmean) instead of a sum."""
    num_processes = allreduce(1.0)
    return {
        name: allreduce(local_metrics[name]) / num_processes
        for name in sorted(local_metrics)
    }


def sum_metrics__relabel_in_dict_order(local_metrics, allreduce):
    """Reduces in sorted order but zips the totals onto the dict's own key order."""
    totals = [allreduce(local_metrics[name]) for name in sorted(local_metrics)]
    return dict(zip(local_metrics, totals, strict=True))


def sum_metrics__sorted_by_length(local_metrics, allreduce):
    """Sorts by name length; names of equal length keep each process's own order."""
    return {
        name: allreduce(local_metrics[name]) for name in sorted(local_metrics, key=len)
    }


# ---------------------------------------------------------------------------
# multiprocess.run_epoch (launched: self-contained)
# ---------------------------------------------------------------------------


def run_epoch__max_count(local_data, batch_size, step):
    """Agrees on the largest count of batches, so the short process runs out."""
    counts = multihost_utils.process_allgather(np.int32(len(local_data) // batch_size))
    num_batches = int(np.max(counts))
    return [
        step(local_data[i * batch_size : (i + 1) * batch_size])
        for i in range(num_batches)
    ]


def run_epoch__broadcast_process0(local_data, batch_size, step):
    """Broadcasts process 0's count to everyone instead of taking the minimum."""
    mine = np.int32(len(local_data) // batch_size)
    num_batches = int(multihost_utils.broadcast_one_to_all(mine))
    return [
        step(local_data[i * batch_size : (i + 1) * batch_size])
        for i in range(num_batches)
    ]


def run_epoch__own_entry(local_data, batch_size, step):
    """Gathers every count, then reads back its own entry: still its own count."""
    counts = multihost_utils.process_allgather(np.int32(len(local_data) // batch_size))
    num_batches = int(np.ravel(counts)[jax.process_index()])
    return [
        step(local_data[i * batch_size : (i + 1) * batch_size])
        for i in range(num_batches)
    ]


def run_epoch__average_count(local_data, batch_size, step):
    """Gathers the sizes and uses the average share, not the smallest one."""
    sizes = multihost_utils.process_allgather(np.int32(len(local_data)))
    num_batches = int(np.sum(sizes) // (batch_size * np.size(sizes)))
    return [
        step(local_data[i * batch_size : (i + 1) * batch_size])
        for i in range(num_batches)
    ]


def run_epoch__ceil_own_padded(local_data, batch_size, step):
    """Pads its own last partial batch with zeros; no agreement between processes."""
    num_batches = -(-len(local_data) // batch_size)
    padded = np.zeros(num_batches * batch_size, dtype=local_data.dtype)
    padded[: len(local_data)] = local_data
    return [
        step(padded[i * batch_size : (i + 1) * batch_size]) for i in range(num_batches)
    ]


def run_epoch__max_padded(local_data, batch_size, step):
    """Agrees on the largest count and pads with zeros: extra steps on dummy data."""
    mine = np.int32(-(-len(local_data) // batch_size))
    num_batches = int(np.max(multihost_utils.process_allgather(mine)))
    padded = np.zeros(num_batches * batch_size, dtype=local_data.dtype)
    padded[: len(local_data)] = local_data
    return [
        step(padded[i * batch_size : (i + 1) * batch_size]) for i in range(num_batches)
    ]


def run_epoch__sliding_window(local_data, batch_size, step):
    """Agrees on the count but slices local_data[i:i + batch_size] (overlapping)."""
    counts = multihost_utils.process_allgather(np.int32(len(local_data) // batch_size))
    num_batches = int(np.min(counts))
    return [step(local_data[i : i + batch_size]) for i in range(num_batches)]


def run_epoch__round_ratio(local_data, batch_size, step):
    """Gathers len / batch_size as floats and rounds the minimum instead of flooring."""
    ratio = np.float32(len(local_data) / batch_size)
    num_batches = int(round(float(np.min(multihost_utils.process_allgather(ratio)))))
    return [
        step(local_data[i * batch_size : (i + 1) * batch_size])
        for i in range(num_batches)
    ]


def run_epoch__last_batches(local_data, batch_size, step):
    """Agrees on the count but takes the batches from the end of the data."""
    counts = multihost_utils.process_allgather(np.int32(len(local_data) // batch_size))
    num_batches = int(np.min(counts))
    end = len(local_data)
    return [
        step(local_data[end - (i + 1) * batch_size : end - i * batch_size])
        for i in range(num_batches)
    ]


# ---------------------------------------------------------------------------
# multiprocess.global_batch (launched: self-contained)
# ---------------------------------------------------------------------------


def global_batch__pad_at_start(local_batch, max_len, sharding):
    """Pads each row with zeros at its start instead of its end."""
    rows, length = local_batch.shape
    padded = np.pad(local_batch, ((0, 0), (max_len - length, 0)))
    shape = (rows * jax.process_count(), max_len)
    return jax.make_array_from_process_local_data(sharding, padded, shape)


def global_batch__pad_rows_axis(local_batch, max_len, sharding):
    """Pads along axis 0 (adds rows) instead of lengthening each row."""
    rows, length = local_batch.shape
    padded = np.pad(local_batch, ((0, max_len - length), (0, 0)))
    shape = (rows * jax.process_count(), max_len)
    return jax.make_array_from_process_local_data(sharding, padded, shape)


def global_batch__no_pad_inferred(local_batch, max_len, sharding):
    """Neither pads nor states the shape: each process infers its own global shape."""
    return jax.make_array_from_process_local_data(sharding, local_batch)


def global_batch__shape_omitted(local_batch, max_len, sharding):
    """Pads correctly but leaves the global shape to be inferred, against the text."""
    length = local_batch.shape[1]
    padded = np.pad(local_batch, ((0, 0), (0, max_len - length)))
    return jax.make_array_from_process_local_data(sharding, padded)


def global_batch__local_rows_as_global(local_batch, max_len, sharding):
    """States the global shape from this process's rows, not times process_count."""
    rows, length = local_batch.shape
    padded = np.pad(local_batch, ((0, 0), (0, max_len - length)))
    return jax.make_array_from_process_local_data(sharding, padded, (rows, max_len))


def global_batch__device_count_rows(local_batch, max_len, sharding):
    """Multiplies the rows by the global device count instead of the process count."""
    rows, length = local_batch.shape
    padded = np.pad(local_batch, ((0, 0), (0, max_len - length)))
    shape = (rows * jax.device_count(), max_len)
    return jax.make_array_from_process_local_data(sharding, padded, shape)


def global_batch__np_resize(local_batch, max_len, sharding):
    """Uses np.resize, which fills with repeated data instead of zeros."""
    rows = local_batch.shape[0]
    padded = np.resize(local_batch, (rows, max_len)).astype(np.float32)
    shape = (rows * jax.process_count(), max_len)
    return jax.make_array_from_process_local_data(sharding, padded, shape)


def global_batch__shape_before_padding(local_batch, max_len, sharding):
    """Computes the global shape from the unpadded local_batch.shape."""
    rows, length = local_batch.shape
    shape = (rows * jax.process_count(), length)
    padded = np.pad(local_batch, ((0, 0), (0, max_len - length)))
    return jax.make_array_from_process_local_data(sharding, padded, shape)


def global_batch__pad_width_max_len(local_batch, max_len, sharding):
    """Pads every row with max_len zeros instead of max_len - length."""
    rows = local_batch.shape[0]
    padded = np.pad(local_batch, ((0, 0), (0, max_len)))
    shape = (rows * jax.process_count(), max_len)
    return jax.make_array_from_process_local_data(sharding, padded, shape)


# ---------------------------------------------------------------------------
# dp_zh.global_normalize
# ---------------------------------------------------------------------------


def global_normalize__psum_j_only(grid):
    """Sums over the vmap axis "j" only: every row is normalized on its own."""

    def normalize(x):
        return x / lax.psum(x, "j")

    return jax.pmap(jax.vmap(normalize, axis_name="j"), axis_name="i")(grid)


def global_normalize__psum_i_only(grid):
    """Sums over the pmap axis "i" only: every column is normalized on its own."""

    def normalize(x):
        return x / lax.psum(x, "i")

    return jax.pmap(jax.vmap(normalize, axis_name="j"), axis_name="i")(grid)


def global_normalize__jnp_sum(grid):
    """Uses jnp.sum on the single mapped number, so every entry becomes 1."""

    def normalize(x):
        return x / jnp.sum(x)

    return jax.pmap(jax.vmap(normalize, axis_name="j"), axis_name="i")(grid)


def global_normalize__pmean(grid):
    """Divides by pmean instead of psum: the entries sum to 8n, not 1."""

    def normalize(x):
        return x / lax.pmean(x, ("i", "j"))

    return jax.pmap(jax.vmap(normalize, axis_name="j"), axis_name="i")(grid)


def global_normalize__row_then_column(grid):
    """Normalizes each row, then each column of that, instead of by the grand total."""

    def normalize(x):
        by_row = x / lax.psum(x, "j")
        return by_row / lax.psum(by_row, "i")

    return jax.pmap(jax.vmap(normalize, axis_name="j"), axis_name="i")(grid)


def global_normalize__sum_of_psums(grid):
    """Adds the psum over "i" to the psum over "j", thinking that covers both axes."""

    def normalize(x):
        return x / (lax.psum(x, "i") + lax.psum(x, "j"))

    return jax.pmap(jax.vmap(normalize, axis_name="j"), axis_name="i")(grid)


def global_normalize__unnamed_vmap(grid):
    """Forgets axis_name on the inner vmap, so psum over ("i", "j") has no "j"."""

    def normalize(x):
        return x / lax.psum(x, ("i", "j"))

    return jax.pmap(jax.vmap(normalize), axis_name="i")(grid)


def global_normalize__vmap_vmap(grid):
    """Uses vmap for both levels: right values, but all on one device."""

    def normalize(x):
        return x / lax.psum(x, ("i", "j"))

    return jax.vmap(jax.vmap(normalize, axis_name="j"), axis_name="i")(grid)


# ---------------------------------------------------------------------------
# dp_zh.split_for_devices
# ---------------------------------------------------------------------------


def split_for_devices__interleaved(array, num_devices):
    """Deals rows out round-robin: device k gets array[k::num_devices]."""
    per_device = array.shape[0] // num_devices
    return array.reshape(per_device, num_devices, *array.shape[1:]).swapaxes(0, 1)


def split_for_devices__swapped_reshape(array, num_devices):
    """Reshapes to (-1, num_devices, ...): the per-device batch comes first."""
    return array.reshape(-1, num_devices, *array.shape[1:])


def split_for_devices__hardcoded_8(array, num_devices):
    """Hard-codes 8 devices as in the chapter instead of using num_devices."""
    return array.reshape(8, -1, *array.shape[1:])


def split_for_devices__hardcoded_32(array, num_devices):
    """Hard-codes the chapter's per-device batch of 32."""
    return array.reshape(num_devices, 32, *array.shape[1:])


def split_for_devices__flatten_trailing(array, num_devices):
    """Reshapes to (num_devices, -1), merging the batch with the trailing axes."""
    return array.reshape(num_devices, -1)


def split_for_devices__collapse_features(array, num_devices):
    """Keeps the batch axis but collapses all trailing axes into one."""
    return array.reshape(num_devices, array.shape[0] // num_devices, -1)


def split_for_devices__numpy_split(array, num_devices):
    """Uses np.split and np.stack, which fail on tracers under jax.jit."""
    return np.stack(np.split(np.asarray(array), num_devices))


def split_for_devices__cast_float(array, num_devices):
    """Casts to float32 while splitting, so integer labels change dtype."""
    batch = array.shape[0] // num_devices
    return jnp.asarray(array, dtype=jnp.float32).reshape(
        num_devices, batch, *array.shape[1:]
    )


def split_for_devices__size_not_length(array, num_devices):
    """Computes the per-device batch from array.size instead of array.shape[0]."""
    batch = array.size // num_devices
    return array.reshape(num_devices, batch, *array.shape[1:])


# ---------------------------------------------------------------------------
# dp_zh.replicate
# ---------------------------------------------------------------------------


def replicate__hardcoded_8(tree, num_devices):
    """Hard-codes 8 copies instead of num_devices."""
    return jax.tree.map(lambda a: jnp.broadcast_to(a, (8, *a.shape)), tree)


def replicate__trailing_axis(tree, num_devices):
    """Adds the device axis at the end instead of the front."""
    return jax.tree.map(lambda a: jnp.broadcast_to(a, (*a.shape, num_devices)), tree)


def replicate__list_of_trees(tree, num_devices):
    """Returns a list of num_devices copies of the tree, not stacked leaves."""
    return [tree] * num_devices


def replicate__tile(tree, num_devices):
    """Uses jnp.tile, which repeats along the last axis instead of adding one."""
    return jax.tree.map(lambda a: jnp.tile(a, num_devices), tree)


def replicate__repeat_axis0(tree, num_devices):
    """Uses jnp.repeat along axis 0, lengthening the first axis (fails on scalars)."""
    return jax.tree.map(lambda a: jnp.repeat(a, num_devices, axis=0), tree)


def replicate__expand_only(tree, num_devices):
    """Adds a leading axis of length 1 and expects pmap to broadcast it."""
    return jax.tree.map(lambda a: a[None], tree)


def replicate__in_place(tree, num_devices):
    """Overwrites the leaves of the given list of dicts in place and returns it."""
    for layer in tree:
        for name in layer:
            layer[name] = jnp.broadcast_to(
                layer[name], (num_devices, *layer[name].shape)
            )
    return tree


def replicate__zeros_plus(tree, num_devices):
    """Adds each leaf to float zeros, turning integer leaves into float32."""
    return jax.tree.map(lambda a: jnp.zeros((num_devices, *a.shape)) + a, tree)


def replicate__numpy_broadcast(tree, num_devices):
    """Uses np.broadcast_to, which fails on tracers under jax.jit."""
    return jax.tree.map(lambda a: np.broadcast_to(a, (num_devices, *a.shape)), tree)


# ---------------------------------------------------------------------------
# dp_zh.pmap_step
# ---------------------------------------------------------------------------


@functools.partial(jax.pmap, axis_name="batch", in_axes=(0, 0, 0, None))
def pmap_step__psum(params, images, labels, step_size):
    """Sums gradients and loss with psum instead of averaging: 8 times too large."""
    from exercise_kit.dp_zh_checks import loss_fn

    loss, grads = jax.value_and_grad(loss_fn)(params, images, labels)
    grads = lax.psum(grads, "batch")
    loss = lax.psum(loss, "batch")
    return jax.tree.map(lambda p, g: p - step_size * g, params, grads), loss


@functools.partial(jax.pmap, axis_name="batch", in_axes=(0, 0, 0, None))
def pmap_step__no_collective(params, images, labels, step_size):
    """Updates with each device's local gradient: the replicas drift apart."""
    from exercise_kit.dp_zh_checks import loss_fn

    loss, grads = jax.value_and_grad(loss_fn)(params, images, labels)
    return jax.tree.map(lambda p, g: p - step_size * g, params, grads), loss


@functools.partial(jax.pmap, axis_name="batch", in_axes=(0, 0, 0, None))
def pmap_step__local_loss(params, images, labels, step_size):
    """Averages the gradients but returns each device's own loss."""
    from exercise_kit.dp_zh_checks import loss_fn

    loss, grads = jax.value_and_grad(loss_fn)(params, images, labels)
    grads = lax.pmean(grads, "batch")
    return jax.tree.map(lambda p, g: p - step_size * g, params, grads), loss


@functools.partial(jax.pmap, axis_name="batch", in_axes=(0, 0, 0, None))
def pmap_step__loss_psum(params, images, labels, step_size):
    """Averages the gradients but sums the loss with psum (8 times the mean)."""
    from exercise_kit.dp_zh_checks import loss_fn

    loss, grads = jax.value_and_grad(loss_fn)(params, images, labels)
    grads = lax.pmean(grads, "batch")
    loss = lax.psum(loss, "batch")
    return jax.tree.map(lambda p, g: p - step_size * g, params, grads), loss


@functools.partial(jax.pmap, axis_name="batch", in_axes=(0, 0, 0, None))
def pmap_step__ascent(params, images, labels, step_size):
    """Adds the averaged gradient instead of subtracting it (gradient ascent)."""
    from exercise_kit.dp_zh_checks import loss_fn

    loss, grads = jax.value_and_grad(loss_fn)(params, images, labels)
    grads = lax.pmean(grads, "batch")
    loss = lax.pmean(loss, "batch")
    return jax.tree.map(lambda p, g: p + step_size * g, params, grads), loss


@functools.partial(jax.pmap, axis_name="batch", in_axes=(0, 0, 0, None))
def pmap_step__weights_only(params, images, labels, step_size):
    """Averages the weight gradients but leaves the bias gradients local."""
    from exercise_kit.dp_zh_checks import loss_fn

    loss, grads = jax.value_and_grad(loss_fn)(params, images, labels)
    grads = [{"w": lax.pmean(g["w"], "batch"), "b": g["b"]} for g in grads]
    loss = lax.pmean(loss, "batch")
    return jax.tree.map(lambda p, g: p - step_size * g, params, grads), loss


@functools.partial(jax.pmap, axis_name="batch", in_axes=(0, 0, 0, None))
def pmap_step__grad_of_pmean_loss(params, images, labels, step_size):
    """Copies the shard_map recipe: differentiates the pmean'd loss, no grad pmean."""
    from exercise_kit.dp_zh_checks import loss_fn

    def global_loss(p):
        return lax.pmean(loss_fn(p, images, labels), "batch")

    loss, grads = jax.value_and_grad(global_loss)(params)
    return jax.tree.map(lambda p, g: p - step_size * g, params, grads), loss


@functools.partial(jax.pmap, axis_name="batch", in_axes=(0, 0, 0, None))
def pmap_step__swapped_tree_args(params, images, labels, step_size):
    """Passes grads before params to tree.map, computing g - lr * p."""
    from exercise_kit.dp_zh_checks import loss_fn

    loss, grads = jax.value_and_grad(loss_fn)(params, images, labels)
    grads = lax.pmean(grads, "batch")
    loss = lax.pmean(loss, "batch")
    return jax.tree.map(lambda p, g: p - step_size * g, grads, params), loss


@functools.partial(jax.pmap, axis_name="batch", in_axes=(0, 0, 0, None))
def pmap_step__wrong_axis_name(params, images, labels, step_size):
    """Averages over axis "i" (from exercise 1) instead of the pmap's "batch"."""
    from exercise_kit.dp_zh_checks import loss_fn

    loss, grads = jax.value_and_grad(loss_fn)(params, images, labels)
    grads = lax.pmean(grads, "i")
    loss = lax.pmean(loss, "i")
    return jax.tree.map(lambda p, g: p - step_size * g, params, grads), loss


# ---------------------------------------------------------------------------
# dp_zh.data_parallel_grads
# ---------------------------------------------------------------------------


def data_parallel_grads__pmean_local_grads(params, images, labels):
    """Copies the pmap recipe into shard_map: pmean of local grads, 8 times too big."""
    from exercise_kit.dp_zh_checks import loss_fn

    mesh = jax.make_mesh((jax.device_count(),), ("batch",), axis_types=(AxisType.Auto,))

    def per_device(p, x, y):
        return lax.pmean(jax.grad(loss_fn)(p, x, y), "batch")

    specs = dict(mesh=mesh, in_specs=(P(), P("batch"), P("batch")), out_specs=P())
    return jax.shard_map(per_device, **specs)(params, images, labels)


def data_parallel_grads__no_collective(params, images, labels):
    """Returns the local gradient from shard_map, which is silently summed (8x)."""
    from exercise_kit.dp_zh_checks import loss_fn

    mesh = jax.make_mesh((jax.device_count(),), ("batch",), axis_types=(AxisType.Auto,))

    def per_device(p, x, y):
        return jax.grad(loss_fn)(p, x, y)

    specs = dict(mesh=mesh, in_specs=(P(), P("batch"), P("batch")), out_specs=P())
    return jax.shard_map(per_device, **specs)(params, images, labels)


def data_parallel_grads__psum_loss(params, images, labels):
    """Differentiates the psum of the local mean losses instead of their pmean."""
    from exercise_kit.dp_zh_checks import loss_fn

    mesh = jax.make_mesh((jax.device_count(),), ("batch",), axis_types=(AxisType.Auto,))

    def per_device(p, x, y):
        return jax.grad(lambda q: lax.psum(loss_fn(q, x, y), "batch"))(p)

    specs = dict(mesh=mesh, in_specs=(P(), P("batch"), P("batch")), out_specs=P())
    return jax.shard_map(per_device, **specs)(params, images, labels)


def data_parallel_grads__single_device(params, images, labels):
    """Calls jax.grad on the whole batch: right values, but on one device."""
    from exercise_kit.dp_zh_checks import loss_fn

    return jax.grad(loss_fn)(params, images, labels)


def data_parallel_grads__swapped_specs(params, images, labels):
    """Gives images P() and labels P("batch"), so they no longer line up."""
    from exercise_kit.dp_zh_checks import loss_fn

    mesh = jax.make_mesh((jax.device_count(),), ("batch",), axis_types=(AxisType.Auto,))

    def per_device(p, x, y):
        return jax.grad(lambda q: lax.pmean(loss_fn(q, x, y), "batch"))(p)

    specs = dict(mesh=mesh, in_specs=(P(), P(), P("batch")), out_specs=P())
    return jax.shard_map(per_device, **specs)(params, images, labels)


def data_parallel_grads__batch_out_specs(params, images, labels):
    """Uses out_specs=P("batch"), stacking 8 copies of the gradient along axis 0."""
    from exercise_kit.dp_zh_checks import loss_fn

    mesh = jax.make_mesh((jax.device_count(),), ("batch",), axis_types=(AxisType.Auto,))

    def per_device(p, x, y):
        return jax.grad(lambda q: lax.pmean(loss_fn(q, x, y), "batch"))(p)

    specs = dict(
        mesh=mesh, in_specs=(P(), P("batch"), P("batch")), out_specs=P("batch")
    )
    return jax.shard_map(per_device, **specs)(params, images, labels)


def data_parallel_grads__divide_by_local_batch(params, images, labels):
    """Divides the psum of the losses by the local batch size, not the device count."""
    from exercise_kit.dp_zh_checks import loss_fn

    mesh = jax.make_mesh((jax.device_count(),), ("batch",), axis_types=(AxisType.Auto,))

    def per_device(p, x, y):
        def global_loss(q):
            return lax.psum(loss_fn(q, x, y), "batch") / x.shape[0]

        return jax.grad(global_loss)(p)

    specs = dict(mesh=mesh, in_specs=(P(), P("batch"), P("batch")), out_specs=P())
    return jax.shard_map(per_device, **specs)(params, images, labels)


def data_parallel_grads__check_vma_off(params, images, labels):
    """Turns off check_vma and returns local grads: device 0's gradient only."""
    from exercise_kit.dp_zh_checks import loss_fn

    mesh = jax.make_mesh((jax.device_count(),), ("batch",), axis_types=(AxisType.Auto,))

    def per_device(p, x, y):
        return jax.grad(loss_fn)(p, x, y)

    specs = dict(mesh=mesh, in_specs=(P(), P("batch"), P("batch")), out_specs=P())
    return jax.shard_map(per_device, check_vma=False, **specs)(params, images, labels)


# ---------------------------------------------------------------------------
# dp_zh.shard_map_normalize
# ---------------------------------------------------------------------------


def shard_map_normalize__psum_i_only(grid, mesh):
    """Sums over mesh axis "i" only: blocks sharing a "j" column normalize together."""

    def per_block(block):
        return block / lax.psum(jnp.sum(block), "i")

    spec = P("i", "j")
    return jax.shard_map(per_block, mesh=mesh, in_specs=spec, out_specs=spec)(grid)


def shard_map_normalize__psum_j_only(grid, mesh):
    """Sums over mesh axis "j" only: each row of blocks is normalized on its own."""

    def per_block(block):
        return block / lax.psum(jnp.sum(block), "j")

    spec = P("i", "j")
    return jax.shard_map(per_block, mesh=mesh, in_specs=spec, out_specs=spec)(grid)


def shard_map_normalize__block_sum_only(grid, mesh):
    """Divides by the block's own sum: no collective, every block sums to 1."""

    def per_block(block):
        return block / jnp.sum(block)

    spec = P("i", "j")
    return jax.shard_map(per_block, mesh=mesh, in_specs=spec, out_specs=spec)(grid)


def shard_map_normalize__elementwise_psum(grid, mesh):
    """Psums the block itself (no jnp.sum first), as in exercise 1's one number."""

    def per_block(block):
        return block / lax.psum(block, ("i", "j"))

    spec = P("i", "j")
    return jax.shard_map(per_block, mesh=mesh, in_specs=spec, out_specs=spec)(grid)


def shard_map_normalize__pmean(grid, mesh):
    """Divides by the pmean of the block sums instead of their psum."""

    def per_block(block):
        return block / lax.pmean(jnp.sum(block), ("i", "j"))

    spec = P("i", "j")
    return jax.shard_map(per_block, mesh=mesh, in_specs=spec, out_specs=spec)(grid)


def shard_map_normalize__rows_only_spec(grid, mesh):
    """Shards by rows only (P("i")): the "j" devices hold copies, double counted."""

    def per_block(block):
        return block / lax.psum(jnp.sum(block), ("i", "j"))

    spec = P("i")
    return jax.shard_map(per_block, mesh=mesh, in_specs=spec, out_specs=spec)(grid)


def shard_map_normalize__swapped_spec(grid, mesh):
    """Uses P("j", "i"): right values, but each device holds the wrong block."""

    def per_block(block):
        return block / lax.psum(jnp.sum(block), ("i", "j"))

    spec = P("j", "i")
    return jax.shard_map(per_block, mesh=mesh, in_specs=spec, out_specs=spec)(grid)


def shard_map_normalize__own_4x2_mesh(grid, mesh):
    """Ignores the mesh argument and builds the chapter's 4 x 2 mesh."""
    own_mesh = jax.make_mesh((4, 2), ("i", "j"))

    def per_block(block):
        return block / lax.psum(jnp.sum(block), ("i", "j"))

    spec = P("i", "j")
    return jax.shard_map(per_block, mesh=own_mesh, in_specs=spec, out_specs=spec)(grid)


def shard_map_normalize__replicated_out(grid, mesh):
    """Declares out_specs=P(), as if the normalized blocks were replicated."""

    def per_block(block):
        return block / lax.psum(jnp.sum(block), ("i", "j"))

    return jax.shard_map(per_block, mesh=mesh, in_specs=P("i", "j"), out_specs=P())(
        grid
    )


ANSWERS = [
    # (exercise id, function, what the mistake is in a few words)
    (
        "multiprocess.process_rows",
        process_rows__ceil_everywhere,
        "ceil for every process",
    ),
    (
        "multiprocess.process_rows",
        process_rows__floor_drops_remainder,
        "floor share, remainder dropped",
    ),
    (
        "multiprocess.process_rows",
        process_rows__last_takes_remainder,
        "last process takes the whole remainder",
    ),
    (
        "multiprocess.process_rows",
        process_rows__interleaved,
        "interleaved rows instead of contiguous",
    ),
    (
        "multiprocess.process_rows",
        process_rows__extras_to_last,
        "extra records to the last processes",
    ),
    (
        "multiprocess.process_rows",
        process_rows__extra_off_by_one,
        "<= instead of < for the extra record",
    ),
    (
        "multiprocess.process_rows",
        process_rows__rounded_share,
        "share rounded to nearest integer",
    ),
    (
        "multiprocess.process_rows",
        process_rows__count_as_block_size,
        "process count used as block size",
    ),
    (
        "multiprocess.process_rows",
        process_rows__linspace_bounds,
        "linspace boundaries put extras in wrong places",
    ),
    (
        "multiprocess.common_num_steps",
        common_num_steps__max_batches,
        "max instead of min",
    ),
    (
        "multiprocess.common_num_steps",
        common_num_steps__total_batches,
        "batches of all data together",
    ),
    (
        "multiprocess.common_num_steps",
        common_num_steps__average_share,
        "average share instead of smallest",
    ),
    (
        "multiprocess.common_num_steps",
        common_num_steps__ceil_partial_batch,
        "partial batch counted (ceil)",
    ),
    (
        "multiprocess.common_num_steps",
        common_num_steps__first_process_only,
        "process 0's count only",
    ),
    (
        "multiprocess.common_num_steps",
        common_num_steps__rounded_ratio,
        "rounds instead of floors",
    ),
    (
        "multiprocess.common_num_steps",
        common_num_steps__minus_one_guard,
        "off by one record",
    ),
    (
        "multiprocess.common_num_steps",
        common_num_steps__batch_split_by_processes,
        "batch size divided by process count",
    ),
    ("multiprocess.sum_metrics", sum_metrics__dict_order, "dict insertion order"),
    ("multiprocess.sum_metrics", sum_metrics__set_order, "set iteration order"),
    (
        "multiprocess.sum_metrics",
        sum_metrics__array_in_dict_order,
        "one array packed in dict order",
    ),
    ("multiprocess.sum_metrics", sum_metrics__sorted_by_value, "sorted by local value"),
    (
        "multiprocess.sum_metrics",
        sum_metrics__no_allreduce,
        "forgot to sum over processes",
    ),
    (
        "multiprocess.sum_metrics",
        sum_metrics__mean_not_sum,
        "mean over processes instead of sum",
    ),
    (
        "multiprocess.sum_metrics",
        sum_metrics__relabel_in_dict_order,
        "sorted reductions relabelled in dict order",
    ),
    (
        "multiprocess.sum_metrics",
        sum_metrics__sorted_by_length,
        "sorted by name length, ties unordered",
    ),
    ("multiprocess.run_epoch", run_epoch__max_count, "agrees on the max count"),
    (
        "multiprocess.run_epoch",
        run_epoch__broadcast_process0,
        "process 0's count broadcast",
    ),
    ("multiprocess.run_epoch", run_epoch__own_entry, "gathers counts, reads own entry"),
    (
        "multiprocess.run_epoch",
        run_epoch__average_count,
        "average share instead of smallest",
    ),
    (
        "multiprocess.run_epoch",
        run_epoch__ceil_own_padded,
        "pads own last batch, no agreement",
    ),
    (
        "multiprocess.run_epoch",
        run_epoch__max_padded,
        "max count with zero-padded batches",
    ),
    (
        "multiprocess.run_epoch",
        run_epoch__sliding_window,
        "overlapping windows instead of batches",
    ),
    (
        "multiprocess.run_epoch",
        run_epoch__round_ratio,
        "rounds the ratio instead of floor",
    ),
    (
        "multiprocess.run_epoch",
        run_epoch__last_batches,
        "takes the last batches, not the first",
    ),
    (
        "multiprocess.global_batch",
        global_batch__pad_at_start,
        "pads at the start of rows",
    ),
    (
        "multiprocess.global_batch",
        global_batch__pad_rows_axis,
        "pads the wrong axis (rows)",
    ),
    (
        "multiprocess.global_batch",
        global_batch__no_pad_inferred,
        "no padding, shape inferred",
    ),
    (
        "multiprocess.global_batch",
        global_batch__shape_omitted,
        "global shape not stated",
    ),
    (
        "multiprocess.global_batch",
        global_batch__local_rows_as_global,
        "global shape from one process's rows",
    ),
    (
        "multiprocess.global_batch",
        global_batch__device_count_rows,
        "rows times device count",
    ),
    (
        "multiprocess.global_batch",
        global_batch__np_resize,
        "np.resize repeats data instead of zeros",
    ),
    (
        "multiprocess.global_batch",
        global_batch__shape_before_padding,
        "shape from the unpadded length",
    ),
    (
        "multiprocess.global_batch",
        global_batch__pad_width_max_len,
        "pad width max_len instead of the difference",
    ),
    ("dp_zh.global_normalize", global_normalize__psum_j_only, "psum over j only"),
    ("dp_zh.global_normalize", global_normalize__psum_i_only, "psum over i only"),
    ("dp_zh.global_normalize", global_normalize__jnp_sum, "jnp.sum instead of psum"),
    ("dp_zh.global_normalize", global_normalize__pmean, "pmean instead of psum"),
    (
        "dp_zh.global_normalize",
        global_normalize__row_then_column,
        "normalizes rows then columns",
    ),
    (
        "dp_zh.global_normalize",
        global_normalize__sum_of_psums,
        "psum over i plus psum over j",
    ),
    (
        "dp_zh.global_normalize",
        global_normalize__unnamed_vmap,
        "vmap without axis_name",
    ),
    (
        "dp_zh.global_normalize",
        global_normalize__vmap_vmap,
        "vmap instead of pmap, one device",
    ),
    (
        "dp_zh.split_for_devices",
        split_for_devices__interleaved,
        "interleaved rows instead of contiguous",
    ),
    (
        "dp_zh.split_for_devices",
        split_for_devices__swapped_reshape,
        "reshape axes swapped",
    ),
    ("dp_zh.split_for_devices", split_for_devices__hardcoded_8, "hard-coded 8 devices"),
    (
        "dp_zh.split_for_devices",
        split_for_devices__hardcoded_32,
        "hard-coded per-device batch 32",
    ),
    (
        "dp_zh.split_for_devices",
        split_for_devices__flatten_trailing,
        "trailing axes merged into the batch",
    ),
    (
        "dp_zh.split_for_devices",
        split_for_devices__collapse_features,
        "trailing axes collapsed into one",
    ),
    (
        "dp_zh.split_for_devices",
        split_for_devices__numpy_split,
        "NumPy split fails under jit",
    ),
    (
        "dp_zh.split_for_devices",
        split_for_devices__cast_float,
        "dtype changed to float32",
    ),
    (
        "dp_zh.split_for_devices",
        split_for_devices__size_not_length,
        "array.size instead of shape[0]",
    ),
    ("dp_zh.replicate", replicate__hardcoded_8, "hard-coded 8 copies"),
    ("dp_zh.replicate", replicate__trailing_axis, "device axis at the end"),
    ("dp_zh.replicate", replicate__list_of_trees, "list of tree copies"),
    ("dp_zh.replicate", replicate__tile, "jnp.tile along last axis"),
    ("dp_zh.replicate", replicate__repeat_axis0, "jnp.repeat along axis 0"),
    ("dp_zh.replicate", replicate__expand_only, "leading axis of length 1"),
    ("dp_zh.replicate", replicate__in_place, "modifies the input tree"),
    ("dp_zh.replicate", replicate__zeros_plus, "integer leaves become float"),
    ("dp_zh.replicate", replicate__numpy_broadcast, "np.broadcast_to fails under jit"),
    ("dp_zh.pmap_step", pmap_step__psum, "psum instead of pmean"),
    ("dp_zh.pmap_step", pmap_step__no_collective, "no gradient all-reduce"),
    ("dp_zh.pmap_step", pmap_step__local_loss, "loss not averaged"),
    ("dp_zh.pmap_step", pmap_step__loss_psum, "loss summed with psum"),
    ("dp_zh.pmap_step", pmap_step__ascent, "adds the gradient"),
    ("dp_zh.pmap_step", pmap_step__weights_only, "bias gradients not averaged"),
    (
        "dp_zh.pmap_step",
        pmap_step__grad_of_pmean_loss,
        "shard_map recipe in pmap (grad of pmean loss)",
    ),
    ("dp_zh.pmap_step", pmap_step__swapped_tree_args, "tree.map arguments swapped"),
    ("dp_zh.pmap_step", pmap_step__wrong_axis_name, "pmean over wrong axis name"),
    (
        "dp_zh.data_parallel_grads",
        data_parallel_grads__pmean_local_grads,
        "pmean of local grads in shard_map (8x)",
    ),
    (
        "dp_zh.data_parallel_grads",
        data_parallel_grads__no_collective,
        "local grads, no collective (8x)",
    ),
    (
        "dp_zh.data_parallel_grads",
        data_parallel_grads__psum_loss,
        "psum of losses instead of pmean",
    ),
    (
        "dp_zh.data_parallel_grads",
        data_parallel_grads__single_device,
        "plain jax.grad on one device",
    ),
    (
        "dp_zh.data_parallel_grads",
        data_parallel_grads__swapped_specs,
        "images replicated, labels sharded",
    ),
    (
        "dp_zh.data_parallel_grads",
        data_parallel_grads__batch_out_specs,
        "out_specs P('batch') stacks copies",
    ),
    (
        "dp_zh.data_parallel_grads",
        data_parallel_grads__divide_by_local_batch,
        "psum divided by local batch size",
    ),
    (
        "dp_zh.data_parallel_grads",
        data_parallel_grads__check_vma_off,
        "check_vma off, one device's grads",
    ),
    ("dp_zh.shard_map_normalize", shard_map_normalize__psum_i_only, "psum over i only"),
    ("dp_zh.shard_map_normalize", shard_map_normalize__psum_j_only, "psum over j only"),
    (
        "dp_zh.shard_map_normalize",
        shard_map_normalize__block_sum_only,
        "block sum only, no psum",
    ),
    (
        "dp_zh.shard_map_normalize",
        shard_map_normalize__elementwise_psum,
        "psum of the block without jnp.sum",
    ),
    ("dp_zh.shard_map_normalize", shard_map_normalize__pmean, "pmean instead of psum"),
    (
        "dp_zh.shard_map_normalize",
        shard_map_normalize__rows_only_spec,
        "P('i') specs, j copies double counted",
    ),
    (
        "dp_zh.shard_map_normalize",
        shard_map_normalize__swapped_spec,
        "P('j', 'i') layout",
    ),
    (
        "dp_zh.shard_map_normalize",
        shard_map_normalize__own_4x2_mesh,
        "own 4x2 mesh ignores the argument",
    ),
    (
        "dp_zh.shard_map_normalize",
        shard_map_normalize__replicated_out,
        "out_specs P() for sharded result",
    ),
]
