"""Measured on a real chip: the roofline and the transformer's step, beside the plan.

Chapters 6 and 7 predict what a chip does from a few published figures (peak
FLOP/s, HBM bandwidth) and from the compiler's analyses. This program puts
those predictions beside what one accelerator does, and writes both to one
JSON file: the device kind, the JAX and libtpu versions, the date, and the
raw numbers.

* **Matrix products**: ``X[B, 8192] @ W[8192, 8192]`` in bfloat16 for ``B``
  from 16 to 16,384; time and FLOP/s per size, and the batch where the
  product turns compute-bound (the knee), measured and predicted.
* **HBM bandwidth**: a read-only pass, a read + write pass, and the weights
  streamed by the smallest product.
* **The transformer's step** (:mod:`jaxcourse.transformer`, mixed precision)
  at the largest LLaMA-3-shaped size whose every remat policy fits one chip
  of 16 GB: per policy the plan, the chip's own compile, the measured peak
  (``memory_stats()``), step time and MFU; and the losses of a few steps.
  ``--aot FILE`` adds the same programs compiled ahead of time for the same
  chip on a CPU host (:mod:`jaxcourse.slices`), which must agree.

* **The fast step's ladder** (``--ladder FILE``, a file of its own):
  :mod:`jaxcourse.fast_step`'s rungs, one change at a time, each timed,
  profiled and its losses kept; stored in ``data/measured/fast_step/``.

* **Activations** (``--activations FILE``, a file of its own): the step's
  gradient compiled by the device's compiler at one and two sequences, per
  remat policy: how much its temporaries grow per token, beside the
  residuals JAX lists and the plan's formula
  (:func:`jaxcourse.transformer.residuals_per_token`).

Run it on any JAX accelerator (a TPU VM, Colab's or Kaggle's TPU runtime)::

    python -m jaxcourse.measure --out tpu_v5e.json
    python -m jaxcourse.measure --aot tpu_v5e.json      # later, on a CPU host
    python -m jaxcourse.measure --activations tpu_v5e_activations.json

``--quick`` shrinks every size, so the program itself can be tested on a CPU.
The predicted columns come from :func:`predicted`, which
``tests/test_measure.py`` recomputes against every stored file: a change to
the model then needs a new measurement.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["BATCHES", "MEASURED", "STEP", "hardware_of", "installed_versions", "knee",
           "load", "main",
           "measure_ladder", "measured_files", "predicted", "step_config"]

#: Where the stored measurements live: one ``<device kind>.json`` each.
MEASURED = Path(__file__).parent / "data" / "measured"

#: The product's width, ``d = f``, and the batch sizes swept.
WIDTH = 8192
BATCHES = (16, 32, 64, 128, 192, 256, 320, 384, 512, 768, 1024, 2048, 4096, 8192,
           16384)

#: The transformer step measured: LLaMA-3's shape (vocabulary, head width 64,
#: four query heads per key/value head, MLP 3.5 d) at d = 1024, one sequence
#: of 2,048 tokens, mixed precision. ``layers`` is the largest count whose
#: every remat policy fits a v5e's 15.75 GiB (searched with ``--fit``).
STEP = {"d_model": 1024, "layers": 16, "heads": 16, "kv_heads": 4, "hidden": 3584,
        "vocab": 128_256, "batch": 1, "seq": 2048, "precision": "mixed"}

_QUICK_STEP = {"d_model": 64, "layers": 2, "heads": 4, "kv_heads": 2, "hidden": 224,
               "vocab": 512, "batch": 1, "seq": 64, "precision": "mixed"}


def step_config(step: dict[str, Any]) -> Any:
    """Return the :class:`jaxcourse.transformer.Config` of a ``STEP``-like dict."""
    from jaxcourse.transformer import Config

    return Config(vocab=step["vocab"], d_model=step["d_model"], layers=step["layers"],
                  heads=step["heads"], kv_heads=step["kv_heads"], hidden=step["hidden"],
                  rope_theta=500_000.0, name=f"LLaMA-shaped d={step['d_model']}, "
                  f"{step['layers']} layers")


def hardware_of(kind: str) -> Any:
    """Return the course's figures for a device kind (``TPU v5 lite`` is the v5e).

    ``None`` for a kind the course's table (:data:`jaxcourse.scaling.HARDWARE`)
    does not hold.
    """
    from jaxcourse.scaling import HARDWARE

    names = {"TPU v5 lite": "TPU v5e", "TPU v5": "TPU v5p", "TPU v5e": "TPU v5e"}
    return HARDWARE.get(names.get(kind, kind))


# --- the predictions: what the course's model says, from today's code ---------

def _matmul_bytes(batch: int, width: int) -> int:
    return 2 * (batch * width + width * width + batch * width)


def knee(flops: float, bandwidth: float, width: int) -> float:
    """Return the batch where ``X[B, w] @ W[w, w]``'s intensity is flops / bandwidth.

    Intensity ``2 B w² / (2 (2 B w + w²)) = B w / (2 B + w)``; solved for B.
    """
    ridge = flops / bandwidth
    return ridge * width / (width - 2 * ridge) if width > 2 * ridge else math.inf


def predicted(kind: str, batches: Sequence[int], width: int,
              step: dict[str, Any]) -> dict[str, Any]:
    """Return the course's predictions for one device kind, as stored in the file.

    Parameters
    ----------
    kind : str
        ``jax.devices()[0].device_kind`` (e.g. ``"TPU v5 lite"``).
    batches, width : sequence of int, int
        The matrix products swept.
    step : dict
        The transformer step (:data:`STEP`'s keys).

    Returns
    -------
    dict
        ``hardware`` (the figures used), ``matmul`` (per batch: FLOPs, bytes,
        roofline seconds), ``knee`` (the predicted batch), and ``step``: per
        remat policy the state, the residuals JAX names (bytes), and the
        model FLOPs and roofline seconds of one step.
    """
    import jax
    import jax.numpy as jnp
    from jax._src.ad_checkpoint import saved_residuals as residual_list

    from jaxcourse import transformer

    hw = hardware_of(kind)
    out: dict[str, Any] = {"hardware": None, "matmul": [], "knee": None, "step": {}}
    if hw is None:
        return out
    out["hardware"] = {"name": hw.name, "flops": hw.flops, "hbm": hw.hbm,
                       "hbm_bandwidth": hw.hbm_bandwidth}
    for b in batches:
        flops, nbytes = 2.0 * b * width * width, _matmul_bytes(b, width)
        out["matmul"].append({"batch": b, "flops": flops, "bytes": nbytes,
                              "seconds": max(flops / hw.flops,
                                             nbytes / hw.hbm_bandwidth)})
    out["knee"] = knee(hw.flops, hw.hbm_bandwidth, width)
    cfg = step_config(step)
    tokens = step["batch"] * step["seq"]
    state = transformer.state_bytes(cfg, "data parallel", step["precision"])["total"]
    model_flops = transformer.flops_per_token(cfg, step["seq"])["total"] * tokens
    compute = transformer.PRECISIONS[step["precision"]].compute
    params = jax.eval_shape(lambda: transformer.init_params(
        jax.random.key(0), cfg, transformer.PRECISIONS[step["precision"]].store))
    shape = jax.ShapeDtypeStruct((step["batch"], step["seq"]), jnp.int32)
    for policy in transformer.REMAT_POLICIES:
        kept = residual_list(
            lambda p, i, t, r=policy: transformer.loss(
                jax.tree.map(lambda w: w.astype(compute), p), i, t, cfg, remat=r),
            params, shape, shape)
        residuals = sum(math.prod(a.shape) * a.dtype.itemsize for a, _ in kept)
        out["step"][policy] = {"state": state, "residuals": int(residuals),
                               "model_flops": model_flops,
                               "seconds": model_flops / hw.flops}
    return out


# --- measuring -----------------------------------------------------------------

def _timed(run: Callable[[], Any], repeats: int) -> float:
    """Return the median wall-clock seconds of ``run()`` after one warm-up call."""
    import jax

    jax.block_until_ready(run())
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(run())
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure_matmuls(batches: Sequence[int], width: int, repeats: int = 5
                    ) -> list[dict[str, float]]:
    """Time ``X[B, w] @ W[w, w]`` in bfloat16, chained in one loop per call.

    Each call runs ``k`` products, each on the last one's output, so that
    nothing is hoisted out of the loop and a call's fixed cost is spread
    over ``k`` products (``k`` chosen so a call does about 2·10¹² FLOPs).
    """
    import jax
    import jax.numpy as jnp

    key = jax.random.key(0)
    w = (jax.random.normal(key, (width, width), jnp.float32)
         / math.sqrt(width)).astype(jnp.bfloat16)
    rows = []
    for b in batches:
        x = jax.random.normal(jax.random.key(b), (b, width), jnp.bfloat16)
        flops = 2.0 * b * width * width
        k = max(4, min(2000, int(2e12 / flops)))
        chained = jax.jit(lambda x, w, k=k: jax.lax.fori_loop(
            0, k, lambda _, y: y @ w, x))
        seconds = _timed(lambda x=x, f=chained: f(x, w), repeats) / k
        rows.append({"batch": b, "seconds": seconds, "flops_per_s": flops / seconds,
                     "bytes_per_s": _matmul_bytes(b, width) / seconds, "chained": k})
    return rows


def measure_bandwidth(nbytes: int, repeats: int = 5) -> dict[str, float]:
    """HBM bandwidth: read-only (a sum) and read + write (an update), bytes/s.

    Each pass depends on the loop's carry, so the compiler cannot hoist it
    out of the loop; ten passes per call.
    """
    import jax
    import jax.numpy as jnp

    n = nbytes // 4
    x = jnp.ones((n,), jnp.float32)
    passes = 10
    read = jax.jit(lambda x: jax.lax.fori_loop(
        0, passes, lambda _, c: c + jnp.sum(x * c), jnp.float32(1e-9)))
    update = jax.jit(lambda x: jax.lax.fori_loop(
        0, passes, lambda _, y: y * 0.5 + 1.0, x))
    return {"bytes": n * 4,
            "read": n * 4 * passes / _timed(lambda: read(x), repeats),
            "read_write": 2 * n * 4 * passes / _timed(lambda: update(x), repeats)}


def _memory(compiled: Any) -> dict[str, int]:
    from jaxcourse.scaling import compiled_memory

    return compiled_memory(compiled)


def _step_function(step: dict[str, Any], policy: str) -> tuple[Any, Any, Any]:
    """Return the jitted step (state donated), the state's and tokens' shapes."""
    import jax
    import jax.numpy as jnp

    from jaxcourse import transformer

    cfg = step_config(step)
    fn = jax.jit(transformer.make_step(cfg, step["precision"], remat=policy),
                 donate_argnums=0)
    state = jax.eval_shape(lambda: transformer.init_state(jax.random.key(0), cfg,
                                                          step["precision"]))
    tokens = jax.ShapeDtypeStruct((step["batch"], step["seq"]), jnp.int32)
    return fn, state, tokens


def _zipf_tokens(step: dict[str, Any], count: int) -> Any:
    """Token batches drawn from a Zipf law (seeded): a loss that can fall."""
    import numpy as np

    rng = np.random.default_rng(0)
    ranks = np.arange(1, step["vocab"] + 1, dtype=np.float64)
    p = 1.0 / ranks
    p /= p.sum()
    return rng.choice(step["vocab"], size=(count, step["batch"], step["seq"] + 1), p=p
                      ).astype(np.int32)


def measure_step(step: dict[str, Any], policy: str, steps: int = 12) -> dict[str, Any]:
    """Compile, run and time the step under one remat policy on the default device.

    Returns the chip's compiled memory, ``memory_stats()`` after the run (its
    peaks), the median step time of the last ``steps - 2`` steps, the losses,
    and the compile time.
    """
    import jax

    from jaxcourse import transformer

    fn, shapes, tokens = _step_function(step, policy)
    start = time.perf_counter()
    try:
        compiled = fn.lower(shapes, tokens, tokens).compile()
    except Exception as error:  # the compiler's refusal is a result: keep its words
        return {"refused": str(error).splitlines()[0]}
    compile_s = time.perf_counter() - start
    cfg = step_config(step)
    state = transformer.init_state(jax.random.key(0), cfg, step["precision"])
    data = _zipf_tokens(step, steps)
    losses, times = [], []
    for batch in data:
        inputs, targets = jax.device_put(batch[:, :-1]), jax.device_put(batch[:, 1:])
        jax.block_until_ready((inputs, targets))
        t0 = time.perf_counter()
        state, value = compiled(state, inputs, targets)
        losses.append(float(value))   # waits for the step
        times.append(time.perf_counter() - t0)
    stats = jax.devices()[0].memory_stats() or {}
    return {"compiled": _memory(compiled), "compile_seconds": compile_s,
            "memory_stats": {k: int(v) for k, v in stats.items()
                             if isinstance(v, int | float)},
            "step_seconds": statistics.median(times[2:]), "losses": losses}


def aot_step(step: dict[str, Any], policy: str, slice_name: str) -> dict[str, Any]:
    """Return the step's memory compiled ahead of time for one chip of a slice."""
    import jax
    from jax.sharding import SingleDeviceSharding

    from jaxcourse.slices import slice_devices

    device = slice_devices(slice_name)[0]
    fn, shapes, tokens = _step_function(step, policy)
    on = SingleDeviceSharding(device)
    placed = jax.tree.map(lambda s: jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=on),
                          (shapes, tokens, tokens))
    try:
        return _memory(fn.lower(*placed).compile())
    except Exception as error:  # as on the chip: the refusal is the result
        return {"refused": str(error).splitlines()[0]}


