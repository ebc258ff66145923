"""What chapter 10's checks are made of: a step's parts priced, random calls, extracts.

The checking side of :mod:`solutions.fast_step`, which registers the
exercises; this module holds none of their answers, so that a class release
can ship it (the exercise notebook imports its helpers from here). Each
exercise is a rule or a formula on plain numbers, so none needs a device:

* the cases shown are the chapter's own step, as measured on a TPU v5e and
  stored (:func:`jaxcourse.fast_step.load_ladder`): :func:`measured_profile`
  gives a run's profile beside what each part must cost
  (:func:`part_costs`), :func:`measured_mfu` a run's shape and step time,
  :data:`SAVINGS` three operations of the chapter's step whose bytes shrink;
* each exercise is also tried on 24 random calls
  (:func:`jaxcourse.exercises.random_calls`), keyed by the call, so that an
  answer fitted to the shown cases fails on a call it can name. The draws
  cover every boundary of the rule, and keep away from near-ties: a
  slightly different but right order of operations never changes an answer.

:func:`part_choice` compares a part's name as a name, never as a number.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from jaxcourse.exercises import random_calls
from jaxcourse.exercises.checking.observation import Choice, choice
from jaxcourse.fast_step import TODAY, WIDE, Recipe, load_ladder, model_flops
from jaxcourse.scaling import HARDWARE
from jaxcourse.step_profile import PARTS
from jaxcourse.transformer import param_parts

__all__ = ["CHIPS", "ITEMSIZE", "RANDOM", "SAVINGS", "V5E", "bottleneck_calls",
           "given", "measured_mfu", "measured_profile", "mfu_calls", "part_choice",
           "part_costs", "saving_calls", "show_parts"]

#: An input builder: ``inputs(rng)`` returns the arguments of one case.
Inputs = Callable[[np.random.Generator], tuple]

#: The chip the ladder was measured on.
V5E = HARDWARE["TPU v5e"]
#: The chips a random call is priced on: their peak FLOP/s and HBM bandwidth.
CHIPS = tuple(HARDWARE)
#: Bytes per number of the dtypes a recipe names.
ITEMSIZE = {"float32": 4, "bfloat16": 2}

#: Said of the random cases: what is compared, and that the case is named.
RANDOM = "the first wrong one is named by its call"


def given(*args: Any) -> Inputs:
    """Build inputs: always these arguments (a case of plain numbers)."""
    return lambda rng: args


def _rounded(value: float, digits: int = 4) -> float:
    """``value`` to ``digits`` significant digits: the number a call's label shows."""
    return float(f"{value:.{digits}g}")


# --------------------------------------------------------------------------
# The shown cases: the stored ladder, and what its parts must cost
# --------------------------------------------------------------------------


def part_costs(recipe: Recipe) -> tuple[dict[str, float], dict[str, float]]:
    """Return each part's FLOPs and HBM bytes per step: what the model asks of it.

    The FLOPs are MaxText's model FLOPs (:func:`jaxcourse.fast_step.model_flops`)
    split by the part of :data:`jaxcourse.step_profile.PARTS` that does them:
    attention (its four projections, and its scores and weighted sum with the
    causal half left out), the MLP (SwiGLU's three matrices), the vocabulary
    (the output layer). Remat's second forward pass is not counted: it is
    work that a change of policy can save.

    The bytes are the fewest each part can move: those three parts read their
    weights (stored float32) and write their gradients (in the recipe's
    ``grads`` dtype) once, and the vocabulary writes its logits and reads them
    back once (in the recipe's ``logits`` dtype); the optimizer, textbook Adam,
    reads every parameter's weight, gradient and two moments and writes the
    weight and the moments (its few FLOPs per parameter are left out). The
    copies and the rest (``"other"``) are given no floor: this roofline prices
    only the products and the optimizer's state.
    """
    cfg, tokens = recipe.config(), recipe.tokens
    counts = param_parts(cfg)
    grads, moments = ITEMSIZE[recipe.grads], ITEMSIZE[recipe.moments]
    weights = {"attention": counts["attention"], "mlp": counts["mlp"],
               "vocab": counts["unembed"]}
    flops = dict.fromkeys(PARTS, 0.0)
    moved = dict.fromkeys(PARTS, 0.0)
    for part, count in weights.items():
        flops[part] = 6.0 * count * tokens  # 2 forward, 4 backward per weight
        moved[part] = float(count * (4 + grads))
    flops["attention"] += model_flops(recipe)["attention"]
    moved["vocab"] += 2.0 * tokens * cfg.vocab * ITEMSIZE[recipe.logits]
    moved["optimizer"] = float(counts["total"] * (2 * (4 + 2 * moments) + grads))
    return flops, moved


