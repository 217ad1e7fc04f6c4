"""The figures' one convention, for every figure of the collection.

* **Method colours** are the registry's (:func:`tcclib.method.registry.colors`, declared with each
  entry): Okabe & Ito's colour-blind-safe palette, then Paul Tol's "muted" one; a method the
  registry does not know is :data:`NEUTRAL`. **Line styles** tell the class-conditioned variants
  apart where colours alone might not (:func:`line_style`): the how-to-corrupt methods solid, the
  where-to-corrupt ones dashed or dotted, the authors' flipped runs dash-dotted.
* **Verdicts** of ours against the paper (:func:`verdict`): :data:`VERDICT_COLOURS`.
* **Win matrices**: :data:`WIN_CMAP`, a diverging colour-blind-safe map (red for the row losing,
  blue for the row winning) centred at 50 %; undecided cells grey and hatched
  (:data:`UNDECIDED_COLOUR`, :data:`UNDECIDED_HATCH`); one colour bar per figure.
* **Bands and error bars** are one kind everywhere: the 95 % t-interval of the mean over seeds
  (:func:`interval`, :func:`intervals`), cut at the values the metric can take (:data:`BOUNDS`),
  and every one says so with its n (:func:`band_label`).
  The paper's own numbers are its mean ± se, labelled as such.
* **Units**: accuracy in percent (:func:`scaled`, :func:`metric_label`), AUROC as is.
* **Sizes**: ticks at :data:`TICK_SIZE` points, labels at :data:`LABEL_SIZE`, at the size shown.

Red-green colour maps (``RdYlGn`` and the like) are not used anywhere (``tests/test_style.py``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats as _st

from tcclib.method import registry

#: Okabe & Ito's colour-blind-safe palette (Color Universal Design, 2008), by name
OKABE_ITO = {
    "black": "#000000",
    "orange": "#E69F00",
    "sky blue": "#56B4E9",
    "bluish green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "reddish purple": "#CC79A7",
}
#: a colour for what is no method of the registry, for seeds' dots and for reference lines
NEUTRAL = "#888888"
#: the verdict of a cell against the paper (:func:`verdict`) -> its colour
VERDICT_COLOURS = {
    "equivalent": OKABE_ITO["blue"],
    "differs": OKABE_ITO["vermillion"],
    "undecided": "#8C8C8C",
}
#: ... and its marker, so that a verdict does not rest on colour alone (greyscale prints, colour blindness)
VERDICT_MARKERS = {"equivalent": "D", "differs": "X", "undecided": "o"}
#: the paper's mean ± se drawn behind ours (a pale yellow band)
PAPER_BAND = "#F3EAA0"
#: the heads of the head-variant comparison (``Config.head``) -> colour
HEAD_COLOURS = {
    "frozen": OKABE_ITO["blue"],
    "finetune": OKABE_ITO["orange"],
    "concat": OKABE_ITO["bluish green"],
    "probe": OKABE_ITO["reddish purple"],
}
#: the classes of a dataset, in order (the PCA figures), then matplotlib's tab20 past eight
CLASS_COLOURS = (
    OKABE_ITO["blue"],
    OKABE_ITO["orange"],
    OKABE_ITO["bluish green"],
    OKABE_ITO["vermillion"],
    OKABE_ITO["reddish purple"],
    OKABE_ITO["sky blue"],
    OKABE_ITO["black"],
    OKABE_ITO["yellow"],
)
#: the win matrices' colour map: diverging, colour-blind safe (ColorBrewer's RdBu), 50 % at its centre
WIN_CMAP = "RdBu"
UNDECIDED_COLOUR = "#D9D9D9"
UNDECIDED_HATCH = "///"
#: a win-matrix cell decided by fewer datasets than this is drawn pale (its share rests on one or two)
FEW_DECIDED = 3
#: ... under white at this opacity
FEW_DECIDED_FADE = 0.65
TICK_SIZE = 9
LABEL_SIZE = 10
#: the level of every interval drawn
LEVEL = 0.95
#: the values a metric can take, in the figures' unit (a band is cut there)
BOUNDS = {"accuracy": (0.0, 100.0), "auroc": (0.0, 1.0)}
_STYLES = {"how": ["-"], "where": ["--", ":", (0, (5, 2, 1, 2))], "published": ["-.", (0, (3, 1, 1, 1, 1, 1))]}


def colour(method: str) -> str:
    """The registry's colour of ``method`` (a variant ``method+head`` takes its method's), else :data:`NEUTRAL`."""
    colours = registry.colors()
    return colours.get(method, colours.get(str(method).split("+")[0], NEUTRAL))


def palette(methods) -> dict:
    """``{method: colour}`` for ``methods`` (:func:`colour`)."""
    return {m: colour(m) for m in methods}


def line_style(method: str):
    """The line style of ``method``: solid for the how-to-corrupt methods and the baselines;
    for the where-to-corrupt and the authors' (published) groups, one style per entry in the
    registry's order (dashed, dotted, ...; dash-dotted, ...)."""
    try:
        entry = registry.get(method)
    except Exception:  # a name the registry does not know (a variant, a stale result)
        return "-"
    styles = _STYLES.get(entry.group, ["-"])
    same = [e.name for e in registry.entries(entry.group)]
    return styles[same.index(method) % len(styles)]