# --- the fast step's ladder (jaxcourse.fast_step) ------------------------------

def measure_ladder(path: Path, quick: bool = False, only: set[str] | None = None,
                   steps: int = 8) -> dict[str, Any]:
    """Measure every rung and extra on the default device; write ``path`` after each.

    A run already in ``path`` (from an earlier call that was cut off) is
    kept, not measured again; ``only`` measures just the keys named.
    """
    import jax

    from jaxcourse import fast_step as fs

    result: dict[str, Any] = json.loads(path.read_text(encoding="utf-8")) \
        if path.is_file() else {}
    device = jax.devices()[0]
    result.update({"date": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d"),
                   "device_kind": device.device_kind, "platform": device.platform,
                   "versions": installed_versions(), "quick": quick})
    result.setdefault("runs", {})
    if "kernels" not in result and (only is None or "kernels" in only):
        result["kernels"] = fs.kernel_equality(quick)
        path.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    plan = [(key, {"rung": label}, r) for key, label, r in fs.rungs(quick)]
    plan += [(key, {"extra_of": base}, r) for key, base, r in fs.extras(quick)]
    for key, about, recipe in plan:
        if key in result["runs"] or (only is not None and key not in only):
            continue
        started = time.perf_counter()
        row = {**about, "recipe": recipe.as_dict(),
               "model_flops": fs.model_flops(recipe)["total"],
               **fs.measure_recipe(recipe, steps)}
        row["seconds"] = time.perf_counter() - started
        result["runs"][key] = row
        path.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        print(f"{key}: {row.get('step_seconds', row.get('refused'))}", file=sys.stderr,
              flush=True)
    return result