@functools.cache
def _runs() -> dict[str, Any]:
    return load_ladder()["runs"]


def measured_profile(key: str) -> tuple:
    """Return ``bottleneck``'s arguments for the stored run ``key``.

    Its measured seconds per step by part, each part's FLOPs and bytes
    (:func:`part_costs` of its recipe), and the v5e's peak and bandwidth.
    """
    row = _runs()[key]
    flops, moved = part_costs(Recipe.from_dict(row["recipe"]))
    return ({part: row["parts"][part] for part in PARTS}, flops, moved, V5E.flops,
            V5E.hbm_bandwidth)


def measured_mfu(key: str) -> tuple:
    """Return ``mfu``'s arguments for the stored run ``key``: shape and step time."""
    row = _runs()[key]
    recipe = Recipe.from_dict(row["recipe"])
    return (recipe.d_model, recipe.layers, recipe.heads, recipe.kv_heads,
            recipe.config().head_dim, recipe.hidden, recipe.vocab, recipe.seq,
            recipe.tokens, row["step_seconds"], V5E.flops)


def _savings() -> dict[str, tuple]:
    """Three operations of the chapter's steps whose bytes shrink, on a v5e.

    Each is ``(flops, bytes_before, bytes_after, peak, bandwidth)``.
    """
    t, v, d = TODAY.tokens, TODAY.vocab, TODAY.d_model
    logits = t * v
    # The log-softmax reads the logits and writes as many (about 5 FLOPs a
    # logit: a max, a subtraction, an exponential, a sum and a log).
    softmax = (5.0 * logits, 2.0 * logits * 4, 2.0 * logits * 2)
    # The output layer's product reads x and the weights in bfloat16 and
    # writes the logits: float32 before, bfloat16 after.
    common = 2.0 * (t * d + d * v)
    product = (2.0 * t * d * v, common + 4.0 * logits, common + 2.0 * logits)
    # The MLP's up projection of 512 tokens at the fast step's width, its
    # operands and result float32 before and bfloat16 after.
    m, k, n = 512, WIDE["d_model"], WIDE["hidden"]
    numbers = m * k + k * n + m * n
    up = (2.0 * m * k * n, 4.0 * numbers, 2.0 * numbers)
    rest = (V5E.flops, V5E.hbm_bandwidth)
    return {"softmax": (*softmax, *rest), "product": (*product, *rest),
            "up": (*up, *rest)}


_SAVED = _savings()
#: roofline_saving's shown cases: a description and the arguments of each.
SAVINGS: tuple[tuple[str, tuple], ...] = tuple(
    (text, _SAVED[key]) for key, text in (
        ("softmax", "the log-softmax of chapter 7's logits (2,048 tokens × 128,256 "
                    "words), float32 → bfloat16, on a TPU v5e"),
        ("product", "the output layer's product that writes those logits, "
                    "float32 → bfloat16 logits"),
        ("up", "the MLP's up projection of 512 tokens at d = 2,048 (7,168 wide), "
               "float32 → bfloat16 operands"),
    ))


def show_parts(parts: dict[str, float], flops: dict[str, float],
               moved: dict[str, float], peak: float, bandwidth: float) -> str:
    """Say a profile and its costs as a table, one row per part (for the notebook)."""
    rows = [f"{'part':10s} {'measured':>10s} {'FLOPs':>10s} {'bytes':>10s}"]
    rows += [f"{part:10s} {parts[part] * 1e3:8.2f} ms {flops[part]:10.3g} "
             f"{moved[part]:10.3g}" for part in parts]
    return "\n".join(rows + [f"peak {peak:.3g} FLOP/s, bandwidth {bandwidth:.3g} B/s"])


# --------------------------------------------------------------------------
# Extracts: what an answer is compared as
# --------------------------------------------------------------------------


def part_choice(out: Any) -> Choice:
    """Extract: the part named, compared by its name (one of :data:`PARTS`)."""
    return choice(out, PARTS, "PARTS")


