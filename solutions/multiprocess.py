"""Reference code for chapter 6's exercises: keeping several processes in step.

Importing this module registers the exercises ``multiprocess.process_rows``,
``multiprocess.common_num_steps``, ``multiprocess.sum_metrics``,
``multiprocess.run_epoch`` and ``multiprocess.global_batch`` with
:mod:`jaxcourse.exercises`.

The first three are checked in this process. ``sum_metrics`` is run once per
simulated process, with a stand-in collective that is matched by call order,
as real collectives are, and with string hashing salted per process, as on
separate machines (see :func:`simulate_processes`). ``run_epoch`` is checked
for real: :func:`launch_run_epoch` writes the learner's function into a
worker script and starts it in 2 processes with :func:`jaxcourse.launch.launch`;
a hang is ended by the launcher's timeout and reported as a failed test.
``global_batch`` is checked in this process first, then in 2 launched
processes of 2 CPU devices each (:func:`launch_global_batch`), where every
process gathers the global array it built.
"""

from __future__ import annotations

import inspect
import json
import re
import tempfile
import textwrap
import tokenize
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from jaxcourse import CourseError
from jaxcourse.exercises import Case, Exercise, Mistake, register

CHAPTER = "06_multi_process"

# --------------------------------------------------------------------------
# Reference solutions
# --------------------------------------------------------------------------


def process_rows(num_records, process_index, process_count):
    """Return the record indices this process loads: one contiguous block.

    The blocks cover ``0 .. num_records - 1`` in order and their sizes differ
    by at most one: the first ``num_records % process_count`` processes take
    one record more.
    """
    base, extra = divmod(num_records, process_count)
    start = process_index * base + min(process_index, extra)
    stop = start + base + (1 if process_index < extra else 0)
    return np.arange(start, stop)


