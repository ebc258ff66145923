"""The layout explorer: a model, a batch, a mesh and a chip; memory, bytes and time.

:class:`LayoutExplorer` lets a learner pick the model's width and depth, the
global batch, the mesh shape of 8 devices (data × model), the layout and a
chip from :data:`jaxcourse.scaling.HARDWARE`, and shows what chapter 6
computes for that choice: the training state per device against the chip's
memory, the bytes each device sends per step, and the roofline's step time.
The numbers come from the chapter's formulas (:mod:`jaxcourse.scaling`).
For models of up to :data:`COMPILE_LAYERS` blocks, when the kernel has the 8
simulated devices, the explorer also compiles the step from shapes alone
(:func:`jaxcourse.scaling.compile_from_shapes`, a few seconds at most) and shows
the compiled program's memory and collectives beside the formulas; it says
which rows come from where, and why it did not compile when it did not. Each
row names the type its bytes are counted in: the training state in float32
(16 bytes a parameter with Adam), the bytes sent and the roofline in
bfloat16, the compiled program in float32. Beside the table, bar charts
(:mod:`.explorer_charts`) show the state per device against the chip's
memory, the compiled program's under it, and the compute and communication
time. The work is done by
:func:`layout_report`, a plain function; the widget only wires the controls
to it, so tests drive it without a browser. While it computes (a compilation
takes seconds), the explorer says for which choice and greys the previous
table (:meth:`jaxcourse.exercises.widgets.explorer_base.Explorer._computing`).
"""

from __future__ import annotations

import functools
import html
from typing import Any

import ipywidgets as widgets

from jaxcourse import scaling

from ...messages import message
from .explorer_base import (
    Explorer,
    bytes_text,
    controls_row,
    dropdown_style,
    seconds_text,
)
from .explorer_charts import beside, memory_chart, time_chart

__all__ = ["COMPILE_LAYERS", "MESHES", "LayoutExplorer", "layout_explorer",
           "layout_report"]

#: Mesh shapes of 8 devices, ``data × model``.
MESHES: dict[str, tuple[int, int]] = {"8×1": (8, 1), "4×2": (4, 2), "2×4": (2, 4),
                                      "1×8": (1, 8)}


#: The deepest model the explorer compiles (compiling grows with the depth).
COMPILE_LAYERS = 16


@functools.lru_cache(maxsize=64)
def _compiled(width: int, layers: int, batch: int, data: int, model: int,
              layout: str) -> dict[str, Any]:
    """Compile one choice from shapes; return its memory and collectives."""
    compiled = scaling.compile_from_shapes(scaling.Size(width, layers), layout, batch,
                                           data, model)
    return {"memory": scaling.compiled_memory(compiled),
            **scaling.collective_summary(scaling.compiled_collectives(compiled))}


def _why_not_compiled(layers: int, devices: int) -> str | None:
    import jax

    if layers > COMPILE_LAYERS:
        return "deep"
    if len(jax.devices()) < devices:
        return "devices"
    return None


def _label(language: str, key: str, **values: object) -> str:
    return message(f"layout_{key}", language, **values)


