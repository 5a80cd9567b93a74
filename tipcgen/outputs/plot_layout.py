"""Where a report picture's axes sit: margins measured from the picture's own text in one pass, then one draw.

matplotlib's constrained layout draws a figure twice to place its axes (once to measure every artist, once to
paint): a quarter of the pictures' CPU (bench/bench_report.py). The report's pictures have one axes each, whose
text outside it is known before drawing (the tick labels and the axes' offset texts, the axis labels, a title),
so the margins are those texts' measured sizes plus matplotlib's own paddings, and the figure is drawn once; a
text inside the axes that would end past the picture's edge (a bar's value) narrows the axes.
"""
from __future__ import annotations

PAD = 0.06  # inches: around the figure's edge, and between an axis label and the tick labels it sits beside


def fit(fig, ax, *, tick_labels: list[str] | None = None, tick_size: float | None = None, title: str = "", title_size: float = 10,
        xlabel: str = "", ylabel: str = "") -> None:
    """Set the margins of fig (one axes, ax) so that its y tick labels (tick_labels at tick_size points; None: the
    labels the axis's formatter gives, at matplotlib's default size), the y and x axis labels, the x tick labels
    and the title (set here, centred on the picture) fit, as constrained layout would place them; text in the axes
    that would end past the right edge (a bar's value) narrows the axes.
    The picture's size is not changed; an axes never gets less than a tenth of it."""
    from matplotlib import rcParams
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.font_manager import FontProperties

    renderer = FigureCanvasAgg(fig).get_renderer()
    dpi = fig.dpi

    def size(text: str, points: float) -> tuple[float, float]:
        """(width, height) in inches of text as matplotlib lays it out: every line, the line spacing included."""
        if not text:
            return 0.0, 0.0
        lines = text.replace(r"\$", "$").split("\n")
        prop = FontProperties(size=points)
        widths = [renderer.get_text_width_height_descent(line or " ", prop, ismath=False)[0] for line in lines]
        _, line_height, _ = renderer.get_text_width_height_descent("lp", prop, ismath=False)
        return max(widths) / dpi, line_height * (1 + 1.2 * (len(lines) - 1)) / dpi  # matplotlib's line spacing: 1.2

    tick_size = _points(rcParams["ytick.labelsize"] if tick_size is None else tick_size)
    label_size = _points(rcParams["axes.labelsize"])
    x_tick_size = _points(rcParams["xtick.labelsize"])
    tick_room = (rcParams["ytick.major.size"] + rcParams["ytick.major.pad"]) / 72
    width, height = fig.get_size_inches()
    x_ticks, x_offset = _ticks(ax.xaxis)
    y_ticks, y_offset = _ticks(ax.yaxis)
    if tick_labels is None:
        tick_labels = [label for _, label in y_ticks]
    low, high = sorted(ax.get_xlim())
    x_last = max(((value, label) for value, label in x_ticks if low <= value <= high), default=(0, "0"))[1]
    left = PAD + tick_room + max((size(label, tick_size)[0] for label in tick_labels), default=size("0.0", tick_size)[0])
    if ylabel:
        left += size(ylabel, label_size)[1] + PAD
    # The x offset text ("1e6") sits right-aligned under the tick labels, the y one above the axes' top left.
    bottom = PAD + tick_room + size("0", x_tick_size)[1] + size(x_offset, x_tick_size)[1] \
        + (size(xlabel, label_size)[1] + PAD if xlabel else 0)
    top = PAD + max(size(title, title_size)[1] + rcParams["axes.titlepad"] / 72 if title else 0,
                    size(y_offset, tick_size)[1] + PAD)
    if title:  # centred on the picture, not on the axes: a long name on the left never pushes it past the edge
        fig.suptitle(title, fontsize=title_size, y=1 - PAD / height, va="top")
    right = PAD + size(x_last, x_tick_size)[0] / 2  # the rightmost label drawn: centred on its tick, maybe the edge
    left, bottom = min(left / width, 0.9), min(bottom / height, 0.9)
    right, top = max(1 - right / width, left + 0.1), max(1 - top / height, bottom + 0.1)
    fig.subplots_adjust(left=left, right=right, bottom=bottom, top=top)
    # Text in the axes (a bar's value at its end) may reach past the figure's right edge: the axes are narrowed
    # so that each such text ends inside, its place scaling with the axes' width (x = x0 + share * width).
    x0, axes_width, limit = ax.bbox.x0, ax.bbox.width, (width - PAD) * dpi
    narrowest = axes_width
    for text in ax.texts:
        box = text.get_window_extent(renderer)
        share = (box.x0 - x0) / axes_width if axes_width > 0 else 0
        if box.x1 > limit and share > 0:
            narrowest = min(narrowest, (limit - box.width - x0) / share)
    if narrowest < axes_width:
        fig.subplots_adjust(right=max(left + (narrowest / dpi) / width, left + 0.1))


def _ticks(axis) -> tuple[list[tuple[float, str]], str]:
    """(location, label) of each of axis's major ticks (those past the limits too, as the axis makes them), and
    its offset text ("1e6", or "")."""
    locations = list(axis.get_majorticklocs())
    formatter = axis.get_major_formatter()
    labels = formatter.format_ticks(locations)
    return list(zip(locations, labels)), formatter.get_offset() if hasattr(formatter, "get_offset") else ""


def _points(value) -> float:
    """A font size from rcParams ('medium', 'large', 10) in points."""
    from matplotlib.font_manager import FontProperties

    return FontProperties(size=value).get_size_in_points()