# --------------------------------------------------------------------------
# Random calls, one builder per exercise
# --------------------------------------------------------------------------


def _show_dict(values: dict[str, float]) -> str:
    return "{" + ", ".join(f"{k!r}: {v:.4g}" for k, v in values.items()) + "}"


def _argmax(values: dict[str, float]) -> tuple[str, float]:
    """Give the key of the largest value, and its lead over the second largest."""
    ranked = sorted(values.values(), reverse=True)
    return max(values, key=values.get), ranked[0] - ranked[1]


def _clear(parts: dict[str, float], flops: dict[str, float],
           moved: dict[str, float], peak: float, bandwidth: float) -> bool:
    """Whether every reading of a profile has a clear winner.

    The right one (time above the roofline) leads by a twentieth of the step,
    so no order of operations changes it; each slip's by a millionth, so that
    it is the same for any learner who makes it.
    """
    step = sum(parts.values())
    compute = {p: flops[p] / peak for p in parts}
    memory = {p: moved[p] / bandwidth for p in parts}
    right = {p: parts[p] - max(compute[p], memory[p]) for p in parts}
    readings = [
        parts, flops, {p: -parts[p] for p in parts},
        {p: parts[p] - compute[p] for p in parts},
        {p: parts[p] - memory[p] for p in parts},
        {p: parts[p] - compute[p] - memory[p] for p in parts},
        {p: max(compute[p], memory[p]) for p in parts},
        {p: -right[p] for p in parts},
    ]
    if _argmax(right)[1] < step / 20:
        return False
    return all(_argmax(r)[1] > 1e-6 * max(abs(v) for v in r.values())
               for r in readings)


def bottleneck_calls(count: int = 24) -> Inputs:
    """Build inputs: random profiles of the six parts, on one of :data:`CHIPS`.

    Each part gets a compute floor and a memory floor (either may be the
    larger), and a measured time some way above the larger. The calls take
    turns, so that each slip meets a profile that gives it away: the longest
    part sits at its roofline, or a memory-bound part does (a compute-only
    roofline sees time to save there), or a compute-bound part does (a
    bandwidth-only roofline does), or the part with the most to save takes
    about as long to compute as to move its bytes (a roofline that adds the
    two sees nothing to save there), or the copies have no FLOPs, one part
    is measured under its roofline (the profile filed some of its work
    elsewhere) and the longest part has a low roofline. Every number has 4
    significant digits, as the label shows it; a draw without a clear answer
    is drawn again.
    """
    def make(rng: np.random.Generator, k: int) -> tuple:
        hw = HARDWARE[CHIPS[k % len(CHIPS)]]
        kind = k % 5
        while True:
            compute = {p: 10 ** rng.uniform(-4, -1.5) for p in PARTS}
            memory = {p: compute[p] * 10 ** rng.uniform(-1.5, 1.5) for p in PARTS}
            times = {p: max(compute[p], memory[p]) * (1 + rng.uniform(0.05, 1.5))
                     for p in PARTS}
            big = str(rng.choice(PARTS))
            floor = 10 * max(max(compute[p], memory[p]) for p in PARTS)
            if kind == 0:  # the longest part, at its roofline
                compute[big], memory[big] = floor * rng.uniform(0.3, 1), floor
            elif kind == 1:  # memory-bound, at its roofline
                compute[big], memory[big] = floor / 100, floor
            elif kind == 2:  # compute-bound, at its roofline
                compute[big], memory[big] = floor, floor / 100
            elif kind == 3:  # the most to save, as long to compute as to move
                compute[big], memory[big] = floor * rng.uniform(0.8, 1), floor
            else:  # no FLOPs in the copies; one part under its roofline
                compute["copies"] = 0.0
                low, slow = (str(p) for p in rng.choice(
                    [p for p in PARTS if p != "copies"], 2, replace=False))
                times[low] = max(compute[low], memory[low]) * rng.uniform(0.7, 0.95)
                # The longest part, not the one with the highest roofline.
                times[slow] = max(times.values()) * rng.uniform(1.1, 1.3)
            if kind < 3:
                times[big] = floor * (1 + rng.uniform(0.001, 0.01))
            elif kind == 3:
                times[big] = floor * (1 + rng.uniform(0.3, 0.6))
            parts = {p: _rounded(times[p]) for p in PARTS}
            flops = {p: _rounded(compute[p] * hw.flops) for p in PARTS}
            moved = {p: _rounded(memory[p] * hw.hbm_bandwidth) for p in PARTS}
            args = (parts, flops, moved, hw.flops, hw.hbm_bandwidth)
            if _clear(*args):
                return args

    def show(parts, flops, moved, peak, bandwidth) -> str:
        return (f"{_show_dict(parts)}, {_show_dict(flops)}, {_show_dict(moved)}, "
                f"{peak:.4g}, {bandwidth:.4g}")

    return random_calls("bottleneck", make, show, count)