def layout_report(width: int, layers: int, batch: int, mesh: str, layout: str,
                  chip: str, language: str = "en") -> dict[str, Any]:
    """Compute what the explorer shows for one choice.

    Returns
    -------
    dict
        ``params`` (count), ``state`` (bytes per device), ``memory`` (the
        chip's), ``fits``, ``sent`` (bytes per device per step, bfloat16),
        ``time`` (:func:`jaxcourse.scaling.step_time`'s parts), ``source``
        (``"compiled"`` when the step was also compiled, else ``"formula"``),
        ``compiled`` (the compiled program's ``memory``, collective
        ``counts`` and ``bytes`` sent per device in float32, or ``None``),
        ``chart`` (two inline SVGs, :mod:`.explorer_charts`: the state's
        parts and the compiled program's total against the chip's HBM; the
        compute and communication time) and ``html`` (the table with the
        charts beside it, then the note).
    """
    size = scaling.Size(width, layers)
    data, model = MESHES[mesh]
    hw = scaling.HARDWARE[chip]
    parts = scaling.state_bytes(size, layout, data, model)
    state = parts["total"]
    sent = sum(scaling.ring_bytes(c.kind, c.nbytes, c.group)
               for c in scaling.predicted_collectives(size, layout, batch, data, model,
                                                      itemsize=2, regather=True))
    time = scaling.step_time(size, layout, batch, hw, data, model)
    fits = state <= hw.hbm
    # Each pass hides its own communication: compute-bound when both passes are.
    compute_bound = all(time[f"{p}_compute"] >= time[f"{p}_communication"]
                        for p in ("forward", "backward"))
    bound = "bound_compute" if compute_bound else "bound_comm"
    rows = [
        (_label(language, "params"), f"{scaling.param_count(size):,}"),
        (_label(language, "state"),
         _label(language, "state_line", state=bytes_text(state),
                pct=f"{state / hw.hbm:.0%}", hbm=bytes_text(hw.hbm),
                verdict=_label(language, "fits" if fits else "too_big"))),
        (_label(language, "sent"), bytes_text(sent)),
        (_label(language, "compute"), seconds_text(time["compute"])),
        (_label(language, "comm"), seconds_text(time["communication"])),
        (_label(language, "step"), f"{seconds_text(time['step'])}, "
                                   f"{_label(language, bound)}"),
    ]
    why = _why_not_compiled(layers, data * model)
    compiled = compiled_parts = None
    if why is None:
        compiled = _compiled(width, layers, batch, data, model, layout)
        memory = compiled["memory"]
        # The bar is the row's "in all": arguments + outputs + temp - alias.
        compiled_parts = [("arguments", memory["arguments"]), ("temp", memory["temp"]),
                          ("outputs", memory["outputs"] - memory["alias"])]
        formula_sent = sum(scaling.ring_bytes(c.kind, c.nbytes, c.group)
                           for c in scaling.predicted_collectives(size, layout, batch,
                                                                  data, model))
        counts = ", ".join(f"{n} {kind}" for kind, n in compiled["counts"].items())
        rows += [
            (_label(language, "compiled_memory"),
             _label(language, "compiled_memory_line",
                    arguments=bytes_text(memory["arguments"]),
                    temp=bytes_text(memory["temp"]),
                    peak=bytes_text(memory["sum"]))),  # what a run occupies
            (_label(language, "compiled_sent"),
             _label(language, "compiled_sent_line", counts=counts or "—",
                    sent=bytes_text(compiled["bytes"]),
                    formula=bytes_text(formula_sent))),
        ]
        note = _label(language, "source_compiled")
    else:
        reason = _label(language, f"not_compiled_{why}", layers=COMPILE_LAYERS)
        note = f"{_label(language, 'source')} {reason}"
    colour = "" if fits else " style='color:#cf222e'"
    body = "".join(f"<tr{colour if i == 1 else ''}><th style='text-align:left'>"
                   f"{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
                   for i, (k, v) in enumerate(rows))
    note = html.escape(note)
    plan = [("params", parts["params"]), ("grads", parts["grads"]),
            ("optimizer", parts["adam"])]
    chart = (memory_chart(language, plan, compiled_parts, hw.hbm, chip)
             + time_chart(language, time))
    table = beside(f"<table>{body}</table>", [chart])
    return {"params": scaling.param_count(size), "state": state, "memory": hw.hbm,
            "fits": fits, "sent": sent, "time": time,
            "source": "compiled" if compiled else "formula", "compiled": compiled,
            "chart": chart,
            "html": f"{table}<p><i>{note}</i></p>"}


class LayoutExplorer(Explorer):
    """Controls for model, batch, mesh, layout and chip; a table of the results.

    Parameters
    ----------
    width, layers, batch : int
        Initial model width, number of blocks and global batch.
    mesh, layout, chip : str
        Initial choices (keys of :data:`MESHES`, :data:`jaxcourse.scaling.LAYOUTS`
        and :data:`jaxcourse.scaling.HARDWARE`).
    language : {"en", "zh-Hant", "zh-Hans"}
        Language of the labels.
    run : bool
        Compute once right away.
    """

    def __init__(self, width: int = 8192, layers: int = 32, batch: int = 8192,
                 mesh: str = "8×1", layout: str = "FSDP", chip: str = "H100 SXM", *,
                 language: str = "en", run: bool = True) -> None:
        super().__init__(language)

        def dropdown(key: str, options: list[Any], value: Any) -> widgets.Dropdown:
            # Labels and options read whole in every language ("global bat…").
            return widgets.Dropdown(options=options, value=value, **dropdown_style(
                _label(self.language, key), options))

        self.width = dropdown("width", [256, 1024, 4096, 8192, 16384], width)
        self.layers = dropdown("layers", [2, 4, 16, 32, 64, 96], layers)
        self.batch = dropdown("batch", [64, 512, 2048, 8192, 32768, 131072], batch)
        self.mesh = dropdown("mesh", list(MESHES), mesh)
        self.layout = dropdown("layout", list(scaling.LAYOUTS), layout)
        self.chip = dropdown("chip", list(scaling.HARDWARE), chip)
        self.table = widgets.HTML()
        self.report: dict[str, Any] = {}
        self._on_change(self.redraw, self.width, self.layers, self.batch, self.mesh,
                        self.layout, self.chip)
        self._assemble([controls_row(self.width, self.layers, self.batch),
                        controls_row(self.mesh, self.layout, self.chip)], [self.table])
        self._start(run, self.redraw)

    def choice(self) -> str:
        """Describe the controls' current choice, in the explorer's language."""
        return _label(self.language, "choice", width=self.width.value,
                      layers=self.layers.value, batch=self.batch.value,
                      mesh=self.mesh.value, layout=self.layout.value,
                      chip=self.chip.value)

    def redraw(self) -> str:
        """Recompute the table; return its HTML.

        The busy cue names the new choice and the old table is greyed until
        the new one replaces it: a compilation takes seconds, and a table
        left plain under the new controls would read as theirs.
        """
        with self._computing(_label(self.language, "busy", choice=self.choice()),
                             self.table):
            self.report = layout_report(self.width.value, self.layers.value,
                                        self.batch.value, self.mesh.value,
                                        self.layout.value, self.chip.value,
                                        self.language)
            self.table.value = self.report["html"]
        return self.table.value

    def live_text(self) -> str:
        """Return a deterministic plain-text form (for stored notebook outputs)."""
        return _label(self.language, "text")


def layout_explorer(**initial: Any) -> LayoutExplorer:
    """Build the layout explorer (computed right away)."""
    return LayoutExplorer(**initial)