# --- the program ---------------------------------------------------------------

def installed_versions(names: Sequence[str] = ("jax", "jaxlib", "libtpu",
                                               "libtpu-nightly")
                       ) -> dict[str, str | None]:
    """Return each distribution's installed version (``None`` where absent).

    Stored with every measurement and every compile made for a chip, so that
    a reader knows which JAX and which TPU compiler produced the figures.
    """
    import importlib.metadata as md

    found: dict[str, str | None] = {}
    for name in names:
        try:
            found[name] = md.version(name)
        except md.PackageNotFoundError:
            found[name] = None
    return found


def _alone(*args: str) -> dict[str, Any]:
    """Run ``python -m jaxcourse.measure ARGS`` and return the JSON it prints.

    One process at a time holds a TPU (libtpu's lock file), and a device's
    memory peaks are the process's own: so each part runs in a process of
    its own, and this one never starts a backend while they run.
    """
    out = subprocess.run([sys.executable, "-m", "jaxcourse.measure", *args],
                         capture_output=True, text=True, timeout=900,
                         env=os.environ.copy())
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or ["(no output)"])[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure_kernels(quick: bool) -> dict[str, Any]:
    """Measure the device, the matrix-product sweep and the bandwidths."""
    import jax

    device = jax.devices()[0]
    batches = (16, 64, 256) if quick else BATCHES
    width = 256 if quick else WIDTH
    return {"device_kind": device.device_kind, "platform": device.platform,
            "devices": len(jax.devices()), "versions": installed_versions(),
            "matmul": measure_matmuls(batches, width, repeats=3 if quick else 5),
            "bandwidth": measure_bandwidth(2**20 if quick else 2**30)}


def measure(quick: bool = False) -> dict[str, Any]:
    """Run every measurement on the default device and return the file's content."""
    from jaxcourse.transformer import REMAT_POLICIES

    width = 256 if quick else WIDTH
    step = dict(_QUICK_STEP if quick else STEP)
    result: dict[str, Any] = {"date": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d"),
                              "width": width, "step_config": step, "quick": quick}
    kernels = _alone("--kernels", *(["--quick"] if quick else []))
    if "error" in kernels:
        raise RuntimeError(f"the kernels' measurement failed: {kernels['error']}")
    result.update(kernels)
    print(f"measured on {result['device_kind']}: matrix products, bandwidth",
          file=sys.stderr)
    result["step"] = {}
    for policy in REMAT_POLICIES:
        found = _alone("--one-step", policy, "--step-json", json.dumps(step))
        result["step"][policy] = found
        print(f"  step, remat {policy}: "
              f"{found.get('step_seconds', found.get('refused', found.get('error')))}",
              file=sys.stderr)
    batches = [row["batch"] for row in result["matmul"]]
    result["predicted"] = predicted(result["device_kind"], batches, width, step)
    return result


def add_aot(path: Path, slice_name: str = "v5e 2x4") -> dict[str, Any]:
    """Add the AOT compiles (from this host) to a stored file; say if they agree."""
    from jaxcourse import transformer

    found = json.loads(path.read_text(encoding="utf-8"))
    found["aot"] = {"slice": slice_name, "step": {}}
    for policy in transformer.REMAT_POLICIES:
        aot = aot_step(found["step_config"], policy, slice_name)
        chip = found["step"][policy]
        chip = chip.get("compiled", {"refused": chip.get("refused")})
        # Refusals agree when both say the same required and available bytes.
        found["aot"]["step"][policy] = {"compiled": aot, "agrees": aot == chip}
    path.write_text(json.dumps(found, indent=1) + "\n", encoding="utf-8")
    return found


#: Sequence lengths at which :func:`measure_activations` doubles the batch.
ACTIVATION_SEQS = (1024, 2048)
#: Where the chip's activation compiles are stored (compiled, not timed).
ACTIVATIONS = Path(__file__).parent / "data" / "compiled" / "tpu_v5e_activations.json"


def measure_activations(step: dict[str, Any] | None = None,
                        seqs: Sequence[int] = ACTIVATION_SEQS) -> dict[str, Any]:
    """Compile the step for the default device at two batches, per remat policy.

    For each sequence length in ``seqs`` and each policy,
    :func:`jaxcourse.transformer.activation_bytes` compiles the
    mixed-precision gradient of :data:`STEP`'s model at one and two sequences:
    ``compiled`` is how much the compiler's temporaries grew per token added,
    ``listed`` the residuals JAX lists per token. A compile the chip's
    compiler refuses is stored as its refusal. The planned column is
    recomputed from today's code by :func:`activation_predictions` (and by
    ``tests/test_measure.py``).
    """
    import jax

    from jaxcourse.transformer import REMAT_POLICIES
    from jaxcourse.transformer.memory import activation_bytes

    step = dict(STEP if step is None else step)
    cfg = step_config(step)
    runs = []
    for seq in seqs:
        for remat in REMAT_POLICIES:
            started = time.perf_counter()
            try:
                got = activation_bytes(cfg, remat, 1, seq, "mixed")
                row: dict[str, Any] = {"compiled": got["compiled"],
                                       "listed": got["residuals"]}
            except Exception as error:  # the compiler's refusal is a result
                row = {"refused": str(error).splitlines()[0][:400]}
            row.update(seq=seq, remat=remat, seconds=time.perf_counter() - started)
            print(json.dumps(row), file=sys.stderr, flush=True)
            runs.append(row)
    return {"date": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d"),
            "device_kind": jax.devices()[0].device_kind,
            "versions": installed_versions(), "step_config": step, "runs": runs,
            "planned": activation_predictions(step)}


def load_activations(path: Path = ACTIVATIONS) -> dict[str, Any]:
    """Return the stored activation compiles (:func:`measure_activations`' file)."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


def activation_predictions(step: dict[str, Any]) -> dict[str, int | None]:
    """Return each policy's planned residual bytes per token (None: not planned)."""
    from jaxcourse.transformer import REMAT_POLICIES, residuals_per_token

    cfg = step_config(step)
    return {remat: residuals_per_token(cfg, remat)["total"] if remat != "none" else None
            for remat in REMAT_POLICIES}


def load(name: str) -> dict[str, Any]:
    """Return a stored measurement, e.g. ``load("tpu_v5e")``.

    Raises
    ------
    FileNotFoundError
        If there is no such file; the message lists the ones there are.
    """
    path = MEASURED / f"{name}.json"
    if not path.is_file():
        raise FileNotFoundError(f"no measurement {name!r}; stored: "
                                f"{[p.stem for p in measured_files()]}")
    return json.loads(path.read_text(encoding="utf-8"))


def measured_files() -> list[Path]:
    """Return the stored measurement files, one per device kind."""
    return sorted(MEASURED.glob("*.json"))


def main(argv: list[str] | None = None) -> int:
    """Command line: measure on this machine's accelerator, or add AOT compiles."""
    parser = argparse.ArgumentParser(prog="python -m jaxcourse.measure",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="write the measurements here")
    parser.add_argument("--aot", type=Path, help="add AOT compiles to this file")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (a CPU test)")
    parser.add_argument("--activations", type=Path,
                        help="compile the step per remat policy at two batches on this "
                             "machine's device and write what grows per token here")
    parser.add_argument("--ladder", type=Path,
                        help="measure the fast step's ladder (jaxcourse.fast_step) on "
                             "this machine's device, one change at a time, and write "
                             "it here (runs already in the file are kept)")
    parser.add_argument("--only", help="with --ladder: measure only these runs "
                        "(comma-separated keys)")
    parser.add_argument("--one-step", help=argparse.SUPPRESS)
    parser.add_argument("--kernels", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--step-json", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.kernels:
        print(json.dumps(measure_kernels(args.quick)))
        return 0
    if args.one_step:
        print(json.dumps(measure_step(json.loads(args.step_json), args.one_step)))
        return 0
    if args.ladder:
        only = set(args.only.split(",")) if args.only else None
        measure_ladder(args.ladder, quick=args.quick, only=only)
        print(f"wrote {args.ladder}", file=sys.stderr)
        return 0
    if args.activations:
        step = _QUICK_STEP if args.quick else STEP
        found = measure_activations(step, (32, 64) if args.quick else ACTIVATION_SEQS)
        args.activations.write_text(json.dumps(found, indent=1) + "\n",
                                    encoding="utf-8")
        print(f"wrote {args.activations}", file=sys.stderr)
        return 0
    if args.aot:
        if not args.aot.is_file():
            print(f"error: no file {args.aot}", file=sys.stderr)
            return 2
        found = add_aot(args.aot)
        for policy, row in found["aot"]["step"].items():
            print(f"{policy}: AOT {'agrees' if row['agrees'] else 'DIFFERS'}")
        return 0
    if args.out is None:
        parser.error("say where to write: --out FILE (or --aot FILE)")
    result = measure(quick=args.quick)
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
