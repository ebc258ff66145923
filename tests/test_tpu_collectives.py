"""The TPU's collectives read as it prints them, and matched to the prediction.

Small transformers compiled for compile-only TPU slices (v5e 2x4 and 4x4,
seconds each) and read by :mod:`jaxcourse.transformer.tpu_collectives`:
every predicted collective is found on the mesh axis it was predicted on,
every found one answers a predicted one, and the bytes each device sends
differ from the prediction by exactly what the named reasons add. The
stored LLaMA-3 runs are matched again from the file. Without libtpu the
compiling tests are skipped (``make setup`` unpacks it).
"""

from __future__ import annotations

import numpy as np
import pytest

from jaxcourse import slices, transformer
from jaxcourse.scaling import Collective, ring_bytes
from jaxcourse.transformer import slice_plans
from jaxcourse.transformer import tpu_collectives as tc
from jaxcourse.transformer import tpu_matching as tm
from jaxcourse.transformer.planning import CONFIGS

needs_libtpu = pytest.mark.skipif(
    slices.libtpu_path() is None, reason="no libtpu (make setup unpacks it)")

TWICE = (tm.GATHER_AS_ALL_REDUCE, tm.SCATTER_AS_ALL_REDUCE)


def _holds(matched: list[tm.Matched]) -> dict[str, dict[str, float]]:
    """Check a match is complete, each difference its reason's; return the sums."""
    missing = [m for m in matched if m.reason in (tm.NOT_FOUND, tm.NOT_PREDICTED)]
    assert not missing, missing[:4]
    for m in matched:
        f, p = m.found, m.predicted
        # The TPU's operand over the predicted one: 8,448 rows for 8,192
        # where it pads; the same elsewhere.
        padded = f.moved / f.nbytes if f.moved else 1.0
        if m.reason == tm.REALIGNED:
            assert f.kind == "collective-permute" and m.predicted_bytes == 0
            continue
        once = ring_bytes(p.kind, p.nbytes, p.group)
        # An all-reduce that gathers or scatters sends twice the ring's bytes.
        twice = 2 if f.kind != f.role else 1
        assert (m.reason in TWICE) == (twice == 2 and m.reason != tm.RECOMPUTED)
        assert (m.reason == tm.PADDED) == (padded > 1 and m.reason != tm.RECOMPUTED)
        assert m.predicted_bytes == (0 if m.reason == tm.RECOMPUTED else once)
        assert m.found_bytes == pytest.approx(twice * padded * once, rel=1e-12), m
    sums = tm.axis_bytes(matched)
    for axes, row in sums.items():
        # Remat gathers again what the forward pass gathered, at most half
        # the prediction (each gather has its reduce-scatter); an all-reduce
        # standing in for a gather or a scatter sends twice the ring's bytes
        # (70B's FSDP over 64 v5p chips does it for every one); padding adds
        # its share (33/32 where it pads), the collective-permutes theirs.
        extra = row.get(tm.REALIGNED, 0.0) + row.get(tm.PADDED, 0.0)
        assert row["predicted"] <= row["found"] <= 3 * row["predicted"] + extra, axes
    return sums


# -- the reader, on HLO text written by hand ---------------------------------