def mfu_calls(count: int = 24) -> Inputs:
    """Build inputs: random LLaMA-shaped models, batches, step times and chips.

    Grouped-query heads throughout (fewer key/value heads than query heads
    in every call); in one call of four the heads are not ``d_model`` wide
    together (as Gemma's are not), so that ``head_dim`` must be read, not
    worked out. The step time puts the MFU between 5 and 70 %.
    """
    def make(rng: np.random.Generator, k: int) -> tuple:
        hw = HARDWARE[CHIPS[k % len(CHIPS)]]
        heads = int(rng.choice((8, 12, 16, 32, 48, 64)))
        kv_heads = int(rng.choice([n for n in (1, 2, 4, 8) if heads % n == 0
                                   and n < heads]))
        head_dim = int(rng.choice((64, 128, 256)))
        d_model = heads * head_dim
        if k % 4 == 3:  # the heads together narrower or wider than the model
            d_model = int(d_model * rng.choice((0.75, 1.5)))
        hidden = int(round(d_model * rng.uniform(2.5, 4.0) / 64)) * 64
        layers = int(rng.integers(2, 81))
        vocab = int(rng.integers(32, 257)) * 1000
        seq = int(2 ** rng.integers(9, 16))
        tokens = seq * int(rng.integers(1, 33))
        # MaxText's count, to put the step time where the MFU is plausible.
        weights = layers * (2 * d_model * (heads + kv_heads) * head_dim
                            + 3 * d_model * hidden) + d_model * vocab
        flops = (6 * weights + 6 * layers * seq * heads * head_dim) * tokens
        seconds = _rounded(flops / hw.flops / rng.uniform(0.05, 0.7))
        return (d_model, layers, heads, kv_heads, head_dim, hidden, vocab, seq,
                tokens, seconds, hw.flops)

    def show(*args: Any) -> str:
        return ", ".join(f"{a:.4g}" if isinstance(a, float) else str(a) for a in args)

    return random_calls("mfu", make, show, count)


def saving_calls(count: int = 24) -> Inputs:
    """Build inputs: one operation's FLOPs and bytes before and after, on a chip.

    The calls take turns between three regimes: memory-bound before and after
    (the saving is the bytes saved at the bandwidth), memory-bound before and
    compute-bound after (the saving stops at the compute floor), and
    compute-bound throughout (nothing saved). Each time is at least a tenth
    away from the compute floor, so no regime is decided by rounding. The
    bytes shrink by a half (float32 to bfloat16), a quarter (to 8 bits), a
    quarter less, or anything in between.
    """
    def make(rng: np.random.Generator, k: int) -> tuple:
        hw = HARDWARE[CHIPS[k % len(CHIPS)]]
        floor = 10 ** rng.uniform(-6, -2)  # the compute floor, in seconds
        shrink = float(rng.choice((2.0, 4.0, 4 / 3, rng.uniform(1.2, 3.0))))
        kind = k % 3
        if kind == 0:  # memory-bound before and after
            after = floor * rng.uniform(1.1, 5.0)
            before = after * shrink
        elif kind == 1:  # memory-bound before, compute-bound after
            before = floor * rng.uniform(1.1, 4.0)
            after = min(before / shrink, floor * rng.uniform(0.1, 0.9))
        else:  # compute-bound throughout
            before = floor * rng.uniform(0.05, 0.9)
            after = before / shrink
        return (_rounded(floor * hw.flops), _rounded(before * hw.hbm_bandwidth),
                _rounded(after * hw.hbm_bandwidth), hw.flops, hw.hbm_bandwidth)

    def show(*args: float) -> str:
        return ", ".join(f"{a:.4g}" for a in args)

    return random_calls("roofline_saving", make, show, count)

