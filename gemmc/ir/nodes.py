"""IR nodes: frozen dataclasses. Passes change them with `dataclasses.replace`, never in place.

A `Kernel` starts as what the schedule said (problems, knobs, `None` for `auto`) and the passes fill in what they
decide: the family, its decisions so far (a draft) while its planning steps run, then a family plan, the work list.
A `Program` (gemmc/ir/program.py) holds the target, the kernels and the concurrent groups.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Generic, TypeVar, overload

from gemmc.errors import InternalError
from gemmc.ir.dynamic import DynamicBatch
from gemmc.ir.types import AUTO, NO_SPAN, Batching, DType, Layout, Precision, Span, TileMode, span_field


@dataclass(frozen=True, slots=True)
class Problem:
    """One GEMM of a batch: C (m x n) = alpha * A (m x k) @ B (k x n) + beta * C."""

    name: str
    m: int
    n: int
    k: int
    span: Span = span_field()

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k


@dataclass(frozen=True, slots=True)
class TileShape:
    m: int
    n: int
    k: int
    slices: int = 1  # `kslices S`: the block's threads split each k-tile S ways (SimtVariant.slices)
    split: int = 1  # `ksplit C`: the blocks of a C-block cluster split each tile's k-tiles (SimtPlan.ksplit)

    def __str__(self) -> str:
        return (f"{self.m}x{self.n}x{self.k}" + (f" kslices {self.slices}" if self.slices > 1 else "")
                + (f" ksplit {self.split}" if self.split > 1 else ""))


@dataclass(frozen=True, slots=True)
class FamilyPlan:
    """Base of each family's decisions (SimtPlan, TensorCorePlan, Tsm2Plan, ...).

    A family plan is frozen and printable: `lines()` gives the lines that `gemmc inspect` shows. Subclasses
    provide `threads`, `smem_bytes` and `regs_estimate` (fields or properties) for the resource check.
    """

    @property
    def threads(self) -> int:
        raise InternalError("plan", f"{type(self).__name__} must define threads")

    @property
    def smem_bytes(self) -> int:
        raise InternalError("plan", f"{type(self).__name__} must define smem_bytes")

    @property
    def static_smem_bytes(self) -> int:
        """The part of `smem_bytes` the kernel declares statically (`__shared__` arrays); the rest is the launch's
        dynamic shared memory, the work list's `smem_bytes`."""
        return 0

    @property
    def regs_estimate(self) -> int:
        raise InternalError("plan", f"{type(self).__name__} must define regs_estimate")

    @property
    def scratch_bytes(self) -> int:
        """Device scratch memory a launch needs (0: none). A family with scratch has a prologue kernel."""
        return 0

    @property
    def prologue(self) -> tuple[int, int] | None:
        """(blocks, threads) of a kernel `<entry>_prep(problems, batch, A, B, scratch)` launched before the main
        kernel, which then takes `scratch` as its last argument; None: no prologue."""
        return None

    @property
    def arch_specific(self) -> bool:
        """The kernel uses instructions of the architecture-specific target only (sm_90a: wgmma)."""
        return False

    @property
    def tensor_maps(self) -> bool:
        """The kernel reads A and B through TMA tensor maps that the host encodes per call (runtime/tma.py),
        instead of the pointer and problem tables."""
        return False

    def capped(self, sms: int) -> FamilyPlan:
        """The plan launched on at most `sms` SMs: a persistent kernel, whose launch sizes its grid from the
        device's SM count, returns a copy that caps it (a concurrent group's GO-kernel for a share of the GPU,
        gemmc/concurrent/features.py); a plan whose grid covers its tiles has no cap to set and returns itself."""
        return self

    @property
    def tile_shapes(self) -> tuple[tuple[int, int], ...]:
        """(rows, columns) of C in a tile of each variant index that a work list's tiles name; empty for a family
        whose grid maps blocks to outputs by arithmetic (TSM2)."""
        return ()

    def lines(self) -> tuple[str, ...]:
        return ()


@dataclass(frozen=True, slots=True)
class PlanDraft:
    """Base of each family's decisions so far (SimtDraft, TensorCoreDraft, ...), carried in `Kernel.draft` between
    the family's planning steps: frozen and printable like a plan. The `finish_plan` step turns it into the family's
    FamilyPlan and clears it."""

    def lines(self) -> tuple[str, ...]:
        return ()