_MODULE = """\
HloModule m

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

%fused_start (param_0.1: bf16[4,8]) -> bf16[16,8] {
  %param_0.1 = bf16[4,8]{1,0} parameter(0)
  ROOT %all-gather.1 = bf16[16,8]{1,0:T(8,128)} all-gather(%param_0.1), channel_id=3, \
replica_groups={GROUPS}, dimensions={0}, frontend_attributes={chain_id="7"}
}

%fused_done (param_0.2: bf16[4,8]) -> bf16[16,8] {
  %param_0.2 = bf16[4,8]{1,0} parameter(0)
  ROOT %all-gather.2 = bf16[16,8]{1,0} all-gather(%param_0.2), channel_id=3, \
replica_groups={GROUPS}, dimensions={0}, frontend_attributes={chain_id="7"}
}

%slice_it (param_0.3: f32[64], param_1.3: u32[]) -> f32[16] {
  %param_0.3 = f32[64]{0} parameter(0)
  %param_1.3 = u32[] parameter(1)
  ROOT %dynamic-slice.1 = f32[16]{0} dynamic-slice(%param_0.3, %param_1.3), \
dynamic_slice_sizes={16}
}

%body (p: (s32[], bf16[4,8])) -> (s32[], bf16[4,8]) {
  %p = (s32[], bf16[4,8]) parameter(0)
  %w = bf16[4,8]{1,0} get-tuple-element(%p), index=1
  %start = bf16[16,8]{1,0} fusion(%w), kind=kCustom, calls=%fused_start
  %done = bf16[16,8]{1,0} fusion(%w), kind=kCustom, calls=%fused_done
  %i = s32[] get-tuple-element(%p), index=0
  ROOT %t = (s32[], bf16[4,8]) tuple(%i, %w)
}

%cond (q: (s32[], bf16[4,8])) -> pred[] {
  %q = (s32[], bf16[4,8]) parameter(0)
  ROOT %c = pred[] constant(true)
}

ENTRY %main (x: f32[16], y: bf16[4,8], z: f32[64]) -> f32[16] {
  %x = f32[16]{0} parameter(0)
  %y = bf16[4,8]{1,0} parameter(1)
  %z = f32[64]{0} parameter(2)
  %zero = f32[64]{0} constant(0)
  %k = s32[] constant(0)
  %u = u32[] constant(0)
  %init = (s32[], bf16[4,8]) tuple(%k, %y)
  %loop = (s32[], bf16[4,8]) while(%init), condition=%cond, body=%body
  %padded = f32[64]{0} dynamic-update-slice(%zero, %x, %k)
  %gathered = (f32[64]{0}, f32[64]{0}) all-reduce(%padded, %z), channel_id=1, \
replica_groups={GROUPS}, to_apply=%add
  %g0 = f32[64]{0} get-tuple-element(%gathered), index=0
  %summed = f32[64]{0} all-reduce(%z), channel_id=2, replica_groups={GROUPS}, \
to_apply=%add
  %mine = f32[16]{0} fusion(%summed, %u), kind=kLoop, calls=%slice_it
  %loss = f32[] all-reduce(%k), channel_id=4, replica_groups={GROUPS}, to_apply=%add
  ROOT %out = f32[16]{0} slice(%g0), slice={[0:16]}
}
"""


@pytest.mark.parametrize("groups, axes", [
    ("{{0,1,2,3}}", "data,model"),
    ("{{0,2},{1,3}}", "data"),
    ("{{0,1},{2,3}}", "model"),
    ("[2,2]<=[4]", "model"),
    ("[2,2]<=[2,2]T(1,0)", "data"),
])
def test_the_tpu_forms_are_read_once_each_on_their_axes(groups, axes):
    found = tc.tpu_collectives(_MODULE.replace("{GROUPS}", groups), (2, 2))
    size = 4 if axes == "data,model" else 2
    gather, padded, other, summed, loss = found
    # The chain's two pieces are one all-gather, in the loop's body.
    assert gather == tc.TpuCollective("all-gather", 16 * 8 * 2, size, axes,
                                      "async chain of 2", True)
    # A piece written into zeros and summed is a gather; its tuple partner
    # is a plain combined all-reduce.
    assert (padded.form, padded.role, padded.nbytes) == (
        "combined, zero-padded", "all-gather", 64 * 4)
    assert (other.form, other.role, other.in_loop) == ("combined, sync", "all-reduce",
                                                       False)
    # Summed, then each device keeps a quarter: a reduce-scatter (sliced for
    # a group of 4 or less: 16 * 4 <= 64).
    assert (summed.form, summed.role) == ("sliced after", "reduce-scatter")
    assert (loss.kind, loss.nbytes, loss.form) == ("all-reduce", 4, "sync")


