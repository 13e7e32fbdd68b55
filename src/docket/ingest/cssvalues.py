"""CSS values that decide visibility, read from tinycss2 tokens: lengths (with `calc()`,
`min()`, `max()`, `clamp()`), numbers, colours (tinycss2's CSS Color 4 parser), transforms,
clip shapes, and whether a browser would accept a declaration at all (`valid`). A reader returns
None for what it cannot read; the visibility walk decides what None means for each property (for
what can hide text, "not known to be shown": it fails closed).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import tinycss2
from tinycss2 import ast

try:  # CSS Color 4 (hwb, lab, oklch, color()) when the installed tinycss2 has it
    from tinycss2 import color4 as _color
except ImportError:  # pragma: no cover - tinycss2 < 1.3
    from tinycss2 import color3 as _color  # type: ignore[no-redef]

RGBA = tuple[float, float, float, float]
WHITE: RGBA = (1.0, 1.0, 1.0, 1.0)
BLACK: RGBA = (0.0, 0.0, 0.0, 1.0)

_ABS = {"px": 1.0, "pt": 4 / 3, "pc": 16.0, "in": 96.0, "cm": 96 / 2.54, "mm": 96 / 25.4, "q": 96 / 101.6}


@dataclass(frozen=True)
class Ctx:
    """What relative lengths are relative to: the font size (em), the root's (rem), the
    percentage base, the viewport."""

    em: float = 16.0
    rem: float = 16.0
    percent: float | None = None  # px per 100%; None: percentages cannot be resolved
    vw: float = 1280.0
    vh: float = 800.0


def significant(tokens: Sequence[Any]) -> list[Any]:
    return [t for t in tokens if not isinstance(t, (ast.WhitespaceToken, ast.Comment))]


def keyword(tokens: Sequence[Any]) -> str | None:
    """The value when it is a single identifier (lower-cased)."""
    sig = significant(tokens)
    if len(sig) == 1 and isinstance(sig[0], ast.IdentToken):
        return str(sig[0].lower_value)
    return None


def _unit_px(unit: str, ctx: Ctx) -> float | None:
    if unit in _ABS:
        return _ABS[unit]
    return {"em": ctx.em, "rem": ctx.rem, "ex": ctx.em / 2, "ch": ctx.em / 2, "cap": ctx.em * 0.7, "ic": ctx.em,
            "lh": ctx.em * 1.2, "rlh": ctx.rem * 1.2, "rex": ctx.rem / 2, "rch": ctx.rem / 2,
            "vw": ctx.vw / 100, "vh": ctx.vh / 100, "vi": ctx.vw / 100, "vb": ctx.vh / 100,
            "vmin": min(ctx.vw, ctx.vh) / 100, "vmax": max(ctx.vw, ctx.vh) / 100,
            "svw": ctx.vw / 100, "lvw": ctx.vw / 100, "dvw": ctx.vw / 100,
            "svh": ctx.vh / 100, "lvh": ctx.vh / 100, "dvh": ctx.vh / 100,
            "cqw": ctx.vw / 100, "cqh": ctx.vh / 100, "cqi": ctx.vw / 100, "cqb": ctx.vh / 100}.get(unit)


# A value is (number, kind): kind "px" for lengths, "num" for plain numbers, "deg" for angles.
_Val = tuple[float, str]


def _atom(t: Any, ctx: Ctx) -> _Val | None:
    if isinstance(t, ast.NumberToken):
        return (float(t.value), "num")
    if isinstance(t, ast.PercentageToken):
        if ctx.percent is None:
            return None
        return (float(t.value) * ctx.percent / 100, "px")
    if isinstance(t, ast.DimensionToken):
        unit = t.lower_unit
        deg = {"deg": 1.0, "rad": 180 / math.pi, "grad": 0.9, "turn": 360.0}.get(unit)
        if deg is not None:
            return (float(t.value) * deg, "deg")
        scale = _unit_px(unit, ctx)
        return (float(t.value) * scale, "px") if scale is not None else None
    if isinstance(t, ast.IdentToken):
        named = {"pi": math.pi, "e": math.e, "infinity": math.inf, "-infinity": -math.inf}.get(t.lower_value)
        return (named, "num") if named is not None else None
    if isinstance(t, ast.ParenthesesBlock):
        return _expr(significant(t.content), ctx)
    if isinstance(t, ast.FunctionBlock):
        return _function(t, ctx)
    return None


def _function(t: Any, ctx: Ctx) -> _Val | None:
    name = t.lower_name
    args = [significant(a) for a in _split_args(t.arguments)]
    if name == "calc" and len(args) == 1:
        return _expr(args[0], ctx)
    vals = [_expr(a, ctx) for a in args]
    if any(v is None for v in vals) or not vals:
        return None
    nums = [v for v in vals if v is not None]
    kind = nums[0][1]
    xs = [v[0] for v in nums]
    if name == "min":
        return (min(xs), kind)
    if name == "max":
        return (max(xs), kind)
    if name == "clamp" and len(xs) == 3:
        return (max(xs[0], min(xs[1], xs[2])), kind)
    if name == "abs" and len(xs) == 1:
        return (abs(xs[0]), kind)
    return None


def _split_args(tokens: Sequence[Any]) -> list[list[Any]]:
    parts: list[list[Any]] = [[]]
    for t in tokens:
        if isinstance(t, ast.LiteralToken) and t.value == ",":
            parts.append([])
        else:
            parts[-1].append(t)
    return parts


def _expr(toks: list[Any], ctx: Ctx) -> _Val | None:
    """+ - * / over atoms, with the usual precedence."""
    terms: list[_Val] = []
    ops: list[str] = []
    cur: _Val | None = None
    pending: str | None = None
    sign = 1.0
    i = 0
    while i < len(toks):
        t = toks[i]
        if isinstance(t, ast.LiteralToken) and t.value in "+-" and cur is not None:
            terms.append(cur)
            ops.append(t.value)
            cur = None
        elif isinstance(t, ast.LiteralToken) and t.value in "*/":
            pending = t.value
        elif isinstance(t, ast.LiteralToken) and t.value == "-" and cur is None:
            sign = -sign
        else:
            v = _atom(t, ctx)
            if v is None:
                return None
            v = (v[0] * sign, v[1])
            sign = 1.0
            if cur is None:
                cur = v
            elif pending == "*":
                cur = _mul(cur, v)
                pending = None
            elif pending == "/":
                if v[1] != "num" or v[0] == 0:
                    return None
                cur = (cur[0] / v[0], cur[1])
                pending = None
            elif v[0] < 0 and pending is None:  # "10px -5px" reads as 10px - 5px
                terms.append(cur)
                ops.append("+")
                cur = v
            else:
                return None
            if cur is None:
                return None
        i += 1
    if cur is None:
        return None
    terms.append(cur)
    total = terms[0]
    for op, term in zip(ops, terms[1:], strict=False):
        if term[1] != total[1] and not (term[0] == 0 or total[0] == 0):
            return None
        kind = total[1] if total[0] != 0 else term[1]
        total = (total[0] + term[0] if op == "+" else total[0] - term[0], kind)
    return total


def _mul(a: _Val, b: _Val) -> _Val | None:
    if a[1] == "num":
        return (a[0] * b[0], b[1])
    if b[1] == "num":
        return (a[0] * b[0], a[1])
    return None


def length(tokens: Sequence[Any] | Any, ctx: Ctx) -> float | None:
    """A length in px (unitless 0 included), or None."""
    sig = significant(tokens) if isinstance(tokens, (list, tuple)) else [tokens]
    if len(sig) != 1:
        return None
    v = _atom(sig[0], ctx)
    if v is None:
        return None
    if v[1] == "num":
        return 0.0 if v[0] == 0 else None
    return v[0] if v[1] == "px" else None


def number(tokens: Sequence[Any] | Any, ctx: Ctx | None = None) -> float | None:
    """A plain number; a percentage as a fraction (`50%` -> 0.5)."""
    sig = significant(tokens) if isinstance(tokens, (list, tuple)) else [tokens]
    if len(sig) != 1:
        return None
    t = sig[0]
    if isinstance(t, ast.PercentageToken):
        return float(t.value) / 100
    v = _atom(t, Ctx(percent=1.0) if ctx is None else ctx)
    if v is None:
        return None
    return v[0] if v[1] == "num" else None


def angle(t: Any) -> float | None:
    v = _atom(t, Ctx())
    if v is None:
        return None
    return v[0] if v[1] == "deg" or (v[1] == "num" and v[0] == 0) else None


# -- colours -----------------------------------------------------------------------------------

SYSTEM_COLORS = {"canvas": WHITE, "canvastext": BLACK, "window": WHITE, "windowtext": BLACK,
                 "field": WHITE, "fieldtext": BLACK, "buttonface": (0.94, 0.94, 0.94, 1.0),
                 "buttontext": BLACK, "linktext": (0.0, 0.0, 0.933, 1.0), "graytext": (0.43, 0.43, 0.43, 1.0),
                 "highlight": (0.0, 0.47, 0.84, 1.0), "highlighttext": WHITE, "mark": (1.0, 1.0, 0.0, 1.0),
                 "marktext": BLACK}


def color(tokens: Sequence[Any] | Any, current: RGBA) -> RGBA | None:
    """An sRGB colour with alpha; `currentcolor` is `current`."""
    sig = significant(tokens) if isinstance(tokens, (list, tuple)) else [tokens]
    if len(sig) != 1:
        return None
    t = sig[0]
    if isinstance(t, ast.IdentToken) and t.lower_value in SYSTEM_COLORS:
        return SYSTEM_COLORS[t.lower_value]
    if isinstance(t, ast.FunctionBlock) and t.lower_name in _MORE_COLOURS:
        return _MORE_COLOURS[t.lower_name](t, current)
    try:
        c = _color.parse_color(t)
    except Exception:  # noqa: BLE001 - a colour function tinycss2 cannot read
        return None
    if c is None:
        return None
    if c == "currentcolor" or (isinstance(c, str) and c.lower() == "currentcolor"):
        return current
    to = getattr(c, "to", None)
    if callable(to):
        try:
            s = to("srgb")
        except Exception:  # noqa: BLE001
            return None
        r, g, b = (min(1.0, max(0.0, float(x if x == x else 0.0))) for x in s.coordinates)
        return (r, g, b, float(s.alpha))
    r, g, b, a = c  # color3's RGBA tuple
    return (float(r), float(g), float(b), float(a))


#: colour functions a browser knows; one docket cannot compute makes the text's colour unknown
COLOUR_FUNCTIONS = frozenset({"rgb", "rgba", "hsl", "hsla", "hwb", "lab", "lch", "oklab", "oklch", "color",
                              "color-mix", "light-dark", "device-cmyk", "contrast-color", "-webkit-gradient"})


def _channels(t: Any) -> tuple[list[Any], float] | None:
    """The channel tokens of a space-separated colour function and its alpha (`/ a`)."""
    sig = significant(t.arguments)
    if any(isinstance(x, ast.IdentToken) and x.lower_value == "from" for x in sig):
        return None  # relative colour syntax: not computed here
    alpha = 1.0
    if any(isinstance(x, ast.LiteralToken) and x.value == "/" for x in sig):
        at = next(i for i, x in enumerate(sig) if isinstance(x, ast.LiteralToken) and x.value == "/")
        a = sig[at + 1:]
        if len(a) != 1:
            return None
        if isinstance(a[0], ast.PercentageToken):
            alpha = float(a[0].value) / 100
        elif isinstance(a[0], ast.NumberToken):
            alpha = float(a[0].value)
        elif not (isinstance(a[0], ast.IdentToken) and a[0].lower_value == "none"):
            return None
        sig = sig[:at]
    if len(sig) != 3:
        return None
    return sig, max(0.0, min(1.0, alpha))


def _num(x: Any, hundred: float) -> float | None:
    if isinstance(x, ast.NumberToken):
        return float(x.value)
    if isinstance(x, ast.PercentageToken):
        return float(x.value) / 100 * hundred
    if isinstance(x, ast.IdentToken) and x.lower_value == "none":
        return 0.0
    if isinstance(x, ast.DimensionToken):
        return angle(x)
    return None


def _encode(lin: tuple[float, float, float], alpha: float) -> RGBA:
    def ch(v: float) -> float:
        v = max(0.0, min(1.0, v))
        return 12.92 * v if v <= 0.0031308 else 1.055 * v ** (1 / 2.4) - 0.055

    return (ch(lin[0]), ch(lin[1]), ch(lin[2]), alpha)


def _oklab_rgb(L: float, a: float, b: float, alpha: float) -> RGBA:
    l_ = (L + 0.3963377774 * a + 0.2158037573 * b) ** 3
    m_ = (L - 0.1055613458 * a - 0.0638541728 * b) ** 3
    s_ = (L - 0.0894841775 * a - 1.2914855480 * b) ** 3
    return _encode((4.0767416621 * l_ - 3.3077115913 * m_ + 0.2309699292 * s_,
                    -1.2684380046 * l_ + 2.6097574011 * m_ - 0.3413193965 * s_,
                    -0.0041960863 * l_ - 0.7034186147 * m_ + 1.7076147010 * s_), alpha)


def _lab_rgb(L: float, a: float, b: float, alpha: float) -> RGBA:
    eps, kappa = 216 / 24389, 24389 / 27
    fy = (L + 16) / 116
    fx, fz = fy + a / 500, fy - b / 200

    def inv(f: float) -> float:
        return f ** 3 if f ** 3 > eps else (116 * f - 16) / kappa

    x, y, z = inv(fx) * 0.96422, (fy ** 3 if L > kappa * eps else L / kappa), inv(fz) * 0.82521
    return _encode((3.1341359569958707 * x - 1.6173863321612538 * y - 0.4906619460083532 * z,
                    -0.978795502912089 * x + 1.916254567259524 * y + 0.03344273116131949 * z,
                    0.07195537988411677 * x - 0.2289768264158322 * y + 1.405386058324125 * z), alpha)


def _space_colour(t: Any, current: RGBA) -> RGBA | None:
    """lab(), lch(), oklab(), oklch() to sRGB (CSS Color 4's conversions)."""
    got = _channels(t)
    if got is None:
        return None
    (x, y, z), alpha = got
    name = t.lower_name
    scale = {"lab": (100, 125, 125), "lch": (100, 150, 1), "oklab": (1, 0.4, 0.4), "oklch": (1, 0.4, 1)}[name]
    L, c1, c2 = _num(x, scale[0]), _num(y, scale[1]), _num(z, scale[2])
    if L is None or c1 is None or c2 is None:
        return None
    if name in ("lch", "oklch"):
        c1, c2 = c1 * math.cos(math.radians(c2)), c1 * math.sin(math.radians(c2))
    return _lab_rgb(L, c1, c2, alpha) if name in ("lab", "lch") else _oklab_rgb(L, c1, c2, alpha)


def _light_dark(t: Any, current: RGBA) -> RGBA | None:
    """`light-dark(a, b)`: the page is read in the light scheme."""
    args = _split_args(t.arguments)
    return color(args[0], current) if len(args) == 2 else None


def _mix(t: Any, current: RGBA) -> RGBA | None:
    """`color-mix(in <space>, a p%, b q%)`, mixed in sRGB (close enough to judge contrast)."""
    args = _split_args(t.arguments)
    if len(args) != 3:
        return None
    parts: list[tuple[RGBA, float | None]] = []
    for arg in args[1:]:
        sig = significant(arg)
        pct = next((float(x.value) / 100 for x in sig if isinstance(x, ast.PercentageToken)), None)
        rest = [x for x in sig if not isinstance(x, ast.PercentageToken)]
        c = color(rest, current)
        if c is None:
            return None
        parts.append((c, pct))
    (a, p), (b, q) = parts
    if p is None and q is None:
        p, q = 0.5, 0.5
    p = 1 - (q or 0.0) if p is None else p
    q = 1 - p if q is None else q
    total = p + q
    if total <= 0:
        return None
    w = p / total
    mixed = tuple(a[i] * w + b[i] * (1 - w) for i in range(4))
    return (mixed[0], mixed[1], mixed[2], mixed[3] * min(1.0, total))


_MORE_COLOURS = {"lab": _space_colour, "lch": _space_colour, "oklab": _space_colour, "oklch": _space_colour,
                 "light-dark": _light_dark, "color-mix": _mix}


def over(top: RGBA, below: RGBA) -> RGBA:
    """`top` painted over an opaque `below`."""
    a = top[3]
    return (top[0] * a + below[0] * (1 - a), top[1] * a + below[1] * (1 - a), top[2] * a + below[2] * (1 - a), 1.0)


def _lum(c: RGBA) -> float:
    def ch(v: float) -> float:
        return v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4

    return 0.2126 * ch(c[0]) + 0.7152 * ch(c[1]) + 0.0722 * ch(c[2])


def contrast(a: RGBA, b: RGBA) -> float:
    """The WCAG contrast ratio of two opaque colours: 1 (same) to 21 (black on white)."""
    la, lb = _lum(a), _lum(b)
    hi, lo = max(la, lb), min(la, lb)
    return (hi + 0.05) / (lo + 0.05)


def background(tokens: Sequence[Any], current: RGBA) -> tuple[RGBA | None, str]:
    """The colour and the image kind of a `background` shorthand: ("none" | "uniform" | "other")."""
    col: RGBA | None = None
    image = "none"
    for t in significant(tokens):
        if isinstance(t, ast.LiteralToken) and t.value == ",":
            col = None  # only the last layer carries the colour
            continue
        kind, uni = image_of(t, current)
        if kind != "none":
            if kind == "uniform" and uni is not None:
                col = over(uni, col) if col is not None and uni[3] < 1 else uni
                image = image if image == "other" else "uniform"
            else:
                image = "other"
            continue
        c = color(t, current)
        if c is not None:
            col = c
    return col, image


def image_of(t: Any, current: RGBA) -> tuple[str, RGBA | None]:
    """("none", None) for no image, ("uniform", colour) for a gradient of one colour, else ("other", None)."""
    if isinstance(t, ast.URLToken) or (isinstance(t, ast.FunctionBlock) and t.lower_name in ("url", "image-set", "-webkit-image-set", "image", "element", "cross-fade", "paint")):
        return ("other", None)
    if isinstance(t, ast.FunctionBlock) and "gradient" in t.lower_name:
        stops: list[RGBA] = []
        for part in _split_args(t.arguments):
            for tok in significant(part):
                c = color(tok, current)
                if c is not None:
                    stops.append(c)
        if stops and all(max(abs(x - y) for x, y in zip(s, stops[0], strict=True)) < 0.02 for s in stops):
            return ("uniform", stops[0])
        return ("other", None)
    return ("none", None)


# -- geometry ----------------------------------------------------------------------------------

Matrix = tuple[float, float, float, float, float, float]  # a b c d e f (CSS matrix())
IDENTITY: Matrix = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)


