"""Argument sets for the run-time fuzz tests, drawn by hypothesis from a kernel's plan.

A `Call` describes every array a call passes as a `View` into a numbered buffer of bytes (where it starts, its
shape, element strides, dtype and flags), plus the container, alpha and beta. It starts as a valid call (each
matrix in a buffer of its own, at an element offset that varies its alignment) and takes up to two mutations:
wrong shapes, dtypes, layouts, strides, views that overlap, read-only or big-endian arrays, host arrays, another
GPU, bad scalars, and valid variations (inputs that share memory, broadcast or padded 3-D inputs, tuples, other
sizes that make the call re-plan). `verdict` then judges the final call, independently of gemmc's own code and
slowly (element by element where it must): "refuse" (gemmc must raise GemmcError), "accept" (gemmc must run it,
correctly), or "either" (a batch of other sizes: gemmc re-plans it or says why it cannot, and what it runs must be
right).

tests/test_args_fuzz.py makes stand-ins of a `Call` (no GPU), tests/gpu/test_args_fuzz_gpu.py real CuPy arrays,
torch tensors and __cuda_array_interface__ objects, and both hold gemmc to the verdict.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from gemmc.ir.nodes import Kernel
from gemmc.ir.types import Layout
from gemmc.runtime.args import NUMPY_DTYPES, operands

# A few kernels of different forms: a list batch with runtime scalars and mixed layouts, a `count` batch with
# baked scalars, a single tall-and-skinny GEMM, a tensor-core batch with a pre-pass.
KERNELS = {
    "simt": "kernel k { dtype f32 layout A row, B col, C row alpha runtime beta runtime "
            "batch { a 7 x 5 x 3  b 1 x 9 x 4  c 13 x 2 x 11 } }",
    "count": "kernel k { dtype f64 layout C col alpha 1.5 beta -0.5 gemm 5 x 7 x 3 count 4 }",
    "tsm2r": "kernel k { dtype f32 layout A col, B col, C col alpha runtime beta runtime gemm 301 x 3 x 129 "
             "algorithm tsm2r }",
    "tensorcore": "kernel k { dtype f32 precision split bf16 x3 alpha runtime beta runtime "
                  "batch { a 37 x 29 x 41  b 8 x 70 x 16 } }",
}
ITEM = {"float16": 2, "float32": 4, "float64": 8}
TYPESTR = {"float16": "f2", "float32": "f4", "float64": "f8"}
KINDS = ("cupy", "torch", "cai")
CAI_ONLY = {"byte_stride", "byte_offset", "big_endian"}  # what CuPy and torch arrays cannot be


@dataclass
class View:
    """One array: `shape` elements of `dtype` at `start` bytes into buffer `buffer`, `strides` in elements."""

    buffer: int
    start: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: str
    stride_skew: int = 0  # bytes added to the first stride (then not a whole number of items)
    big_endian: bool = False
    readonly: bool = False  # __cuda_array_interface__'s flag; for torch, requires_grad
    host: bool = False  # a numpy array on the host
    device: int = 0  # which GPU (1: not the current one)

    @property
    def item(self) -> int:
        return ITEM[self.dtype]

    @property
    def byte_strides(self) -> tuple[int, ...]:
        out = [s * self.item for s in self.strides]
        out[0] += self.stride_skew
        return tuple(out)

    @property
    def end(self) -> int:
        """One past the last byte the view reaches."""
        return self.start + self.item + sum((n - 1) * s for n, s in zip(self.shape, self.byte_strides, strict=True))

    def matrices(self) -> list[View]:
        """The 2-D views of a 3-D view (a `count` batch), or itself."""
        if len(self.shape) == 2:
            return [self]
        step = self.byte_strides[0]
        return [dataclasses.replace(self, start=self.start + i * step, shape=self.shape[1:], strides=self.strides[1:],
                                    stride_skew=0) for i in range(self.shape[0])]


@dataclass
class Call:
    groups: list[Any]  # As, Bs, Cs: a list of Views (one per problem) or one 3-D View
    alpha: Any  # None: not passed
    beta: Any
    kind: str  # "cupy", "torch" or "cai": what every array is made as
    container: type = list
    mutations: list[str] = field(default_factory=list)  # what was done to the valid call (for failure reports)

    @property
    def views(self) -> list[View]:
        return [v for g in self.groups for v in (g if isinstance(g, list) else [g])]

    def buffers(self) -> dict[int, int]:
        """Bytes each buffer needs (a tail of 64 bytes past the furthest view)."""
        out: dict[int, int] = {}
        for v in self.views:
            out[v.buffer] = max(out.get(v.buffer, 0), v.end + 64)
        return out

    def args(self, make: Any) -> tuple[Any, Any, Any]:
        """As, Bs, Cs, each View made into an array by `make(view, slot)`."""
        return tuple(self.container(make(v, slot) for v in g) if isinstance(g, list) else make(g, slot)
                     for slot, g in enumerate(self.groups))

    def scalars(self) -> dict[str, Any]:
        return {name: value for name, value in (("alpha", self.alpha), ("beta", self.beta)) if value is not None}


def dense(shape: tuple[int, int], layout: Layout) -> tuple[int, int]:
    rows, cols = shape
    return (cols, 1) if layout is Layout.ROW else (1, rows)


class _Buffers:
    def __init__(self) -> None:
        self.next = 0

    def new(self) -> int:
        self.next += 1
        return self.next - 1


def _place(buffers: _Buffers, draw: Any, item: int) -> tuple[int, int]:
    """A new buffer and an element offset into it (0, 1 or 3 elements: aligned to 16 bytes or not)."""
    return buffers.new(), draw(st.sampled_from([0, 0, 1, 3])) * item


# --- mutations: each takes (call, draw, kernel, buffers, devices) and changes the call in place ------------------

def _pick(call: Call, draw: Any, slots: tuple[int, ...] = (0, 1, 2)) -> tuple[int, int, View]:
    """A view (slot, index, view); index -1 for a 3-D group's whole view."""
    slot = draw(st.sampled_from(slots))
    group = call.groups[slot]
    if not isinstance(group, list):
        return slot, -1, group
    if not group:
        return slot, -2, View(-1, 0, (1, 1), (1, 1), "float32")
    index = draw(st.integers(0, len(group) - 1))
    return slot, index, group[index]


