"""The known wrong answers to chapter 10's exercises, as learners write them.

:mod:`solutions.fast_step` names each of these in a
:class:`jaxcourse.exercises.Mistake`, with the message a learner reads when
an answer gives the same output; one section per exercise, in the chapter's
order. Each takes the arguments of the exercise's reference and computes its
wrong answer from them (a slip is recognised by what it does to the inputs,
never from a list of answers seen).
"""

from __future__ import annotations

# ---- bottleneck ---------------------------------------------------------------


def _pick(parts, reading):
    """Give the part that ``reading`` ranks first (the first of equals, as ``max``)."""
    return max(parts, key=reading)


def bottleneck_longest(parts, flops, bytes_moved, peak_flops, bandwidth):
    """Pick the part with the most measured time: what it must cost ignored."""
    return _pick(parts, lambda p: parts[p])


def bottleneck_most_flops(parts, flops, bytes_moved, peak_flops, bandwidth):
    """Pick the part with the most FLOPs: the work, not the time lost doing it."""
    return _pick(parts, lambda p: flops[p])


def bottleneck_compute_only(parts, flops, bytes_moved, peak_flops, bandwidth):
    """Time above the compute floor alone: a memory-bound part looks slow."""
    return _pick(parts, lambda p: parts[p] - flops[p] / peak_flops)


def bottleneck_bandwidth_only(parts, flops, bytes_moved, peak_flops, bandwidth):
    """Time above the memory floor alone: a compute-bound part looks slow."""
    return _pick(parts, lambda p: parts[p] - bytes_moved[p] / bandwidth)


def bottleneck_shortest(parts, flops, bytes_moved, peak_flops, bandwidth):
    """Pick the part with the least measured time."""
    return min(parts, key=lambda p: parts[p])


def bottleneck_sum_roofline(parts, flops, bytes_moved, peak_flops, bandwidth):
    """Price each part by a roofline that adds the compute and the memory time."""
    return _pick(parts, lambda p: parts[p] - flops[p] / peak_flops
                 - bytes_moved[p] / bandwidth)


def bottleneck_largest_floor(parts, flops, bytes_moved, peak_flops, bandwidth):
    """Pick the part with the highest roofline: what it must cost, not what it loses."""
    return _pick(parts, lambda p: max(flops[p] / peak_flops,
                                      bytes_moved[p] / bandwidth))


def bottleneck_nearest_floor(parts, flops, bytes_moved, peak_flops, bandwidth):
    """Pick the part nearest its roofline: the least to gain, not the most."""
    return min(parts, key=lambda p: parts[p] - max(flops[p] / peak_flops,
                                                   bytes_moved[p] / bandwidth))


# ---- mfu ------------------------------------------------------------------------


def _mfu(d_model, layers, heads, kv_heads, head_dim, hidden, vocab, seq, tokens,
         seconds, peak_flops, *, per_weight=6.0, causal=0.5, kv=None,
         tables=1, attention=True):
    """MaxText's MFU with one thing changed: what the slips below depart from.

    ``per_weight``: FLOPs per weight per token (6 for a step, 2 forward);
    ``causal``: the share of attention's scores counted; ``kv``: the
    key/value heads the projections have; ``tables``: the vocab × d tables
    counted as products (1: the output layer alone, 2: the embedding too);
    ``attention``: whether attention's scores are counted at all.
    """
    kv = kv_heads if kv is None else kv
    weights = (layers * (2 * d_model * (heads + kv) * head_dim + 3 * d_model * hidden)
               + tables * d_model * vocab)
    # Attention's products cost a third of the step forward, like the weights.
    scores = 12 * layers * seq * heads * head_dim * causal * per_weight / 6
    flops = (per_weight * weights + scores * attention) * tokens
    return flops / seconds / peak_flops


def mfu_whole_square(d_model, layers, heads, kv_heads, head_dim, hidden, vocab, seq,
                     tokens, seconds, peak_flops):
    """Count the whole square of scores: the causal mask's half not taken off."""
    return _mfu(d_model, layers, heads, kv_heads, head_dim, hidden, vocab, seq,
                tokens, seconds, peak_flops, causal=1.0)