_PADDED = """\
HloModule m

%add (a: bf16[], b: bf16[]) -> bf16[] {
  %a = bf16[] parameter(0)
  %b = bf16[] parameter(1)
  ROOT %s = bf16[] add(%a, %b)
}

%all-reduce-scatter.1 (input.1: bf16[32,8]) -> bf16[9,8] {
  %input.1 = bf16[32,8]{1,0} parameter(0)
  %zero = bf16[] constant(0)
  %pad.1 = bf16[36,8]{1,0} pad(%input.1, %zero), padding=0_4x0_0
  %all-reduce.1 = bf16[36,8]{1,0} all-reduce(%pad.1), channel_id=1, \
replica_groups={{0,1,2,3}}, to_apply=%add
  %id = u32[] partition-id()
  %nine = u32[] constant(9)
  %at = u32[] multiply(%id, %nine)
  %z = u32[] constant(0)
  ROOT %ds = bf16[9,8]{1,0} dynamic-slice(%all-reduce.1, %at, %z), \
dynamic_slice_sizes={9,8}
}

ENTRY %main (g: bf16[32,8]) -> bf16[1,8] {
  %g = bf16[32,8]{1,0} parameter(0)
  %piece = bf16[9,8]{1,0} fusion(%g), kind=kCustom, calls=%all-reduce-scatter.1, \
backend_config={"collective_algorithm_config":{"emitter":"SingleInputAllReduceScatterFusion"}}
  %tail = bf16[1,8]{1,0} slice(%piece), slice={[8:9], [0:8]}
  %cp = (bf16[1,8]{1,0}, bf16[1,8]{1,0}, u32[], u32[]) \
collective-permute-start(%tail), channel_id=2, source_target_pairs={{0,1},{1,2},{2,3}}
  ROOT %got = bf16[1,8]{1,0} collective-permute-done(%cp)
}
"""


def test_a_padded_reduce_scatter_and_its_realignment_are_read_as_such():
    # Modelled on 70B's gradients over 16 chips of a v5p cube: 8,192 rows
    # padded to 8,448, scattered by the fusion, pieces moved on by a row.
    scatter, permute = tc.tpu_collectives(_PADDED, (4, 1))
    assert scatter == tc.TpuCollective("reduce-scatter", 32 * 8 * 2, 4, "data",
                                       "reduce-scatter fusion, padded", False,
                                       36 * 8 * 2)
    assert (permute.kind, permute.nbytes, permute.form) == (
        "collective-permute", 8 * 2, "re-aligns a padded reduce-scatter")
    predicted = [Collective("reduce-scatter", 32 * 8 * 2, 4)]
    matched = tm.match_prediction([scatter, permute], predicted, 4, 1)
    assert [m.reason for m in matched] == [tm.PADDED, tm.REALIGNED]
    row = _holds(matched)["data"]
    assert row["found"] == pytest.approx(row["predicted"] * 36 / 32 + 16)


def test_device_ids_are_the_meshs_in_row_major_order():
    rng = np.random.default_rng(56)
    for _ in range(20):
        shape = tuple(int(n) for n in rng.choice([1, 2, 3, 4], size=2))
        ids = np.arange(shape[0] * shape[1]).reshape(shape)
        axis = int(rng.integers(2))
        groups = (ids if axis == 1 else ids.T).tolist()
        text = "{" + ",".join("{" + ",".join(map(str, g)) + "}" for g in groups) + "}"
        spans = tc._axes_of(tc._replica_groups(f"replica_groups={text},", ids.size),
                            shape, ("data", "model"))
        assert spans == ("" if shape[axis] == 1 else ("data", "model")[axis])


