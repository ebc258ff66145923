"""A fast training step on one chip: today's step, then one measured change at a time.

Chapter 7's step is right in its arithmetic and slow on a chip. This module
builds the same LLaMA-shaped step from a :class:`Recipe` (what each part of
it does: attention's form, the loss, the optimizer's bytes, the remat
policy, the shapes, compiler options) and measures each rung of
:data:`LADDER`, which changes one thing at a time, on the default device:

* the step time (median of the timed steps) and its MFU, counted as MaxText
  counts it (:func:`model_flops`: causal attention counts half its scores);
* the compiler's memory (``memory_analysis()``), or its refusal;
* the losses of the timed steps, on the same seeded tokens, so that a change
  that is faster and wrong shows;
* a profile of a few more steps (:mod:`jaxcourse.step_profile`): each
  operation's time, and their sum per part of the step.

``python -m jaxcourse.measure --ladder FILE`` (:func:`jaxcourse.measure.
measure_ladder`) runs it on an accelerator and
writes one JSON file (with the date, the device and the JAX and libtpu
versions); ``--quick`` shrinks every shape so that the program itself is
tested on a CPU, where its times say nothing about a chip.
"""

from __future__ import annotations

import dataclasses
import json
import re
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

__all__ = ["EXTRAS", "LADDER", "MAXTEXT_V5E", "STORED", "TODAY", "Recipe", "adam_in",
           "bf16_target_logp", "extras", "kernel_equality", "load_ladder",
           "make_fast_step", "measure_recipe", "mfu", "model_flops", "moved",
           "refusal_bytes",
           "run_parts", "rungs", "scope_seconds"]

#: Where the ladder measured on a TPU v5e is stored.
STORED = Path(__file__).parent / "data" / "measured" / "fast_step" / "tpu_v5e.json"


@dataclass(frozen=True)
class Recipe:
    """Everything that makes one training step: the model's shape and how it runs.

    Attributes
    ----------
    d_model, layers, heads, kv_heads, hidden, vocab : int
        The model (LLaMA-3's shape: ``hidden = 3.5 d``, four query heads per
        key/value head, its 128,256-word vocabulary).
    batch, seq : int
        Sequences per step and their length: ``batch · seq`` tokens a step.
    attention, attention_block : str, int
        Attention's form and its block (:mod:`jaxcourse.transformer.
        attention_forms`).
    logits : str
        ``"float32"``: the chapter's loss, the whole batch's logits made
        float32 and log-softmaxed; ``"bfloat16"``: the logits stay bfloat16
        and only the log-sum-exp is accumulated in float32
        (:func:`bf16_target_logp`).
    loss_chunk : int
        Positions of the sequence scored at a time (0: all at once).
    moments, grads : str
        The dtypes of Adam's two moments and of the gradients (``"float32"``
        or ``"bfloat16"``); the stored weights are float32 either way.
    remat : str
        A policy of :data:`jaxcourse.transformer.REMAT_POLICIES`.
    options : tuple of (str, str)
        Compiler options, passed to ``compile(compiler_options=...)``.
    learning_rate : float
        Adam's step size: 1e-4, a third of LLaMA-3's peak (3e-4, reached
        after a warm-up that these few steps do not have).
    """

    d_model: int = 1024
    layers: int = 16
    heads: int = 16
    kv_heads: int = 4
    hidden: int = 3584
    vocab: int = 128_256
    batch: int = 1
    seq: int = 2048
    attention: str = "plain"
    attention_block: int = 0
    logits: str = "float32"
    loss_chunk: int = 0
    moments: str = "float32"
    grads: str = "float32"
    remat: str = "full"
    options: tuple[tuple[str, str], ...] = ()
    learning_rate: float = 1e-4

    def config(self) -> Any:
        """Return the :class:`jaxcourse.transformer.Config` of this recipe."""
        from jaxcourse.transformer import Config

        return Config(vocab=self.vocab, d_model=self.d_model, layers=self.layers,
                      heads=self.heads, kv_heads=self.kv_heads, hidden=self.hidden,
                      rope_theta=500_000.0,
                      name=f"LLaMA-shaped d={self.d_model}, {self.layers} layers"
                      ).with_attention(self.attention, self.attention_block)

    @property
    def tokens(self) -> int:
        """Tokens per step."""
        return self.batch * self.seq

    def as_dict(self) -> dict[str, Any]:
        """Return the recipe as plain JSON values."""
        out = dataclasses.asdict(self)
        out["options"] = [list(pair) for pair in self.options]
        return out

    @classmethod
    def from_dict(cls, found: dict[str, Any]) -> Recipe:
        """Return the recipe stored by :meth:`as_dict`."""
        found = dict(found)
        found["options"] = tuple(tuple(pair) for pair in found.get("options", ()))
        return cls(**found)


