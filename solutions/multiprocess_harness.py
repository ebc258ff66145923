"""How chapter 7's answers are run as several processes would run them.

The checking harness of :mod:`solutions.multiprocess`, whose exercises name
these functions as their runners and extracts; it holds no exercise.

- :func:`every_process` calls a ``process_rows``-like answer once per process
  index.
- :func:`simulate_processes` runs a ``sum_metrics``-like answer once per
  simulated process, in this process, with a stand-in collective that is
  matched by call order, as real collectives are, and with string hashing
  salted per process, as on separate machines (:class:`SaltedName`,
  :class:`Metrics`).
- :func:`launch_run_epoch` and :func:`launch_global_batch` check for real:
  they write the learner's function into a worker script (:data:`WORKER`,
  :data:`GLOBAL_WORKER`) and start it in 2 processes with
  :func:`jaxcourse.launch.launch`, or with ``srun`` when the course's Slurm
  cluster is up (:func:`launcher`; never in the grader's sandbox). A
  process still running :data:`PATIENCE` s after another finished waits in
  a collective for a partner that has left: its watchdog ends it. Any other
  hang is ended by the launcher's timeout, within the Check's own time
  limit. Either is reported, with what each process did, as a failed test.
- :func:`in_one_process` (with :func:`local_step`) and :func:`global_values`
  (on :func:`one_device_rows`) check the same answers in this one process
  first, where a mistake is cheap to name; :func:`not_relaunched` marks the
  known mistakes those cases already recognise, so that checking them never
  costs a launch.

Every failure of the processes to stay in step is a
:class:`ProcessesOutOfStepError`, whose message the learner reads.
"""

from __future__ import annotations

import atexit
import inspect
import json
import os
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


class ProcessesOutOfStepError(CourseError):
    """The (simulated or launched) processes did not stay in step.

    ``result`` is the launch's :class:`jaxcourse.launch.LaunchResult` when
    launched processes were ended early, else ``None``.
    """

    def __init__(self, message: str, result: Any = None) -> None:
        super().__init__(message)
        self.result = result


# ---- simulated processes -----------------------------------------------------


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
#: Seconds a launch may take at most; less when the Check's own time limit
#: leaves less (:func:`jaxcourse.exercises.observe.time_left`).
LAUNCH_TIMEOUT = 20.0
#: Seconds a process may still run after another one has finished. Longer,
#: and it is waiting in a collective for a partner that has left: the
#: watchdog of every worker then ends it, so the learner hears why within
#: seconds, not after the launch's time-out.
PATIENCE = 3.0
_RESULT = "RESULT-JSON:"
_HUNG = "HUNG-AFTER-PARTNER-LEFT"
_STEP = re.compile(r"^scenario (\d+): step (\d+) of process")

#: The start of both worker scripts: the launch, a mesh of every device of
#: every process, and how the learner's function is read (:func:`load`, from
#: a file, with the names the exercise text lets it use). Each body defines
#: ``warm_up()`` (what its checks compile, run once without the learner's
#: function) and ``run(function)``; :data:`_WORKER_END` runs them.
_WORKER_START = '''\
import json
import os
import sys
import threading
import time

from jaxcourse.launch import initialize_from_env

FOLDER = os.path.dirname(os.path.abspath(__file__))
PATIENCE = float(sys.argv[4])


def finished_file(rank):
    return os.path.join(FOLDER, f"finished-{rank}")


def watch(rank, count):
    # Still running PATIENCE s after another process finished: this one waits
    # in a collective that no partner will ever join. Say so, and stop.
    while not os.path.exists(finished_file(rank)):
        time.sleep(0.1)
        ended = [os.path.getmtime(finished_file(r)) for r in range(count)
                 if r != rank and os.path.exists(finished_file(r))]
        if ended and time.time() - min(ended) > PATIENCE:
            print("HUNG-AFTER-PARTNER-LEFT", flush=True)
            os._exit(3)


def finish(results):
    print("RESULT-JSON:" + json.dumps(results), flush=True)
    open(finished_file(rank), "w").close()


initialize_from_env()

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

scenarios = json.loads(sys.argv[1])
rank = jax.process_index()
# An Auto axis, as in chapter 7's scripts: the compiler places the reduction.
mesh = jax.make_mesh((jax.device_count(),), ("batch",), axis_types=(AxisType.Auto,))
rows = NamedSharding(mesh, P("batch"))


def load(path, name):
    namespace = {"jax": jax, "jnp": jnp, "np": np,
                 "multihost_utils": multihost_utils, "NamedSharding": NamedSharding,
                 "P": P}
    with open(os.path.join(FOLDER, path)) as f:
        exec(compile(f.read(), "<your function>", "exec"), namespace)
    return namespace[name]
'''