def _put(call: Call, slot: int, index: int, view: View) -> None:
    if index == -1:
        call.groups[slot] = view
    elif index >= 0:
        call.groups[slot][index] = view


def _layout(kernel: Kernel, slot: int) -> Layout:
    return (kernel.layout_a, kernel.layout_b, kernel.layout_c)[slot]


def m_dtype(call, draw, kernel, buffers, devices):
    slot, i, v = _pick(call, draw)
    other = draw(st.sampled_from([d for d in ITEM if d != v.dtype]))
    _put(call, slot, i, dataclasses.replace(v, dtype=other, buffer=buffers.new(), start=0))


def m_shape(call, draw, kernel, buffers, devices):
    """One array's shape off by one (a fresh dense array of that shape)."""
    slot, i, v = _pick(call, draw)
    axis = draw(st.integers(len(v.shape) - 2, len(v.shape) - 1))
    shape = list(v.shape)
    shape[axis] += 1
    strides = dense((shape[-2], shape[-1]), _layout(kernel, slot))
    full = strides if len(shape) == 2 else (shape[1] * shape[2], *strides)
    _put(call, slot, i, dataclasses.replace(v, shape=tuple(shape), strides=full, buffer=buffers.new(), start=0))


def m_resize(call, draw, kernel, buffers, devices):
    """Problem p gets other sizes, consistently in A, B and C: a list batch of other sizes, which is re-planned."""
    if not all(isinstance(g, list) and g for g in call.groups) or len({len(g) for g in call.groups}) != 1:
        return
    p = draw(st.integers(0, len(call.groups[0]) - 1))
    m, n, k = (draw(st.sampled_from([1, 2, 5, 17])) for _ in range(3))
    for slot, shape in enumerate(((m, k), (k, n), (m, n))):
        v = call.groups[slot][p]
        buffer, start = _place(buffers, draw, v.item)
        call.groups[slot][p] = dataclasses.replace(v, buffer=buffer, start=start, shape=shape,
                                                   strides=dense(shape, _layout(kernel, slot)))


def m_layout(call, draw, kernel, buffers, devices):
    """One matrix in the other major order."""
    slot, i, v = _pick(call, draw)
    other = Layout.COL if _layout(kernel, slot) is Layout.ROW else Layout.ROW
    _put(call, slot, i, dataclasses.replace(v, strides=v.strides[:-2] + dense((v.shape[-2], v.shape[-1]), other)))


def m_strided(call, draw, kernel, buffers, devices):
    """A view that skips: every other row or column, or a padded leading dimension."""
    slot, i, v = _pick(call, draw)
    strides = list(v.strides)
    axis = draw(st.integers(len(strides) - 2, len(strides) - 1))
    strides[axis] = strides[axis] * 2 if draw(st.booleans()) else strides[axis] + 3
    _put(call, slot, i, dataclasses.replace(v, strides=tuple(strides)))