#: Today's step: chapter 7's model at d = 1,024 (``jaxcourse.measure.STEP``),
#: its plain attention, float32 logits, float32 moments, full remat, one
#: sequence of 2,048 tokens.
TODAY = Recipe()

#: The fast step's size: LLaMA-3 8B's shape at half its width. d = 2,048, 16
#: query heads of 128 (LLaMA-3's head width, the width of a v5e's matrix unit)
#: and 4 key/value heads, an MLP of 7,168 = 3.5 d, its whole vocabulary; 8
#: layers, so that the weights, Adam's moments and a batch's activations fit
#: one chip of 16 GB.
WIDE = {"d_model": 2048, "layers": 8, "heads": 16, "kv_heads": 4, "hidden": 7168}

#: The rungs: each is the one before with the changes named, measured alone.
#: ``(key, what changed, the changes)``.
LADDER: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("today", "chapter 7's step at d = 1,024", {}),
    ("splash", "attention by the splash kernel (tiles of 512)",
     {"attention": "splash", "attention_block": 512}),
    ("logits", "bfloat16 logits, float32 log-sum-exp, 1,024 positions at a time",
     {"logits": "bfloat16", "loss_chunk": 1024}),
    ("optimizer", "Adam's moments and the gradients in bfloat16",
     {"moments": "bfloat16", "grads": "bfloat16"}),
    ("remat", "remat keeps the products' outputs (policy 'dots')", {"remat": "dots"}),
    ("batch", "4 sequences a step", {"batch": 4}),
    ("wide", "LLaMA-3 8B's shape at half its width: d = 2,048, heads of 128, "
     "8 layers", WIDE),
)

#: Today's settings, to undo every change but the shapes.
_SLOW = {"attention": "plain", "attention_block": 0, "logits": "float32",
         "loss_chunk": 0, "moments": "float32", "grads": "float32", "remat": "full"}

#: Runs beside the ladder: ``(key, the rung it starts from, the changes)``.
#: The splash kernel's tiles, the remat policies where memory allows a choice,
#: and the slow step at the fast step's size (its losses are the reference).
EXTRAS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("splash-256", "splash", {"attention_block": 256}),
    ("splash-1024", "splash", {"attention_block": 1024}),
    ("batch-full", "batch", {"remat": "full"}),
    ("batch-names", "batch", {"remat": "names"}),
    ("wide-full", "wide", {"remat": "full"}),
    ("wide-names", "wide", {"remat": "names"}),
    ("wide-batch-8", "wide", {"batch": 8}),
    ("wide-splash-1024", "wide", {"attention_block": 1024}),
    ("wide-vmem", "wide", {"options": (("xla_tpu_scoped_vmem_limit_kib", "65536"),)}),
    ("wide-today", "wide", _SLOW),
    ("wide-1", "wide", {"batch": 1}),
    ("wide-1-today", "wide", {"batch": 1, **_SLOW}),
)

#: MaxText's published MFU on TPU v5e, one v5e-256 pod slice, by model size
#: (``configs/v5e/README.md`` of AI-Hypercomputer/maxtext, read at commit
#: 0ed7bd5): its own dense configurations, FSDP over 256 chips.
MAXTEXT_V5E = {"16B": 0.6110, "32B": 0.6686, "64B": 0.5990, "128B": 0.5606}

#: Every shape shrunk for a CPU (``--quick``): the program runs, nothing else.
_QUICK = {"d_model": 64, "layers": 2, "heads": 2, "kv_heads": 1, "hidden": 224,
          "vocab": 512, "seq": 256}
