"""Answers to chapter 10's exercises, as learners write them.

The topic is ``fast_step``. What checking each must give is in
``fast_step.toml``. Every exercise is a rule or a formula on plain numbers:
nothing here needs a device.
"""

from __future__ import annotations

import numpy as np

# -- exercise 1: bottleneck


def bn_longest(parts, flops, bytes_moved, peak_flops, bandwidth):  # raw time
    return max(parts, key=parts.get)


def bn_compute_roofline(parts, flops, bytes_moved, peak_flops, bandwidth):
    # The roofline as the FLOPs alone.
    return max(parts, key=lambda p: parts[p] - flops[p] / peak_flops)


def bn_memory_roofline(parts, flops, bytes_moved, peak_flops, bandwidth):
    # The roofline as the bytes alone.
    return max(parts, key=lambda p: parts[p] - bytes_moved[p] / bandwidth)


def bn_added_times(parts, flops, bytes_moved, peak_flops, bandwidth):
    best, most = None, -float("inf")
    for part, seconds in parts.items():
        lost = seconds - (flops[part] / peak_flops + bytes_moved[part] / bandwidth)
        if lost > most:
            best, most = part, lost
    return best


def bn_most_flops(parts, flops, bytes_moved, peak_flops, bandwidth):
    return max(flops, key=flops.get)


def bn_index(parts, flops, bytes_moved, peak_flops, bandwidth):  # a position
    lost = [parts[p] - max(flops[p] / peak_flops, bytes_moved[p] / bandwidth)
            for p in parts]
    return int(np.argmax(lost))


def bn_loop(parts, flops, bytes_moved, peak_flops, bandwidth):
    best, most = None, -float("inf")
    for part in parts:
        floor = max(flops[part] / peak_flops, bytes_moved[part] / bandwidth)
        if parts[part] - floor > most:  # strictly: the first of equals stays
            best, most = part, parts[part] - floor
    return best


def bn_numpy(parts, flops, bytes_moved, peak_flops, bandwidth):
    names = list(parts)
    t = np.array([parts[p] for p in names])
    f = np.array([flops[p] for p in names])
    b = np.array([bytes_moved[p] for p in names])
    return names[int(np.argmax(t - np.maximum(f / peak_flops, b / bandwidth)))]


# -- exercise 2: mfu


def _weights(d_model, layers, heads, kv_heads, head_dim, hidden, vocab):
    per_layer = (d_model * heads * head_dim * 2 + d_model * kv_heads * head_dim * 2
                 + 3 * d_model * hidden)
    return layers * per_layer + d_model * vocab


def mfu_chapter7(d_model, layers, heads, kv_heads, head_dim, hidden, vocab, seq,
                 tokens, seconds, peak_flops):  # the whole square of scores
    w = _weights(d_model, layers, heads, kv_heads, head_dim, hidden, vocab)
    per_token = 6 * w + 12 * layers * seq * heads * head_dim
    return per_token * tokens / seconds / peak_flops


def mfu_forward(d_model, layers, heads, kv_heads, head_dim, hidden, vocab, seq,
                tokens, seconds, peak_flops):  # 2 FLOPs per weight
    w = _weights(d_model, layers, heads, kv_heads, head_dim, hidden, vocab)
    per_token = 2 * w + 4 * layers * seq * heads * head_dim / 2
    return per_token * tokens / seconds / peak_flops


def mfu_embedding_too(d_model, layers, heads, kv_heads, head_dim, hidden, vocab,
                      seq, tokens, seconds, peak_flops):  # both tables
    w = _weights(d_model, layers, heads, kv_heads, head_dim, hidden, vocab)
    w += vocab * d_model
    per_token = 6 * w + 6 * layers * seq * heads * head_dim
    return per_token * tokens / seconds / peak_flops


def mfu_mha(d_model, layers, heads, kv_heads, head_dim, hidden, vocab, seq, tokens,
            seconds, peak_flops):  # keys and values as wide as the queries
    w = _weights(d_model, layers, heads, heads, head_dim, hidden, vocab)
    per_token = 6 * w + 6 * layers * seq * heads * head_dim
    return per_token * tokens / seconds / peak_flops


def mfu_percent(d_model, layers, heads, kv_heads, head_dim, hidden, vocab, seq,
                tokens, seconds, peak_flops):
    w = _weights(d_model, layers, heads, kv_heads, head_dim, hidden, vocab)
    per_token = 6 * w + 6 * layers * seq * heads * head_dim
    return 100 * per_token * tokens / seconds / peak_flops  # in per cent


def mfu_head_dim_from_d(d_model, layers, heads, kv_heads, head_dim, hidden, vocab,
                        seq, tokens, seconds, peak_flops):  # head_dim ignored
    h = d_model // heads
    w = _weights(d_model, layers, heads, kv_heads, h, hidden, vocab)
    per_token = 6 * w + 6 * layers * seq * heads * h
    return per_token * tokens / seconds / peak_flops


def mfu_by_sources(d_model, layers, heads, kv_heads, head_dim, hidden, vocab, seq,
                   tokens, seconds, peak_flops):
    q_and_out = 2 * d_model * heads * head_dim
    k_and_v = 2 * d_model * kv_heads * head_dim
    mlp = 3 * d_model * hidden
    output = d_model * vocab
    matmuls = 6.0 * tokens * (layers * (q_and_out + k_and_v + mlp) + output)
    causal = 0.5 * 12.0 * layers * seq * heads * head_dim * tokens
    achieved = (matmuls + causal) / seconds
    return achieved / peak_flops


def mfu_numpy(d_model, layers, heads, kv_heads, head_dim, hidden, vocab, seq, tokens,
              seconds, peak_flops):
    widths = np.array([heads, heads, kv_heads, kv_heads], np.float64) * head_dim
    w = layers * (d_model * widths.sum() + 3.0 * d_model * hidden) + d_model * vocab
    flops = np.float64(tokens) * (6 * w + 6.0 * layers * seq * heads * head_dim)
    return float(flops / (seconds * peak_flops))


# -- exercise 3: roofline_saving


def save_bytes_over_bandwidth(flops, bytes_before, bytes_after, peak_flops,
                              bandwidth):
    return (bytes_before - bytes_after) / bandwidth


def save_ratio(flops, bytes_before, bytes_after, peak_flops, bandwidth):
    before = max(flops / peak_flops, bytes_before / bandwidth)
    after = max(flops / peak_flops, bytes_after / bandwidth)
    return before / after


def save_after_minus_before(flops, bytes_before, bytes_after, peak_flops,
                            bandwidth):
    before = max(flops / peak_flops, bytes_before / bandwidth)
    after = max(flops / peak_flops, bytes_after / bandwidth)
    return after - before


def save_flops_halved(flops, bytes_before, bytes_after, peak_flops, bandwidth):
    # The FLOPs taken to shrink as the bytes do.
    shrink = bytes_after / bytes_before
    before = max(flops / peak_flops, bytes_before / bandwidth)
    return before - max(flops * shrink / peak_flops, bytes_after / bandwidth)


def save_by_regime(flops, bytes_before, bytes_after, peak_flops, bandwidth):
    compute = flops / peak_flops
    before, after = bytes_before / bandwidth, bytes_after / bandwidth
    if before <= compute:
        return 0.0  # compute-bound throughout
    if after <= compute:
        return before - compute  # until the FLOPs bound it
    return before - after


def save_clipped(flops, bytes_before, bytes_after, peak_flops, bandwidth):
    return max(0.0, bytes_before / bandwidth - max(flops / peak_flops,
                                                   bytes_after / bandwidth))