def scaled(metric: str, values):
    """``values`` in the figures' unit: accuracy (a fraction in the results) in percent, AUROC as is."""
    return np.asarray(values, dtype=float) * (100.0 if metric == "accuracy" else 1.0)


def metric_label(metric: str) -> str:
    """The axis label of a metric: ``test accuracy (%)`` or ``test AUROC``."""
    return "test accuracy (%)" if metric == "accuracy" else "test AUROC" if metric == "auroc" else f"test {metric}"


def difference_unit(metric: str, amount: float = 2.0) -> str:
    """The unit of a difference of two means (of ``amount`` of them): ``points`` (``point`` for
    one) of accuracy, else the metric's name."""
    if metric == "accuracy":
        return "point" if abs(amount) == 1 else "points"
    return "AUROC" if metric == "auroc" else metric


def interval(values, level: float = LEVEL) -> tuple[float, float, float, int]:
    """``(mean, low, high, n)``: the t-interval of the mean of ``values`` (NaN dropped) at
    ``level``, ``mean ± t(1 - (1 - level) / 2, n - 1) · sd / sqrt(n)`` with the sample sd;
    ``low`` and ``high`` are NaN with fewer than two values."""
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    n = len(v)
    if n == 0:
        return np.nan, np.nan, np.nan, 0
    mean = float(v.mean())
    if n < 2:
        return mean, np.nan, np.nan, n
    half = float(_st.t.ppf(0.5 + level / 2, n - 1) * v.std(ddof=1) / np.sqrt(n))
    return mean, mean - half, mean + half, n


def intervals(frame: pd.DataFrame, by, value: str, level: float = LEVEL) -> pd.DataFrame:
    """:func:`interval` of ``value`` per group of ``by``: columns ``by``, mean, low, high, n
    (groups in order of appearance)."""
    rows = []
    for key, g in frame.groupby(by, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        rows.append((*key, *interval(g[value], level)))
    names = [by] if isinstance(by, str) else list(by)
    return pd.DataFrame(rows, columns=[*names, "mean", "low", "high", "n"])


def band_label(n, what: str = "seeds", level: float = LEVEL) -> str:
    """What a band or bar is: ``95 % interval over n = 8 seeds`` (``n = 4-8`` when it varies)."""
    ns = sorted({int(x) for x in np.atleast_1d(n) if pd.notna(x)})
    count = "?" if not ns else str(ns[0]) if len(ns) == 1 else f"{ns[0]}-{ns[-1]}"
    return f"{level:.0%} interval over n = {count} {what}".replace("%", " %")


def verdict(equivalent: bool, differ: bool) -> str:
    """A cell against the paper: ``equivalent`` (TOST within the margin, whether or not Welch
    also finds a difference), else ``differs`` (Welch p < 0.05), else ``undecided``."""
    return "equivalent" if bool(equivalent) else "differs" if bool(differ) else "undecided"


def text_colour(rgba) -> str:
    """Black or white, whichever reads better on the colour ``rgba`` (its relative luminance)."""
    r, g, b = (float(c) for c in rgba[:3])
    lum = 0.2126 * r + 0.7152 * g + 0.0722 * b
    return "black" if lum > 0.45 else "white"