_QUICK_WIDE = {"d_model": 128, "layers": 2, "heads": 2, "kv_heads": 1, "hidden": 448}


def rungs(quick: bool = False) -> list[tuple[str, str, Recipe]]:
    """Return the ladder's recipes, each the one before with its changes."""
    recipe = replace(TODAY, **_QUICK) if quick else TODAY
    out = []
    for key, label, changes in LADDER:
        if quick:
            changes = {k: v for k, v in changes.items() if k not in WIDE}
            changes |= _QUICK_WIDE if key == "wide" else {}
            changes = {k: (min(v, 256) if k in ("attention_block", "loss_chunk") and v
                           else v) for k, v in changes.items()}
        recipe = replace(recipe, **changes)
        out.append((key, label, recipe))
    return out


def extras(quick: bool = False) -> list[tuple[str, str, Recipe]]:
    """Return :data:`EXTRAS`' recipes (``(key, the rung it starts from, recipe)``)."""
    by_key = {key: recipe for key, _, recipe in rungs(quick)}
    out = []
    for key, base, changes in EXTRAS:
        if quick:
            changes = {k: (min(v, 128) if k == "attention_block" else v)
                       for k, v in changes.items()}
        out.append((key, base, replace(by_key[base], **changes)))
    return out


# --- MFU, as MaxText counts it ---------------------------------------------------

def model_flops(recipe: Recipe) -> dict[str, float]:
    """Return one step's model FLOPs as MaxText counts them, by their source.

    MaxText's ``calculate_tflops_training_per_device``: the learnable weights
    (the MLP, the query/key/value and output projections, and the output
    layer; not the embedding's lookup) cost ``6`` FLOPs per weight per token,
    and attention's two products ``4 · seq · heads · h`` per token per layer
    forward, three times that for a step, **halved because the mask is
    causal** (``causal_attention_flops = noncausal_attention_flops / 2``):
    the masked half of the scores is not work the model needs. Chapter 7's
    :func:`~jaxcourse.transformer.flops_per_token` counts the whole square.
    """
    from jaxcourse.transformer import flops_per_token

    per_token = flops_per_token(recipe.config(), recipe.seq)
    weights = per_token["weights"] * recipe.tokens
    attention = per_token["attention"] / 2 * recipe.tokens
    return {"weights": weights, "attention": attention, "total": weights + attention}


def mfu(recipe: Recipe, seconds: float, peak: float) -> float:
    """Return the MFU of a step of ``seconds`` on a chip of ``peak`` FLOP/s."""
    return model_flops(recipe)["total"] / seconds / peak


# --- the step ----------------------------------------------------------------------

def bf16_target_logp(x: Any, unembed: Any, targets: Any) -> Any:
    """Return each target's log-probability, the logits kept in bfloat16.

    The logits ``x @ unembed`` stay in the compute dtype (two bytes a word
    of the vocabulary, where the chapter's loss writes four); only the
    log-sum-exp over the vocabulary is accumulated in float32, which is where
    rounding would hurt. The target's logit is read from the bfloat16 logits.
    """
    import jax
    import jax.numpy as jnp

    logits = x @ unembed
    lse = jax.nn.logsumexp(logits.astype(jnp.float32), axis=-1, keepdims=True)
    picked = jnp.take_along_axis(logits, targets[..., None], axis=-1)
    return picked.astype(jnp.float32) - lse


