"""The cases of chapter 8's exercises: their inputs, and how each is run.

:mod:`solutions.multiprocess` registers the exercises with these cases; the
named mistakes of the launched exercises stay there, beside their
references, where the harness marks them.
"""

from __future__ import annotations

import numpy as np

from exercise_kit.multiprocess_checks import (
    every_process,
    global_values,
    one_device_rows,
    simulate_processes,
)
from jaxcourse.exercises import Case
from jaxcourse.numerics import FLOAT32_ROUNDOFF


def rows_case(n: int, count: int) -> Case:
    """Case: every process's rows of ``n`` records over ``count`` processes."""
    return Case(f"the rows of all {count} processes for {n} records",
                lambda rng: (n, count), runner=every_process, dtype="kind")


def random_rows(seed: int) -> Case:
    """Case: every process's rows for a random record and process count."""
    def inputs(rng: np.random.Generator) -> tuple:
        return int(rng.integers(20, 200)), int(rng.integers(2, 9))

    return Case(f"the rows of every process for a random record and process "
                f"count (seed {seed})", inputs, runner=every_process, seed=seed,
                dtype="kind")


def steps_case(sizes: list[int], batch: int) -> Case:
    """Case: ``common_num_steps(sizes, batch)``."""
    return Case(f"common_num_steps({sizes}, {batch})", lambda rng: (sizes, batch),
                dtype="kind")


def random_steps(seed: int) -> Case:
    """Case: random share sizes for 2 to 8 processes."""
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


def metrics_case(description: str, per_process: list) -> Case:
    """Case: ``sum_metrics`` in simulated processes, on ``per_process``."""
    # The harness sums in float64, in one order for every answer: the sums are
    # the same numbers, except for an answer that gathers the values in a
    # float32 array, which rounds each within u; the values are positive, so
    # the sum moves by u of itself, and by u more if it is kept in float32.
    return Case(description, lambda rng: (per_process,), runner=simulate_processes,
                dtype="any", rtol=2 * FLOAT32_ROUNDOFF, atol=0.0)


#: The launched scenarios, (records of each process, batch size): the step
#: counts (3 and 2, then 3 and 5) differ between the processes, so counting
#: one's own batches hangs; every process can run 2 steps in the first and 3
#: in the second, so no fixed count fits both; and in the second, dividing
#: all the records evenly (26 / 2 / 3: 4 steps) asks process 0 for a batch it
#: does not have.
EPOCH_SCENARIOS = [[[12, 9], 4], [[9, 17], 3]]


def epoch_inputs(rng: np.random.Generator) -> tuple:
    """Build inputs: the launched ``run_epoch`` scenarios."""
    return (EPOCH_SCENARIOS,)


def padding_case(description: str, rows: int, length: int, max_len: int,
                  seed: int) -> Case:
    """Case: ``global_batch`` on random rows, on one device."""
    def inputs(rng: np.random.Generator) -> tuple:
        local = rng.normal(size=(rows, length)).astype(np.float32)
        return local, max_len, one_device_rows()

    return Case(description, inputs, extract=global_values, seed=seed)


GLOBAL_SCENARIOS = [(4, [6, 9], 10), (8, [5, 3], 8)]


def global_inputs(rng: np.random.Generator) -> tuple:
    """Build inputs: the launched ``global_batch`` scenarios."""
    return (GLOBAL_SCENARIOS,)


def records_case(description: str, args: tuple) -> Case:
    """Case: ``epoch_records(*args)``."""
    return Case(description, lambda rng: args, dtype="kind")


def random_records(seed: int) -> Case:
    """Case: random seed, epoch, step and sizes for ``epoch_records``."""
    def inputs(rng: np.random.Generator) -> tuple:
        batch = 4 * int(rng.integers(2, 9))
        steps = int(rng.integers(2, 6))
        quarter = int(rng.integers(0, 4)) * batch // 4
        records = steps * batch + int(rng.integers(0, batch))  # a remainder too
        return (int(rng.integers(0, 2**31)), int(rng.integers(0, 10)),
                int(rng.integers(0, steps)), records, batch,
                slice(quarter, quarter + batch // 4))

    return Case(f"random seed, epoch, step and sizes, a quarter of each global "
                f"batch (seed {seed})", inputs, seed=seed, dtype="kind")