def m_byte_stride(call, draw, kernel, buffers, devices):
    slot, i, v = _pick(call, draw)
    _put(call, slot, i, dataclasses.replace(v, stride_skew=draw(st.integers(1, v.item - 1))))


def m_byte_offset(call, draw, kernel, buffers, devices):
    slot, i, v = _pick(call, draw)
    _put(call, slot, i, dataclasses.replace(v, start=v.start + draw(st.integers(1, v.item - 1))))


def m_big_endian(call, draw, kernel, buffers, devices):
    slot, i, v = _pick(call, draw)
    _put(call, slot, i, dataclasses.replace(v, big_endian=True))


def m_readonly(call, draw, kernel, buffers, devices):
    """Read-only (torch: requires grad): CuPy arrays have no such flag."""
    if call.kind != "cupy":
        slot, i, v = _pick(call, draw)
        _put(call, slot, i, dataclasses.replace(v, readonly=True))


def m_host(call, draw, kernel, buffers, devices):
    slot, i, v = _pick(call, draw)
    _put(call, slot, i, dataclasses.replace(v, host=True, buffer=buffers.new()))


def m_device(call, draw, kernel, buffers, devices):
    if devices > 1 and call.kind != "cai":  # a bare __cuda_array_interface__ does not say its device
        slot, i, v = _pick(call, draw)
        _put(call, slot, i, dataclasses.replace(v, device=1, buffer=buffers.new()))


def m_alias_output(call, draw, kernel, buffers, devices):
    """A C moved over the bytes of one matrix of another array (another C, or any A or B, its own included)."""
    slot, i, c = _pick(call, draw, (2,))
    others = [v for v in call.views if v is not c and not v.host and v.device == c.device and not c.host]
    if i < -1 or not others:
        return
    target = draw(st.sampled_from(others))
    m = draw(st.sampled_from(target.matrices()))
    first = c.matrices()[0]
    length = first.end - first.start
    start = draw(st.integers(max(0, m.start - length + c.item), max(0, m.end - c.item)))
    start = max(0, start - (start - m.start) % c.item)  # in step with the target's items
    _put(call, slot, i, dataclasses.replace(c, buffer=target.buffer, start=start))


def m_share_inputs(call, draw, kernel, buffers, devices):
    """An A or B view over the bytes of another A or B (a problem reading one matrix twice, two problems one
    weight)."""
    slot, i, v = _pick(call, draw, (0, 1))
    _, _, w = _pick(call, draw, (0, 1))
    if v is not w and not v.host and not w.host and v.device == w.device:
        _put(call, slot, i, dataclasses.replace(v, buffer=w.buffer, start=w.start))


