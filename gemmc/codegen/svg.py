"""Pictures of the plan: one planned kernel drawn as SVG text (`gemmc inspect --svg`, `CompiledKernel.svg()`).

Every problem's C is a rectangle, all at one scale, in a grid of problems; its cells (gemmc/families/cells.py: the
work list's tiles, or the row tiles a TSM2 grid maps) are coloured by kind (the tile variant, or the pass) and
labelled by the block that computes them. Tiles that one block computes one after another carry the same label and a
frame (batching, paper 003); the mix of tile sizes over the batch (paper 000's load-balanced tiling) shows as the mix
of colours. Where cells would be too small to see (a batch of 1024 problems, a 16384^2 GEMM), neighbouring cells are
drawn as one box that says how many cells and which blocks it holds. The header gives the family, the TLP figures,
the occupancy and the waves: the plan's own figures, which `gemmc inspect` prints, where its family keeps them, else
the same model (gemmc/model/tlp.py) over the launch's cells.

The text is deterministic: the same kernel gives the same bytes (numbers rounded to 0.1 px, no time, no paths).
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass
from xml.sax.saxutils import escape

import numpy as np

from gemmc.errors import Diagnostic, GemmcError, InternalError
from gemmc.families.cells import Cells
from gemmc.families.registry import family
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import FamilyPlan, Kernel, WorkList
from gemmc.ir.types import counted
from gemmc.model.tlp import occupancy, tlp_new, tlp_old

WIDTH = 1000.0  # px: the picture's width
MARGIN = 16.0
INNER = WIDTH - 2 * MARGIN
MAX_SIDE = 640.0  # px: the largest problem's longer side, at most
AREA = INNER * 560.0  # px^2: all problems together, at most (a batch of 1024 fits a few screens)
MIN_SIDE = 24.0  # px: a problem's shorter side, at least ...
FEW_SIDE = 160.0  # ... and up to this with few problems, so that a tall-and-skinny C has room for its labels
GAP = 12.0  # px between problems
MIN_CELL = 8.0  # px: cells thinner than this are drawn as boxes of a power of two of them ...
BOX = 28.0  # ... at least this wide and high
CHAR = 0.62  # a monospace character's width, in font sizes (0.6 in DejaVu Sans Mono, Menlo, Consolas)
PAD = 3.0  # px: a label's least distance from its cell's sides
HEAD, LEGEND, NAME = 12.0, 10.0, 9.0  # font sizes
LABEL_FONTS = (10.0, 8.0, 6.0)  # a cell's label takes the largest that fits
SWATCH = 12.0
# Light fills (black text stays readable on them), one per kind, repeating past ten.
PALETTE = ("#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#dbdb8d", "#9edae5",
           "#c7c7c7")
STYLE = ('text{font-family:"DejaVu Sans Mono",Menlo,Consolas,monospace;fill:#111}'
         ".c{stroke:#fff;stroke-width:.5}.e{fill:url(#edge)}.f{fill:none;stroke:#111;stroke-width:1.2}"
         ".C{fill:none;stroke:#333;stroke-width:1}.l{text-anchor:middle}")


def num(x: float) -> str:
    """A coordinate rounded to 0.1 px, without a trailing .0."""
    text = f"{x:.1f}"
    return text[:-2] if text.endswith(".0") else text


def attr(text: str) -> str:
    """Text escaped for an XML attribute in double quotes."""
    return escape(text, {'"': "&quot;"})


def ranges(values: Iterable[int]) -> str:
    """Sorted distinct integers as runs: "0-3 7 9-10"."""
    runs: list[list[int]] = []
    for v in sorted(set(values)):
        if runs and v == runs[-1][1] + 1:
            runs[-1][1] = v
        else:
            runs.append([v, v])
    return " ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs)


def block_label(blocks: Iterable[int]) -> str:
    """A label for a set of blocks: its runs where there are at most two, else the first and last."""
    text = ranges(blocks)
    runs = text.split(" ")
    return "b" + (", b".join(runs) if len(runs) <= 2 else f"{runs[0].split('-')[0]}-{runs[-1].split('-')[-1]}")


def fitting(lines: list[str], width: float, height: float) -> tuple[list[str], float]:
    """As many of the lines as fit a box, from the first, in the largest label font they all fit in: ([], 0) where
    not even the first fits."""
    for count in range(len(lines), 0, -1):
        for size in LABEL_FONTS:
            if (max(len(t) for t in lines[:count]) * CHAR * size <= width - 2 * PAD
                    and count * size * 1.2 <= height - PAD):
                return lines[:count], size
    return [], 0.0


@dataclass(frozen=True, slots=True)
class Place:
    """A problem's rectangle on the page: top left corner and size in px, and the label above it."""

    x: float
    y: float
    w: float
    h: float
    label: str