def adam_in(dtype: Any, learning_rate: float, b1: float = 0.9, b2: float = 0.999,
            eps: float = 1e-8) -> Any:
    """Return Adam keeping both of its moments in ``dtype``.

    (``optax.adam(mu_dtype=...)`` keeps the second in the parameters' dtype.)
    Each update is computed in float32 from the stored moments; only what is
    kept between steps is rounded to ``dtype``. The same rule as
    ``optax.adam``: ``m / (sqrt(v) + eps)`` with both moments bias-corrected.
    """
    import jax
    import jax.numpy as jnp
    import optax

    def init(params: Any) -> Any:
        zeros = jax.tree.map(lambda p: jnp.zeros(p.shape, dtype), params)
        return {"count": jnp.zeros((), jnp.int32), "mu": zeros, "nu": zeros}

    def update(grads: Any, state: Any, params: Any = None) -> tuple[Any, Any]:
        count = state["count"] + 1
        f32 = lambda a: a.astype(jnp.float32)  # noqa: E731
        mu = jax.tree.map(lambda m, g: b1 * f32(m) + (1 - b1) * f32(g), state["mu"],
                          grads)
        nu = jax.tree.map(lambda v, g: b2 * f32(v) + (1 - b2) * jnp.square(f32(g)),
                          state["nu"], grads)
        c1 = 1 - b1 ** count.astype(jnp.float32)
        c2 = 1 - b2 ** count.astype(jnp.float32)
        updates = jax.tree.map(
            lambda m, v: -learning_rate * (m / c1) / (jnp.sqrt(v / c2) + eps), mu, nu)
        cast = lambda t: jax.tree.map(lambda a: a.astype(dtype), t)  # noqa: E731
        return updates, {"count": count, "mu": cast(mu), "nu": cast(nu)}

    return optax.GradientTransformation(init, update)


def _dtype(name: str) -> Any:
    import jax.numpy as jnp

    if name not in ("float32", "bfloat16"):
        raise ValueError(f"a dtype of the step is 'float32' or 'bfloat16', "
                         f"not {name!r}")
    return jnp.dtype(name)


def make_fast_step(recipe: Recipe) -> tuple[Callable, Callable]:
    """Return ``(init_state(key), step(state, inputs, targets) -> (state, loss))``.

    The model is :mod:`jaxcourse.transformer`'s, in bfloat16 inside the step
    with float32 weights stored; the recipe says how its attention, loss,
    optimizer and remat run. The optimizer's update runs in a scope of its
    own (``optimizer``), so that a profile can tell it apart.
    """
    import jax
    import jax.numpy as jnp
    import optax

    from jaxcourse import transformer
    from jaxcourse.transformer.model import PLAIN

    cfg = recipe.config()
    moments, grads_dtype = _dtype(recipe.moments), _dtype(recipe.grads)
    hooks = (PLAIN._replace(target_logp=bf16_target_logp)
             if recipe.logits == "bfloat16" else PLAIN)
    if recipe.logits not in ("float32", "bfloat16"):
        raise ValueError(f"logits are 'float32' or 'bfloat16', not {recipe.logits!r}")
    optimizer = (optax.adam(recipe.learning_rate) if moments == jnp.float32
                 else adam_in(moments, recipe.learning_rate))

    def init_state(key: jax.Array) -> dict[str, Any]:
        params = transformer.init_params(key, cfg, jnp.float32)
        return {"params": params, "opt": optimizer.init(params)}

    def loss_of(weights: Any, inputs: jax.Array, targets: jax.Array) -> jax.Array:
        return transformer.loss(weights, inputs, targets, cfg, hooks, recipe.remat,
                                chunk=recipe.loss_chunk)

    def step(state: dict[str, Any], inputs: jax.Array, targets: jax.Array):
        params = state["params"]
        if grads_dtype == jnp.float32:
            # The chapter's step: cast inside the loss, float32 gradients.
            value, grads = jax.value_and_grad(
                lambda p: loss_of(jax.tree.map(lambda w: w.astype(jnp.bfloat16), p),
                                  inputs, targets))(params)
        else:
            # The gradient of the bfloat16 copy itself: two bytes a weight.
            weights = jax.tree.map(lambda w: w.astype(jnp.bfloat16), params)
            value, grads = jax.value_and_grad(loss_of)(weights, inputs, targets)
        with jax.named_scope("optimizer"):
            updates, opt = optimizer.update(grads, state["opt"], params)
            params = jax.tree.map(lambda p, u: p + u.astype(p.dtype), params, updates)
        return {"params": params, "opt": opt}, value

    return init_state, step


# --- measuring ---------------------------------------------------------------------

def _tokens(recipe: Recipe, count: int) -> Any:
    """Seeded token batches from a Zipf law: the same for every recipe of a shape."""
    import numpy as np

    rng = np.random.default_rng(0)
    p = 1.0 / np.arange(1, recipe.vocab + 1, dtype=np.float64)
    return rng.choice(recipe.vocab, size=(count, recipe.batch, recipe.seq + 1),
                      p=p / p.sum()).astype(np.int32)


