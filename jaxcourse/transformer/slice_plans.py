"""LLaMA-3's training steps compiled for real TPU slices: the plan beside the compiler.

Chapter 7 plans each device's memory with a formula
(:func:`~.planning.memory_plan`: the state, the step's bfloat16 copies, the
residuals full remat keeps). This module holds that plan against the TPU
compiler: each of :data:`RUNS` is LLaMA-3 8B or 70B's real-shaped training
step (8,192-token sequences, mixed precision), compiled from shapes alone for
the compile-only devices of a named TPU slice (:mod:`jaxcourse.slices`), in a
process of its own (:func:`~.planning.compile_in_subprocess`). The compiler
either gives its memory per device (arguments, outputs, temporaries, what
the outputs alias, and its peak: on TPU the liveness-aware high-water mark),
or refuses the program, saying how much it needed of what the chip has.

Each run computes attention by a form of
:mod:`~.attention_forms`: the splash kernel, MaxText's attention on TPU,
unless the run names the chapter's own ``"plain"`` form, whose whole scores
the plan counts. Compiling one takes 5 s (a refusal) to 90 s on a 2-core
machine, so they run as a benchmark whose results are stored (``jaxcourse/data/compiled/
tpu_slice_plans.json``, with the JAX and libtpu versions) and read by the
chapter (:func:`load`); ``tests/test_slice_plans.py`` recomputes the plan
column and compiles one of them again::

    python -m jaxcourse.transformer.slice_plans --out FILE [--only NAME ...]

The stored file was made on a 2-core x86-64 machine with no accelerator: the
TPU compiler needs only libtpu, and any machine with the course's
(``make setup``) makes the same figures.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

from jaxcourse import CourseError
from jaxcourse.cli import add_version

from .communication import predicted_collectives
from .planning import CONFIGS, compile_in_subprocess, memory_plan
from .tpu_matching import Matched, from_rows, match_prediction

__all__ = ["RUNS", "STORED", "Run", "Verdict", "load", "needed_bytes", "plan_of",
           "plot", "run_one", "stored_match", "verdicts"]

#: Where the chapter reads the stored compiles from.
STORED = (Path(__file__).resolve().parents[1] / "data" / "compiled"
          / "tpu_slice_plans.json")

#: LLaMA-3's training length, the chapter's ``SEQ_LEN``.
SEQ = 8192


class Run(NamedTuple):
    """One compile: a model's step, a slice, a layout on a mesh, a batch, a policy."""

    name: str
    config: str
    slice_name: str
    layout: str
    data: int
    model: int
    batch: int
    remat: str = "full"
    donate: bool = True
    loss_chunk: int = 0
    # MaxText's attention on TPU (jaxcourse.transformer.attention_forms):
    # tiles in the chip's on-chip memory, never a whole (seq, seq) matrix.
    attention: str = "splash"
    attention_block: int = 0

    @property
    def sequences(self) -> int:
        """Sequences each device computes (a data row's share of the batch)."""
        return self.batch // self.data


#: The chapter's runs: which fit, which do not, and what makes them fit.
RUNS: list[Run] = [
    Run("8B FSDP, v5e 2x4", "LLaMA-3 8B", "v5e 2x4", "FSDP", 8, 1, 8),
    Run("8B FSDP, v5e 4x4", "LLaMA-3 8B", "v5e 4x4", "FSDP", 16, 1, 16),
    Run("8B FSDP, v5e 4x4, not donated", "LLaMA-3 8B", "v5e 4x4", "FSDP", 16, 1, 16,
        donate=False),
    Run("8B FSDP + TP, v5e 4x4", "LLaMA-3 8B", "v5e 4x4", "FSDP + TP", 4, 4, 4),
    # The logits are most of what does not fit a v5e: a loss computed 1,024
    # positions at a time keeps one piece of them alive.
    Run("8B FSDP, v5e 4x4, loss in chunks", "LLaMA-3 8B", "v5e 4x4", "FSDP", 16, 1, 16,
        loss_chunk=1024),
    Run("8B FSDP, v5e 2x4, loss in chunks", "LLaMA-3 8B", "v5e 2x4", "FSDP", 8, 1, 8,
        loss_chunk=1024),
    # The chapter's own attention, which writes each head's whole scores:
    # 8.6 GB a block for one sequence of 8,192 tokens.
    Run("8B FSDP, v5e 4x4, loss in chunks, plain attention", "LLaMA-3 8B", "v5e 4x4",
        "FSDP", 16, 1, 16, loss_chunk=1024, attention="plain"),
    Run("8B FSDP + TP, v5e 4x4, plain attention", "LLaMA-3 8B", "v5e 4x4", "FSDP + TP",
        4, 4, 4, attention="plain"),
    Run("8B FSDP, v5p 2x2x2", "LLaMA-3 8B", "v5p 2x2x2", "FSDP", 8, 1, 8),
    Run("8B FSDP, v5p 2x2x2, remat dots", "LLaMA-3 8B", "v5p 2x2x2", "FSDP", 8, 1, 8,
        remat="dots"),
    # A mesh on a 4x4x4 cube takes whole physical axes: 16 × 4, not 8 × 8
    # (jax.make_mesh refuses an 8, which no product of the cube's axes makes).
    Run("70B FSDP + TP, v5p 4x4x4, 64 sequences", "LLaMA-3 70B", "v5p 4x4x4",
        "FSDP + TP", 16, 4, 64),
    Run("70B FSDP + TP, v5p 4x4x4, 16 sequences", "LLaMA-3 70B", "v5p 4x4x4",
        "FSDP + TP", 16, 4, 16),
    # The layout the chapter picks for 70B on the cube, one sequence a chip.
    Run("70B FSDP, v5p 4x4x4", "LLaMA-3 70B", "v5p 4x4x4", "FSDP", 64, 1, 64),
]


