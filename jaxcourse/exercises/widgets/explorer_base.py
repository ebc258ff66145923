"""One display base for the check panel and every explorer.

A display is an ipywidgets widget (``self.widget``) beside a plain-text form
(:meth:`Display.text`). The widget's model ids change on every run, while
nbval compares a cell's ``text/plain``, so each display also gives a short
text that depends on nothing random (no timings, no numbers that vary
across CPUs). What every display shares lives here, once:

* **grading-mode deferral**: while a class's notebooks are graded
  (:func:`jaxcourse.exercises.checking.mode.grading_mode`), nothing is computed and
  the text form says the display is graded separately;
* **the change-handler wiring**: :meth:`Display._on_change` runs one action
  when a control's value changes or a button is clicked;
* **the text/plain form** beside the live widget (``_repr_mimebundle_``);
* **the kernel-gone notice**: after *Kernel → Restart* the front end marks
  every old widget view ``jupyter-widgets-disconnected`` (ipywidgets 8), and
  a button press would raise ``Error: Cannot send`` in the browser. A rule
  shipped with each display shows, in place, "the kernel restarted: run the
  cells above again" and makes the old controls inert, so nothing is sent.
  The rule applies only in a notebook's output area (``.jp-OutputArea``,
  JupyterLab and Notebook 7): the static book's widgets are marked the same
  way, yet there was never a kernel to lose;
* **the static note** (explorers): the built book renders the stored widget
  state with ``@jupyter-widgets/html-manager``, whose views have no comm and
  are marked ``jupyter-widgets-disconnected`` too, outside any
  ``.jp-OutputArea``. There a rule shows, under the controls, that the page
  is a still picture and the explorer needs a running notebook, and makes
  the controls inert; a live kernel's views are never marked, so it never
  shows in a running notebook;
* **the busy cue** (explorers): :meth:`Explorer._computing` says what is
  being computed and greys the previous result until the new one is shown.

Explorers draw matplotlib figures for the width they are shown at:
:func:`figure` sizes a figure in CSS pixels (:data:`CSS_PX_PER_INCH`),
:func:`png_bytes` renders it at :data:`PIXEL_RATIO` device pixels per CSS
pixel (crisp on high-density screens), and :func:`figure_image` shows it at
exactly that CSS width, never stretched. :func:`slider_style` gives a slider
enough track for its steps, :func:`dropdown_style` a dropdown room for its
label and options, whole.
"""

from __future__ import annotations

import contextlib
import html
import io
import math
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar

import ipywidgets as widgets

from ...messages import message
from ..checking.mode import grading_mode

__all__ = [
    "CSS_PX_PER_INCH",
    "EXPLORER_CLASS",
    "PIXEL_RATIO",
    "STALE_CLASS",
    "STATIC_CLASS",
    "STEP_PX",
    "Display",
    "Explorer",
    "LegendEntry",
    "clear_button",
    "controls_row",
    "css_width",
    "dropdown_style",
    "figure",
    "figure_image",
    "finish_axes",
    "png_bytes",
    "show_figure",
    "slider_style",
    "static_note_html",
    "use_language_font",
    "with_language",
]

#: CSS pixels per figure inch: a figure 7.2 inches wide is shown 720 px wide,
#: and matplotlib's 10-point text is 14 CSS px, the size of the notebook's own.
CSS_PX_PER_INCH = 100
#: Device pixels per CSS pixel the figures are rendered for (2: high-density
#: screens; on a plain screen the browser scales them down, still sharp).
PIXEL_RATIO = 2
#: Slider track per step, in CSS pixels: a drag of a few pixels moves one step.
STEP_PX = 20
_MIN_TRACK_PX, _MAX_TRACK_PX = 160, 640
# Beside the track, in ipywidgets 8's CSS: the readout with its margins, and
# the track's own margins and handle, which the handle cannot travel.
_READOUT_PX, _TRACK_MARGIN_PX = 72, 32
# Beside a dropdown's option: the label's margin, the select's padding, border
# and arrow (ipywidgets 8's CSS: 8 + 8 + 20 + 2 px, rounded up).
_SELECT_EXTRA_PX = 40