def layout(sizes: np.ndarray, names: list[str], top: float) -> tuple[list[Place], float]:
    """Problems left to right in rows, wrapping at the page's width, at one scale: the largest fits MAX_SIDE and all
    of them AREA, each side at least the minimum (so a 16 x 16 problem among 512 x 512 ones stays visible). Returns
    the places and the bottom of the last row."""
    m, n = sizes[:, 0].astype(float), sizes[:, 1].astype(float)
    scale = min(MAX_SIDE / max(m.max(), n.max()), math.sqrt(AREA / float((m * n).sum())))
    least = min(FEW_SIDE, max(MIN_SIDE, INNER / (4 * math.ceil(math.sqrt(len(sizes))))))
    places, x, y, row = [], MARGIN, top, 0.0
    for (mi, ni, ki), name in zip(sizes.tolist(), names, strict=True):
        w, h = max(least, ni * scale), max(least, mi * scale)
        full = f"{name} {mi}x{ni}x{ki}"
        label = full if len(full) * CHAR * NAME <= max(w, len(name) * CHAR * NAME) else name
        slot = max(w, len(label) * CHAR * NAME)
        if x > MARGIN and x + slot > WIDTH - MARGIN:
            x, y, row = MARGIN, y + row + GAP, 0.0
        places.append(Place(x, y + NAME + 4, w, h, label))
        x, row = x + slot + GAP, max(row, h + NAME + 4)
    return places, y + row


