"""The scripts a launched chapter-7 check runs, and what their processes print.

:mod:`exercise_kit.multiprocess_harness` launches :data:`WORKER`
(``run_epoch``) or :data:`GLOBAL_WORKER` (``global_batch``) in several
processes, each with the learner's function in a file beside it. A worker
prints its results on a line of its own (:data:`RESULT`), and its
watchdog ends a process still running :data:`PATIENCE` s after another
finished (it waits in a collective for a partner that has left), saying so
(:data:`HUNG`). The rest of this module reads the ranks' output back
(a :class:`jaxcourse.launch.LaunchResult`): each rank's results
(:func:`rank_results`), which processes hung (:func:`hung_ranks`), how
many steps each ran (:func:`uneven_steps`), and says in words what went wrong
(:func:`hang_message`, :func:`failure_message`).
"""

from __future__ import annotations

import json
import re
from typing import Any

#: Seconds a process may still run after another one has finished. Longer,
#: and it is waiting in a collective for a partner that has left: the
#: watchdog of every worker then ends it, so the learner hears why within
#: seconds, not after the launch's time-out.
PATIENCE = 3.0
#: The start of the line on which a worker prints its results (JSON).
RESULT = "RESULT-JSON:"
#: What a worker's watchdog prints before it ends a process left waiting.
HUNG = "HUNG-AFTER-PARTNER-LEFT"
_STEP = re.compile(r"^scenario (\d+): step (\d+) of process")
_STARTED = re.compile(r"^scenario (\d+): started by process")

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
# An Auto axis, as in chapter 8's scripts: the compiler places the reduction.
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
        print(f"scenario {scenario}: started by process {rank}", flush=True)
        local_data = 1000.0 * rank + np.arange(sizes[rank], dtype=np.float32)
        out = function(local_data, batch_size, make_step(scenario, batch_size))
        results.append([float(v) for v in out])
    return results
