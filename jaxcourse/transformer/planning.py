"""Planning a real run: the roofline, critical batches, and compiling from shapes.

The hardware and the bandwidth of a mesh axis are chapter 6's
(:data:`jaxcourse.scaling.HARDWARE`, :func:`jaxcourse.scaling.mesh_bandwidths`:
the node's egress across GPU nodes, wraparound only where a TPU axis has it;
:func:`jaxcourse.scaling.ring_bytes`). :func:`phase_bytes` and
:func:`step_time` price a transformer's step under FSDP, tensor parallelism
or both, in micro-batches that each gather the weights again;
:func:`critical_batch` gives the tokens per chip in one micro-batch above
which the step is compute-bound. :func:`compile_step` compiles a real-shaped training
step from ``jax.ShapeDtypeStruct`` alone (nothing allocated) and
:func:`compile_report` reads its memory and collectives;
:func:`compile_in_subprocess` does it in a fresh Python started with as many
CPU devices as the mesh needs (64 for 8 nodes of 8 GPUs).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxcourse import CourseError
from jaxcourse.cli import add_version
from jaxcourse.scaling.communication import collective_summary, compiled_collectives
from jaxcourse.scaling.memory import compiled_memory
from jaxcourse.scaling.roofline import (
    Hardware,
    compute_bound_above,
    mesh_bandwidths,
    ring_bytes,
)

from .config import LLAMA3_8B, LLAMA3_70B, Config, flops_per_token, param_count
from .layouts import DATA, MODEL, batch_spec, layout_switches, sharded_step, spec_tree
from .memory import (
    attention_hbm_bytes,
    gathered_bytes,
    residuals_per_token,
    state_bytes,
)
from .training import init_state

__all__ = ["CONFIGS", "compile_in_subprocess", "compile_report", "compile_step",
           "critical_batch", "memory_plan", "phase_bytes", "step_time"]

#: The configs a subprocess can be asked to compile, by name.
CONFIGS = {"LLaMA-3 8B": LLAMA3_8B, "LLaMA-3 70B": LLAMA3_70B}


def phase_bytes(cfg: Config, layout: str, tokens: float, data: int = 1, model: int = 1,
                itemsize: int = 2) -> dict[str, dict[str, float]]:
    """Return the bytes one chip sends in each pass, along each mesh axis.

    ``tokens`` is the global batch in tokens. FSDP (ZeRO-3): each weight's
    piece is gathered forward and again backward, and its gradient
    reduce-scattered, over ``"data"``. Data parallelism all-reduces the
    gradients backward. Tensor parallelism all-reduces the ``(tokens / data,
    d)`` activation over ``"model"`` twice per block forward and twice
    backward, and once more each way at the two ends of the model, whose
    vocabulary it splits: the embedding's sum forward, the output layer's
    input gradient backward (Megatron-LM's ``VocabParallelEmbedding`` and
    ``ColumnParallelLinear`` output layer); the loss over the split
    vocabulary adds three all-reduces forward of one float32 number per
    token (``vocab_parallel_cross_entropy``'s maximum, sum of exponentials
    and target logit). Sequence parallelism replaces each all-reduce of an
    activation by a reduce-scatter and an all-gather (the same bytes), and
    gathers the int32 tokens and targets forward. Priced on rings by
    :func:`jaxcourse.scaling.ring_bytes`; the loss's one number is left out.
    """
    lay = layout_switches(layout)
    weights = param_count(cfg) * itemsize / (model if lay.tp else 1)
    out = {"forward": {"data": 0.0, "model": 0.0},
           "backward": {"data": 0.0, "model": 0.0}}
    if lay.fsdp:
        gather = ring_bytes("all-gather", weights, data)
        out["forward"]["data"] = gather
        out["backward"]["data"] = gather + ring_bytes("reduce-scatter", weights, data)
    else:
        out["backward"]["data"] = ring_bytes("all-reduce", weights, data)
    if lay.tp:
        activation = tokens / data * cfg.d_model * itemsize
        per_pass = (2 * cfg.layers + 1) * ring_bytes("all-reduce", activation, model)
        per_token = tokens / data * 4
        out["forward"]["model"] = per_pass + 3 * ring_bytes("all-reduce", per_token,
                                                            model)
        if lay.sp:
            out["forward"]["model"] += 2 * ring_bytes("all-gather", per_token, model)
        out["backward"]["model"] = per_pass
    return out


def step_time(cfg: Config, layout: str, tokens: float, hw: Hardware, seq: int,
              data: int = 1, model: int = 1, itemsize: int = 2,
              across_nodes: bool = False, micro: int = 1, data_axes: int = 1,
              model_axes: int = 1, wraparound: bool | None = None
              ) -> dict[str, float]:
    """Return the roofline estimate of one step per chip, in seconds.

    The FLOPs are :func:`~.config.flops_per_token` times ``tokens``, split
    evenly over the chips, a third forward and two thirds backward; each
    pass's communication hides only behind its own FLOPs, as chapter 6's
    roofline says. The step runs in ``micro`` micro-batches of ``tokens /
    micro`` (gradient accumulation, :func:`~.training.make_grad_fn`): each
    gathers the weights forward and backward and reduce-scatters its
    gradients again (the course's accumulation adds gradients already
    split), so the step is ``micro`` times one micro-batch's. The bandwidth
    of each axis is :func:`jaxcourse.scaling.mesh_bandwidths`': the
    ``"data"`` axis crosses nodes when ``across_nodes`` (a node's network
    cards shared by its chips on that axis); on a TPU, ``data_axes`` and
    ``model_axes`` are the physical axes each mesh axis is laid over, and
    each axis's length says whether it wraps around.
    """
    if micro < 1:
        raise ValueError(f"micro-batches must be at least 1, not {micro}")
    chips = data * model
    part = tokens / micro
    flops = flops_per_token(cfg, seq)["total"] * part / chips / hw.flops
    beta = mesh_bandwidths(hw, data, model, across_nodes, wraparound, data_axes,
                           model_axes)
    sent = phase_bytes(cfg, layout, part, data, model, itemsize)
    one: dict[str, float] = {"compute": flops}
    for phase, share in (("forward", 1 / 3), ("backward", 2 / 3)):
        one[f"{phase}_compute"] = flops * share
        one[f"{phase}_communication"] = sum(sent[phase][a] / beta[a] for a in beta)
    one["communication"] = one["forward_communication"] + one["backward_communication"]
    one["step"] = sum(max(one[f"{p}_compute"], one[f"{p}_communication"])
                      for p in ("forward", "backward"))
    return {key: micro * value for key, value in one.items()}


def critical_batch(cfg: Config, layout: str, hw: Hardware, seq: int, data: int = 1,
                   model: int = 1, itemsize: int = 2, across_nodes: bool = False,
                   data_axes: int = 1, model_axes: int = 1,
                   wraparound: bool | None = None) -> float:
    """Return the tokens **per chip** above which both passes are compute-bound.

    The tokens are those between two gathers of the weights: one
    micro-batch's under gradient accumulation, where FSDP gathers the
    weights again for each micro-batch. Communication time is ``a + c ·
    tokens`` (weights, then activations), compute time ``k · tokens``: each
    pass is compute-bound above ``a / (k - c)`` tokens; ``inf`` when the
    activations alone outrun the FLOPs (``c >= k``). The bandwidths are
    :func:`step_time`'s.
    """
    probe = float(data * model * seq)
    times = [step_time(cfg, layout, t, hw, seq, data, model, itemsize, across_nodes,
                       1, data_axes, model_axes, wraparound)
             for t in (probe, 2 * probe)]
    return compute_bound_above(times, probe) / (data * model)


def memory_plan(cfg: Config, layout: str, data: int, model: int, seq: int,
                sequences: int = 1, remat: str = "full", loss_chunk: int = 0,
                donate: bool = True) -> dict[str, int]:
    """Return the chapter's plan of one device's memory for a mixed-precision step.

    ``state``: the stored state (:func:`~.memory.state_bytes`, 12 bytes a
    parameter, split by the layout); ``step``: the bfloat16 weights and the
    float32 gradients the step makes from it (the course's step returns the
    gradients of the float32 master: :func:`~.training.bytes_per_param`),
    half the state (2 + 4 of its 12 bytes); ``gathered``: the bfloat16
    weights FSDP gathers whole at once (:func:`~.memory.gathered_bytes`: the
    embedding and the output layer, and one block's); ``activations``: the
    residuals JAX lists under ``remat`` (:func:`~.memory.residuals_per_token`:
    the blocks' and the head's, whose float32 log-softmax over the
    vocabulary is most of it under full remat), for the ``sequences`` of
    ``seq`` tokens each device computes (with ``loss_chunk``, the loss
    computed that many positions at a time, which keeps no log-softmax;
    under tensor parallelism, each device keeps its slice of the
    vocabulary's); the blocks' part is split over ``"model"`` where the
    layout splits the sequence; ``attention``: the float32 scores that
    ``cfg.attention``'s form holds at once in HBM in one block's backward
    pass (:func:`~.memory.attention_hbm_bytes`, the heads split over
    ``"model"`` under tensor parallelism): each head's whole ``(seq, seq)``
    matrix for the chapter's ``"plain"`` form, one chunk's for
    ``"chunked"``, none for the ``"splash"`` kernel, whose tiles stay on
    chip; ``outputs``: without ``donate``, the new state, which cannot take
    the old one's buffers (0 when the state is donated, as a training loop
    does). ``total`` is their sum. It is a plan, not a compiler's figure:
    what it leaves out (the compiler's other temporaries and its choices) is
    what :mod:`jaxcourse.transformer.slice_plans` measures.
    """
    lay = layout_switches(layout)
    state = state_bytes(cfg, layout, "mixed", data, model)["total"]
    step = state // 2
    split = model if lay.sp else 1
    kept = residuals_per_token(cfg, remat, "mixed", bool(loss_chunk), layout, model)
    tokens = seq * sequences
    activations = tokens * kept["blocks"] // split + tokens * kept["head"]
    plan = {"state": state, "step": step,
            "gathered": gathered_bytes(cfg, layout, data, model),
            "activations": activations,
            "attention": attention_hbm_bytes(cfg, sequences, seq,
                                             model if lay.tp else 1),
            "outputs": 0 if donate else state}
    return plan | {"total": sum(plan.values())}


def compile_step(cfg: Config, layout: str, data: int, model: int, batch: int, seq: int,
                 precision: str = "mixed", remat: str = "full",
                 devices: Sequence[Any] | None = None, donate: bool = False,
                 loss_chunk: int = 0) -> Any:
    """Compile ``layout``'s training step for ``cfg`` from shapes alone.

    The state (:func:`~.training.init_state`'s, by ``jax.eval_shape``) and
    the tokens are ``jax.ShapeDtypeStruct`` with the layout's shardings on a
    ``data × model`` mesh of the first ``data · model`` of ``devices`` (JAX's
    own by default; a TPU slice's compile-only devices,
    :func:`jaxcourse.slices.slice_devices`, compile it for that slice):
    nothing is allocated, so a model far larger than this machine's memory
    compiles. With ``donate``, the state's buffers are donated (the new state
    may reuse them), as a real training loop does; ``loss_chunk`` computes the
    loss that many positions at a time (:func:`~.model.loss`).

    Raises
    ------
    ValueError
        If there are too few devices, or the batch does not split.
    """
    from jax.sharding import AxisType, NamedSharding

    devices = list(jax.devices() if devices is None else devices)
    if len(devices) < data * model:
        raise ValueError(f"a {data}×{model} mesh needs {data * model} devices; there "
                         f"are {len(devices)} (call "
                         "jaxcourse.devices.use_cpu_devices "
                         "first, or use compile_in_subprocess)")
    if batch % data:
        raise ValueError(f"a batch of {batch} does not split over {data} devices")
    # Explicit axes, as make_mesh gives by default: said, so no reader guesses.
    mesh = jax.make_mesh((data, model), (DATA, MODEL),
                         axis_types=(AxisType.Explicit, AxisType.Explicit),
                         devices=devices[:data * model])
    state = jax.eval_shape(lambda: init_state(jax.random.key(0), cfg, precision))
    shaped = jax.tree.map(
        lambda leaf, spec: jax.ShapeDtypeStruct(leaf.shape, leaf.dtype,
                                                sharding=NamedSharding(mesh, spec)),
        state, spec_tree(state, layout))
    tokens = jax.ShapeDtypeStruct((batch, seq), np.int32,
                                  sharding=NamedSharding(mesh, batch_spec(layout)))
    step = jax.jit(sharded_step(cfg, layout, mesh, precision, remat,
                                loss_chunk=loss_chunk),
                   donate_argnums=(0,) if donate else ())
    return step.lower(shaped, tokens, tokens).compile()


def compile_report(compiled: Any) -> dict[str, Any]:
    """Return a compiled step's memory (per device) and its collectives, as data.

    ``memory`` is :func:`jaxcourse.scaling.compiled_memory`'s;
    ``collectives`` counts each ``(kind, bytes, group)`` found in the HLO
    (a loop's body counted once), and ``summary`` is
    :func:`jaxcourse.scaling.collective_summary`'s. Compiled for a TPU
    slice, the child (:func:`main`) adds ``tpu_collectives``: each logical
    collective as :func:`~.tpu_collectives.tpu_collectives` reads it, with
    its count.
    """
    found = compiled_collectives(compiled)
    counts = Counter(found)
    return {"memory": compiled_memory(compiled),
            "collectives": [[c.kind, c.nbytes, c.group, n]
                            for c, n in sorted(counts.items())],
            "summary": collective_summary(found)}


def compile_in_subprocess(config: str, layout: str, data: int, model: int, batch: int,
                          seq: int, layers: int | None = None, precision: str = "mixed",
                          remat: str = "full", timeout: float = 300.0,
                          slice_name: str | None = None, donate: bool = False,
                          loss_chunk: int = 0, attention: str = "plain",
                          attention_block: int = 0) -> dict[str, Any]:
    """Compile a named config's step in a fresh Python with ``data · model`` devices.

    JAX fixes its number of devices when it starts, so a 64-device mesh
    needs a process of its own: this one starts Python on this module's
    command line, which compiles with :func:`compile_step` and prints
    :func:`compile_report` as JSON, with ``seconds`` (the compile alone).
    With ``slice_name`` the child compiles for that TPU slice's compile-only
    devices (:func:`jaxcourse.slices.slice_devices`) instead of simulated CPU
    ones; where the TPU compiler refuses the program (it does not fit the
    chip's memory), the JSON holds ``refused``: its message's first lines.

    Parameters
    ----------
    config : str
        A key of :data:`CONFIGS`.
    layout, data, model, batch, seq, precision, remat, donate, loss_chunk
        As for :func:`compile_step`.
    layers : int, optional
        Compile with this many blocks instead of the config's.
    timeout : float
        Seconds before the child is stopped.
    slice_name : str, optional
        A key of :data:`jaxcourse.slices.SLICES`.
    attention, attention_block : str, int
        The config's attention form and its block
        (:meth:`~.config.Config.with_attention`).

    Raises
    ------
    CourseError
        If the child fails or runs out of time; the message has its last lines.
    """
    if config not in CONFIGS:
        raise ValueError(f"unknown config {config!r}; expected one of {list(CONFIGS)}")
    args = [sys.executable, "-m", "jaxcourse.transformer.planning", config, layout,
            str(data), str(model), str(batch), str(seq), "--precision", precision,
            "--remat", remat] + (["--layers", str(layers)] if layers else []) + (
                ["--slice", slice_name] if slice_name else []) + (
                ["--donate"] if donate else []) + (
                ["--loss-chunk", str(loss_chunk)] if loss_chunk else []) + (
                ["--attention", attention] if attention != "plain" else []) + (
                ["--attention-block", str(attention_block)] if attention_block else [])
    # The child imports this very package, wherever it is.
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [root] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=timeout,
                              env=env)
    except subprocess.TimeoutExpired as err:
        raise CourseError(f"compiling {config} on {data}×{model} devices took more "
                          f"than {timeout:.0f} s; it was stopped") from err
    if done.returncode:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-5:])
        raise CourseError(
            f"compiling {config} on {data}×{model} devices failed:\n{tail}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    """Run the child of :func:`compile_in_subprocess`: compile, print one JSON line."""
    parser = argparse.ArgumentParser(prog="python -m jaxcourse.transformer.planning")
    parser.add_argument("config", choices=sorted(CONFIGS))
    parser.add_argument("layout")
    for name in ("data", "model", "batch", "seq"):
        parser.add_argument(name, type=int)
    parser.add_argument("--layers", type=int)
    parser.add_argument("--precision", default="mixed")
    parser.add_argument("--remat", default="full")
    parser.add_argument("--slice", help="compile for this TPU slice (jaxcourse.slices)")
    parser.add_argument("--donate", action="store_true", help="donate the state")
    parser.add_argument("--loss-chunk", type=int, default=0,
                        help="compute the loss this many positions at a time")
    parser.add_argument("--attention", default="plain",
                        help="compute attention in this form (attention_forms)")
    parser.add_argument("--attention-block", type=int, default=0,
                        help="the form's chunk or tile (0: its default)")
    add_version(parser)
    args = parser.parse_args(argv)
    devices = None
    if args.slice:
        from jaxcourse.slices import slice_devices

        devices = slice_devices(args.slice)
    else:
        from jaxcourse.devices import use_cpu_devices

        use_cpu_devices(args.data * args.model)
    cfg = CONFIGS[args.config]
    if args.layers:
        cfg = cfg.with_layers(args.layers)
    cfg = cfg.with_attention(args.attention, args.attention_block)
    started = time.perf_counter()
    try:
        compiled = compile_step(cfg, args.layout, args.data, args.model, args.batch,
                                args.seq, args.precision, args.remat, devices,
                                args.donate, args.loss_chunk)
    except jax.errors.JaxRuntimeError as error:
        if not args.slice or "RESOURCE_EXHAUSTED" not in str(error):
            raise
        # The TPU compiler's refusal is a result: its words say by how much.
        print(json.dumps({"refused": "\n".join(str(error).splitlines()[:4]),
                          "seconds": time.perf_counter() - started}))
        return 0
    report = compile_report(compiled)
    report["seconds"] = time.perf_counter() - started
    if args.slice:
        # The TPU prints collectives in forms compiled_collectives miscounts
        # (async chains, all-reduces that gather or scatter): each logical
        # one, with its form and the mesh axes it spans (.tpu_collectives).
        from .tpu_collectives import tpu_collectives

        counted = Counter(tpu_collectives(compiled, (args.data, args.model)))
        report["tpu_collectives"] = sorted(([*c, n] for c, n in counted.items()),
                                           key=lambda row: (not row[5], *row[:5]))
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