def _compose(m: Matrix, n: Matrix) -> Matrix:
    a, b, c, d, e, f = m
    a2, b2, c2, d2, e2, f2 = n
    return (a * a2 + c * b2, b * a2 + d * b2, a * c2 + c * d2, b * c2 + d * d2, a * e2 + c * f2 + e, b * e2 + d * f2 + f)


def transform(tokens: Sequence[Any], ctx: Ctx) -> Matrix | None:
    """A `transform` list as one 2-D matrix (3-D rotations and scales projected flat)."""
    m = IDENTITY
    sig = significant(tokens)
    if keyword(tokens) == "none":
        return IDENTITY
    for t in sig:
        if not isinstance(t, ast.FunctionBlock):
            return None
        n = _transform_fn(t, ctx)
        if n is None:
            return None
        m = _compose(m, n)
    return m


def _transform_fn(t: Any, ctx: Ctx) -> Matrix | None:
    name = t.lower_name
    args = [significant(a) for a in _split_args(t.arguments)]
    flat = [tok for a in args for tok in a]
    if name in ("scale", "scale3d", "scalex", "scaley", "scalez"):
        nums = [number(x) for x in flat]
        if any(v is None for v in nums) or not nums:
            return None
        vals = [float(v) for v in nums if v is not None]
        if name == "scalex":
            return (vals[0], 0, 0, 1, 0, 0)
        if name == "scaley":
            return (1, 0, 0, vals[0], 0, 0)
        if name == "scalez":
            return IDENTITY
        sx = vals[0]
        sy = vals[1] if len(vals) > 1 else sx
        return (sx, 0, 0, sy, 0, 0)
    if name in ("translate", "translate3d", "translatex", "translatey", "translatez"):
        lens = [v if v is not None else 0.0 for v in (length([x], ctx) for x in flat)]
        if name == "translatex":
            return (1, 0, 0, 1, lens[0] if lens else 0.0, 0)
        if name == "translatey":
            return (1, 0, 0, 1, 0, lens[0] if lens else 0.0)
        if name == "translatez":
            return IDENTITY
        return (1, 0, 0, 1, lens[0] if lens else 0.0, lens[1] if len(lens) > 1 else 0.0)
    if name in ("matrix", "matrix3d"):
        nums = [number(x) for x in flat]
        if any(v is None for v in nums):
            return None
        v = [float(x) for x in nums if x is not None]
        if name == "matrix" and len(v) == 6:
            return (v[0], v[1], v[2], v[3], v[4], v[5])
        if name == "matrix3d" and len(v) == 16:
            return (v[0], v[1], v[4], v[5], v[12], v[13])
        return None
    if name in ("rotate", "rotatez"):
        a = angle(flat[0]) if flat else None
        if a is None:
            return None
        r = math.radians(a)
        return (math.cos(r), math.sin(r), -math.sin(r), math.cos(r), 0, 0)
    if name in ("rotatex", "rotatey"):
        a = angle(flat[0]) if flat else None
        if a is None:
            return None
        k = math.cos(math.radians(a))
        return (1, 0, 0, k, 0, 0) if name == "rotatex" else (k, 0, 0, 1, 0, 0)
    if name == "rotate3d" and len(flat) == 4:
        nums = [number(x) for x in flat[:3]]
        a = angle(flat[3])
        if a is None or any(v is None for v in nums):
            return None
        x, y, _z = (float(v) for v in nums if v is not None)
        k = math.cos(math.radians(a))
        if abs(x) > 1e-9 and abs(y) < 1e-9:
            return (1, 0, 0, k, 0, 0)
        if abs(y) > 1e-9 and abs(x) < 1e-9:
            return (k, 0, 0, 1, 0, 0)
        return IDENTITY
    if name in ("skew", "skewx", "skewy"):
        angles = [angle(x) for x in flat]
        if any(v is None for v in angles) or not angles:
            return None
        ax = float(angles[0] or 0.0) if name != "skewy" else 0.0
        ay = float(angles[1] or 0.0) if name == "skew" and len(angles) > 1 else (float(angles[0] or 0.0) if name == "skewy" else 0.0)
        tx, ty = math.tan(math.radians(ax)), math.tan(math.radians(ay))
        if abs(tx) > 1e6 or abs(ty) > 1e6:
            return (1, 0, 0, 0, 0, 0)  # 90 degrees: flattened to a line
        return (1, ty, tx, 1, 0, 0)
    if name == "perspective":
        return IDENTITY
    return None