#: Class names the kernel-gone rule keys on (the notice, the whole display).
DISPLAY_CLASS, NOTICE_CLASS = "jc-display", "jc-kernel-gone"
#: Class names of an explorer (the whole display), its static note, and a
#: result being replaced.
EXPLORER_CLASS, STATIC_CLASS, STALE_CLASS = "jc-explorer", "jc-static", "jc-stale"
_FAIL = "#cf222e"

# ipywidgets 8 adds jupyter-widgets-disconnected to every view of a model whose
# comm is gone (KernelWidgetManager.disconnect() on "restarting") or never was
# (the static book's html-manager); a style element applies wherever it sits,
# even inside the hidden notice.
_GONE = f".jp-OutputArea .{DISPLAY_CLASS}.jupyter-widgets-disconnected"
_STILL = f".{EXPLORER_CLASS}.jupyter-widgets-disconnected"
_DISPLAY_CSS = (
    "<style>"
    f"{_GONE} > .{NOTICE_CLASS}{{display:flex !important}}"
    # Outside a notebook's output area a disconnected explorer is the static
    # book's: the static note, not the kernel-gone notice. The second rule is
    # the more specific, so inside an output area it wins.
    f"{_STILL} > .{STATIC_CLASS}{{display:flex !important}}"
    f".jp-OutputArea {_STILL} > .{STATIC_CLASS}{{display:none !important}}"
    # No click reaches an old control, so no message is sent on a dead comm, and
    # on a static page no control moves while nothing follows it.
    f":is({_GONE},{_STILL}) "
    ":is(.widget-button,.widget-slider,.widget-dropdown,.widget-text)"
    "{pointer-events:none;opacity:0.5}"
    # The notice or the note says it in words; ipywidgets' broken-link icons
    # would repeat it on every child.
    f"{_GONE}::before,{_GONE} .jupyter-widgets-disconnected::before,"
    f"{_STILL}::before,{_STILL} .jupyter-widgets-disconnected::before"
    "{display:none}"
    # A result that no longer matches the controls, while its successor is
    # computed (Explorer._computing).
    f".{DISPLAY_CLASS} .{STALE_CLASS}{{opacity:0.35;filter:grayscale(1)}}"
    "</style>"
)


def notice_html(language: str) -> str:
    """Return the kernel-gone notice: the display's style rules and its sentence."""
    return (f"{_DISPLAY_CSS}<b style='color:{_FAIL}'>⚠ "
            f"{html.escape(message('kernel_gone', language))}</b>")


def static_note_html(language: str) -> str:
    """Return the static note: the explorer is a still picture on this page."""
    return ("<div style='border-left:3px solid #bf8700;padding:2px 8px'>ℹ "
            f"{html.escape(message('explorer_static', language))}</div>")


def with_language(language: str, body: str) -> str:
    """Return ``body`` in an element marked with its language (``lang``).

    A page or a JupyterLab tab says ``lang="en"``; the text of a Chinese
    panel inside it needs its own tag, or the browser picks Japanese glyphs
    (or the other Chinese script's) for the characters CJK fonts share.
    Empty stays empty; marked text is left as it is.
    """
    opening = f'<div lang="{language}">'
    if not body or body.startswith(opening):
        return body
    return f"{opening}{body}</div>"


def _html_widgets(widget: widgets.Widget) -> list[widgets.HTML]:
    found = [widget] if isinstance(widget, widgets.HTML) else []
    for child in getattr(widget, "children", ()):
        found += _html_widgets(child)
    return found


