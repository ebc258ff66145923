"""Reference code for chapter 10's exercises: reading a step's profile.

Importing this module registers three exercises with :mod:`jaxcourse.exercises`,
in the chapter's order: ``bottleneck`` (the part of a profiled step that
spends the most time above its roofline), ``mfu`` (a step's model FLOPs
utilization, as MaxText counts it) and ``roofline_saving`` (the seconds an
operation saves when it moves fewer bytes, by the roofline).

Each answer is a rule or a formula on plain numbers, so no exercise needs a
device. The cases shown are the chapter's own step as measured on a TPU v5e
(:func:`jaxcourse.fast_step.load_ladder`); ``mfu`` restates
:func:`jaxcourse.fast_step.model_flops` so that the shown solution is the
reasoning, not a call, and ``tests/test_exercises_fast_step.py`` holds the
two equal. Each is checked on the cases shown and on 24 random calls, keyed
by the call (:mod:`exercise_kit.fast_step_checks`); the known wrong answers
are in :mod:`exercise_kit.fast_step_mistakes`.
"""

from __future__ import annotations

from exercise_kit import fast_step_mistakes as wrong
from exercise_kit.fast_step_checks import (
    RANDOM,
    SAVINGS,
    bottleneck_calls,
    given,
    measured_mfu,
    measured_profile,
    mfu_calls,
    part_choice,
    saving_calls,
)
from jaxcourse.exercises import Case, Exercise, Mistake, each_call, register

__all__ = ["bottleneck", "mfu", "roofline_saving"]

CHAPTER = "10_fast_step"


# --------------------------------------------------------------------------
# Reference solutions
# --------------------------------------------------------------------------


def bottleneck(parts: dict[str, float], flops: dict[str, float],
               bytes_moved: dict[str, float], peak_flops: float,
               bandwidth: float) -> str:
    """Return the part whose measured time exceeds its roofline time the most."""
    def above_roofline(part: str) -> float:
        # The least the part can take: its FLOPs at the peak, or its bytes at
        # the full bandwidth, whichever takes longer.
        roofline = max(flops[part] / peak_flops, bytes_moved[part] / bandwidth)
        return parts[part] - roofline

    # max keeps the first of equal parts: ties go to the part listed first.
    return max(parts, key=above_roofline)


def mfu(d_model: int, layers: int, heads: int, kv_heads: int, head_dim: int,
        hidden: int, vocab: int, seq: int, tokens: int, seconds: float,
        peak_flops: float) -> float:
    """Return a step's model FLOPs utilization, as MaxText counts it."""
    # The weights that multiply a matrix: per layer the queries and the output
    # projection (heads wide), the keys and values (kv_heads wide) and
    # SwiGLU's three; then the output layer. The embedding is a lookup.
    attention = 2 * d_model * (heads + kv_heads) * head_dim
    weights = layers * (attention + 3 * d_model * hidden) + d_model * vocab
    # q kᵀ and the weighted sum of values: 12 layers seq heads head_dim FLOPs
    # per token for a step, of which the causal mask leaves half to compute.
    scores = 12 * layers * seq * heads * head_dim / 2
    model_flops = (6 * weights + scores) * tokens  # 6: 2 forward, 4 backward
    return model_flops / seconds / peak_flops


def roofline_saving(flops: float, bytes_before: float, bytes_after: float,
                    peak_flops: float, bandwidth: float) -> float:
    """Return the seconds an operation saves, by the roofline, moving fewer bytes."""
    compute = flops / peak_flops  # the FLOPs stay: only the bytes change
    before = max(compute, bytes_before / bandwidth)
    after = max(compute, bytes_after / bandwidth)
    return before - after


# ---- the exercises -------------------------------------------------------