@dataclass(frozen=True, slots=True)
class ProblemRow:
    """One row of the problem table the kernel reads: sizes and leading dimensions (elements)."""

    m: int
    n: int
    k: int
    lda: int
    ldb: int
    ldc: int


@dataclass(frozen=True, slots=True)
class WorkTile:
    """One output tile: problem index, first row, first column, variant index."""

    problem: int
    m0: int
    n0: int
    variant: int = 0


Row = TypeVar("Row", ProblemRow, WorkTile)
P = TypeVar("P", bound=FamilyPlan)
D = TypeVar("D", bound=PlanDraft)
Table = TypeVar("Table", bound="PackedTable[Any]")


@dataclass(frozen=True, slots=True)
class PackedTable(Generic[Row]):
    """A table of records packed as the kernel reads it (little-endian integers, FORMAT per record).

    A work list holds thousands of tiles; one Python record each made planning O(tiles) in objects. The packed
    bytes are immutable, hashable and compare with `==`; read as a sequence the table gives records (`ROW`),
    `rows()` the plain tuples for the baked tables, and `data` is what the runtime uploads (numpy.frombuffer)."""

    FORMAT: ClassVar[struct.Struct]
    ROW: ClassVar[Callable[..., Any]]
    data: bytes = b""

    @classmethod
    def of(cls: type[Table], records: Iterable[Any]) -> Table:
        return cls(b"".join(cls.FORMAT.pack(*(getattr(r, f.name) for f in fields(r))) for r in records))

    def __len__(self) -> int:
        return len(self.data) // self.FORMAT.size

    @overload
    def __getitem__(self, index: int) -> Row: ...

    @overload
    def __getitem__(self: Table, index: slice) -> Table: ...

    def __getitem__(self: Table, index: int | slice) -> Any:
        size = self.FORMAT.size
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                return type(self).of(self[i] for i in range(start, stop, step))
            return type(self)(self.data[start * size:max(start, stop) * size])
        if not -len(self) <= index < len(self):
            raise IndexError(f"{type(self).__name__} index out of range")
        return self.ROW(*self.FORMAT.unpack_from(self.data, (index % len(self)) * size))

    def __iter__(self) -> Iterator[Row]:
        return (self.ROW(*r) for r in self.FORMAT.iter_unpack(self.data))

    def rows(self) -> list[tuple[int, ...]]:
        """Each record as a plain tuple of its fields, in order."""
        return list(self.FORMAT.iter_unpack(self.data))


class ProblemTable(PackedTable[ProblemRow]):
    """The problem table, one ProblemRow per problem in batch order: six int64 (m, n, k, lda, ldb, ldc)."""

    __slots__ = ()
    FORMAT = struct.Struct("<6q")
    ROW = ProblemRow


class TileTable(PackedTable[WorkTile]):
    """Output tiles in launch order, one WorkTile each: four int32 (problem, m0, n0, variant), the kernel's int4."""

    __slots__ = ()
    FORMAT = struct.Struct("<4i")
    ROW = WorkTile


@dataclass(frozen=True, slots=True)
class Raster:
    """The output tiles of a uniform launch (one problem size, one tile, one variant: a single GEMM or a `count`
    batch) as numbers instead of rows: the kernel computes tile t's problem and corner from t, so the work list's
    size and the planning time do not depend on the tile count (model/raster.py enumerates it for checks).

    Tile t (0 <= t < tiles) belongs to problem t // (tiles_m * tiles_n); its place j in the problem runs in grouped
    order, as the tile table's (model/worklist.py): group g = j // (group_m * tiles_n) of group_m tile rows (the last
    one shorter), across the columns first. Blocks: the first `batched` blocks run `per_block` consecutive tiles
    each (batching, paper 003; the last of them may run fewer), every later block one; a grid smaller than that
    strides over the blocks (grid.x < blocks: block b also runs b + grid.x, ...), since a block count past the
    grid's limit is a valid launch. With a cluster of C blocks splitting each tile's k, grid.x counts C per block of
    the mapping."""

    problems: int
    tiles_m: int
    tiles_n: int
    bm: int
    bn: int
    variant: int
    group_m: int
    per_block: int = 1
    batched: int = 0  # blocks of per_block tiles, before the one-tile blocks
    cluster: int = 1  # blocks that share each block's tiles (a thread-block cluster splitting k)

    @property
    def per_problem(self) -> int:
        return self.tiles_m * self.tiles_n

    @property
    def tiles(self) -> int:
        return self.problems * self.per_problem

    @property
    def batched_tiles(self) -> int:
        """Tiles run by the batched blocks."""
        return min(self.tiles, self.batched * self.per_block)

    @property
    def blocks(self) -> int:
        """Blocks of the mapping (a block of a grid that strides runs several of them)."""
        return self.batched + self.tiles - self.batched_tiles