def _short(op_name: str) -> str:
    """Return an ``op_name`` without its outer ``jit(...)`` (stored, so shorter)."""
    return op_name.split("/", 1)[1][:200] if "/" in op_name else op_name[:200]


def measure_recipe(recipe: Recipe, steps: int = 8, profiled: int = 3) -> dict[str, Any]:
    """Compile, run, time and profile one recipe on the default device.

    Returns the compiler's memory (or its refusal, in its own words), the
    compile time, the step times and their median (the first two steps
    left out), the losses, and the profile of ``profiled`` more steps: each
    operation's time and where the compiled program says it belongs.
    """
    import jax

    from jaxcourse.scaling import compiled_memory
    from jaxcourse.step_profile import instructions, parts, trace_ops

    init_state, step = make_fast_step(recipe)
    fn = jax.jit(step, donate_argnums=0)
    shapes = jax.eval_shape(init_state, jax.random.key(0))
    tokens = jax.ShapeDtypeStruct((recipe.batch, recipe.seq), "int32")
    started = time.perf_counter()
    try:
        compiled = fn.lower(shapes, tokens, tokens).compile(
            compiler_options=dict(recipe.options) or None)
    except Exception as error:  # the compiler's refusal is a result: keep its words
        return {"refused": str(error).strip().splitlines()[0][:600]}
    row: dict[str, Any] = {"compile_seconds": time.perf_counter() - started,
                           "compiled": compiled_memory(compiled)}
    state = jax.jit(init_state)(jax.random.key(0))
    data = _tokens(recipe, steps + profiled)
    batches = [(jax.device_put(b[:, :-1]), jax.device_put(b[:, 1:])) for b in data]
    losses, times = [], []
    for inputs, targets in batches[:steps]:
        jax.block_until_ready((inputs, targets))
        t0 = time.perf_counter()
        state, value = compiled(state, inputs, targets)
        losses.append(float(value))            # waits for the step
        times.append(time.perf_counter() - t0)
    row.update(losses=losses, step_times=times,
               step_seconds=statistics.median(times[2:] if len(times) > 2 else times))
    program = instructions(compiled.as_text())
    box = [state]

    def run() -> None:
        for inputs, targets in batches[steps:]:
            box[0], value = compiled(box[0], inputs, targets)
        jax.block_until_ready(box[0])

    started = time.perf_counter()
    ops = trace_ops(run, program)
    row["profiled_seconds"] = (time.perf_counter() - started) / profiled
    row["profiled_steps"] = profiled
    row["parts"] = parts(ops, program, profiled)
    # Each operation that took at least 1/2,000 of the time, with what the
    # program says of it (the parts can be recounted from the stored file);
    # the many tiny ones are only in the parts' sums.
    total = sum(ns for ns, _ in ops.values()) or 1
    kept = {name: row for name, row in ops.items() if row[0] >= total / 2000}
    row["ops"] = {name: [ns, count, program.get(name, {}).get("opcode", ""),
                         _short(program.get(name, {}).get("op_name", ""))]
                  for name, (ns, count) in sorted(kept.items(),
                                                  key=lambda kv: -kv[1][0])}
    row["small_ops"] = parts({k: v for k, v in ops.items() if k not in kept}, program,
                             profiled)
    return row


def run_parts(row: dict[str, Any]) -> dict[str, float]:
    """Return a stored run's seconds per step by part, recounted from its operations.

    The operations kept in the file (:func:`measure_recipe`'s ``ops``) are
    sorted again by today's :func:`jaxcourse.step_profile.part_of`; the many
    tiny ones, stored only as sums per part (``small_ops``), are added.
    """
    from jaxcourse.step_profile import PARTS, part_of

    seconds = {part: row["small_ops"][part] for part in PARTS}
    for name, (ns, _count, opcode, op_name) in row["ops"].items():
        seconds[part_of(name, opcode, op_name)] += ns / 1e9 / row["profiled_steps"]
    return seconds