#: Where a rule's mistakes are named: on its random case, the last. On one
#: shown profile many slips name the same part; across the random calls only
#: the slip itself names every one.
ON_RANDOM = (-1,)
#: roofline_saving: the bytes saved at the bandwidth, and a roofline that
#: adds the two times, give one number (the compute time cancels): one slip,
#: two ways of writing it. Where the operation is memory-bound before and
#: after they are right; where it is compute-bound after, they overpredict.
WITHOUT_MAX = ("the time is the larger of the compute and the memory time, not "
               "the memory time alone nor their sum: where the operation is "
               "compute-bound, fewer bytes save less, or nothing")
#: roofline_saving: on an operation memory-bound before the change (the up
#: projection), FLOPs that shrink with the bytes stay under them, and give
#: the bytes saved at the bandwidth: each slip is named on the other cases.
NOT_UP = (0, 1, -1)
#: Tolerance of a float64 answer: a few roundings of a handful of products
#: and quotients, each within 2⁻⁵³; the random calls keep every saving at
#: least a tenth of its compute time away from a cancellation. No absolute
#: slack: where nothing is saved, any right order of operations subtracts
#: the same compute time from itself, exactly 0.
FLOAT64 = {"rtol": 1e-9, "atol": 0.0, "dtype": "any"}