def plan_of(run: Run) -> dict[str, int]:
    """Return the chapter's plan for ``run`` (:func:`~.planning.memory_plan`).

    The plan counts the run's attention form (none of the splash kernel's
    scores are in HBM, each head's whole matrix of the chapter's own form
    is) and, where the state is not donated, the new state beside the old.
    """
    cfg = CONFIGS[run.config].with_attention(run.attention, run.attention_block)
    return memory_plan(cfg, run.layout, run.data, run.model, SEQ, run.sequences,
                       run.remat, run.loss_chunk, run.donate)


# libtpu 0.0.42.1 says "... HLO temporaries (18.85G) exceeds available HBM (15.75G)".
_USED = re.compile(r"\(([\d.]+)([KMGT]?)\) exceeds available HBM \(([\d.]+)([KMGT]?)\)")
_UNIT = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def stored_match(row: dict[str, Any]) -> list[Matched]:
    """Match one stored run's TPU collectives against today's prediction.

    The prediction is :func:`.communication.predicted_collectives` for the
    run's model, layout, mesh and batch, at 2 bytes a number (the step's
    bfloat16 weights and activations; the loss is float32 there already);
    the collectives are those :mod:`.tpu_collectives` read from the program
    compiled for the run's slice (``tpu_collectives`` in the stored row).
    """
    run = Run(**row["run"])
    predicted = predicted_collectives(CONFIGS[run.config], run.layout, run.batch, SEQ,
                                      run.data, run.model, itemsize=2)
    return match_prediction(from_rows(row["tpu_collectives"]), predicted,
                            run.data, run.model)


def needed_bytes(refused: str) -> tuple[float, float] | None:
    """Return ``(needed, available)`` bytes from the TPU compiler's refusal, if said.

    libtpu says, e.g., "the total memory required for HLO temporaries (18.85G)
    exceeds available HBM (15.75G)" (binary units: G is 2**30).
    """
    found = _USED.search(refused)
    if found is None:
        return None
    used, u1, have, u2 = found.groups()
    return float(used) * _UNIT[u1], float(have) * _UNIT[u2]


def run_one(run: Run, timeout: float = 600.0) -> dict[str, Any]:
    """Compile ``run`` in a process of its own; return the compiler's figures.

    A run that fails otherwise than by the compiler's refusal (a mesh the
    slice cannot hold, a time limit) gives ``{"error": message}``.
    """
    try:
        found = compile_in_subprocess(run.config, run.layout, run.data, run.model,
                                      run.batch, SEQ, remat=run.remat, timeout=timeout,
                                      slice_name=run.slice_name, donate=run.donate,
                                      loss_chunk=run.loss_chunk,
                                      attention=run.attention,
                                      attention_block=run.attention_block)
    except CourseError as error:
        found = {"error": str(error).splitlines()[-1]}
    found["run"] = run._asdict()
    found["plan"] = plan_of(run)
    return found


class Verdict(NamedTuple):
    """One stored run read against its chip: the plan, the compiler, the chip."""

    name: str
    chip: str
    plan: int
    compiled: int
    refused: bool
    usable: int

    @property
    def fits(self) -> bool:
        """Whether the TPU compiler accepted the program for the chip."""
        return not self.refused


