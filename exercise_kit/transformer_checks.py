"""What the transformer chapter's checks are made of: configs, random calls, extracts.

The checking side of :mod:`solutions.transformer`, which registers the
exercises; this module holds none of their answers, so that a class release
can ship it (the exercise notebook imports its helpers from here). Every
exercise of the chapter is a formula or a rule on plain numbers: a
:class:`jaxcourse.transformer.Config`, a precision scheme, a mesh size. None
needs a device; each is tried on the cases shown and on at least 24 random
calls (:func:`jaxcourse.exercises.random_calls`), keyed by the call, so that
an answer fitted to the shown cases fails on a call it can name.

What a choice is compared as: :func:`choice_number` keeps "none fits"
(``None``) as None, compared by name; :func:`spec_table` keeps a dict of
``PartitionSpec`` as specs, compared by their axes' names;
:func:`mesh_choice` keeps a mesh as the pair it is; :func:`bytes_row` turns
a dict of bytes per parameter into one row.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

from jaxcourse.exercises import random_calls
from jaxcourse.exercises.checking.observation import Choice, Spec, choice
from jaxcourse.exercises.checking.observation import spec as as_spec
from jaxcourse.transformer import Config, Precision

#: An input builder: ``inputs(rng)`` returns the arguments of one case.
Inputs = Callable[[np.random.Generator], tuple]

#: The block's weights, stacked along a leading ``layers`` axis, in the order
#: a spec table lists them (the names of :func:`jaxcourse.transformer.init_params`).
WEIGHTS = ("wq", "wk", "wv", "wo", "w_gate", "w_up", "w_down", "attn_norm",
           "mlp_norm")
#: Each weight's rank (the stacked ``layers`` axis first).
RANKS = {name: 2 if name.endswith("norm") else 3 for name in WEIGHTS}
#: The keys of a scheme's bytes per parameter, in a row's order.
BYTE_PARTS = ("weights", "master", "grads", "adam", "total", "stored")
#: The remat policies of the activation exercise (the library's names).
POLICIES = ("full", "names", "dots")
#: The dtypes a random precision scheme draws from.
DTYPES = (jnp.float32, jnp.bfloat16, jnp.float16)

#: Said of the random cases: what is compared, and that the case is named.
RANDOM = "the first wrong one is named by its call"


def show_config(cfg: Config) -> str:
    """Say a config as the code that makes it."""
    return (f"Config(vocab={cfg.vocab}, d_model={cfg.d_model}, layers={cfg.layers}, "
            f"heads={cfg.heads}, kv_heads={cfg.kv_heads}, hidden={cfg.hidden})")


def random_config(rng: np.random.Generator, small: bool = False) -> Config:
    """Draw a LLaMA-shaped config: grouped-query heads, a SwiGLU width near 8/3 d.

    ``small`` keeps it small enough to trace (the activation check's
    agreement test measures it).
    """
    heads = int(rng.choice((4, 8) if small else (4, 8, 12, 16, 32, 48, 64)))
    kv_heads = int(rng.choice([k for k in (1, 2, 4, 8, 16) if heads % k == 0]))
    head_dim = int(rng.choice((4, 8) if small else (64, 128)))
    d = heads * head_dim
    hidden = int(round(d * rng.uniform(2.5, 4.0) / 16)) * 16
    vocab = int(rng.integers(16, 64)) if small else int(rng.integers(1, 257)) * 1000
    layers = int(rng.integers(1, 4)) if small else int(rng.integers(2, 97))
    return Config(vocab=vocab, d_model=d, layers=layers, heads=heads,
                  kv_heads=kv_heads, hidden=hidden)


def numbers(*args: Any) -> Inputs:
    """Build inputs: always these arguments (a case of plain numbers)."""
    return lambda rng: args


# --------------------------------------------------------------------------
# Extracts: what an answer is compared as
# --------------------------------------------------------------------------


def choice_number(out: Any) -> np.ndarray | Choice:
    """Extract: a whole number, or ``None`` (nothing fits) as a choice.

    An integral float (``8.0``) counts as its integer; a fraction does not.
    """
    if out is None:
        return choice(None)
    value = float(out)
    if value != int(value):
        raise ValueError(f"{out!r} is not a whole number")
    return np.array(int(value), np.int64)


def bytes_row(out: Any) -> np.ndarray:
    """Extract: a dict of bytes per parameter as a row, in :data:`BYTE_PARTS`' order."""
    if not isinstance(out, dict):
        raise TypeError(f"return a dict with the keys {list(BYTE_PARTS)}, not a "
                        f"{type(out).__name__}")
    missing = [key for key in BYTE_PARTS if key not in out]
    if missing:
        raise KeyError(f"the dict lacks {missing}; it needs {list(BYTE_PARTS)}")
    return np.array([float(out[key]) for key in BYTE_PARTS], np.float64)