def clip_rect_area(tokens: Sequence[Any], ctx: Ctx) -> tuple[float, float] | None:
    """(width, height) left visible by `clip: rect(top, right, bottom, left)`; None for auto or unknown."""
    sig = significant(tokens)
    if len(sig) != 1 or not isinstance(sig[0], ast.FunctionBlock) or sig[0].lower_name != "rect":
        return None
    vals = [x for x in significant(sig[0].arguments) if not (isinstance(x, ast.LiteralToken) and x.value == ",")]
    if len(vals) != 4:
        return None
    nums = [None if isinstance(v, ast.IdentToken) and v.lower_value == "auto" else length([v], ctx) for v in vals]
    top, right, bottom, left = nums
    w = right - left if right is not None and left is not None else None
    h = bottom - top if bottom is not None and top is not None else None
    return (w if w is not None else math.inf, h if h is not None else math.inf)


def clip_path_empty(tokens: Sequence[Any], ctx: Ctx) -> bool:
    """Does a `clip-path` shape leave (almost) nothing: inset(50%), circle(0), a flat polygon...?"""
    for t in significant(tokens):
        if not isinstance(t, ast.FunctionBlock):
            continue
        name = t.lower_name
        pct = Ctx(em=ctx.em, rem=ctx.rem, percent=100.0, vw=ctx.vw, vh=ctx.vh)  # lengths in "percent of the box"
        if name == "inset":
            parts = significant(t.arguments)
            cut = [i for i, x in enumerate(parts) if isinstance(x, ast.IdentToken) and x.lower_value == "round"]
            parts = parts[: cut[0]] if cut else parts
            vals = [length([x], pct) for x in parts]
            if not vals or any(v is None for v in vals):
                continue
            v = [float(x) for x in vals if x is not None]
            top = v[0]
            right = v[1] if len(v) > 1 else top
            bottom = v[2] if len(v) > 2 else top
            left = v[3] if len(v) > 3 else right
            if top + bottom >= 99.0 or left + right >= 99.0:
                return True
            if any(isinstance(x, ast.DimensionToken) for x in parts) and (top + bottom >= 5000 or left + right >= 5000):
                return True
        elif name in ("circle", "ellipse"):
            parts = significant(t.arguments)
            radii: list[float] = []
            for x in parts:
                if isinstance(x, ast.IdentToken) and x.lower_value == "at":
                    break
                r = length([x], pct)
                if r is not None:
                    radii.append(r)
            if radii and min(radii) <= 0.5:
                return True
        elif name == "polygon":
            pts: list[tuple[float, float]] = []
            for part in _split_args(t.arguments):
                xy = [length([x], pct) for x in significant(part) if not isinstance(x, ast.IdentToken)]
                if len(xy) == 2 and xy[0] is not None and xy[1] is not None:
                    pts.append((xy[0], xy[1]))
                elif significant(part):
                    return False
            area = abs(sum(x1 * y2 - x2 * y1 for (x1, y1), (x2, y2) in zip(pts, pts[1:] + pts[:1], strict=True))) / 2
            if area <= 1.0:
                return True
        elif name == "rect":
            box = clip_rect_area([t], pct)
            if box is not None and (box[0] <= 1 or box[1] <= 1):
                return True
        elif name == "xywh":
            vals = [length([x], pct) for x in significant(t.arguments)[:4]]
            if len(vals) == 4 and vals[2] is not None and vals[3] is not None and (vals[2] <= 1 or vals[3] <= 1):
                return True
    return False