class Drawing:
    """The SVG elements of one kernel's picture, in drawing order."""

    def __init__(self, kernel: Kernel, work: WorkList, cells: Cells):
        self.kernel, self.work, self.cells = kernel, work, cells
        self.sizes = np.frombuffer(work.problems.data, dtype="<i8").reshape(-1, 6)[:, :3].astype(np.int64)
        self.per_block = np.bincount(cells.block, minlength=work.blocks)  # cells whose first block it is
        self.out: list[str] = []

    def name(self, i: int) -> str:
        problems = self.kernel.problems
        return problems[i % len(problems)].name + (f"[{i // len(problems)}]" if self.kernel.count else "")

    def text(self, x: float, y: float, size: float, content: str, cls: str = "", bold: bool = False) -> None:
        extra = (f' class="{cls}"' if cls else "") + (' font-weight="bold"' if bold else "")
        self.out.append(f'<text x="{num(x)}" y="{num(y)}" font-size="{num(size)}"{extra}>{escape(content)}</text>')

    def lines(self, x: float, y: float, size: float, lines: list[str], bold_first: bool = False) -> float:
        """Lines of text, each wrapped to the page's width (from x); returns the y below them."""
        for i, line in enumerate(lines):
            for piece in textwrap.wrap(line, int((WIDTH - MARGIN - x) / (CHAR * size)), subsequent_indent="  ") or [""]:
                y += size * 1.3
                self.text(x, y, size, piece, bold=bold_first and i == 0)
        return y

    def problem(self, i: int, place: Place, members: np.ndarray) -> None:
        m, n, k = self.sizes[i].tolist()
        self.out.append(f'<g class="problem" data-problem="{i}" data-name="{attr(self.name(i))}" data-m="{m}" '
                        f'data-n="{n}" data-k="{k}">')
        self.text(place.x, place.y - 4, NAME, place.label)
        frames: list[str] = []
        for group in groups(self.cells, members, place):
            frames += self.cell(i, place, group)
        self.out += frames
        self.out.append(f'<rect class="C" x="{num(place.x)}" y="{num(place.y)}" width="{num(place.w)}" '
                        f'height="{num(place.h)}"/>')
        self.out.append("</g>")

    def cell(self, i: int, place: Place, group: np.ndarray) -> list[str]:
        """One cell, or one box of several: its rectangle (clipped to C), its hatching where it reaches past C's edge,
        its label; returns the frame to draw over the problem's cells where a block of it computes several."""
        c, (m, n, _) = self.cells, self.sizes[i].tolist()
        top, left = int(c.m0[group].min()), int(c.n0[group].min())
        bottom = min(m, int((c.m0[group] + c.rows[group]).max()))
        right = min(n, int((c.n0[group] + c.cols[group]).max()))
        x, y = place.x + left / n * place.w, place.y + top / m * place.h
        w, h = (right - left) / n * place.w, (bottom - top) / m * place.h
        edges = int(((c.m0[group] + c.rows[group] > m) | (c.n0[group] + c.cols[group] > n)).sum())
        blocks = [b for first, size in zip(c.block[group].tolist(), c.blocks[group].tolist(), strict=True)
                  for b in range(first, first + size)]
        batched = bool((self.per_block[c.block[group]] > 1).any())
        kinds = np.bincount(c.kind[group], minlength=len(c.kinds))
        kind = int(kinds.argmax())
        tiles = c.tile[group]
        data = f' data-blocks="{ranges(blocks)}"' + (f' data-tiles="{ranges(tiles.tolist())}"' if tiles[0] >= 0 else "")
        where = f"{self.name(i)}: rows {top}-{bottom - 1}, columns {left}-{right - 1}"
        if len(group) == 1:
            what = f"{c.unit} {tiles[0]}" if tiles[0] >= 0 else c.unit
            runs = f", which computes {self.per_block[blocks[0]]} {c.unit}s" if batched else ""
            title = (f"{what} of {where}; {c.kinds[kind].name}; block{'s' if len(blocks) > 1 else ''} "
                     f"{ranges(blocks)}{runs}" + ("; reaches past C's edge (predicated)" if edges else ""))
            labels = [block_label(blocks)]
        else:
            mix = ", ".join(f"{c.kinds[j].name} x{int(kinds[j])}" for j in np.flatnonzero(kinds).tolist())
            title = (f"{len(group)} {c.unit}s of {where}; {mix}; blocks {ranges(blocks)}"
                     + (f"; {edges} reach past C's edge (predicated)" if edges else ""))
            labels = [f"{len(group)} {c.unit}s", block_label(blocks)]
        self.out.append(f'<g class="cell"{data}><title>{escape(title)}</title>')
        box = f'x="{num(x)}" y="{num(y)}" width="{num(w)}" height="{num(h)}"'
        self.out.append(f'<rect class="c k{kind}" {box}/>')
        if edges:
            self.out.append(f'<rect class="e" {box}/>')
        shown, size = fitting(labels, w, h)
        baseline = y + h / 2 - len(shown) * size * 0.6
        for label in shown:
            baseline += size * 1.2
            self.text(x + w / 2, baseline - size * 0.3, size, label, "l")
        self.out.append("</g>")
        inset = f'x="{num(x + 1)}" y="{num(y + 1)}" width="{num(max(w - 2, 0))}" height="{num(max(h - 2, 0))}"'
        return [f'<rect class="f" {inset}/>'] if batched else []