@dataclass(frozen=True, slots=True)
class WorkList:
    """What one launch does, as data the kernel reads.

    Block b computes `tiles[block_offsets[b]:block_offsets[b + 1]]` one after another (with one tile per block the
    kernel gets a null pointer for block_offsets instead: `one_tile_per_block`). `grid` is the launch grid
    (x, y, z); for the work-list families it is (len(block_offsets) - 1, 1, 1). A family that maps blocks to work
    by arithmetic (TSM2) leaves `tiles` and `block_offsets` empty and sets `grid` itself. A uniform launch of a
    work-list family describes its tiles by a `raster` instead (and leaves the tables empty): grid.x is then its
    blocks, times a cluster's, or fewer where that passes the grid's limit.
    """

    problems: ProblemTable
    tiles: TileTable
    block_offsets: tuple[int, ...]
    grid: tuple[int, int, int]
    block: int  # threads per block
    smem_bytes: int  # dynamic shared memory per block (0 when the kernel uses static shared memory only)
    raster: Raster | None = None  # the tiles as numbers (a uniform launch); None: the tables list them

    @property
    def blocks(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def one_tile_per_block(self) -> bool:
        """Block b computes tile b: the kernel then gets a null `block_offsets` and reads no offsets (one
        dependent load fewer before its first k-tile), and plans that differ only in this share their source."""
        return len(self.block_offsets) > 1 and self.block_offsets == tuple(range(len(self.block_offsets)))

    @property
    def reads_offsets(self) -> bool:
        """The kernel reads block offsets: a tile table with several tiles for some block (else the launch passes a
        null pointer)."""
        return self.raster is None and not self.one_tile_per_block

    @property
    def tile_count(self) -> int:
        """Output tiles of the launch, listed or computed."""
        return self.raster.tiles if self.raster is not None else len(self.tiles)


@dataclass(frozen=True, slots=True)
class Kernel:
    name: str
    problems: tuple[Problem, ...]
    count: int | None = None  # `gemm M x N x K count B`: one problem, B strided copies
    dtype: DType = DType.F32  # storage type of A and B (and of C unless dtype_c says otherwise)
    dtype_c: DType | None = None  # `dtype A bf16, B bf16, C f32`: C's storage type; None: the same as A and B
    layout_a: Layout = Layout.ROW
    layout_b: Layout = Layout.ROW
    layout_c: Layout = Layout.ROW
    alpha: float | None = 1.0  # None: a launch argument (`alpha runtime`)
    beta: float | None = 0.0
    tile: TileShape | None = None  # None: `tile auto`
    tile_mode: TileMode = TileMode.AUTO
    threads: int | None = None  # None: `threads auto`
    batching: Batching = Batching.AUTO
    precision: Precision | None = None  # None: same as dtype (filled by normalize)
    stages: int = 2
    algorithm: str = AUTO  # `auto`, or the name of a registered kernel family
    tlp_threshold: int | None = None  # `tlp threshold N`; None: derived from the hardware
    dynamic: DynamicBatch | None = None  # `grouped M/K/list`: sizes at run time (then `problems` is empty)
    span: Span = span_field()
    # Where each statement was written, for errors that point at the line that caused them.
    stmt_spans: tuple[tuple[str, Span], ...] = field(default=(), compare=False, repr=False)
    # Decided by the passes.
    family: str | None = None  # the registered kernel family that computes it (gemmc/families)
    draft: PlanDraft | None = None  # the family's decisions so far, between its planning steps
    plan: FamilyPlan | None = None
    work: WorkList | None = None
    notes: tuple[str, ...] = ()  # why the passes decided what they did, for `gemmc inspect`
    # Why a family built for this kernel's data on its target does not compute it, and the statement that keeps it
    # off (select_family, from KernelFamily.declines): `gemmc compile` notes it there. "" where none declined.
    declined: str = ""
    declined_span: Span = span_field()

    def plan_as(self, plan_type: type[P], where: str) -> P:
        """The plan as its family's plan type; InternalError naming `where` (a pass, a codegen module) when another
        family planned the kernel or none did: a bug in gemmc, not in the schedule."""
        if not isinstance(self.plan, plan_type):
            raise InternalError(where, f"kernel '{self.name}': expected a {plan_type.__name__}, got "
                                       f"{type(self.plan).__name__}")
        return self.plan

    def draft_as(self, draft_type: type[D], where: str) -> D:
        """The draft as its family's draft type; InternalError naming `where` (a planning step) when another
        family's steps drafted the kernel or none did: a bug in gemmc, not in the schedule."""
        if not isinstance(self.draft, draft_type):
            raise InternalError(where, f"kernel '{self.name}': expected a {draft_type.__name__}, got "
                                       f"{type(self.draft).__name__}")
        return self.draft

    def where(self, stmt: str) -> Span:
        """The span of statement `stmt` (e.g. "tile"), else the kernel's own span."""
        found = self.written(stmt)
        return found if found.line else self.span

    def written(self, *stmts: str) -> Span:
        """The span of the first of `stmts` the schedule writes for this kernel (a group's statement where a member
        takes it from its group), else NO_SPAN."""
        for stmt in stmts:
            for key, span in self.stmt_spans:
                if key == stmt:
                    return span
        return NO_SPAN

    @property
    def stages_written(self) -> bool:
        """The schedule has a `pipeline stages` line; without one each family picks its depth (`stages` holds the
        SIMT family's default then)."""
        return any(key == "pipeline" for key, _ in self.stmt_spans)

    @property
    def c_dtype(self) -> DType:
        """C's storage type."""
        return self.dtype_c if self.dtype_c is not None else self.dtype

    @property
    def dtype_tag(self) -> str:
        """The storage types as generated symbols spell them: `bf16`, or `bf16cf32` where C differs."""
        return self.dtype.value if self.dtype_c is None else f"{self.dtype.value}c{self.c_dtype.value}"

    @property
    def dtypes(self) -> str:
        """The storage types as the schedule spells them: `bf16`, or `A bf16, B bf16, C f32`."""
        if self.c_dtype is self.dtype:
            return self.dtype.value
        return f"A {self.dtype.value}, B {self.dtype.value}, C {self.c_dtype.value}"

    @property
    def problems_span(self) -> Span:
        """Where the problems were given (the `gemm` or `batch` statement), else the kernel's own span."""
        for key, span in self.stmt_spans:
            if key in ("gemm", "batch"):
                return span
        return self.span

    @property
    def batch_size(self) -> int:
        return self.count if self.count is not None else len(self.problems)

    @property
    def layouts(self) -> str:
        """e.g. "rrc": the layouts of A, B, C."""
        return "".join(lay.value[0] for lay in (self.layout_a, self.layout_b, self.layout_c))

    @property
    def flops(self) -> int:
        return sum(p.flops for p in self.problems) * (self.count or 1)


KNOBS = ("tile", "threads", "pipeline", "batching", "algorithm")  # the statements that choose for one family


def planned(kernel: Kernel, plan: FamilyPlan, notes: Iterable[str]) -> Kernel:
    """`kernel` with its family's `plan`, its draft cleared and `notes` (why the steps decided as they did) after its
    own: what each family's `finish_plan` step returns."""
    return dataclasses.replace(kernel, plan=plan, draft=None, notes=(*kernel.notes, *notes))


def unplanned(kernel: Kernel, **changes: Any) -> Kernel:
    """`kernel`'s schedule with every decision of the pipeline and every knob chosen for its own family dropped
    (tile, threads, stages, batching, algorithm, and the lines that wrote them, which families read as written),
    `changes` applied: the start of a plan in another family or of other problems."""
    spans = tuple((key, span) for key, span in kernel.stmt_spans if key not in KNOBS)
    fresh = dataclasses.replace(kernel, family=None, plan=None, work=None, notes=(), draft=None, tile=None,
                                tile_mode=TileMode.AUTO, threads=None, stages=2, batching=Batching.AUTO,
                                algorithm=AUTO, stmt_spans=spans)
    return dataclasses.replace(fresh, **changes)