def serialize(tokens: Sequence[Any]) -> str:
    return str(tinycss2.serialize(tokens)).strip()


# -- what a browser accepts: an invalid declaration is dropped and the one before it applies --

_DISPLAY_WORDS = frozenset(
    "none block inline inline-block flex inline-flex grid inline-grid table inline-table table-row-group "
    "table-header-group table-footer-group table-row table-cell table-column-group table-column table-caption "
    "list-item contents flow flow-root run-in ruby ruby-base ruby-text ruby-base-container ruby-text-container "
    "math -webkit-box -webkit-inline-box -webkit-flex -webkit-inline-flex masonry inline-masonry "
    "grid-lanes inline-grid-lanes".split())
_KEYWORDS = {
    "visibility": frozenset({"visible", "hidden", "collapse"}),
    "position": frozenset({"static", "relative", "absolute", "fixed", "sticky", "-webkit-sticky"}),
    "content-visibility": frozenset({"visible", "hidden", "auto"}),
    "float": frozenset({"left", "right", "none", "inline-start", "inline-end"}),
    "-webkit-text-security": frozenset({"none", "disc", "circle", "square"}),
    "mix-blend-mode": frozenset({"normal", "multiply", "screen", "overlay", "darken", "lighten", "color-dodge",
                                 "color-burn", "hard-light", "soft-light", "difference", "exclusion", "hue",
                                 "saturation", "color", "luminosity", "plus-darker", "plus-lighter"}),
}
_WIDE_WORDS = frozenset({"inherit", "initial", "unset", "revert", "revert-layer"})
_MATH = frozenset({"calc", "min", "max", "clamp", "round", "mod", "rem", "abs", "sign", "sin", "cos", "tan", "asin",
                   "acos", "atan", "atan2", "pow", "sqrt", "hypot", "log", "exp", "-webkit-calc", "env", "attr"})