def test_a_prediction_is_matched_and_its_differences_named():
    ag = Collective("all-gather", 800, 8)
    rs = Collective("reduce-scatter", 800, 8)
    loss = Collective("all-reduce", 4, 8)
    found = [tc.TpuCollective("all-gather", 800, 8, "data", "async chain of 3", True),
             tc.TpuCollective("all-gather", 800, 8, "data", "sync", True),
             tc.TpuCollective("all-reduce", 800, 8, "data", "sliced after", True),
             tc.TpuCollective("all-reduce", 4, 8, "data", "sync", False)]
    matched = tm.match_prediction(found, [ag, rs, loss], 8, 1)
    assert [(m.reason, m.found) for m in matched] == [
        (tm.AS_PREDICTED, found[0]), (tm.AS_PREDICTED, found[3]),
        (tm.SCATTER_AS_ALL_REDUCE, found[2]), (tm.RECOMPUTED, found[1])]
    sums = _holds(matched)["data"]
    # The scatter once more (700 B), the gather once more (700 B).
    assert sums["found"] == pytest.approx(sums["predicted"] + 2 * 700, rel=1e-12)
    # A reduce-scatter the program lacks, and an all-reduce it was not told of.
    short = tm.match_prediction(found[:2] + found[3:], [ag, rs, loss], 8, 1)
    assert [m.reason for m in short][-1] == tm.NOT_FOUND
    # On a square mesh the size does not say the axis: the replica groups do.
    assert tm.predicted_axes(ag, 8, 8) == ("data", "model")
    on_model = [f._replace(axes="model") for f in found]
    assert {m.axes for m in tm.match_prediction(on_model, [ag, rs, loss], 8, 8)} == {
        "model"}
    with pytest.raises(ValueError, match="no axis"):
        tm.predicted_axes(ag, 2, 2)
    assert tm.step_bytes(found, 10)["data"] == pytest.approx(
        10 * (700 + 700 + 1400) + 2 * 4 * 7 / 8)


# -- small transformers, compiled for real slices ----------------------------

def _random_config(rng: np.random.Generator) -> transformer.Config:
    # Every width a multiple of 16 (FSDP over 16 chips cuts it) and of the
    # model axis; the heads, hidden units and vocabulary differ from one
    # another, so that a prediction confusing two of them fails.
    head_dim = int(rng.choice([16, 32]))
    kv_heads = int(rng.choice([2, 4]))
    heads = kv_heads * int(rng.choice([1, 2]))
    return transformer.Config(vocab=int(rng.choice([256, 384, 512])),
                              d_model=heads * head_dim, layers=int(rng.integers(1, 4)),
                              heads=heads, kv_heads=kv_heads,
                              hidden=int(rng.choice([128, 192, 320])))


MESHES = {"v5e 2x4": ((8, 1), (4, 2)), "v5e 4x4": ((16, 1), (8, 2))}
CASES = [(name, layout, mesh)
         for name, meshes in MESHES.items()
         for layout in transformer.LAYOUTS
         for mesh in [meshes[transformer.layout_switches(layout).tp]]]


@needs_libtpu
@pytest.mark.parametrize("name, layout, mesh", CASES,
                         ids=[f"{n}-{lay}" for n, lay, _ in CASES])
def test_every_collective_the_tpu_compiles_answers_the_prediction(name, layout, mesh):
    rng = np.random.default_rng([56, CASES.index((name, layout, mesh))])
    cfg = _random_config(rng)
    data, model = mesh
    batch = data * int(rng.integers(1, 3))
    seq = int(rng.choice([32, 64]))
    compiled = transformer.compile_step(cfg, layout, data, model, batch, seq,
                                        devices=slices.slice_devices(name), donate=True)
    found = tc.tpu_collectives(compiled, mesh)
    predicted = transformer.predicted_collectives(cfg, layout, batch, seq, data, model,
                                                  itemsize=2)
    matched = tm.match_prediction(found, predicted, data, model)
    sums = _holds(matched)
    reasons = {m.reason for m in matched}
    # Each axis that is there carries collectives (with SP, the norms'
    # gradients are summed over both axes at once).
    single = {a for a, n in (("data", data), ("model", model)) if n > 1}
    assert single <= set(sums) <= single | {"data,model"}
    # Full remat runs each block's forward again in the backward pass: FSDP
    # gathers every block weight again, tensor parallelism all-reduces (or,
    # with SP, gathers) the attention's activation again; data parallelism
    # has no collective forward. Never more than the prediction once more.
    assert (tm.RECOMPUTED in reasons) == (layout != "data parallel")
    if layout == "data parallel":
        assert reasons == {tm.AS_PREDICTED}