#: The end of both worker scripts. Launched fresh, a worker reads the
#: learner's function from the file named by argv[2]; prepared ahead
#: (argv[2] ``--prepared``, :func:`prepare_launch`), it compiles what its
#: checks need and waits for the job that names the file
#: (:func:`jaxcourse.launch.prepared.wait_for_job`).
_WORKER_END = '''
if sys.argv[2] == "--prepared":
    from jaxcourse.launch.prepared import wait_for_job

    warm_up()
    job = wait_for_job(FOLDER, rank, float(sys.argv[5]))
    if job is None:  # no Check came: nothing to do
        sys.exit(0)
    answer, name = job["answer"], job["name"]
else:
    answer, name = sys.argv[2], sys.argv[3]
function = load(answer, name)
threading.Thread(target=watch, args=(rank, jax.process_count()), daemon=True).start()
finish(run(function))
# Leave the cluster together (a barrier, so no partner is cut off mid-way),
# then exit at once: tearing JAX down with the interpreter costs a third of a
# second, as long as the whole check.
jax.distributed.shutdown()
sys.stdout.flush()
sys.stderr.flush()
os._exit(0)
'''


def _worker(purpose: str, body: str) -> str:
    """Return a worker script: docstring, :data:`_WORKER_START`, ``body``, end."""
    return f'"""One process of {purpose}."""\n' + _WORKER_START + body + _WORKER_END


WORKER = _worker("a run_epoch check: runs the learner's function on its data", '''\
global_mean = jax.jit(jnp.mean)
calls = 0


def make_step(scenario, batch_size, quiet=False):
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
        if not quiet:
            print(f"scenario {scenario}: step {calls} of process {rank} started",
                  flush=True)
        shape = (batch_size * jax.process_count(),)
        x = jax.make_array_from_process_local_data(rows, batch, shape)
        return float(global_mean(x))
    return step


def warm_up():
    # What every answer runs: a step of each batch size, and the gather of
    # the batch counts that the text suggests.
    multihost_utils.process_allgather(np.int32(0))
    for _, batch_size in scenarios:
        make_step(0, batch_size, quiet=True)(np.zeros(batch_size, np.float32))


def run(function):
    results = []
    for scenario, (sizes, batch_size) in enumerate(scenarios, start=1):
        local_data = 1000.0 * rank + np.arange(sizes[rank], dtype=np.float32)
        out = function(local_data, batch_size, make_step(scenario, batch_size))
        results.append([float(v) for v in out])
    return results
''')


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


def _ranks_saying(result: Any, marker: str) -> list[int]:
    """Return the processes that printed ``marker`` on a line of its own."""
    return [rank for rank in range(result.num_processes)
            if any(line.strip() == marker for line in result.lines(rank))]


def _hung_ranks(result: Any) -> list[int]:
    """Return the processes a worker's watchdog ended (left by a partner)."""
    return _ranks_saying(result, _HUNG)


def _hung(result: Any) -> bool:
    """Whether a worker's watchdog ended a process left waiting by a partner."""
    return bool(_hung_ranks(result))


def _hang_message(result: Any, seconds: float | None) -> str:
    """Say in words what each process did when the launch hung.

    ``seconds`` is the launch's time-out when it ran out, ``None`` when a
    worker's watchdog ended a process that waited for a partner that had
    left (:data:`PATIENCE`).
    """
    stepped = any(_steps_called(result.lines(r)) for r in range(result.num_processes))
    parts = []
    for rank in range(result.num_processes):
        lines = result.lines(rank)
        done = any(line.startswith(_RESULT) for line in lines)
        steps = _steps_called(lines)
        did = f"process {rank}"
        if stepped:
            where = f" in scenario {max(steps)}" if steps else ""
            did += f" called step() {steps[max(steps)] if steps else 0} times{where}"
            did += " and"
        parts.append(did + (" finished" if done else " was still waiting"))
    if seconds is None:
        head = (f"a process waited in a collective for a partner that had already "
                f"left, and was stopped after {PATIENCE:g} s: ")
    else:
        head = f"the processes hung and were ended after {round(seconds, 1):g} s: "
    rule = ("every process must call step() (a collective) the same number of "
            "times") if stepped else ("every process must make the same "
                                      "collectives, the same number of times")
    return head + "; ".join(parts) + " — " + rule