class Display:
    """Base of the check panel and the explorers: a live widget, a stable text.

    A subclass builds its controls, wires them with :meth:`_on_change`, lays
    them out with :meth:`_assemble` (which sets ``self.widget``), calls
    :meth:`_start`, and implements :meth:`live_text`.

    Parameters
    ----------
    language : {"en", "zh-Hant", "zh-Hans"}
        Language of every label (see :mod:`jaxcourse.messages`).
        English gives way to the reader's language where it is known
        (:func:`jaxcourse.exercises.checking.registry.reading_language`).

    Raises
    ------
    ValueError
        For a language the catalogue does not have.
    """

    widget: widgets.VBox
    #: Whether :meth:`_assemble` adds the static note and the busy cue. Explorers
    #: do: their controls invite the reader to try them, on a page where nothing
    #: can follow. The check panel's stored view is left as it was.
    static_note: ClassVar[bool] = False

    def __init__(self, language: str = "en") -> None:
        message("check", language)  # an unknown language fails here, clearly
        if language == "en":
            # An English chapter's panel or explorer, opened in a Chinese
            # edition (jaxcourse.i18n), speaks the edition's language.
            from ..checking.registry import reading_language

            language = reading_language() or "en"
        self.language = language
        # While a class is graded, displays compute nothing (no training, no
        # drawing): the grader only needs the checks.
        self.deferred = grading_mode()

    def label(self, key: str, **values: object) -> str:
        """Return the catalogue's text for ``key`` in this display's language."""
        return message(key, self.language, **values)

    def _on_change(self, action: Callable[[], object],
                   *controls: widgets.Widget) -> None:
        """Run ``action()`` when a control's value changes or a button is clicked."""
        for control in controls:
            if isinstance(control, widgets.Button):
                control.on_click(lambda _button: action())
            else:
                control.observe(lambda _change: action(), names="value")

    def _assemble(self, head: Sequence[widgets.Widget],
                  body: Sequence[widgets.Widget] = ()) -> widgets.VBox:
        """Set ``self.widget``: ``head``, the kernel-gone notice, then ``body``.

        The notice is hidden (an inline ``display: none``) unless the
        front end marks the display disconnected; where no rule applies (a
        front end without JupyterLab's classes) it simply stays hidden. With
        :attr:`static_note`, the static note (``self.static``) follows the
        notice, hidden the same way unless the view is the static book's, and
        then the busy cue (``self.cue``, see :meth:`Explorer._computing`).
        """
        notice = widgets.HTML(notice_html(self.language),
                              layout=widgets.Layout(display="none"))
        notice.add_class(NOTICE_CLASS)
        self.notice = notice
        extra: list[widgets.Widget] = []
        if self.static_note:
            self.static = widgets.HTML(static_note_html(self.language),
                                       layout=widgets.Layout(display="none"))
            self.static.add_class(STATIC_CLASS)
            self.cue = widgets.HTML(layout=widgets.Layout(display="none"))
            extra = [self.static, self.cue]
        self.widget = widgets.VBox([*head, notice, *extra, *body])
        self.widget.add_class(DISPLAY_CLASS)
        if self.static_note:
            self.widget.add_class(EXPLORER_CLASS)
        # Every HTML text of the display carries its language, now and
        # whenever a callback sets it anew.
        for part in _html_widgets(self.widget):
            part.observe(self._mark_language, names="value")
            part.value = with_language(self.language, part.value)
        return self.widget

    def _mark_language(self, change: dict) -> None:
        marked = with_language(self.language, change["new"])
        if marked != change["new"]:
            change["owner"].value = marked

    def _start(self, run: bool, action: Callable[[], object]) -> None:
        """Run ``action()`` now if asked to, unless grading defers it."""
        if run and not self.deferred:
            action()

    def deferred_id(self) -> str:
        """Name the display in its text form while grading defers it."""
        return self.label("explorer")

    def live_text(self) -> str:
        """Return the deterministic plain-text form of the live display."""
        raise NotImplementedError

    def text(self) -> str:
        """Return the plain-text form: :meth:`live_text`, or the deferral note."""
        if self.deferred:
            return message("summary_deferred", self.language, id=self.deferred_id())
        return self.live_text()

    def __repr__(self) -> str:
        return self.text()

    def _repr_mimebundle_(self, **kwargs: Any) -> dict:
        # The live widget for a notebook front end, the stable text for
        # everything else (nbval, a terminal, the grader's logs).
        data = dict(self.widget._repr_mimebundle_(**kwargs) or {})
        data["text/plain"] = self.text()
        return data


class LegendEntry:
    """A run an explorer keeps: it names itself in the figure's legend."""

    def describe(self, language: str = "en") -> str:
        """Return the legend text in ``language``."""
        raise NotImplementedError

    @property
    def label(self) -> str:
        """Legend text, in English."""
        return self.describe()