_LENGTHS = frozenset("top left right bottom width height max-width max-height min-width min-height text-indent "
                     "margin-top margin-left margin-right margin-bottom font-size line-height letter-spacing".split())


def _has_var(tokens: Sequence[Any]) -> bool:
    stack = list(tokens)
    while stack:
        t = stack.pop()
        if isinstance(t, ast.FunctionBlock):
            if t.lower_name == "var":
                return True
            stack.extend(t.arguments)
        elif isinstance(getattr(t, "content", None), list):
            stack.extend(t.content)
    return False


def valid(name: str, tokens: Sequence[Any]) -> bool:
    """Would a browser accept this declaration? Checked for the properties whose value docket
    reads as keywords, numbers, lengths or colours; `var()` is resolved later, so it passes."""
    sig = significant(tokens)
    if not sig:
        return False
    if _has_var(sig) or (len(sig) == 1 and isinstance(sig[0], ast.IdentToken) and sig[0].lower_value in _WIDE_WORDS):
        return True
    if name == "display":
        return all(isinstance(t, ast.IdentToken) and t.lower_value in _DISPLAY_WORDS for t in sig) and len(sig) <= 3
    if name in _KEYWORDS:
        return len(sig) == 1 and isinstance(sig[0], ast.IdentToken) and sig[0].lower_value in _KEYWORDS[name]
    if name == "opacity":
        t = sig[0]
        return len(sig) == 1 and (isinstance(t, (ast.NumberToken, ast.PercentageToken)) or
                                  (isinstance(t, ast.FunctionBlock) and t.lower_name in _MATH))
    if name in ("color", "background-color", "-webkit-text-fill-color"):
        t = sig[0]
        if len(sig) != 1:
            return False
        if isinstance(t, ast.FunctionBlock):
            return t.lower_name in COLOUR_FUNCTIONS
        return color([t], BLACK) is not None or (isinstance(t, ast.IdentToken) and t.lower_value == "currentcolor")
    if name in _LENGTHS:
        for t in sig:
            if isinstance(t, (ast.DimensionToken, ast.PercentageToken, ast.NumberToken)):
                continue
            if isinstance(t, ast.FunctionBlock) and t.lower_name in _MATH | {"fit-content"}:
                continue
            if isinstance(t, ast.IdentToken):
                continue  # auto, none, normal, keywords of font-size, anchor()...: read by each reader
            return False
        return len(sig) <= (3 if name == "text-indent" else 1)
    return True