def _uneven_steps(result: Any, scenarios: int) -> str:
    """Say in which scenario the processes ran different step counts ("" if none)."""
    counts = [_steps_called(result.lines(rank)) for rank in range(LAUNCH_PROCESSES)]
    for scenario in range(1, scenarios + 1):
        calls = [c.get(scenario, 0) for c in counts]
        if len(set(calls)) == 1:
            continue
        # Collectives matched with the wrong partner (the next scenario's
        # step, say) may even return; the step counts still differ.
        done = ", ".join(f"process {r} {n} times" for r, n in enumerate(calls))
        return (f"in scenario {scenario} the processes called step() different "
                f"numbers of times ({done}): every process must call step() the "
                "same number of times, or the extra steps wait for a partner that "
                "never comes")
    return ""


# An exception's last line in a traceback: "ValueError: ...", "jax.errors.X: ...".
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b.*")


def _failure_message(error: Any) -> str:
    """Say in words why a process failed: its exception, not its last printout.

    A process's stderr may end with an array it printed, or with the tail of
    a long message; the exception's own line says what went wrong.
    """
    rank = getattr(error, "rank", "?")
    lines = [line.strip() for line in error.result.lines(rank, "stderr")
             if line.strip()]
    found = next((line for line in reversed(lines) if _EXCEPTION_LINE.match(line)),
                 None)
    if found is None:
        worded = [line for line in lines if re.search(r"[A-Za-z]{3,}", line)]
        found = worded[-1] if worded else str(error).splitlines()[0]
    return f"process {rank} failed: {found}"


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
        If the processes run different step counts, hang (a process left
        waiting by a partner is ended after ``PATIENCE`` s, any other hang
        after ``LAUNCH_TIMEOUT`` s at most) or one fails; the message says
        what each process did.
    """
    try:
        result = _launch_worker(WORKER, function, scenarios, devices_per_process=1)
    except ProcessesOutOfStepError as err:
        uneven = _uneven_steps(err.result, len(scenarios)) \
            if err.result is not None and _hung(err.result) else ""
        if not uneven:
            raise
        waiting = ", ".join(f"process {r}" for r in _hung_ranks(err.result))
        raise ProcessesOutOfStepError(
            f"{uneven} ({waiting} waited for one that had left, and was stopped "
            f"after {PATIENCE:g} s)") from None
    uneven = _uneven_steps(result, len(scenarios))
    if uneven:
        raise ProcessesOutOfStepError(uneven)
    per_rank = []
    for rank in range(LAUNCH_PROCESSES):
        line = next(x for x in result.lines(rank) if x.startswith(_RESULT))
        per_rank.append(tuple(np.array(v, dtype=np.float64)
                              for v in json.loads(line[len(_RESULT):])))
    return tuple(per_rank)


#: Known mistakes that the in-process cases recognise: launched, they hang or
#: fail, so naming them there too would only cost a launch (or a timeout).
#: Kept as (module, name): a learner's function of the same name is launched.
_NOT_RELAUNCHED: set[tuple[str, str]] = set()


def not_relaunched(*mistakes: Callable) -> None:
    """Mark known mistakes that the launched cases need not run.

    Parameters
    ----------
    *mistakes : callable
        Module-level functions, given as a :class:`jaxcourse.exercises.Mistake`
        of an exercise whose in-process cases already recognise them.
    """
    _NOT_RELAUNCHED.update((f.__module__, f.__name__) for f in mistakes)


#: ``course`` always launches with the course's launcher, ``slurm`` always
#: with ``srun`` (an error if the cluster is down); unset or ``auto``: ``srun``
#: when the course's Slurm cluster is up, the course's launcher otherwise.
LAUNCHER_ENV = "JAX_COURSE_CHECK_LAUNCHER"


def launcher() -> tuple[Callable, str]:
    """Choose how a Check starts its processes: ``(launch function, in words)``.

    Through ``srun`` on the course's Slurm cluster when it is up (chapter 7's
    Slurm section, ``make cluster``), otherwise with the course's launcher.
    The grader's sandbox always uses the course's launcher: a submission's
    processes stay inside the sandbox's process tree, where the grader ends
    them, and a class's grading never queues behind (or submits to) a
    cluster of its own accord. :data:`LAUNCHER_ENV` overrides the choice.

    Returns
    -------
    tuple
        The function, with :func:`jaxcourse.launch.launch`'s interface, and
        how it launches, in words.
    """
    from jaxcourse import slurm
    from jaxcourse.exercises.sandbox import GUARD_ENV
    from jaxcourse.launch import launch

    course = (launch, "the course's launcher")
    chosen = os.environ.get(LAUNCHER_ENV, "auto").strip().lower() or "auto"
    if chosen not in {"auto", "course", "slurm"}:
        raise ValueError(f"{LAUNCHER_ENV} must be auto, course or slurm, "
                         f"not {chosen!r}")
    if os.environ.get(GUARD_ENV) or chosen == "course":
        return course
    # status() runs no Slurm command when Slurm is missing or no daemon is ours.
    if chosen == "auto" and not slurm.status().up:
        return course
    return slurm.launch_srun, "srun on the course's Slurm cluster"


def _scenarios_argument(scenarios: Sequence) -> str:
    return json.dumps([list(s) for s in scenarios])


#: Launches prepared ahead of a Check (:func:`prepare_launch`), by what they
#: will run: (worker script, scenarios, devices per process).
_PREPARED: dict[tuple[str, str, int], Any] = {}
#: Seconds prepared processes wait for a Check before they exit.
PREPARED_IDLE = 900.0


def prepare_launch(worker: str, scenarios: Sequence, devices_per_process: int) -> Any:
    """Start ``worker``'s processes now, to run the next Check's answer.

    The processes start JAX, meet, compile what their checks run
    (``warm_up()`` in the worker) and wait, so that a Check that comes
    later only hands them the learner's function
    (:class:`jaxcourse.launch.prepared.PreparedLaunch`): a launched Check
    then takes a fraction of a second instead of the seconds that starting
    JAX costs. Only with the course's launcher (not on the Slurm cluster, and
    never in the grader's sandbox, whose Checks launch afresh). A launch
    already prepared and still waiting is reused.

    Returns
    -------
    PreparedLaunch or None
        ``None`` where no launch is prepared.
    """
    from jaxcourse.exercises.sandbox import GUARD_ENV
    from jaxcourse.launch import launch
    from jaxcourse.launch.prepared import PreparedLaunch

    if os.environ.get(GUARD_ENV) or launcher()[0] is not launch:
        return None
    key = (worker, _scenarios_argument(scenarios), devices_per_process)
    prepared = _PREPARED.get(key)
    if prepared is not None and prepared.waiting():
        return prepared
    prepared = PreparedLaunch(
        worker, LAUNCH_PROCESSES, devices_per_process,
        args=[key[1], "--prepared", "", str(PATIENCE)], idle=PREPARED_IDLE,
        job_timeout=LAUNCH_TIMEOUT)
    _PREPARED[key] = prepared
    return prepared


def _take_prepared(key: tuple[str, str, int]) -> Any:
    """Return the prepared launch for ``key`` if it still waits (and forget it)."""
    prepared = _PREPARED.pop(key, None)
    # One about to give up waiting is left to end by itself.
    return prepared if prepared is not None and prepared.will_wait(60.0) else None


@atexit.register
def close_prepared() -> None:
    """End every prepared launch still waiting (at exit, or to free the CPUs)."""
    while _PREPARED:
        _PREPARED.popitem()[1].close()


def _launch_worker(worker: str, function: Callable, scenarios: Sequence,
                   devices_per_process: int) -> Any:
    """Launch ``worker`` with the learner's ``function`` in LAUNCH_PROCESSES ranks.

    A launch prepared for the same worker and scenarios (:func:`prepare_launch`)
    runs it if one waits; otherwise the processes start now.
    """
    from jaxcourse.launch import LaunchTimeoutError, RankFailedError
    from jaxcourse.launch.prepared import TIMED_OUT

    if (getattr(function, "__module__", None),
            getattr(function, "__name__", None)) in _NOT_RELAUNCHED:
        raise ProcessesOutOfStepError("a known mistake, recognised in one process")
    from jaxcourse.exercises.observe import time_left

    source = _source_of(function)
    # Within the Check's own time limit, with a second to end the processes
    # and say why: a bare "did not finish" would name no process.
    left = time_left()
    timeout = LAUNCH_TIMEOUT if left is None else max(1.0, min(LAUNCH_TIMEOUT,
                                                               left - 1.0))
    scenarios_json = _scenarios_argument(scenarios)
    prepared = _take_prepared((worker, scenarios_json, devices_per_process))
    try:
        if prepared is not None:
            return prepared.run({"answer": "answer.py", "name": function.__name__},
                                timeout, files={"answer.py": source})
        with tempfile.TemporaryDirectory(prefix="jaxcourse-check-") as folder:
            Path(folder, "worker.py").write_text(worker)
            Path(folder, "answer.py").write_text(source)
            launch, _ = launcher()
            return launch(
                "worker.py", LAUNCH_PROCESSES, devices_per_process, cwd=folder,
                echo=False, timeout=timeout, grace=0.5,
                args=[scenarios_json, "answer.py", function.__name__, str(PATIENCE)],
            )
    except LaunchTimeoutError as err:
        raise ProcessesOutOfStepError(_hang_message(err.result, timeout),
                                      err.result) from None
    except RankFailedError as err:
        if _ranks_saying(err.result, TIMED_OUT):
            # A prepared process ran out of its job's time: the same hang.
            message = _hang_message(err.result, timeout)
        elif _hung(err.result):
            message = _hang_message(err.result, None)
        else:
            message = _failure_message(err)
        raise ProcessesOutOfStepError(message, err.result) from None


# ---- global_batch, launched ----------------------------------------------------

GLOBAL_DEVICES_PER_PROCESS = 2

GLOBAL_WORKER = _worker(
    "a global_batch check: builds the global batch from its rows", '''\
global_sum = jax.jit(jnp.sum)


def warm_up():
    # What every correct answer leads to: a global array of the agreed shape,
    # summed under jit and gathered.
    for num_rows, _, max_len in scenarios:
        local = np.zeros((num_rows, max_len), np.float32)
        out = jax.make_array_from_process_local_data(
            rows, local, (num_rows * jax.process_count(), max_len))
        float(global_sum(out))
        multihost_utils.process_allgather(out, tiled=True)


def run(function):
    results = []
    for num_rows, lengths, max_len in scenarios:
        # Each process holds rows of its own length, as after padding locally.
        length = lengths[rank]
        local = 100.0 * (rank + 1) + np.arange(num_rows * length, dtype=np.float32)
        out = function(local.reshape(num_rows, length), max_len, rows)
        if not isinstance(out, jax.Array):
            raise TypeError(f"process {rank} returned a {type(out).__name__}, not a "
                            "global jax.Array")
        total = float(global_sum(out))  # a collective over the global array
        whole = multihost_utils.process_allgather(out, tiled=True)
        results.append([list(out.shape), total, np.asarray(whole).tolist()])
    return results
''')


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


def prepare_run_epoch(scenarios: Sequence) -> Any:
    """Start a ``run_epoch`` case's processes ahead (the case's ``warm_up``)."""
    return prepare_launch(WORKER, scenarios, 1)


def prepare_global_batch(scenarios: Sequence) -> Any:
    """Start a ``global_batch`` case's processes ahead (its ``warm_up``)."""
    return prepare_launch(GLOBAL_WORKER, scenarios, GLOBAL_DEVICES_PER_PROCESS)


# ---- the same answers, in this one process -------------------------------------


def one_device_rows() -> NamedSharding:
    """Rows split over a one-device mesh: one process with one device."""
    mesh = jax.make_mesh((1,), ("batch",), axis_types=(AxisType.Auto,),
                         devices=jax.devices()[:1])
    return NamedSharding(mesh, P("batch"))


def global_values(out: Any) -> np.ndarray:
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


def in_one_process(function: Callable, size: int, batch_size: int) -> np.ndarray:
    """Run ``run_epoch``-like ``function`` on ``size`` records in one process.

    Returns
    -------
    numpy.ndarray
        The results of its steps (:func:`local_step`), as floats.
    """
    data = np.arange(size, dtype=np.float32)
    return np.array([float(v) for v in function(data, batch_size,
                                                local_step(batch_size))])