class Explorer(Display):
    """Base of the course's explorers (controls that redraw a figure or a table).

    Each explorer carries the static note (:attr:`Display.static_note`) and
    a busy cue (:meth:`_computing`).
    """

    static_note = True

    @contextlib.contextmanager
    def _computing(self, text: str, *stale: widgets.Widget) -> Iterator[None]:
        """Say ``text`` and grey ``stale`` while the block computes their successor.

        The kernel sends each change of a widget to the front end as it is
        made, so the cue and the greying are shown before a slow computation
        (a compilation of seconds) starts, and the previous choice's result is
        never read as the new one's. Once the block has run, the cue goes and
        the new result is shown plain. If it raises, the old result stays
        greyed: it still does not belong to the controls.

        Parameters
        ----------
        text : str
            What is being computed, in the display's language.
        *stale : ipywidgets.Widget
            The widgets whose content the block replaces.
        """
        # Words only: an hourglass emoji is a blank box where no emoji font is.
        self.cue.value = f"<i>{html.escape(text)}</i>"
        self.cue.layout.display = None
        for part in stale:
            part.add_class(STALE_CLASS)
        try:
            yield
        finally:
            self.cue.layout.display = "none"
        self.cue.value = ""
        for part in stale:
            part.remove_class(STALE_CLASS)

    def _runs_layout(self, action: Callable[[], object],
                     controls: Sequence[widgets.Widget], width_px: int) -> None:
        """Lay out an explorer that keeps its last few runs.

        ``controls`` (each change calls ``action``) and a Clear button (which
        calls ``self.clear``) in one row, then the figure (``self.image``,
        ``width_px`` wide) and a status line (``self.status``).
        """
        self.clear_button = clear_button(self.language)
        self.image = figure_image(width_px)
        self.status = widgets.HTML()
        self._on_change(action, *controls)
        self._on_change(self.clear, self.clear_button)
        self._assemble([controls_row(*controls, self.clear_button)],
                       [self.image, self.status])

    def _show_run(self, run: LegendEntry) -> None:
        """Keep ``run`` with the last ``self.keep`` ones, redraw, describe it."""
        self.runs = (self.runs + [run])[-self.keep:]
        self._redraw()
        self.status.value = html.escape(run.describe(self.language))

    def _redraw(self) -> None:
        raise NotImplementedError

    def clear(self) -> None:
        """Forget the earlier runs, keeping only the newest (the Clear button)."""
        self.runs = self.runs[-1:]
        self._redraw()


# ---- figures drawn for the width they are shown at --------------------------------


def use_language_font(language: str) -> None:
    """Let matplotlib draw the labels of ``language`` (a CJK font for Chinese)."""
    if language == "en":
        return
    from jaxcourse.plotting import CJK_FONTS, CJK_FONTS_SC, use_cjk_font

    if language == "zh-Hans":
        use_cjk_font(CJK_FONTS_SC, script="SC")
    else:
        use_cjk_font(CJK_FONTS)


def figure(width_px: int, height_px: int, language: str = "en") -> Any:
    """Return a matplotlib ``Figure`` of ``width_px`` × ``height_px`` CSS pixels.

    Its layout is constrained (labels fit inside), and a language other than
    English gets a font that can draw it. No pyplot state is involved, so
    nothing is shown twice in a notebook.
    """
    from matplotlib.figure import Figure

    use_language_font(language)
    return Figure(figsize=(width_px / CSS_PX_PER_INCH, height_px / CSS_PX_PER_INCH),
                  dpi=CSS_PX_PER_INCH, layout="constrained")


def css_width(fig: Any) -> int:
    """Return the CSS width, in pixels, a figure is drawn for."""
    return round(fig.get_figwidth() * CSS_PX_PER_INCH)


def png_bytes(fig: Any) -> bytes:
    """Render a ``Figure`` to PNG at :data:`PIXEL_RATIO` pixels per CSS pixel."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=CSS_PX_PER_INCH * PIXEL_RATIO)
    return buffer.getvalue()


def finish_axes(fig: Any, axes: Any, title: str, legend: bool) -> bytes:
    """Title ``axes`` and add their legend when asked; return the figure's PNG."""
    if title:
        axes.set_title(title, fontsize=10)
    if legend:
        axes.legend(fontsize=8)
    return png_bytes(fig)