''')



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
    for scenario, (num_rows, lengths, max_len) in enumerate(scenarios, start=1):
        print(f"scenario {scenario}: started by process {rank}", flush=True)
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


def steps_called(lines: list[str]) -> dict[int, int]:
    """Map each scenario a process started steps in to its number of steps."""
    steps: dict[int, int] = {}
    for line in lines:
        if m := _STEP.match(line):
            steps[int(m[1])] = int(m[2])
    return steps


def ranks_saying(result: Any, marker: str) -> list[int]:
    """Return the processes that printed ``marker`` on a line of its own."""
    return [rank for rank in range(result.num_processes)
            if any(line.strip() == marker for line in result.lines(rank))]


def hung_ranks(result: Any) -> list[int]:
    """Return the processes a worker's watchdog ended (left by a partner)."""
    return ranks_saying(result, HUNG)


def finished_ranks(result: Any) -> list[int]:
    """Return the processes that printed their result: the answer's work done."""
    return [rank for rank in range(result.num_processes)
            if any(line.startswith(RESULT) for line in result.lines(rank))]


def hung(result: Any) -> bool:
    """Whether a worker's watchdog ended a process left waiting by a partner."""
    return bool(hung_ranks(result))


def hang_message(result: Any, seconds: float | None) -> str:
    """Say in words what each process did when the launch hung.

    ``seconds`` is the launch's time-out when it ran out, ``None`` when a
    worker's watchdog ended a process that waited for a partner that had
    left (:data:`PATIENCE`).
    """
    ranks = range(result.num_processes)
    stepped = any(steps_called(result.lines(r)) for r in ranks)
    finished = finished_ranks(result)

    at = {rank: _progress(result.lines(rank)) for rank in ranks}
    parts = []
    for rank in ranks:
        steps = steps_called(result.lines(rank))
        did = f"process {rank}"
        if stepped:
            where = f" in scenario {max(steps)}" if steps else ""
            did += f" called step() {steps[max(steps)] if steps else 0} times{where}"
            did += " and"
        # What a process that had not finished was waiting for, as far as the
        # processes' output tells: a partner that had left, or one elsewhere
        # (behind, or gone on to another collective); otherwise it ran (its
        # own code, or a collective every process was in).
        elsewhere = [r for r in ranks if r != rank and at[r] != at[rank]]
        if rank in finished:
            parts.append(did + " finished")
        elif finished:
            parts.append(did + f" was still waiting for {_processes(finished)}, "
                         "which had finished and left")
        elif elsewhere and at[rank] != (0, 0):
            others = " and ".join(f"process {r} at {_place(at[r])}" for r in elsewhere)
            parts.append(did + f" was still waiting at {_place(at[rank])} for "
                         f"{others}")
        else:
            parts.append(did + " was still running (in your code, or in a "
                         "collective every process was in)")
    if seconds is None:
        head = (f"a process waited in a collective for a partner that had already "
                f"left, and was stopped after {PATIENCE:g} s: ")
    else:
        head = f"the processes hung and were ended after {round(seconds, 1):g} s: "
    rule = ("every process must call step() (a collective) the same number of "
            "times") if stepped else ("every process must make the same "
                                      "collectives, the same number of times")
    return head + "; ".join(parts) + " — " + rule


def _progress(lines: list[str]) -> tuple[int, int]:
    """How far a process got: its last scenario started, and its steps there."""
    scenario, steps = 0, 0
    for line in lines:
        if m := _STARTED.match(line):
            scenario, steps = int(m[1]), 0
        elif (m := _STEP.match(line)) and int(m[1]) == scenario:
            steps = int(m[2])
    return scenario, steps


def _place(progress: tuple[int, int]) -> str:
    scenario, steps = progress
    if not scenario:
        return "its start"
    return (f"step() call {steps} of scenario {scenario}" if steps
            else f"the start of scenario {scenario}")


def _processes(ranks: list[int]) -> str:
    return ("process " if len(ranks) == 1 else "processes ") + " and ".join(
        str(r) for r in ranks)


def uneven_steps(result: Any, scenarios: int) -> str:
    """Say in which scenario the processes ran different step counts ("" if none)."""
    counts = [steps_called(result.lines(rank)) for rank in range(result.num_processes)]
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


#: A collective's error in a process whose partner had left it: a consequence.
#: The process that left says why, so its line is the one to report.
_PARTNER_LEFT = re.compile(r"Gloo \S+ failed|Connection (reset|closed) by peer")


def _exception_line(result: Any, rank: int) -> str | None:
    lines = [line.strip() for line in result.lines(rank, "stderr") if line.strip()]
    return next((line for line in reversed(lines) if _EXCEPTION_LINE.match(line)),
                None)


def failure_message(error: Any) -> str:
    """Say in words why a process failed: its exception, not its last printout.

    A process's stderr may end with an array it printed, or with the tail of
    a long message; the exception's own line says what went wrong. When one
    process raised and left, its partners' collectives fail too ("Gloo
    all-reduce failed ... Connection reset by peer"), and whichever process
    the launcher saw end first may be one of those: the report then names
    the process whose error is its own.
    """
    rank = getattr(error, "rank", "?")
    result = error.result
    if isinstance(rank, int):
        for other in [rank, *(r for r in range(result.num_processes) if r != rank)]:
            found = _exception_line(result, other)
            if found is not None and not _PARTNER_LEFT.search(found):
                return f"process {other} failed: {found}"
    lines = [line.strip() for line in result.lines(rank, "stderr") if line.strip()]
    found = next((line for line in reversed(lines) if _EXCEPTION_LINE.match(line)),
                 None)
    if found is None:
        worded = [line for line in lines if re.search(r"[A-Za-z]{3,}", line)]
        found = worded[-1] if worded else str(error).splitlines()[0]
    return f"process {rank} failed: {found}"


def rank_results(result: Any) -> list:
    """Return what each process printed after :data:`RESULT`, decoded, in rank order."""
    found = []
    for rank in range(result.num_processes):
        line = next(x for x in result.lines(rank) if x.startswith(RESULT))
        found.append(json.loads(line[len(RESULT):]))
    return found
