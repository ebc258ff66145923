"""The explorers' bar charts (exercises.widgets.explorer_charts), read back as SVG.

Random bars on both sides of the chip's capacity, and exactly at it: each
part's width is its value on one scale, the line sits at the capacity, a bar
is flagged exactly when it is longer. The explorers' own charts are tested
with their reports (tests/test_scaling.py, tests/test_explorers_transformer.py).
"""

from __future__ import annotations

import numpy as np
import pytest
from chart_svg import charts, check_flags, read

from jaxcourse.exercises.widgets.explorer_base import bytes_text, seconds_text
from jaxcourse.exercises.widgets.explorer_charts import (
    Bar,
    _axis,
    bar_chart,
    memory_chart,
    time_chart,
)
from jaxcourse.messages import message

KINDS = ("params", "grads", "optimizer", "gathered", "activations", "scores")
# A plan's size as a share of the chip's: under, just under, exactly at, just
# over, far over.
SHARES = (0.3, 1 - 1e-6, 1.0, 1 + 1e-6, 2.7)


def _parts(rng: np.random.Generator, total: float) -> list[tuple[str, float]]:
    """Split ``total`` into 1 to 6 random parts (some 0), summing to it exactly."""
    n = int(rng.integers(1, len(KINDS) + 1))
    weights = rng.random(n) * (rng.random(n) > 0.2)
    if not weights.sum():
        weights[0] = 1.0
    values = [float(v) for v in total * weights / weights.sum()]
    values[-1] = total - sum(values[:-1])       # no rounding left over
    return list(zip(KINDS, values, strict=False))


def test_random_plans_are_drawn_to_scale_and_flagged_past_the_chip() -> None:
    rng = np.random.default_rng(0)
    flagged = 0
    for case in range(40):
        hbm = float(rng.choice([16e9, 80e9, 95e9, 1.5e12]))
        share = SHARES[case % len(SHARES)]
        plan = _parts(rng, hbm * share)
        compiled = ([("arguments", hbm * rng.random()), ("temp", hbm * rng.random())]
                    if case % 2 else None)
        chart = read(charts(memory_chart("en", plan, compiled, hbm, "TPU v5e"))[0])
        check_flags(chart)
        assert chart.limit == hbm
        drawn = {kind: value for kind, value in plan if value > 0}
        assert chart.rows[0].parts == pytest.approx(drawn, rel=1e-12)
        assert len(chart.rows) == (2 if compiled else 1)
        # Exactly at the capacity fits; a byte more does not.
        total = sum(v for _, v in plan)
        assert chart.rows[0].over == (total > hbm), (share, total, hbm)
        flagged += chart.rows[0].over
        # Sizes are the table's: decimal GB, "80.00 GB".
        assert f"TPU v5e HBM {bytes_text(hbm)}" in chart.texts
        assert f"{bytes_text(total)} ({total / hbm:.0%})" in chart.texts
        assert (f"⚠ {message('chart_over')}" in chart.texts) == any(
            row.over for row in chart.rows)
    assert 0 < flagged < 40


def test_the_axis_reaches_past_every_bar_in_round_steps() -> None:
    rng = np.random.default_rng(1)
    for top in [1e-9, 0.3, 1.0, 80e9, 95e9, 1e12 + 1, *(10 ** rng.uniform(-7, 13, 50))]:
        step, end = _axis(top)
        assert end >= top and 2 <= round(end / step) <= 4, (top, step, end)
        mantissa = step / 10 ** np.floor(np.log10(step))
        assert min(abs(mantissa - m) for m in (1, 2, 2.5, 5, 10)) < 1e-9, step
    assert _axis(0.0) == (1.0, 1.0)


def test_the_time_chart_draws_the_rooflines_parts_to_scale() -> None:
    time = {"compute": 0.10673, "communication": 0.13362, "step": 0.1692}
    chart = read(charts(time_chart("en", time))[0])
    assert [row.parts for row in chart.rows] == [
        {"compute": 0.10673}, {"comm": 0.13362}, {"step": 0.1692}]
    assert chart.limit is None and not any(row.over for row in chart.rows)
    for value in time.values():
        assert seconds_text(value) in chart.texts
    # The axis is in the unit of its end: 200 ms, ticks every 50 ms.
    assert [t for t in chart.texts if t.endswith(" ms") and t[0].isdigit()][:5] == [
        "106.73 ms", "133.62 ms", "169.20 ms", "0 ms", "50 ms"]
    assert "Bar chart" in chart.summary and "133.62 ms" in chart.summary


def test_a_bar_of_nothing_is_an_empty_row() -> None:
    svg = bar_chart([Bar("chart_plan", (("params", 0.0),)),
                     Bar("chart_compiled", (("temp", 5e9),))], "en",
                    title="chart_memory_title", summary="s", unit="bytes",
                    limit=16e9, limit_text="HBM")
    chart = read(charts(svg)[0])
    assert [row.parts for row in chart.rows] == [{}, {"temp": 5e9}]
    assert chart.rows[0].end == chart.origin


@pytest.mark.parametrize("language", ["en", "zh-Hant", "zh-Hans"])
def test_a_chart_is_laid_out_alike_in_every_language(language: str) -> None:
    # The book's editions translate the English chart's texts in place: the
    # rest of the chart (every position and size) must be the same.
    plan = [("params", 40e9), ("activations", 50e9)]
    ours, english = (charts(memory_chart(lang, plan, [("arguments", 9e9)], 80e9,
                                         "H100 SXM"))[0] for lang in (language, "en"))
    for mine, theirs in zip(ours.iter(), english.iter(), strict=True):
        assert mine.tag == theirs.tag
        assert {k: v for k, v in mine.attrib.items() if k != "aria-label"} == {
            k: v for k, v in theirs.attrib.items() if k != "aria-label"}