register(
    Exercise(
        id="fast_step.bottleneck",
        title="The part of a step with the most to save",
        chapter=CHAPTER,
        reference=bottleneck,
        cases=[
            Case("chapter 7's step measured on a TPU v5e (the stored ladder's "
                 "'today'), each part's FLOPs and bytes from part_costs",
                 given(*measured_profile("today")), extract=part_choice,
                 dtype="any"),
            Case("LLaMA-3 8B's shape at half its width, 4 × 2,048 tokens, full "
                 "remat ('wide-full')", given(*measured_profile("wide-full")),
                 extract=part_choice, dtype="any"),
            Case("24 random profiles on four chips; " + RANDOM, bottleneck_calls(),
                 runner=each_call(part_choice), dtype="any"),
        ],
        hints=[
            "A part's roofline is the least time it can take: its FLOPs at the "
            "chip's peak, or its bytes at the full bandwidth. Which of the two "
            "bounds it?",
            "The chip does its FLOPs and moves its bytes at the same time: the "
            "roofline is the larger of the two times, not their sum.",
            "What a change can save on a part is its measured time minus its "
            "roofline. Take the part where that is largest; max over the parts "
            "keeps the first of equals.",
        ],
        mistakes=[
            Mistake("the longest part may already run at its roofline: compare "
                    "each part's time with what it must cost, max(flops / peak, "
                    "bytes / bandwidth)", wrong.bottleneck_longest,
                    cases=ON_RANDOM),
            Mistake("the most FLOPs is the most work, not the most time lost: "
                    "compare each part's time with its roofline",
                    wrong.bottleneck_most_flops, cases=ON_RANDOM),
            Mistake("a part's roofline counts its bytes too: a memory-bound part "
                    "takes bytes / bandwidth, longer than its FLOPs at the peak",
                    wrong.bottleneck_compute_only, cases=ON_RANDOM),
            Mistake("a part's roofline counts its FLOPs too: a compute-bound part "
                    "takes flops / peak, longer than its bytes at the bandwidth",
                    wrong.bottleneck_bandwidth_only, cases=ON_RANDOM),
            Mistake("this is the shortest part: the bottleneck is the part with "
                    "the most time above its roofline",
                    wrong.bottleneck_shortest, cases=ON_RANDOM),
            Mistake("the chip computes while it moves bytes: a roofline is the "
                    "larger of the two times, not their sum",
                    wrong.bottleneck_sum_roofline, cases=ON_RANDOM),
            Mistake("the highest roofline is what a part must cost, which no "
                    "change saves: take the most time above it",
                    wrong.bottleneck_largest_floor, cases=ON_RANDOM),
            Mistake("this part is the nearest its roofline, with the least to "
                    "save: take the one furthest above it",
                    wrong.bottleneck_nearest_floor, cases=ON_RANDOM),
        ],
    ),
    Exercise(
        id="fast_step.mfu",
        title="A step's MFU, as MaxText counts it",
        chapter=CHAPTER,
        reference=mfu,
        cases=[
            Case("chapter 7's step on a TPU v5e (the stored ladder's 'today')",
                 given(*measured_mfu("today")), **FLOAT64),
            Case("the fast step, LLaMA-3 8B's shape at half its width ('wide')",
                 given(*measured_mfu("wide")), **FLOAT64),
            Case("24 random models, batches, step times and chips; " + RANDOM,
                 mfu_calls(), runner=each_call(), **FLOAT64),
        ],
        hints=[
            "Count the weights that multiply a matrix in one token's forward "
            "pass: per layer the four attention projections (the keys and values "
            "have kv_heads heads) and SwiGLU's three, then the output layer. The "
            "embedding is a lookup.",
            "A training step costs 6 FLOPs per such weight per token: 2 forward, "
            "4 backward. Attention's scores and weighted sum add 12 · layers · "
            "seq · heads · head_dim per token for the step.",
            "With a causal mask, half of the scores are never needed: MaxText "
            "counts half of attention's term. MFU is the step's model FLOPs over "
            "its seconds, over the peak: a fraction.",
        ],
        mistakes=[
            Mistake("with a causal mask half of the scores are never needed: "
                    "MaxText counts half of attention's term",
                    wrong.mfu_whole_square),
            Mistake("this is the forward pass: a training step does 3 times its "
                    "FLOPs, 6 per weight per token", wrong.mfu_forward_only),
            Mistake("the embedding is a lookup, not a product: only the output "
                    "layer's vocab × d table costs FLOPs", wrong.mfu_with_embedding),
            Mistake("the output layer is a d × vocab product: count its weights",
                    wrong.mfu_without_output_layer),
            Mistake("attention's scores and weighted sum cost FLOPs too: 12 · "
                    "layers · seq · heads · head_dim per token, halved",
                    wrong.mfu_without_attention),
            Mistake("with grouped-query attention the keys and values have "
                    "kv_heads heads, not heads", wrong.mfu_without_gqa),
            Mistake("MFU is a fraction (0.55), not a percentage (55)",
                    wrong.mfu_in_percent),
            Mistake("the step does every token's FLOPs: multiply the FLOPs per "
                    "token by the tokens", wrong.mfu_per_token),
        ],
    ),
    Exercise(
        id="fast_step.roofline_saving",
        title="What fewer bytes save, by the roofline",
        chapter=CHAPTER,
        reference=roofline_saving,
        cases=[
            Case(text, given(*args), **FLOAT64) for text, args in SAVINGS
        ] + [
            Case("24 random operations: memory-bound throughout, memory-bound "
                 "then compute-bound, compute-bound throughout; " + RANDOM,
                 saving_calls(), runner=each_call(), **FLOAT64),
        ],
        hints=[
            "By the roofline an operation takes the larger of two times: its "
            "FLOPs at the peak, and its bytes at the bandwidth.",
            "The change moves fewer bytes and does the same FLOPs: work out the "
            "roofline time before and after.",
            "Once the bytes take less time than the FLOPs, moving fewer of them "
            "saves nothing more: an operation that is compute-bound throughout "
            "saves 0.",
        ],
        mistakes=[
            Mistake(WITHOUT_MAX, wrong.saving_without_max, cases=NOT_UP),
            Mistake(WITHOUT_MAX, wrong.saving_sum_roofline, cases=NOT_UP),
            Mistake("this is the roofline's speed-up (before / after): the "
                    "answer is the seconds saved (before - after)",
                    wrong.saving_ratio),
            Mistake("fewer bytes are not fewer FLOPs: the operation does all of "
                    "its FLOPs after the change too", wrong.saving_flops_shrink,
                    cases=NOT_UP),
            Mistake("a saving is the time before minus the time after: this is "
                    "its opposite", wrong.saving_reversed),
        ],
    ),
)