def common_num_steps(local_sizes, batch_size):
    """Return the number of full batches that every process can run."""
    return min(size // batch_size for size in local_sizes)


def sum_metrics(local_metrics, allreduce):
    """Sum each metric over all processes, one collective per metric.

    The collectives are issued in sorted order of the names, which is the same
    in every process (dict and set orders may not be).
    """
    return {name: allreduce(local_metrics[name]) for name in sorted(local_metrics)}


def run_epoch(local_data, batch_size, step):
    """Run ``step`` on this process's full batches, as often as every process.

    Every process learns every process's batch count with a collective and
    all stop at the smallest, so each calls ``step`` the same number of times.
    """
    from jax.experimental import multihost_utils

    mine = len(local_data) // batch_size
    counts = multihost_utils.process_allgather(np.int32(mine))
    num_steps = int(np.min(counts))
    return [step(local_data[i * batch_size:(i + 1) * batch_size])
            for i in range(num_steps)]


def global_batch(local_batch, max_len, sharding):
    """Assemble the global batch from every process's rows, padded to ``max_len``.

    Each process pads its own rows with zeros on the right to the length all
    processes agreed on, and states the global shape, so that no process
    infers a shape of its own from the data it happens to hold.
    """
    rows, length = local_batch.shape
    padded = np.pad(local_batch, ((0, 0), (0, max_len - length)))
    global_shape = (rows * jax.process_count(), max_len)
    return jax.make_array_from_process_local_data(sharding, padded, global_shape)


# --------------------------------------------------------------------------
# Running an answer as every process would
# --------------------------------------------------------------------------


class ProcessesOutOfStepError(CourseError):
    """The (simulated or launched) processes did not stay in step."""


def every_process(function: Callable, num_records: int, process_count: int) -> tuple:
    """Call ``process_rows``-like ``function`` once per process index.

    A list of indices, or a JAX array, holds the same records as the NumPy
    array the text asks for, so lists are turned into arrays first.
    """
    return tuple(_indices(function(num_records, p, process_count))
                 for p in range(process_count))


def _indices(out: Any) -> Any:
    if isinstance(out, (list, tuple)):
        # An empty list has no dtype of its own: it holds no index, of any type.
        return np.asarray(out, dtype=np.int64 if not out else None)
    return out


class SaltedName(str):
    """A metric name whose hash depends on the process, as on another machine.

    Python salts string hashes per interpreter (``PYTHONHASHSEED``), so a
    ``set`` of names iterates in a different order on each machine. In one
    checking process we imitate that with a deterministic, per-process hash.
    Equality and sorting are those of ``str``.
    """

    salt: int

    def __new__(cls, name: str, salt: int) -> SaltedName:  # noqa: D102
        obj = super().__new__(cls, name)
        obj.salt = salt
        return obj

    def __hash__(self) -> int:
        return zlib.crc32(f"{self.salt}:{str.__str__(self)}".encode())

    def __eq__(self, other: object) -> bool:
        return str.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return str.__ne__(self, other)


class Metrics(dict):
    """A dict keyed by :class:`SaltedName` that also answers to plain strings."""

    def __missing__(self, key: Any) -> Any:
        for name, value in self.items():
            if name == key:
                return value
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        return any(name == key for name in self.keys())

    def get(self, key: Any, default: Any = None) -> Any:
        """Like :meth:`dict.get`, for plain-string keys too."""
        try:
            return self[key]
        except KeyError:
            return default


def _metrics_of(process: int, items: Sequence[tuple[str, float]]) -> Metrics:
    return Metrics((SaltedName(name, process), value) for name, value in items)


def simulate_processes(function: Callable, per_process: Sequence) -> tuple:
    """Run ``function(local_metrics, allreduce)`` as each process would.

    Collectives are matched by the order in which each process calls them,
    as in JAX: the k-th ``allreduce`` of every process is summed with the k-th
    of the others. A first pass records what each process passes to its
    collectives; a second pass runs each process again, with every collective
    returning its sum.

    Raises
    ------
    ProcessesOutOfStepError
        If the processes call ``allreduce`` different numbers of times, or
        with different shapes (on a cluster: a hang or a crash).
    """
    def record(calls: list) -> Callable:
        def allreduce(value: Any) -> Any:
            calls.append(np.asarray(value, dtype=np.float64))
            return value
        return allreduce

    calls: list[list[np.ndarray]] = []
    for p, items in enumerate(per_process):
        calls.append([])
        function(_metrics_of(p, items), record(calls[-1]))
    counts = [len(c) for c in calls]
    if len(set(counts)) > 1:
        raise ProcessesOutOfStepError(
            f"the processes called allreduce different numbers of times {counts}: "
            "on a cluster the ones with more calls would wait forever"
        )
    sums = []
    for k, values in enumerate(zip(*calls, strict=True)):
        shapes = {v.shape for v in values}
        if len(shapes) > 1:
            raise ProcessesOutOfStepError(
                f"collective number {k + 1} got arrays of different shapes "
                f"{[v.shape for v in values]} in different processes: on a "
                "cluster this hangs or crashes"
            )
        sums.append(np.sum(values, axis=0))

    def replay(next_sum: list[int]) -> Callable:
        def allreduce(value: Any) -> np.ndarray:
            k = next_sum[0]
            next_sum[0] += 1
            return sums[k] if k < len(sums) else np.asarray(value, np.float64)
        return allreduce

    results = []
    for p, items in enumerate(per_process):
        out = function(_metrics_of(p, items), replay([0]))
        if isinstance(out, dict):
            out = {str.__str__(k) if isinstance(k, str) else k: v
                   for k, v in out.items()}
        results.append(out)
    return tuple(results)


# ---- a real launch -----------------------------------------------------------

LAUNCH_PROCESSES = 2
LAUNCH_TIMEOUT = 20.0
_RESULT = "RESULT-JSON:"
_STEP = re.compile(r"^scenario (\d+): step (\d+) of process")

WORKER = '''\
"""One process of a run_epoch check: runs the learner's function on its data."""
import json
import sys

from jaxcourse.launch import initialize_from_env

initialize_from_env()

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

scenarios = json.loads(sys.argv[1])
rank = jax.process_index()
# An Auto axis, as in chapter 6's scripts: the compiler places the reduction.
mesh = jax.make_mesh((jax.device_count(),), ("batch",), axis_types=(AxisType.Auto,))
rows = NamedSharding(mesh, P("batch"))
global_mean = jax.jit(jnp.mean)
calls = 0


def make_step(scenario, batch_size):
    global calls
    calls = 0

    def step(batch):
        """A training step's stand-in: the mean of the global batch."""
        global calls
        batch = np.asarray(batch, dtype=np.float32)
        if batch.shape != (batch_size,):
            raise ValueError(
                f"process {rank} passed step() a batch of shape {batch.shape}, not "
                f"({batch_size},): every process must pass full batches"
            )
        calls += 1
        print(f"scenario {scenario}: step {calls} of process {rank} started",
              flush=True)
        shape = (batch_size * jax.process_count(),)
        x = jax.make_array_from_process_local_data(rows, batch, shape)
        return float(global_mean(x))
    return step


namespace = {"jax": jax, "jnp": jnp, "np": np, "multihost_utils": multihost_utils,
             "NamedSharding": NamedSharding, "P": P}
with open(sys.argv[2]) as f:
    exec(compile(f.read(), "<your function>", "exec"), namespace)
function = namespace[sys.argv[3]]
results = []
for scenario, (sizes, batch_size) in enumerate(scenarios, start=1):
    local_data = 1000.0 * rank + np.arange(sizes[rank], dtype=np.float32)
    out = function(local_data, batch_size, make_step(scenario, batch_size))
    results.append([float(v) for v in out])
print("RESULT-JSON:" + json.dumps(results), flush=True)
'''


def _source_of(function: Callable) -> str:
    try:
        source = textwrap.dedent(inspect.getsource(function))
    except (OSError, TypeError, SyntaxError, tokenize.TokenError):
        # SyntaxError and TokenError: the file changed since the function was
        # defined, so its recorded lines no longer hold it.
        raise ProcessesOutOfStepError(
            "the checker could not read your function's source code: define it "
            "with `def` in a notebook cell or a file"
        ) from None
    if function.__name__ == "<lambda>":
        raise ProcessesOutOfStepError("write the function with `def`, not lambda")
    return source


def _steps_called(lines: list[str]) -> dict[int, int]:
    """Map each scenario a process started steps in to its number of steps."""
    steps: dict[int, int] = {}
    for line in lines:
        if m := _STEP.match(line):
            steps[int(m[1])] = int(m[2])
    return steps


def _hang_message(result: Any) -> str:
    parts = []
    for rank in range(result.num_processes):
        lines = result.lines(rank)
        done = any(line.startswith(_RESULT) for line in lines)
        steps = _steps_called(lines)
        where = f" in scenario {max(steps)}" if steps else ""
        count = steps[max(steps)] if steps else 0
        parts.append(f"process {rank} called step() {count} times{where}"
                     + (" and finished" if done else " and was still waiting"))
    return (f"the processes hung and were ended after {LAUNCH_TIMEOUT:g} s: "
            + "; ".join(parts)
            + " — every process must call step() (a collective) the same number "
            "of times")


def _failure_message(error: Any) -> str:
    rank = getattr(error, "rank", "?")
    lines = [line for line in error.result.lines(rank, "stderr") if line.strip()]
    last = lines[-1].strip() if lines else str(error).splitlines()[0]
    return f"process {rank} failed: {last}"


def launch_run_epoch(function: Callable, scenarios: Sequence) -> tuple:
    """Run ``function`` in 2 launched processes (1 device each) per scenario.

    Parameters
    ----------
    function : callable
        ``function(local_data, batch_size, step)``; its source is copied into
        the worker script, so it may use only its arguments and ``jax``,
        ``jnp``, ``np``, ``multihost_utils``, ``NamedSharding`` and ``P``.
    scenarios : sequence of (sizes, batch_size)
        ``sizes[r]`` records for process ``r``; run one after the other.

    Returns
    -------
    tuple
        For each process, one array of step results per scenario.

    Raises
    ------
    ProcessesOutOfStepError
        If the processes hang (ended after ``LAUNCH_TIMEOUT`` s) or one fails;
        the message says what each process did.
    """
    result = _launch_worker(WORKER, function, scenarios, devices_per_process=1)
    counts = [_steps_called(result.lines(rank)) for rank in range(LAUNCH_PROCESSES)]
    for scenario in range(1, len(scenarios) + 1):
        calls = [c.get(scenario, 0) for c in counts]
        if len(set(calls)) == 1:
            continue
        # Collectives matched with the wrong partner (the next scenario's
        # step, say) may even return; the step counts still differ.
        done = ", ".join(f"process {r} {n} times" for r, n in enumerate(calls))
        raise ProcessesOutOfStepError(
            f"in scenario {scenario} the processes called step() different "
            f"numbers of times ({done}): "
            "the extra steps had no partner, so on a cluster they hang or compute "
            "garbage — every process must call step() the same number of times"
        )
    per_rank = []
    for rank in range(LAUNCH_PROCESSES):
        line = next(x for x in result.lines(rank) if x.startswith(_RESULT))
        per_rank.append(tuple(np.array(v, dtype=np.float64)
                              for v in json.loads(line[len(_RESULT):])))
    return tuple(per_rank)


#: Known mistakes that the in-process cases recognise: launched, they hang or
#: fail, so naming them there too would only cost a launch (or a timeout).
_NOT_RELAUNCHED: set[str] = set()


def _launch_worker(worker: str, function: Callable, scenarios: Sequence,
                   devices_per_process: int) -> Any:
    """Launch ``worker`` with the learner's ``function`` in LAUNCH_PROCESSES ranks."""
    from jaxcourse.launch import LaunchTimeoutError, RankFailedError, launch

    if getattr(function, "__module__", None) == __name__ and \
            function.__name__ in _NOT_RELAUNCHED:
        raise ProcessesOutOfStepError("a known mistake, recognised in one process")
    source = _source_of(function)
    with tempfile.TemporaryDirectory(prefix="jaxcourse-check-") as folder:
        Path(folder, "worker.py").write_text(worker)
        Path(folder, "answer.py").write_text(source)
        try:
            return launch(
                "worker.py", LAUNCH_PROCESSES, devices_per_process, cwd=folder,
                echo=False, timeout=LAUNCH_TIMEOUT, grace=0.5,
                args=[json.dumps([list(s) for s in scenarios]), "answer.py",
                      function.__name__],
            )
        except LaunchTimeoutError as err:
            raise ProcessesOutOfStepError(_hang_message(err.result)) from None
        except RankFailedError as err:
            raise ProcessesOutOfStepError(_failure_message(err)) from None


# ---- global_batch, launched ----------------------------------------------------

GLOBAL_DEVICES_PER_PROCESS = 2

GLOBAL_WORKER = '''\
"""One process of a global_batch check: builds the global batch from its rows."""
import json
import sys

from jaxcourse.launch import initialize_from_env

initialize_from_env()

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

scenarios = json.loads(sys.argv[1])
rank = jax.process_index()
mesh = jax.make_mesh((jax.device_count(),), ("batch",), axis_types=(AxisType.Auto,))
rows = NamedSharding(mesh, P("batch"))
namespace = {"jax": jax, "jnp": jnp, "np": np, "multihost_utils": multihost_utils,
             "NamedSharding": NamedSharding, "P": P}
with open(sys.argv[2]) as f:
    exec(compile(f.read(), "<your function>", "exec"), namespace)
function = namespace[sys.argv[3]]
results = []
for num_rows, lengths, max_len in scenarios:
    # Each process holds rows of its own length, as after padding locally.
    length = lengths[rank]
    local = 100.0 * (rank + 1) + np.arange(num_rows * length, dtype=np.float32)
    out = function(local.reshape(num_rows, length), max_len, rows)
    if not isinstance(out, jax.Array):
        raise TypeError(f"process {rank} returned a {type(out).__name__}, not a "
                        "global jax.Array")
    total = float(jax.jit(jnp.sum)(out))  # a collective over the global array
    whole = multihost_utils.process_allgather(out, tiled=True)
    results.append([list(out.shape), total, np.asarray(whole).tolist()])
print("RESULT-JSON:" + json.dumps(results), flush=True)
'''



def launch_global_batch(function: Callable, scenarios: Sequence) -> tuple:
    """Run ``global_batch``-like ``function`` in 2 processes of 2 devices each.

    Parameters
    ----------
    function : callable
        ``function(local_batch, max_len, sharding)``; its source is copied
        into the worker script (see :func:`launch_run_epoch`).
    scenarios : sequence of (rows, lengths, max_len)
        Every process holds ``rows`` rows of length ``lengths[rank]``.

    Returns
    -------
    tuple
        For each process and scenario: the global shape it saw, the sum of the
        global array computed under ``jit``, and the whole array, gathered.

    Raises
    ------
    ProcessesOutOfStepError
        If the processes hang or one fails (see :func:`launch_run_epoch`).
    """
    result = _launch_worker(GLOBAL_WORKER, function, scenarios,
                            devices_per_process=GLOBAL_DEVICES_PER_PROCESS)
    per_rank = []
    for rank in range(LAUNCH_PROCESSES):
        line = next(x for x in result.lines(rank) if x.startswith(_RESULT))
        per_rank.append(tuple(
            (np.array(shape, dtype=np.int64), np.float64(total),
             np.array(values, dtype=np.float64))
            for shape, total, values in json.loads(line[len(_RESULT):])))
    return tuple(per_rank)


def one_device_rows() -> NamedSharding:
    """Rows split over a one-device mesh: one process with one device."""
    mesh = jax.make_mesh((1,), ("batch",), axis_types=(AxisType.Auto,),
                         devices=jax.devices()[:1])
    return NamedSharding(mesh, P("batch"))


def _global_values(out: Any) -> np.ndarray:
    """Extract: the values of a global jax.Array (anything else is an error)."""
    if not isinstance(out, jax.Array):
        raise TypeError(f"got a {type(out).__name__}, not a global jax.Array: build "
                        "it with jax.make_array_from_process_local_data")
    return np.asarray(out)


def local_step(batch_size: int) -> Callable:
    """Return a one-process ``step``: the mean of a full batch."""
    def step(batch):
        batch = np.asarray(batch, dtype=np.float32)
        if batch.shape != (batch_size,):
            raise ValueError(f"step() got a batch of shape {batch.shape}, not "
                             f"({batch_size},): pass full batches only")
        return float(np.mean(batch))
    return step


def _in_one_process(function: Callable, size: int, batch_size: int) -> np.ndarray:
    data = np.arange(size, dtype=np.float32)
    return np.array([float(v) for v in function(data, batch_size,
                                                local_step(batch_size))])


# --------------------------------------------------------------------------
# Checker specs
# --------------------------------------------------------------------------


def _rows_case(n: int, count: int) -> Case:
    return Case(f"the rows of all {count} processes for {n} records",
                lambda rng: (n, count), runner=every_process, dtype="kind")


def _random_rows(seed: int) -> Case:
    def inputs(rng: np.random.Generator) -> tuple:
        return int(rng.integers(20, 200)), int(rng.integers(2, 9))

    return Case(f"the rows of every process for a random record and process "
                f"count (seed {seed})", inputs, runner=every_process, seed=seed,
                dtype="kind")


def _rows_ignoring_remainder(n, index, count):
    per = n // count
    return np.arange(index * per, (index + 1) * per)


def _rows_interleaved(n, index, count):
    return np.arange(index, n, count)


def _rows_rest_to_last(n, index, count):
    per = n // count
    stop = n if index == count - 1 else (index + 1) * per
    return np.arange(index * per, stop)


def _rows_ceil(n, index, count):
    per = -(-n // count)
    return np.arange(min(index * per, n), min((index + 1) * per, n))


def _rows_inclusive(n, index, count):
    return np.array_split(np.arange(n + 1), count)[index]


def _steps_case(sizes: list[int], batch: int) -> Case:
    return Case(f"common_num_steps({sizes}, {batch})", lambda rng: (sizes, batch),
                dtype="kind")


def _random_steps(seed: int) -> Case:
    def inputs(rng: np.random.Generator) -> tuple:
        count = int(rng.integers(2, 9))
        batch = int(rng.integers(8, 65))
        return [int(s) for s in rng.integers(5 * batch, 12 * batch, count)], batch

    return Case(f"random sizes for 2 to 8 processes (seed {seed})", inputs,
                seed=seed, dtype="kind")


METRICS = [
    [("loss", 1.0), ("accuracy", 0.5), ("examples", 250.0)],
    [("examples", 240.0), ("loss", 2.0), ("accuracy", 0.25)],
    [("accuracy", 0.75), ("examples", 260.0), ("loss", 4.0)],
]
MORE_METRICS = [
    [("loss", 0.5), ("accuracy", 0.9), ("examples", 64.0), ("steps", 2.0),
     ("grad_norm", 3.0)],
    [("grad_norm", 1.0), ("steps", 2.0), ("examples", 64.0), ("accuracy", 0.8),
     ("loss", 0.25)],
    [("steps", 2.0), ("loss", 1.5), ("grad_norm", 2.0), ("accuracy", 0.7),
     ("examples", 60.0)],
    [("examples", 62.0), ("grad_norm", 5.0), ("accuracy", 0.6), ("loss", 0.75),
     ("steps", 2.0)],
]


def _metrics_case(description: str, per_process: list) -> Case:
    return Case(description, lambda rng: (per_process,), runner=simulate_processes,
                dtype="any", rtol=1e-6, atol=1e-6)


def _sum_in_dict_order(local_metrics, allreduce):
    return {name: allreduce(value) for name, value in local_metrics.items()}


def _sum_in_set_order(local_metrics, allreduce):
    return {name: allreduce(local_metrics[name]) for name in set(local_metrics)}


def _sum_locally(local_metrics, allreduce):
    return {name: local_metrics[name] for name in sorted(local_metrics)}


def _epoch_inputs(rng: np.random.Generator) -> tuple:
    return ([[[12, 9], 4], [[6, 11], 3]],)


def _epoch_first_batch_each_time(local_data, batch_size, step):
    from jax.experimental import multihost_utils

    counts = multihost_utils.process_allgather(np.int32(len(local_data) // batch_size))
    return [step(local_data[:batch_size]) for _ in range(int(np.min(counts)))]


def _epoch_overlapping_batches(local_data, batch_size, step):
    from jax.experimental import multihost_utils

    counts = multihost_utils.process_allgather(np.int32(len(local_data) // batch_size))
    return [step(local_data[i:i + batch_size]) for i in range(int(np.min(counts)))]


def _epoch_one_step_short(local_data, batch_size, step):
    from jax.experimental import multihost_utils

    counts = multihost_utils.process_allgather(np.int32(len(local_data) // batch_size))
    return [step(local_data[i * batch_size:(i + 1) * batch_size])
            for i in range(int(np.min(counts)) - 1)]


_NOT_RELAUNCHED.update({"_epoch_first_batch_each_time", "_epoch_overlapping_batches",
                        "_epoch_one_step_short"})


def _local_count(local_data, batch_size, step):
    return [step(local_data[i * batch_size:(i + 1) * batch_size])
            for i in range(len(local_data) // batch_size)]


def _global_not_padded(local_batch, max_len, sharding):
    return jax.make_array_from_process_local_data(sharding, local_batch)


def _global_padded_both_axes(local_batch, max_len, sharding):
    padded = np.pad(local_batch, max_len - local_batch.shape[1])
    return jax.make_array_from_process_local_data(sharding, padded)


def _global_padded_left(local_batch, max_len, sharding):
    rows, length = local_batch.shape
    padded = np.pad(local_batch, ((0, 0), (max_len - length, 0)))
    return jax.make_array_from_process_local_data(
        sharding, padded, (rows * jax.process_count(), max_len))


def _global_shape_of_one_process(local_batch, max_len, sharding):
    padded = np.pad(local_batch, ((0, 0), (0, max_len - local_batch.shape[1])))
    return jax.make_array_from_process_local_data(sharding, padded, padded.shape)


_NOT_RELAUNCHED.update({"_global_not_padded", "_global_padded_both_axes",
                        "_global_padded_left"})


def _padding_case(description: str, rows: int, length: int, max_len: int,
                  seed: int) -> Case:
    def inputs(rng: np.random.Generator) -> tuple:
        local = rng.normal(size=(rows, length)).astype(np.float32)
        return local, max_len, one_device_rows()

    return Case(description, inputs, extract=_global_values, seed=seed)


GLOBAL_SCENARIOS = [(4, [6, 9], 10), (8, [5, 3], 8)]


def _global_inputs(rng: np.random.Generator) -> tuple:
    return (GLOBAL_SCENARIOS,)



register(
    Exercise(
        id="multiprocess.process_rows",
        title="Each process's share of the records",
        chapter=CHAPTER,
        reference=process_rows,
        cases=[
            _rows_case(8, 4),
            _rows_case(10, 4),
            _rows_case(1000, 3),
            _rows_case(5, 8),
            _random_rows(1),
            _random_rows(2),
        ],
        hints=[
            "Python's divmod gives the base share and the number of leftover "
            "records in one call.",
            "The first `extra` processes take one record more than the others. "
            "Process p starts after all the records of processes 0 .. p-1: count "
            "them, and how many of those processes took a leftover.",
            "Check your blocks by hand for 10 records and 4 processes: [0, 1, 2], "
            "[3, 4, 5], [6, 7], [8, 9]. NumPy can also split an array into nearly "
            "equal pieces in exactly this way.",
        ],
        mistakes=[
            Mistake("the last num_records % process_count records are never loaded: "
                    "hand the leftovers out, one each to the first processes",
                    _rows_ignoring_remainder),
            Mistake("the rows are interleaved (strided); each process must load one "
                    "contiguous block, in process order", _rows_interleaved),
            Mistake("the last process gets all the leftovers, so the shares differ "
                    "by more than one: give one each to the first processes",
                    _rows_rest_to_last),
            Mistake("rounding the share up leaves the last processes short (or "
                    "empty): the shares must differ by at most one", _rows_ceil),
            Mistake("off by one: the blocks include the record num_records, which "
                    "does not exist (stop is exclusive)", _rows_inclusive),
        ],
    ),
    Exercise(
        id="multiprocess.common_num_steps",
        title="One step count for every process",
        chapter=CHAPTER,
        reference=common_num_steps,
        cases=[
            _steps_case([1000, 1000, 1000, 900], 100),
            _steps_case([900, 1000, 1000, 1000], 100),
            _steps_case([130, 250], 64),
            _steps_case([640, 600, 700], 64),
            _steps_case([10, 500], 16),
            _random_steps(3),
            _random_steps(4),
        ],
        hints=[
            "Each process can run size // batch_size full batches.",
            "A process that has run out of batches cannot join another step: the "
            "count that all processes can run is the smallest one.",
        ],
        mistakes=[
            Mistake("that is the largest count: the processes with fewer batches "
                    "run out, and the others hang in their extra steps",
                    lambda sizes, b: max(s // b for s in sizes)),
            Mistake("that is process 0's own count: each process would use its own, "
                    "and they would disagree", lambda sizes, b: sizes[0] // b),
            Mistake("rounding up counts a partial last batch, whose shape differs "
                    "from the others: count full batches only",
                    lambda sizes, b: min(-(-s // b) for s in sizes)),
            Mistake("that is the average count: processes below the average run out "
                    "and the rest hang",
                    lambda sizes, b: sum(sizes) // b // len(sizes)),
            Mistake("that is the number of global batches (all records together); "
                    "count the batches each process can fill from its own records",
                    lambda sizes, b: sum(sizes) // b),
        ],
    ),
    Exercise(
        id="multiprocess.sum_metrics",
        title="The same collectives in the same order",
        chapter=CHAPTER,
        reference=sum_metrics,
        cases=[
            _metrics_case("3 processes, metrics loss/accuracy/examples, each dict "
                          "in its own order", METRICS),
            _metrics_case("4 processes, 5 metrics in 4 different orders",
                          MORE_METRICS),
        ],
        hints=[
            "Collectives are matched by order: the k-th allreduce of every process "
            "is added to the k-th of the others, whatever name it had.",
            "A dict's order is its insertion order, which differs between the "
            "processes here; a set's order depends on string hashes, which differ "
            "between machines.",
            "Iterate in an order that depends only on the names themselves, not "
            "on how each process filled its dict: a built-in function gives one.",
        ],
        mistakes=[
            Mistake("the collectives (or the entries of one collective's array) "
                    "follow each process's dict order, so values of different "
                    "metrics were added together: iterate in an order every "
                    "process shares, such as sorted(...)", _sum_in_dict_order),
            Mistake("the collectives follow set order, which depends on each "
                    "machine's string hashing: iterate in sorted order",
                    _sum_in_set_order),
            Mistake("the metrics were not summed over the processes: call allreduce "
                    "on each value", _sum_locally),
        ],
    ),
    Exercise(
        id="multiprocess.run_epoch",
        title="Fix the last-batch hang",
        chapter=CHAPTER,
        reference=run_epoch,
        time_limit=60.0,
        cases=[
            Case("in one process, 10 records in batches of 4: two steps, on the "
                 "first 8 records", lambda rng: (10, 4), runner=_in_one_process,
                 dtype="any"),
            Case(f"launched in {LAUNCH_PROCESSES} processes: 12 and 9 records in "
                 "batches of 4, then 6 and 11 in batches of 3 (each process's "
                 "step results)", _epoch_inputs, runner=launch_run_epoch,
                 dtype="any"),
        ],
        hints=[
            "The hanging version lets each process count its own full batches. "
            "The process with more batches waits in a step that the other never "
            "joins.",
            "No process knows the others' counts until they tell it: "
            "multihost_utils.process_allgather(value) returns every process's "
            "value, in every process.",
            "Every process now holds the same counts: run as many steps as the "
            "smallest of them, each on the next full batch of this process's "
            "data, and return the list of the step results.",
        ],
        mistakes=[
            Mistake("every step got the first batch: step i takes records i * "
                    "batch_size to (i + 1) * batch_size", _epoch_first_batch_each_time),
            Mistake("the batches overlap: they start one record apart instead of "
                    "batch_size records apart", _epoch_overlapping_batches),
            Mistake("one step short: every process can still fill one more full "
                    "batch (an off-by-one in the number of steps)",
                    _epoch_one_step_short),
        ],
    ),    Exercise(
        id="multiprocess.global_batch",
        title="One global batch from every process's rows",
        chapter=CHAPTER,
        reference=global_batch,
        time_limit=60.0,
        cases=[
            _padding_case("in one process: 4 rows of length 7, padded to 10", 4, 7,
                          10, seed=5),
            _padding_case("in one process: 6 rows of length 3, padded to 5", 6, 3, 5,
                          seed=6),
            _padding_case("in one process: 5 rows that already have the agreed "
                          "length 8", 5, 8, 8, seed=7),
            Case(f"launched in {LAUNCH_PROCESSES} processes of "
                 f"{GLOBAL_DEVICES_PER_PROCESS} devices: 4 rows each, of lengths 6 "
                 "and 9, padded to 10; then 8 rows each, of lengths 5 and 3, padded "
                 "to 8 (in each process: the global shape, the sum under jit and "
                 "the gathered array)", _global_inputs, runner=launch_global_batch,
                 dtype="any"),
        ],
        hints=[
            "Two things must be the same in every process: the length of the "
            "rows, and the shape of the global array. Neither may depend on the "
            "data a process happens to hold.",
            "np.pad takes one (before, after) pair per axis: pad only the end of "
            "axis 1, with zeros.",
            "jax.make_array_from_process_local_data(sharding, local_data, "
            "global_shape) takes the shape of the whole array: how many rows do "
            "all the processes hold together? jax.process_count() says how many "
            "processes there are.",
        ],
        mistakes=[
            Mistake("the rows are not padded to max_len: each process would infer "
                    "a global shape from its own row length, and the processes "
                    "would disagree about the array they share", _global_not_padded),
            Mistake("np.pad with a single width pads both ends of every axis, "
                    "rows too: give one (before, after) pair per axis",
                    _global_padded_both_axes),
            Mistake("the zeros are on the left: pad the end of every row, so "
                    "that position k holds the same element in every process",
                    _global_padded_left),
            Mistake("the global shape is this process's own shape: each process "
                    "then reads its data as the whole array and keeps only its "
                    "slice of it. The global batch has the rows of every process",
                    _global_shape_of_one_process),
        ],
    ),
)