def m_count_stride(call, draw, kernel, buffers, devices):
    """A 3-D operand whose matrices are broadcast (first stride 0), overlap, or lie apart with a gap."""
    three = [slot for slot, g in enumerate(call.groups) if not isinstance(g, list)]
    if three:
        slot = draw(st.sampled_from(three))
        v = call.groups[slot]
        size = v.shape[-2] * v.shape[-1]
        first = draw(st.sampled_from([0, max(1, size // 2), size + 5]))
        call.groups[slot] = dataclasses.replace(v, strides=(first, *v.strides[1:]))


def m_count(call, draw, kernel, buffers, devices):
    """A list with one array too few."""
    lists = [s for s, g in enumerate(call.groups) if isinstance(g, list) and g]
    if lists:
        slot = draw(st.sampled_from(lists))
        call.groups[slot] = call.groups[slot][:-1]


def m_tuple(call, draw, kernel, buffers, devices):
    call.container = tuple


BAD_SCALARS = (math.nan, math.inf, -math.inf, "x", True, 1 + 1j, 1e39)


def m_scalars(call, draw, kernel, buffers, devices):
    name = draw(st.sampled_from(["alpha", "beta"]))
    setattr(call, name, draw(st.sampled_from([*BAD_SCALARS, 2, -0.75, 0.0, 3.0, None])))


MUTATIONS = {name.removeprefix("m_"): fn for name, fn in globals().items() if name.startswith("m_")}


def _flat(group: Any) -> list[View]:
    return group if isinstance(group, list) else [group]


# --- the verdict ------------------------------------------------------------------------------------------------

def _dense(view: View, layout: Layout) -> bool:
    """Every matrix packed in `layout` (a dimension of 1 may have any stride)."""
    rows, cols = view.shape[-2:]
    want = dense((rows, cols), layout)
    return all(n <= 1 or s == w for n, s, w in zip((rows, cols), view.strides[-2:], want, strict=True))


def _scalar_ok(value: Any, double: bool) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value) and (double or abs(value) <= 3.4028234663852886e38)


def verdict(call: Call, kernel: Kernel) -> tuple[str, str]:
    """("refuse" | "accept" | "either", why)."""
    dtype = NUMPY_DTYPES[kernel.dtype]
    batch = kernel.batch_size
    for name, value in (("alpha", call.alpha), ("beta", call.beta)):
        if getattr(kernel, name) is not None and value is not None:
            return "refuse", f"{name} is baked in"
        if getattr(kernel, name) is None and (value is None or not _scalar_ok(value, dtype == "float64")):
            return "refuse", f"bad {name} {value!r}"
    for slot, group in enumerate(call.groups):
        if isinstance(group, list) and len(group) != batch:
            return "refuse", f"group {slot} has {len(group)} arrays"
        if not isinstance(group, list) and (len(group.shape) != 3 or group.shape[0] != batch):
            return "refuse", f"3-D group {slot} of shape {group.shape}"
    for v in call.views:
        if v.host or v.device or v.dtype != dtype or v.big_endian or v.stride_skew or v.start % v.item:
            return "refuse", f"array {v}"
        if v.readonly and call.kind != "cupy" and any(v is c for c in _flat(call.groups[2])):
            return "refuse", "read-only C"
    shapes = []
    for p in range(batch):
        a, b, c = (g[p].shape if isinstance(g, list) else g.shape[1:] for g in call.groups)
        if a[1] != b[0] or a[0] != c[0] or b[1] != c[1]:
            return "refuse", f"problem {p}: shapes {a} {b} {c} do not fit together"
        shapes.append((a[0], b[1], a[1]))
    planned = [(p.m, p.n, p.k) for p in (kernel.problems[i % len(kernel.problems)] for i in range(batch))]
    outcome = "accept"
    if shapes != planned:
        if sorted(shapes) == sorted(planned) or not all(isinstance(g, list) for g in call.groups):
            return "refuse", f"sizes {shapes} against {planned}"
        outcome = "either"  # re-planned, or refused by the planner
    for slot, group in enumerate(call.groups):
        for v in _flat(group):
            if not _dense(v, _layout(kernel, slot)):
                return "refuse", f"not dense: {v}"
    outputs = [(m.start + (m.buffer << 40), m.end + (m.buffer << 40)) for c in _flat(call.groups[2])
               for m in c.matrices()]
    everything = [(m.start + (m.buffer << 40), m.end + (m.buffer << 40)) for v in call.views for m in v.matrices()]
    for i, (s, e) in enumerate(outputs):
        if any(s < e2 and s2 < e for s2, e2 in outputs[i + 1:]):
            return "refuse", "two outputs overlap"
        if sum(s < e2 and s2 < e for s2, e2 in everything) > 1:  # itself, and another array
            return "refuse", "an output overlaps an input"
    return outcome, "valid" if outcome == "accept" else "other sizes"


@st.composite
def calls(draw: Any, kernel: Kernel, kinds: tuple[str, ...] = KINDS, devices: int = 1) -> Call:
    """A call of `kernel`: valid, then up to two mutations (see the module's docstring)."""
    kind = draw(st.sampled_from(kinds))
    dtype = NUMPY_DTYPES[kernel.dtype]
    item = ITEM[dtype]
    buffers = _Buffers()
    ops = [operands(kernel, i) for i in range(kernel.batch_size)]
    groups: list[Any] = []
    stacked = kernel.count is not None and draw(st.booleans())
    for slot in range(3):
        if stacked:
            op = ops[0][slot]
            strides = dense(op.shape, op.layout)
            buffer, start = _place(buffers, draw, item)
            groups.append(View(buffer, start, (kernel.batch_size, *op.shape), (op.shape[0] * op.shape[1], *strides),
                               dtype))
        else:
            group = []
            for problem in ops:
                buffer, start = _place(buffers, draw, item)
                group.append(View(buffer, start, problem[slot].shape, dense(problem[slot].shape, problem[slot].layout),
                                  dtype))
            groups.append(group)
    runtime = {"alpha": 1.5, "beta": draw(st.sampled_from([0.0, -0.5]))}
    call = Call(groups, *(runtime[name] if getattr(kernel, name) is None else None for name in ("alpha", "beta")),
                kind=kind)
    names = [n for n in MUTATIONS if kind == "cai" or n not in CAI_ONLY]
    for name in draw(st.lists(st.sampled_from(names), max_size=2)):
        MUTATIONS[name](call, draw, kernel, buffers, devices)
        call.mutations.append(name)
    return call