def spec_table(out: Any) -> dict[str, Spec]:
    """Extract: a dict of specs, each compared as a spec, by its axes' names.

    Each spec is padded with ``None`` to 3 dimensions (``P()`` and
    ``P(None, None, None)`` mean the same; ``("model",)`` is ``"model"``), and
    compared dimension by dimension
    (:class:`~jaxcourse.exercises.checking.observation.Spec`).
    """
    if not isinstance(out, dict):
        raise TypeError(f"return a dict of PartitionSpecs keyed by {list(WEIGHTS)}, "
                        f"not a {type(out).__name__}")
    missing = [name for name in WEIGHTS if name not in out]
    if missing:
        raise KeyError(f"no spec for {missing}; give one for each of {list(WEIGHTS)}")
    rows = {}
    for name in WEIGHTS:
        spec = out[name]
        if not isinstance(spec, P):
            raise TypeError(f"the spec of {name!r} must be a PartitionSpec, not a "
                            f"{type(spec).__name__}")
        if len(spec) > RANKS[name]:
            raise ValueError(f"{spec} has {len(spec)} entries for {name!r}, an array "
                             f"of rank {RANKS[name]} (layers first)")
        rows[name] = as_spec(spec, 3)
    return rows


# --------------------------------------------------------------------------
# Random calls, one builder per exercise
# --------------------------------------------------------------------------


def count_calls(count: int = 24) -> Inputs:
    """Build inputs: random configs, tied and untied in turn (count_params)."""
    def make(rng: np.random.Generator, k: int) -> tuple:
        return random_config(rng), bool(k % 2)

    def show(cfg: Config, tied: bool) -> str:
        return f"{show_config(cfg)}, tied={tied}"

    return random_calls("count_params", make, show, count)


def _dtype_name(dtype: Any) -> str:
    return jnp.dtype(dtype).name


def show_precision(p: Precision) -> str:
    """Say a precision scheme as the code that makes it."""
    return (f"Precision({p.name!r}, jnp.{_dtype_name(p.compute)}, "
            f"jnp.{_dtype_name(p.store)}, jnp.{_dtype_name(p.moments)})")


def precision_calls() -> Inputs:
    """Build inputs: every scheme of three dtypes (compute, store, moments): 27."""
    schemes = [Precision("scheme", c, s, m) for c in DTYPES for s in DTYPES
               for m in DTYPES]

    def make(rng: np.random.Generator, k: int) -> tuple:
        return (schemes[k],)

    return random_calls("bytes_per_param", make, show_precision, len(schemes))