def figure_image(width_px: int | None = None) -> widgets.Image:
    """Return an ``Image`` widget shown ``width_px`` CSS pixels wide.

    Without a width, a box stretches the image to its own width (a 576 px
    PNG drawn 950 px wide, its text soft); ``max_width`` lets it shrink, with
    its aspect ratio, in a narrower output. With ``width_px`` None the width
    is set by :func:`show_figure`, from the figure.
    """
    return widgets.Image(format="png", layout=widgets.Layout(
        width=None if width_px is None else f"{width_px}px", max_width="100%",
        height="auto"))


def show_figure(image: widgets.Image, fig: Any | None) -> None:
    """Show ``fig`` in ``image`` at the CSS width it was drawn for.

    ``None`` empties the image and hides it (no broken-image icon).
    """
    if fig is None:
        image.value = b""
        image.layout.display = "none"
        return
    image.value = png_bytes(fig)
    image.layout.width = f"{css_width(fig)}px"
    image.layout.display = None


# ---- controls ---------------------------------------------------------------------


def bytes_text(n: float) -> str:
    """Write a number of bytes for a panel: ``12.05 GB``, ``4.10 kB``, ``512 B``."""
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n:.0f} B"


def seconds_text(t: float) -> str:
    """Write a duration for a panel: ``7.68 s``, ``3.20 ms``, ``0.5 ns``."""
    for unit, size in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if t >= size:
            return f"{t / size:.2f} {unit}"
    return f"{t * 1e9:.1f} ns"


def _text_px(text: str) -> int:
    """Estimate a label's width in CSS pixels (13 px text; CJK glyphs are square)."""
    wide = sum(unicodedata.east_asian_width(c) in "WF" for c in text)
    return math.ceil(wide * 14 + (len(text) - wide) * 7.5) + 12


def slider_style(description: str, steps: int) -> dict[str, Any]:
    """Keyword arguments that give a slider ``STEP_PX`` of track per step.

    Parameters
    ----------
    description : str
        The slider's label (its width is measured for the layout).
    steps : int
        Number of steps between the slider's ends.

    Returns
    -------
    dict
        ``description``, ``style`` and ``layout`` for an ipywidgets slider;
        the track is at least 160 px and at most 640 px wide.
    """
    label_px = _text_px(description)
    track = min(max(steps * STEP_PX, _MIN_TRACK_PX), _MAX_TRACK_PX)
    width = label_px + track + _TRACK_MARGIN_PX + _READOUT_PX
    return {
        "description": description,
        "style": {"description_width": f"{label_px}px"},
        "layout": widgets.Layout(width=f"{width}px"),
    }


def dropdown_style(description: str, options: Sequence[object]) -> dict[str, Any]:
    """Keyword arguments that show a dropdown's label and options whole.

    ipywidgets gives a label 80 px and cuts the rest with an ellipsis
    ("global bat…"); ``description_width: initial`` lets the label take its
    own width, and the box is made as wide as the label and the longest option
    (the select shrinks first when the box is too narrow).

    Parameters
    ----------
    description : str
        The dropdown's label.
    options : sequence
        Its options (measured as ``str``).

    Returns
    -------
    dict
        ``description``, ``style`` and ``layout`` for an ipywidgets dropdown.
    """
    longest = max((_text_px(str(option)) for option in options), default=0)
    width = _text_px(description) + longest + _SELECT_EXTRA_PX
    return {"description": description, "style": {"description_width": "initial"},
            "layout": widgets.Layout(width=f"{width}px")}


def clear_button(language: str) -> widgets.Button:
    """Return an explorer's Clear button, as wide as its label."""
    return widgets.Button(description=message("clear", language),
                          layout=widgets.Layout(width="auto"))


def controls_row(*controls: widgets.Widget) -> widgets.HBox:
    """Put controls side by side, wrapping onto a new line in a narrow output."""
    return widgets.HBox(list(controls), layout=widgets.Layout(flex_flow="row wrap"))