def groups(cells: Cells, members: np.ndarray, place: Place) -> list[np.ndarray]:
    """A problem's cells (indices `members`) in the boxes they are drawn in: each cell alone where the cells of the
    problem are at least MIN_CELL px a side, else runs of neighbouring rows (columns) of cells on the problem's grid
    of cell origins, a power of two of them (as tiles are launched in groups of 8 rows) enough for BOX px. Boxes in
    order of their first row, then column."""
    if not len(members):
        return []
    rows, cols = np.unique(cells.m0[members]), np.unique(cells.n0[members])
    r, c = np.searchsorted(rows, cells.m0[members]), np.searchsorted(cols, cells.n0[members])
    tall, wide = place.h / len(rows), place.w / len(cols)
    fr = 1 if tall >= MIN_CELL else 2 ** math.ceil(math.log2(BOX / tall))
    fc = 1 if wide >= MIN_CELL else 2 ** math.ceil(math.log2(BOX / wide))
    key = (r // fr) * (len(cols) // fc + 1) + c // fc
    order = np.lexsort((members, key))
    bounds = np.flatnonzero(np.diff(key[order])) + 1
    return [members[part] for part in np.split(order, bounds)]


def header(kernel: Kernel, plan: FamilyPlan, work: WorkList, hw: Hardware, cells: Cells) -> list[str]:
    """The kernel, its launch, its TLP figures, its occupancy and waves, and how its grid maps blocks where it has
    no tile table."""
    count = f" (x count {kernel.count})" if kernel.count else ""
    out = [f"kernel {kernel.name}: {kernel.family} family, {counted(len(kernel.problems), 'problem')}{count}, "
           f"{kernel.flops / 1e9:.3f} GFLOP; target {hw.vendor} {hw.arch}, {hw.sm_count} SMs"]
    launch = (f"launch: grid {work.grid[0]}x{work.grid[1]}x{work.grid[2]} = {work.blocks} blocks of {work.block} "
              f"threads, {len(cells)} {cells.unit}s")
    batched = 0
    if work.tile_count:
        per_tile = int(cells.blocks.max())
        several = np.bincount(cells.block, minlength=work.blocks)
        batched = int((several > 1).sum())
        launch += (f", each computed by a cluster of {per_tile} blocks that split its k" if per_tile > 1
                   else f"; {batched} blocks compute several tiles one after another (up to {int(several.max())}: "
                        "batching, paper 003)" if batched else ", one tile a block")
    else:
        launch += " (no tile table: the grid maps blocks to rows by arithmetic)"
    out.append(launch)
    fig = cells.figures
    if fig is not None:
        out.append(f"TLP old (Eq. 3) {fig.tlp_old}, new (Eq. 4) {fig.tlp_new}, threshold {fig.threshold} (the "
                   "tiling's figures)")
        occ_text = fig.occupancy
    else:
        tiles = np.bincount(cells.kind, weights=cells.blocks, minlength=len(cells.kinds)).astype(np.int64).tolist()
        threads = [k.threads for k in cells.kinds]
        out.append(f"TLP old (Eq. 3) {tlp_old(tiles, plan.threads)}, new (Eq. 4) "
                   f"{tlp_new(tiles, threads, hw.warp_size)} (paper 000, over the launch's {cells.unit}s)")
        occ_text = ""
    occ = occupancy(hw, plan.threads, plan.regs_estimate, plan.smem_bytes)  # the planners' model and inputs
    resident = max(1, occ.blocks_per_sm * hw.sm_count)
    occ_text = occ_text or f"{occ.warps_per_sm} warps/SM ({occ.limit})"
    # batching's rule counts the waves of its tiles, one a block (families/simt/planner.py: choose_batching)
    before = f", {work.tile_count / resident:.1f} waves of tiles before batching" if batched else ""
    out.append(f"occupancy {occ_text}: {occ.blocks_per_sm} blocks/SM, {occ.fraction(hw):.0%} of an SM's warps "
               f"(~{plan.regs_estimate} registers, {plan.smem_bytes} B shared a block); "
               f"{work.blocks / resident:.1f} waves of blocks ({resident} resident at once{before})")
    return out + list(cells.mapping)


def legend(drawing: Drawing, y: float) -> float:
    """One line per cell kind (its swatch, name, description and count), then what hatching, frames and labels
    mean; returns the y below it."""
    c, out = drawing.cells, drawing.out
    counts = np.bincount(c.kind, minlength=len(c.kinds))
    tip = f"{c.unit}s"
    rows = [(f"c k{i}", f"{k.name}: {k.text}" + (f", {k.role}" if k.role else "") + f": {int(counts[i])} {tip}")
            for i, k in enumerate(c.kinds)]
    m, n = drawing.sizes[c.problem, 0], drawing.sizes[c.problem, 1]
    edges = int(((c.m0 + c.rows > m) | (c.n0 + c.cols > n)).sum())
    batched = int((drawing.per_block > 1).sum())
    why = " (batching, paper 003)" if drawing.work.tile_count else ""
    rows += [("c e", f"hatched: {edges} {tip} that reach past their C's edge (predicated)"),
             ("f", f"framed: the {tip} of the {batched} blocks that compute several, one after another{why}")]
    for cls, line in rows:
        out.append(f'<rect class="{cls}" x="{num(MARGIN)}" y="{num(y + LEGEND * 1.3 - SWATCH + 2)}" '
                   f'width="{num(SWATCH)}" height="{num(SWATCH)}"/>')
        y = drawing.lines(MARGIN + SWATCH + 6, y, LEGEND, [line]) + 3
    cluster = " (b4-7: the blocks of a cluster)" if int(c.blocks.max()) > 1 else ""
    note = (f"labels: b17 is the block that computes a {c.unit}{cluster}; a box of several {tip} says how many "
            "and which blocks; hover for rows, columns and blocks")
    return drawing.lines(MARGIN, y, LEGEND, ["", note])


def render_svg(kernel: Kernel, hw: Hardware) -> str:
    """The picture of one planned kernel as SVG text. A batch sized at run time has no picture (GemmcError E900):
    its tiles are derived on the device from each call's sizes."""
    if kernel.dynamic is not None:
        raise GemmcError(Diagnostic(
            "E900", f"kernel {kernel.name} is a batch sized at run time: its tiles are derived on the device from "
            "each call's sizes, so there is no plan to draw", hint="`gemmc inspect` prints its size classes"),
            code="E900")
    plan, work = kernel.plan, kernel.work
    if plan is None or work is None:
        raise InternalError("svg", f"kernel {kernel.name} has no plan or work list to draw")
    cells = family(kernel.family).cells(kernel, hw)
    covered = {b for first, size in zip(cells.block.tolist(), cells.blocks.tolist(), strict=True)
               for b in range(first, first + size)}
    if covered != set(range(work.blocks)):
        raise InternalError("svg", f"the {kernel.family} family's cells name blocks other than the grid's "
                                   f"{work.blocks}")
    d = Drawing(kernel, work, cells)
    y = d.lines(MARGIN, MARGIN - HEAD * 0.3, HEAD, header(kernel, plan, work, hw, cells), bold_first=True)
    y = legend(d, y + 8)
    names = [d.name(i) for i in range(len(d.sizes))]
    places, bottom = layout(d.sizes, names, y + GAP)
    order = np.argsort(cells.problem, kind="stable")
    bounds = np.searchsorted(cells.problem[order], np.arange(len(d.sizes) + 1))
    for i, place in enumerate(places):
        d.problem(i, place, order[bounds[i]:bounds[i + 1]])
    fills = "".join(f".k{i}{{fill:{PALETTE[i % len(PALETTE)]}}}" for i in range(len(cells.kinds)))
    height = bottom + MARGIN
    return "\n".join([
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{num(WIDTH)}" height="{num(height)}" '
        f'viewBox="0 0 {num(WIDTH)} {num(height)}">',
        f"<title>{escape(f'gemmc: the plan of kernel {kernel.name}')}</title>",
        '<defs><pattern id="edge" width="6" height="6" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)"><rect width="2" height="6" fill="#555" fill-opacity="0.45"/></pattern>'
        f"<style>{STYLE}{fills}</style></defs>",
        f'<rect width="{num(WIDTH)}" height="{num(height)}" fill="#fff"/>',
        *d.out, "</svg>", ""])