def mfu_forward_only(d_model, layers, heads, kv_heads, head_dim, hidden, vocab, seq,
                     tokens, seconds, peak_flops):
    """Count the forward pass alone: 2 FLOPs per weight, a third of attention's."""
    return _mfu(d_model, layers, heads, kv_heads, head_dim, hidden, vocab, seq,
                tokens, seconds, peak_flops, per_weight=2.0)


def mfu_with_embedding(d_model, layers, heads, kv_heads, head_dim, hidden, vocab, seq,
                       tokens, seconds, peak_flops):
    """Count the embedding's lookup as a product too: two vocab × d tables."""
    return _mfu(d_model, layers, heads, kv_heads, head_dim, hidden, vocab, seq,
                tokens, seconds, peak_flops, tables=2)


def mfu_without_output_layer(d_model, layers, heads, kv_heads, head_dim, hidden,
                             vocab, seq, tokens, seconds, peak_flops):
    """Leave the output layer out: the blocks' weights alone."""
    return _mfu(d_model, layers, heads, kv_heads, head_dim, hidden, vocab, seq,
                tokens, seconds, peak_flops, tables=0)


def mfu_without_attention(d_model, layers, heads, kv_heads, head_dim, hidden, vocab,
                          seq, tokens, seconds, peak_flops):
    """6 FLOPs per weight alone: attention's scores and weighted sum left out."""
    return _mfu(d_model, layers, heads, kv_heads, head_dim, hidden, vocab, seq,
                tokens, seconds, peak_flops, attention=False)


def mfu_without_gqa(d_model, layers, heads, kv_heads, head_dim, hidden, vocab, seq,
                    tokens, seconds, peak_flops):
    """Keys and values projected as wide as the queries: kv_heads taken as heads."""
    return _mfu(d_model, layers, heads, kv_heads, head_dim, hidden, vocab, seq,
                tokens, seconds, peak_flops, kv=heads)


def mfu_in_percent(d_model, layers, heads, kv_heads, head_dim, hidden, vocab, seq,
                   tokens, seconds, peak_flops):
    """Give the right MFU as a percentage."""
    return 100 * _mfu(d_model, layers, heads, kv_heads, head_dim, hidden, vocab, seq,
                      tokens, seconds, peak_flops)


def mfu_per_token(d_model, layers, heads, kv_heads, head_dim, hidden, vocab, seq,
                  tokens, seconds, peak_flops):
    """Divide one token's FLOPs by the step's time: the step's tokens forgotten."""
    return _mfu(d_model, layers, heads, kv_heads, head_dim, hidden, vocab, seq,
                tokens, seconds, peak_flops) / tokens


# ---- roofline_saving ------------------------------------------------------------


def saving_without_max(flops, bytes_before, bytes_after, peak_flops, bandwidth):
    """Price the bytes saved at the bandwidth, whatever bounds the operation."""
    return (bytes_before - bytes_after) / bandwidth


def saving_sum_roofline(flops, bytes_before, bytes_after, peak_flops, bandwidth):
    """Add the compute and the memory time, before and after, for a roofline."""
    compute = flops / peak_flops
    return (compute + bytes_before / bandwidth) - (compute + bytes_after / bandwidth)


def saving_ratio(flops, bytes_before, bytes_after, peak_flops, bandwidth):
    """Give the roofline's speed-up, before over after, for the seconds saved."""
    compute = flops / peak_flops
    return max(compute, bytes_before / bandwidth) / max(compute,
                                                        bytes_after / bandwidth)


def saving_flops_shrink(flops, bytes_before, bytes_after, peak_flops, bandwidth):
    """Shrink the FLOPs with the bytes, as if fewer bytes were less work."""
    after = flops * bytes_after / bytes_before
    return (max(flops / peak_flops, bytes_before / bandwidth)
            - max(after / peak_flops, bytes_after / bandwidth))


def saving_reversed(flops, bytes_before, bytes_after, peak_flops, bandwidth):
    """Take the time after minus the time before: the saving's sign turned."""
    compute = flops / peak_flops
    return max(compute, bytes_after / bandwidth) - max(compute,
                                                       bytes_before / bandwidth)