def activation_calls(count: int = 24) -> Inputs:
    """Build inputs: random configs, the three policies and two precisions in turn."""
    def make(rng: np.random.Generator, k: int) -> tuple:
        return (random_config(rng), POLICIES[k % 3],
                ("float32", "mixed")[k // 3 % 2])

    def show(cfg: Config, remat: str, precision: str) -> str:
        return f"{show_config(cfg)}, {remat!r}, {precision!r}"

    return random_calls("activation_bytes_per_token", make, show, count)


def flops_calls(count: int = 24) -> Inputs:
    """Build inputs: random configs and sequence lengths (flops_per_token)."""
    def make(rng: np.random.Generator, _: int) -> tuple:
        return random_config(rng), int(2 ** rng.integers(8, 16))

    def show(cfg: Config, seq: int) -> str:
        return f"{show_config(cfg)}, seq={seq}"

    return random_calls("flops_per_token", make, show, count)


def _divisors(n: int) -> list[int]:
    return [m for m in range(1, n + 1) if n % m == 0]


def micro_calls(count: int = 24) -> Inputs:
    """Build inputs: batches, activations and state, with budgets at the edges.

    The cases take turns: a budget exactly at what some number of
    micro-batches needs ("at most" includes it), between two of them, below
    what even one sequence per micro-batch needs (``None``), or below the
    state alone.
    """
    def make(rng: np.random.Generator, k: int) -> tuple:
        batch = int(rng.choice((6, 8, 12, 16, 24, 32, 48, 64, 96, 128)))
        seq = int(2 ** rng.integers(9, 14))
        per_token = float(int(rng.integers(8, 400)) * 1024)
        state = float(int(rng.integers(1, 200)) * 2 ** 27)
        counts = _divisors(batch)  # more micro-batches: fewer bytes
        needs = [state + batch // m * seq * per_token for m in counts]
        i = int(rng.integers(len(counts)))
        kind = k % 4
        if kind == 0:
            budget = needs[i]
        elif kind == 1:  # between what m needs and what the next fewer needs
            budget = (needs[i] + needs[max(i - 1, 0)]) / 2
        elif kind == 2:
            budget = needs[-1] * rng.uniform(0.9, 0.999)
        else:
            budget = state * rng.uniform(0.5, 0.99)
        return batch, seq, per_token, state, float(int(budget))

    def show(batch, seq, per_token, state, budget) -> str:
        return (f"{batch}, {seq}, activation_bytes={per_token:.0f}, "
                f"state_bytes={state:.0f}, budget_bytes={budget:.0f}")

    return random_calls("micro_batches", make, show, count)


def specs_calls(count: int = 24) -> Inputs:
    """Build inputs: random configs and "model" sizes, some not dividing the heads.

    The sizes take turns so that every rule's branch is met: the query and
    key/value heads both split, only the queries (fewer key/value heads than
    devices), nothing of attention, and an MLP width that does not split.
    """
    def make(rng: np.random.Generator, k: int) -> tuple:
        model = int(rng.choice((2, 4, 8, 16)))
        kind = k % 4
        if kind == 0:    # every head splits
            kv = model * int(rng.choice((1, 2)))
            heads = kv * int(rng.choice((1, 2, 4)))
        elif kind == 1:  # the queries split, the key/value heads do not
            model = max(model, 4)
            kv = int(rng.choice([n for n in (1, 2) if n < model]))
            heads = model * int(rng.choice((1, 2, 4)))
        elif kind == 2:  # the query heads do not split either
            heads = model * int(rng.choice((1, 2))) + model // 2
            kv = int(rng.choice((1, heads)))
        else:            # anything, often an odd MLP width
            heads = int(rng.choice((6, 8, 12, 16, 32)))
            kv = int(rng.choice([n for n in (1, 2, 3, 4, 8) if heads % n == 0]))
        head_dim = int(rng.choice((16, 32, 64)))
        d = heads * head_dim
        hidden = d * 3 + (model // 2 if kind == 3 and k % 8 == 3 else 0)
        cfg = Config(vocab=1000, d_model=d, layers=int(rng.integers(1, 33)),
                     heads=heads, kv_heads=kv, hidden=hidden)
        return cfg, model

    def show(cfg: Config, model: int) -> str:
        return f"{show_config(cfg)}, model={model}"

    return random_calls("tp_specs", make, show, count)


def bubble_calls(count: int = 24) -> Inputs:
    """Build inputs: stages and bubbles in whole percent, half of them exactly met.

    In every other case the percentage is exactly the bubble of some number
    of micro-batches (``100 (p - 1) / (m + p - 1)`` whole), where "at most"
    must include it. Among the others, one stage (no bubble at all) and a
    bubble of 100 % take turns: either way one micro-batch is enough.
    """
    def make(rng: np.random.Generator, k: int) -> tuple:
        stages = int(rng.choice((2, 3, 4, 5, 6, 8, 11, 16, 21, 26)))
        if k % 6 == 1:
            return 1, int(rng.integers(1, 100))
        if k % 6 == 3:
            return stages, 100
        if k % 2 == 0:
            exact = [(100 * (stages - 1)) // (m + stages - 1)
                     for m in range(1, 400)
                     if (100 * (stages - 1)) % (m + stages - 1) == 0]
            exact = [p for p in exact if 0 < p < 100]
            if exact:
                return stages, int(rng.choice(exact))
        return stages, int(rng.integers(2, 60))

    def show(stages: int, percent: int) -> str:
        return f"{stages}, {percent}"

    return random_calls("pipeline_micro_batches", make, show, count)


def zero_calls(count: int = 24) -> Inputs:
    """Build inputs: random configs, ZeRO stages, device counts and schemes."""
    def make(rng: np.random.Generator, k: int) -> tuple:
        return (random_config(rng), k % 3 + 1, int(rng.choice((2, 4, 8, 16, 64, 256))),
                ("mixed", "float32", "bfloat16")[k // 3 % 3])

    def show(cfg: Config, stage: int, devices: int, precision: str) -> str:
        return f"{show_config(cfg)}, {stage}, {devices}, {precision!r}"

    return random_calls("zero_bytes_per_device", make, show, count)


# --------------------------------------------------------------------------
# What the blocks keep: measured, for the notebook and the tests
# --------------------------------------------------------------------------


def block_residuals(cfg: Config, remat: str, precision: str = "float32",
                    batch: int = 2, seq: int = 8) -> list[tuple[str, int]]:
    """Return the residuals the blocks' ``scan`` keeps for the backward pass.

    JAX's list of saved residuals (:func:`jaxcourse.scaling.saved_residuals`)
    of the chapter's loss under ``remat`` and ``precision``, reduced to what
    the ``scan`` over the blocks stacks: ``(type, count)`` of each residual
    whose first dimension is the layers axis. (The embedding, the final norm
    and the loss keep more, outside the blocks.) ``batch`` must differ from
    ``cfg.layers``, so the layers axis cannot be mistaken for the batch.
    """
    import jax

    from jaxcourse.scaling import saved_residuals
    from jaxcourse.transformer import PRECISIONS, init_params, loss

    if batch == cfg.layers:
        raise ValueError("take a batch that differs from the number of layers")
    compute = PRECISIONS[precision].compute
    params = init_params(jax.random.key(0), cfg, PRECISIONS[precision].store)
    tokens = np.zeros((batch, seq), np.int32)
    found = saved_residuals(
        lambda p: loss(jax.tree.map(lambda w: w.astype(compute), p), tokens, tokens,
                       cfg, remat=remat), params)
    stacked = f"[{cfg.layers},{batch},{seq},"
    return [(kind, count) for kind, origin, count in found
            if stacked in kind and "scan" in origin]


# --------------------------------------------------------------------------
# pick_mesh: a cluster's mesh, as numbers
# --------------------------------------------------------------------------

#: The GPUs of the mesh exercise (nodes of 8 behind NVSwitch, InfiniBand between).
GPUS = ("H100 SXM", "A100 SXM 80GB")


def mesh_choice(out: Any) -> Choice:
    """Extract: ``(fsdp, tp)``, or ``None`` (nothing fits), compared as it reads."""
    if out is None:
        return choice(None)
    fsdp, tp = out
    return choice((int(fsdp), int(tp)))


def _critical(cfg: Config, hw: Any, chips: int, seq: int,
              tps: tuple[int, ...] = (1, 2, 4, 8),
              within: bool = False) -> dict[int, float]:
    """Give each ``tp``'s critical batch.

    ``within`` prices a data axis of at most a node's GPUs as if it stayed
    inside one: a slip the cases must show.
    """
    from jaxcourse import transformer

    def across(tp: int) -> bool:
        return (chips // tp if within else chips) > hw.node_chips

    return {tp: transformer.critical_batch(cfg, "FSDP + TP", hw, seq, chips // tp, tp,
                                           across_nodes=across(tp))
            for tp in tps if chips % tp == 0}


def _least_tp(critical: dict[int, float], hw: Any, chips: int,
              tokens: float) -> int | None:
    """Give the least ``tp`` (in a node) whose step is compute-bound, or ``None``."""
    for tp in sorted(critical):
        if hw.node_chips % tp == 0 and tokens / chips >= critical[tp]:
            return tp
    return None


def mesh_calls(count: int = 24) -> Inputs:
    """Build inputs: configs, GPU clusters and batches near each mesh's critical batch.

    The batch per chip is drawn from 1 to 1.3 times the critical batch of a
    random ``tp`` (so that tensor parallelism of that size, or less, makes
    the step compute-bound), or (one case in four) below every mesh's, where
    the answer is ``None``. Every other cluster has a chip count with a
    factor of 3 (6 GPUs of one node, one case in eight, or 3, 6 or 12
    nodes...): a ``tp`` that
    divides the chips but not a node's 8 GPUs would straddle nodes, and one
    case in four (where it can) puts the batch where a ``tp`` of 3 would be
    the least that is compute-bound, so that such a ``tp`` gives a wrong
    answer. Priced as the scaling book prices the network (the node's egress
    shared by the ``"data"`` axis's GPUs in it), tensor parallelism lowers
    the critical batch inside one node only: that case is the node of 6.

    Every batch is a real one: whole sequences, as many for each data group
    of the answer's mesh (of the widest mesh when the answer is ``None``), so
    that no group is handed part of a sequence. A draw that the rounding
    moves out of its case is drawn again.
    """
    from jaxcourse.scaling import HARDWARE

    def whole_sequences(chips: int, seq: int, per_chip: float, groups: int) -> float:
        # The nearest batch of whole sequences, as many for each data group.
        sequences = groups * max(1, round(per_chip * chips / seq / groups))
        return float(sequences * seq)

    def make(rng: np.random.Generator, k: int) -> tuple:
        # One node (4 or 8 GPUs), 2 nodes, and many: the "data" axis then
        # crosses nodes with 8, 4, 2 or 1 of its GPUs in each (tp 1 to 8). A
        # node of 6 (k = 6, 14, 22) is where a tp of 3 can be the least.
        counts = (((6,) if k % 8 == 6 else (24, 48, 96, 384)) if k // 2 % 2
                  else (4, 8, 16, 32, 64, 256, 1024))
        while True:
            cfg, hw = random_config(rng), HARDWARE[GPUS[k % 2]]
            chips = int(rng.choice(counts))
            seq = int(rng.choice((2048, 4096, 8192)))
            critical = _critical(cfg, hw, chips, seq)
            finite = {tp: c for tp, c in critical.items() if 0 < c < float("inf")}
            if not finite:
                continue
            three = _critical(cfg, hw, chips, seq, (3,)).get(3, 0.0)
            window = 0 < three < min(finite.get(2, 0.0), finite.get(1, 0.0))
            widest = max(t for t in critical if hw.node_chips % t == 0)
            if k % 4 == 3:
                target = None
                per_chip = min(finite.values()) * rng.uniform(0.5, 0.95)
            elif k % 4 == 2 and window:
                # Between what a tp of 3 needs and what 2 needs: 3 divides the
                # chips but not a node's 8 GPUs, so the answer is the next tp
                # that does (4), and a tp of 3, straddling nodes, is wrong.
                per_chip = min(three * rng.uniform(1.0, 1.1), (three + finite[2]) / 2)
                target = _least_tp(critical, hw, chips, per_chip * chips)
            else:
                target = int(rng.choice(list(finite)))
                per_chip = finite[target] * rng.uniform(1.0, 1.3)
            tokens = whole_sequences(chips, seq, per_chip, chips // (target or widest))
            if _least_tp(critical, hw, chips, tokens) != target:
                continue  # the rounding moved the batch to another mesh
            if k % 4 == 2 and window and tokens / chips < three:
                continue  # no longer where a tp of 3 would be compute-bound
            if k % 8 == 6 and not (window and tokens / chips >= three):
                continue  # the node of 6 is drawn for its tp of 3: keep it
            if k % 8 == 1 and _least_tp(_critical(cfg, hw, chips, seq, within=True),
                                        hw, chips, tokens) == target:
                # One case in eight is where the "data" axis leaves the node
                # though it has no more GPUs than a node (fsdp <= node_chips
                # < chips): pricing it as inside the node picks another mesh.
                continue
            return cfg, hw, chips, tokens, seq

    def show(cfg: Config, hw: Any, chips: int, tokens: float, seq: int) -> str:
        return (f"{show_config(cfg)}, HARDWARE[{hw.name!r}], {chips}, "
                f"tokens={tokens:.0f}, seq={seq}")

    return random_calls("pick_mesh", make, show, count)