@needs_libtpu
def test_the_reader_agrees_with_the_cpu_reader_where_the_forms_agree():
    # Data parallel on a TPU: combined all-reduces only, as on the CPU; both
    # readers count the same operands.
    from jaxcourse.scaling import compiled_collectives

    cfg = _random_config(np.random.default_rng(7))
    compiled = transformer.compile_step(cfg, "data parallel", 8, 1, 8, 32,
                                        devices=slices.slice_devices("v5e 2x4"))
    mine = sorted((c.kind, c.nbytes, c.group)
                  for c in tc.tpu_collectives(compiled, (8, 1)))
    assert mine == sorted(compiled_collectives(compiled))


# -- the stored LLaMA-3 runs -------------------------------------------------

def test_the_stored_runs_collectives_answer_todays_prediction():
    stored = slice_plans.load()
    read = [name for name, row in stored["runs"].items() if "tpu_collectives" in row]
    # Every run the compiler accepted with FSDP alone carries its collectives.
    assert {r.name for r in slice_plans.RUNS if r.layout == "FSDP"
            and "memory" in stored["runs"][r.name]} <= set(read)
    for name in read:
        row = stored["runs"][name]
        run = slice_plans.Run(**row["run"])
        sums = _holds(slice_plans.stored_match(row))
        assert set(sums) <= {"data", "model", "data,model"}, name
        found = tm.from_rows(row["tpu_collectives"])
        # What compiled_collectives summed from the same HLO, instruction by
        # instruction, is what the logical collectives send where each is one
        # instruction of one operand (no chain, no padded fusion and its
        # collective-permutes, whose async tuples it reads whole).
        if not any("chain" in c.form or c.moved or c.kind == "collective-permute"
                   for c in found):
            assert sum(c.sent() for c in found) == pytest.approx(
                row["summary"]["bytes"], rel=1e-12), name
        step = tm.step_bytes(found, CONFIGS[run.config].layers)
        assert all(step[a] > sums[a]["found"] for a in step), name


@needs_libtpu
def test_rows_that_fill_no_tile_are_scattered_padded_and_set_right():
    # Chapter 7's SMALL: 96 vocabulary rows over 8 devices, 12 a device,
    # which the TPU pads to 128 rows (16 a device) for the embedding's
    # gradient, then moves each device's rows on with collective-permutes.
    cfg = transformer.Config(vocab=96, d_model=32, layers=3, heads=4, kv_heads=2,
                             hidden=80)
    compiled = transformer.compile_step(cfg, "FSDP", 8, 1, 8, 16, donate=True,
                                        devices=slices.slice_devices("v5e 2x4"))
    found = tc.tpu_collectives(compiled, (8, 1))
    matched = tm.match_prediction(
        found, transformer.predicted_collectives(cfg, "FSDP", 8, 16, 8, 1, itemsize=2),
        8, 1)
    _holds(matched)
    padded = [m.found for m in matched if m.reason == tm.PADDED]
    assert [(c.nbytes, c.moved) for c in padded] == [(96 * 32 * 2, 128 * 32 * 2)]
    assert sum(m.reason == tm.REALIGNED for m in matched) >= 1


@needs_libtpu
@pytest.mark.parametrize("layout, mesh", [("FSDP", (8, 1)), ("FSDP + TP", (4, 2))])
def test_a_step_with_the_splash_kernel_is_read_whole(layout, mesh):
    # The kernel's custom call prints its backend_config over several lines,
    # one starting with "}}": read as the end of the loop's body, it hid
    # every collective after the kernel (the blocks' reduce-scatters).
    cfg = transformer.Config(vocab=256, d_model=256, layers=2, heads=2, kv_heads=2,
                             hidden=128).with_attention("splash")
    data, model = mesh
    compiled = transformer.compile_step(cfg, layout, data, model, data, 128,
                                        devices=slices.slice_devices("v5e 2x4"),
                                        donate=True)
    text = compiled.as_text()
    assert any(line.startswith("}}") for line in text.splitlines())
    found = tc.tpu_collectives(compiled, mesh)
    _holds(tm.match_prediction(found, transformer.predicted_collectives(
        cfg, layout, data, 128, data, model, itemsize=2), data, model))
    if layout == "FSDP":
        # Each block weight's gradient is reduce-scattered in the loop's body.
        assert sum(c.kind == "reduce-scatter" and c.in_loop for c in found) >= 7