def refusal_bytes(refused: str) -> tuple[float, float]:
    """Return the bytes a refused compile needed and the bytes the chip has.

    From libtpu's words ("... HLO temporaries (16.46G) exceeds available HBM
    (15.75G)", in GiB).
    """
    found = re.search(r"\(([\d.]+)G\) exceeds available HBM \(([\d.]+)G\)", refused)
    if found is None:
        raise ValueError(f"not a refusal for memory: {refused!r}")
    return float(found.group(1)) * 2**30, float(found.group(2)) * 2**30


def scope_seconds(row: dict[str, Any], scope: str) -> float:
    """Return a stored run's seconds per step in the operations of one named scope.

    The operations kept in the file whose ``op_name`` holds ``/scope/`` (e.g.
    ``"scores"``, attention's own scope inside ``attention``).
    """
    ns = sum(ns for ns, _count, _opcode, op_name in row["ops"].values()
             if f"/{scope}/" in op_name)
    return ns / 1e9 / row["profiled_steps"]


def moved(before: dict[str, Any], after: dict[str, Any], most: int = 2) -> str:
    """Say which parts of the profile moved most from one run to the next.

    In microseconds per token, so that steps of different sizes compare:
    e.g. ``"attention -12.0, vocab +0.4 µs/token"``.
    """
    def per_token(row: dict[str, Any]) -> dict[str, float]:
        tokens = Recipe.from_dict(row["recipe"]).tokens
        return {part: seconds / tokens * 1e6 for part, seconds in row["parts"].items()}

    a, b = per_token(before), per_token(after)
    changes = sorted(((b[part] - a[part], part) for part in a),
                     key=lambda change: -abs(change[0]))
    shown = ", ".join(f"{part} {delta:+.1f}" for delta, part in changes[:most])
    return f"{shown} µs/token"


def kernel_equality(quick: bool = False) -> dict[str, Any]:
    """Compare every attention form with the plain one on the default device.

    Random queries, keys and values of the fast step's attention (float32;
    on a CPU, a small shape), the outputs and the gradients of a weighted
    sum of them: each form's largest error, at the device's default
    precision, relative to the largest value of the plain form computed at
    precision ``"highest"`` (on a TPU the default multiplies float32 in
    bfloat16 passes: the plain form's own row shows what that alone costs).
    """
    import jax
    import jax.numpy as jnp

    from jaxcourse.transformer.attention_forms import ATTENTION_FORMS

    b, t, heads, kv, h = (1, 256, 4, 2, 64) if quick else (2, 2048, 16, 4, 128)
    keys = jax.random.split(jax.random.key(7), 4)
    q = jax.random.normal(keys[0], (b, t, heads, h), jnp.float32)
    k = jax.random.normal(keys[1], (b, t, kv, h), jnp.float32)
    v = jax.random.normal(keys[2], (b, t, kv, h), jnp.float32)
    w = jax.random.normal(keys[3], (b, t, heads * h), jnp.float32)

    def value_and_grads(form: str) -> Any:
        block = 128 if quick and form == "splash" else 0
        f = lambda q, k, v: jnp.sum(ATTENTION_FORMS[form](q, k, v, block) * w)  # noqa: E731
        out = jax.jit(lambda q, k, v: ATTENTION_FORMS[form](q, k, v, block))(q, k, v)
        return out, jax.jit(jax.grad(f, argnums=(0, 1, 2)))(q, k, v)

    with jax.default_matmul_precision("highest"):
        ref_out, ref_grads = value_and_grads("plain")
    found = {"shape": {"batch": b, "seq": t, "heads": heads, "kv_heads": kv, "h": h},
             "reference": "the plain form at matmul precision 'highest'; every form "
                          "at the device's default"}
    for form in ATTENTION_FORMS:
        out, grads = value_and_grads(form)
        rel = lambda a, r: float(jnp.max(jnp.abs(a - r)) / jnp.max(jnp.abs(r)))  # noqa: E731
        found[form] = {"output": rel(out, ref_out),
                       "grads": max(rel(g, r) for g, r in zip(grads, ref_grads,
                                                               strict=True))}
    return found


def load_ladder(path: Path = STORED) -> dict[str, Any]:
    """Return a stored ladder (``measure_ladder``'s file; the v5e's by default)."""
    return json.loads(Path(path).read_text(encoding="utf-8"))