def verdicts(results: dict[str, Any]) -> list[Verdict]:
    """Return each stored run's plan, compiled figure and chip, in bytes.

    ``compiled`` is the compiler's peak where it accepted the program, and
    where it refused it the temporaries it said it needed (a lower bound of
    the program's memory: the arguments come on top). ``usable`` is the HBM
    the compiler lets one program use per chip (:data:`jaxcourse.slices.SLICES`).
    """
    from jaxcourse.slices import SLICES

    found = []
    for name, row in results["runs"].items():
        run = Run(**row["run"])
        usable = SLICES[run.slice_name].usable_hbm
        if "memory" in row:
            compiled, refused = row["memory"]["peak"], False
        else:
            said = needed_bytes(row.get("refused", ""))
            if said is None:
                raise ValueError(f"{name}: neither figures nor a refusal: {row}")
            compiled, refused = int(said[0]), True
        found.append(Verdict(name, SLICES[run.slice_name].chip, row["plan"]["total"],
                             compiled, refused, usable))
    return found


def plot(results: dict[str, Any]) -> Any:
    """Draw each run's plan and compiled memory per chip against the chip's HBM.

    One panel per chip (their HBM differs sixfold); in each, two bars a run:
    the plan and the TPU compiler's figure (hatched where the compiler
    refused the program: the temporaries alone), and a line at the HBM one
    program may use. Returns the matplotlib figure.
    """
    import matplotlib.pyplot as plt

    rows = verdicts(results)
    chips = sorted({r.chip for r in rows})
    heights = [sum(r.chip == c for r in rows) for c in chips]
    fig, axes = plt.subplots(len(chips), 1, figsize=(6.4, 0.55 * len(rows) + 1.6),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    for ax, chip in zip(axes[:, 0], chips, strict=True):
        mine = [r for r in rows if r.chip == chip]
        ys = range(len(mine))
        ax.barh([y + 0.2 for y in ys], [r.plan / 1e9 for r in mine], height=0.38,
                color="#9ecae1", label="the chapter's plan")
        ax.barh([y - 0.2 for y in ys], [r.compiled / 1e9 for r in mine], height=0.38,
                color=["#fdae6b" if r.refused else "#3182bd" for r in mine],
                hatch=["//" if r.refused else "" for r in mine],
                label="TPU compiler: peak, or temporaries when refused")
        ax.axvline(mine[0].usable / 1e9, color="#d62728", lw=1.5,
                   label="HBM one program may use")
        ax.set_yticks(list(ys), [r.name for r in mine], fontsize=7)
        ax.invert_yaxis()
        ax.set_title(f"{chip}: {mine[0].usable / 1e9:.1f} GB usable per chip",
                     fontsize=9, loc="left")
        ax.set_xlabel("GB per chip")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=7, loc="lower center", ncol=2, frameon=False)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig


def load(path: Path = STORED) -> dict[str, Any]:
    """Return the stored compiles: ``{"versions", "date", "runs": {name: ...}}``."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> int:
    """Compile :data:`RUNS` (or those named) and write them as JSON, run by run."""
    parser = argparse.ArgumentParser(prog="python -m jaxcourse.transformer.slice_plans",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=STORED,
                        help="the JSON file to write")
    parser.add_argument("--only", nargs="*", default=None, help="run names to compile")
    parser.add_argument("--timeout", type=float, default=1800.0,
                        help="seconds one compile may take (70B with splash attention "
                             "took minutes on a 2-core machine)")
    add_version(parser)
    args = parser.parse_args(argv)
    by_name = {r.name: r for r in RUNS}
    unknown = sorted(set(args.only or ()) - set(by_name))
    if unknown:
        parser.error(f"no run named {unknown}; the runs: {list(by_name)}")
    chosen = RUNS if args.only is None else [by_name[n] for n in args.only]
    # Runs compiled before (another --only) stay; the chosen ones are replaced.
    kept = load(args.out)["runs"] if args.out.is_file() else {}
    from jaxcourse.measure import installed_versions
    from jaxcourse.slices import libtpu_version

    # The TPU compiler is the libtpu the slices load: the course's unpacked
    # copy (make setup) is no installed distribution.
    versions = installed_versions(("jax", "jaxlib")) | {"libtpu": libtpu_version()}
    results: dict[str, Any] = {"versions": versions,
                               "date": dt.date.today().isoformat(), "runs": kept}
    for index, run in enumerate(chosen, 1):
        started = time.perf_counter()
        results["runs"][run.name] = run_one(run, args.timeout)
        seconds = time.perf_counter() - started
        print(f"{index}/{len(chosen)} {run.name}: {seconds:.0f} s", file=sys.stderr,
              flush=True)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
