"""The hopper_grouped family's decisions: the block tile of the TMA + wgmma loop, the ring depth, B's layout, and the
device scheduler's bound on the groups. Every byte count the kernel, its launchers and the host's tensor maps use is
derived here."""

from __future__ import annotations

from dataclasses import dataclass

from gemmc.families.tma_loop import ALIGN_SLACK, BK, BM, C_BUFFERS, C_SUB_ROWS, MAX_STAGES, TMAP_BYTES, TmaTiles
from gemmc.ir.nodes import FamilyPlan

SMALL_BM = C_SUB_ROWS  # the small size class: 64 rows, one consumer warpgroup's rows, split by columns instead
SCHED_WORDS = 3  # int32 per group in shared memory: its clamped end, its big and its small tile rows (prefix sums)
SCHED_WORDS_K = 2  # grouped K: its clamped end and its place in the longest-first order
LIST_MAPS = 3  # grouped list: tensor maps per problem (A, B, C), built on the device into the workspace
LIST_MAPS_WARPS = 4  # grouped list: the planning kernel's warps a block, one a problem
LIST_COUNTER_BYTES = 256  # grouped list, the C++ launcher's workspace: the two tile counters, then the tensor maps
#                           from this byte on, as aligned as the allocation (a map needs 64 bytes)
LIST_TEMPLATE_DIMS = (256, 256)  # grouped list: the template maps' placeholder tensor (replaced per problem on the
#                                  device), elements
LIST_TEMPLATE_PITCH = 1024  # bytes: a valid pitch for the placeholder's lines (256 elements of 2 or 4 bytes)


@dataclass(frozen=True, slots=True)
class HopperGroupedPlan(TmaTiles, FamilyPlan):
    bn: int  # block tile N: a 128-row tile's consumers each multiply 64 x bn; a 64-row tile's 64 x bn / 2
    stages: int  # shared-memory stages of the TMA -> wgmma ring
    b_kmajor: bool  # B col-major (groups x N x K): K contiguous; else N contiguous (wgmma reads B transposed)
    compute: str  # "bf16" or "f16"
    c_bytes: int  # bytes of C's element (2: bf16/f16, 4: f32)
    max_groups: int  # the schedule's bound: the scheduler's arrays in shared memory
    cluster: int = 1  # blocks per cluster, each on one of a unit's tile rows; 2: B multicast where they share a group
    bm: int = BM
    small_bm: int = SMALL_BM
    bk: int = BK
    elem: int = 2
    consumers: int = 2
    producer_regs: int = 40  # setmaxnreg, as the hopper family's kernel
    consumer_regs: int = 232
    tail_split: bool = False  # a last round of units that fills at most half the blocks in column halves (never with
    #                           a cluster: a cluster's blocks share a unit's rows)
    band: int = 1  # grouped M: unit rows (tile rows, or a cluster's pairs) a raster band holds, walked rows-fastest
    #                before the next n-tile; 1, the planner's: each row's n-tiles in turn (bands of 2-16 took 0-14%
    #                longer on the MoE steps: bench/results/moe_half/2026-11-27_h100_moe-band.json)
    grouped_k: bool = False  # the weight gradient (hopper_grouped_k.cu.j2): A M-major (X^T), B N-major, both 2-D maps
    #                          over the reduction's rows, G x M/128 x N/BN tiles of one group's depth each
    grouped_list: bool = False  # independent problems (hopper_grouped_list.cu.j2): 2-D tensor maps per problem, built
    #                             on the device from template maps; 128-row tiles claimed from a counter

    @property
    def a_small_bytes(self) -> int:
        """One TMA box of A: 64 rows of 128 bytes (a 128-row tile loads two)."""
        return self.small_bm * self.bk * self.elem

    @property
    def epilogue_bytes(self) -> int:
        return self.consumers * C_BUFFERS * self.c_sub_bytes

    @property
    def a_box(self) -> tuple[int, int]:
        """TMA box of A (innermost first): 64 k by 64 rows."""
        return (self.bk, self.small_bm)

    @property
    def b_box(self) -> tuple[int, ...]:
        """TMA box of B's 3-D map (innermost first, the group last): K-major bn rows of 64 k, N-major 64 columns by
        64 k (bn / 64 boxes a stage); with a cluster, the share of one block (the tile split along N, or along K).
        grouped K: 64 columns by 64 k of the 2-D map over the reduction's rows."""
        if self.grouped_k:
            return (self.box_width, self.bk)
        if self.grouped_list:  # one problem's 2-D map: K-major bn rows of 64 k, or N-major 64 columns by 64 k
            return (self.bk, self.bn) if self.b_kmajor else (self.box_width, self.bk)
        if self.b_kmajor:
            return (self.bk, self.bn // self.cluster, 1)
        return (self.box_width, self.bk // self.cluster, 1)

    def grid(self, sm_count: int) -> int:
        """The persistent grid: one block per SM, whole clusters."""
        return max(self.cluster, sm_count // self.cluster * self.cluster)

    @property
    def dynamic_smem_bytes(self) -> int:
        """The launch's dynamic shared memory: the ring, the C sub-tiles, the barriers and the swizzle's slack."""
        return self.stages * self.stage_bytes + self.epilogue_bytes + self.barrier_bytes + ALIGN_SLACK

    @property
    def sched_smem(self) -> int:
        """The scheduler's `__shared__` arrays: per group its end and its two prefix sums, one more end, 2 totals
        (grouped K: per group its end and its place in the order, one more end, and each stage's tile number)."""
        if self.grouped_k:
            return 4 * (SCHED_WORDS_K * self.max_groups + 1) + 8 * MAX_STAGES
        if self.grouped_list:  # the problems' tile counts as prefix sums, and each stage's tile number
            return 4 * (self.max_groups + 1) + 8 * MAX_STAGES
        return 4 * (SCHED_WORDS * self.max_groups + 1) + 8

    @property
    def smem_bytes(self) -> int:
        return self.dynamic_smem_bytes + self.sched_smem

    @property
    def list_maps_bytes(self) -> int:
        """grouped list: the workspace's tensor maps, three a problem (A, B, C) at 128 bytes each."""
        return LIST_MAPS * TMAP_BYTES * self.max_groups

    @property
    def static_smem_bytes(self) -> int:
        return self.sched_smem

    def lines(self) -> tuple[str, ...]:
        if self.grouped_k:
            return self.lines_k()
        if self.grouped_list:
            return self.lines_list()
        lay = f"B {'K' if self.b_kmajor else 'N'}-major (3-D tensor map: groups x K x N), A K-major"
        return (f"hopper_grouped: tile {self.bm}x{self.bn}x{self.bk} {self.compute}, or {self.small_bm}x{self.bn}x"
                f"{self.bk} for a group's last {self.small_bm} rows or fewer; {self.stages} stages of "
                f"{self.stage_bytes // 1024} KiB (TMA, 128-byte swizzle, mbarriers), {lay}",
                f"1 producer warp (setmaxnreg {self.producer_regs}) + {self.consumers} consumer warpgroups: 64x"
                f"{self.bn} each on a 128-row tile (wgmma m64n{self.bn}k16), 64x{self.bn // 2} each on a 64-row "
                f"tile (m64n{self.bn // 2}k16), setmaxnreg {self.consumer_regs}",
                f"scheduler: persistent grid of one block per SM; every block derives the tiles from the clamped "
                f"group ends ({self.sched_smem} B of shared memory for up to {self.max_groups} groups): units of "
                f"{'two tile rows' if self.cluster > 1 else 'one tile row'} by one n-tile, group by group (a group's "
                f"128-row rows, then its 64-row one), {'cluster' if self.cluster > 1 else 'block'} c taking units c, "
                f"c + "
                f"{'clusters' if self.cluster > 1 else 'blocks'}, ..."
                + (f", in bands of {self.band} unit rows walked rows-fastest" if self.band > 1 else "")
                + ("; a last round of units that fills at most half the blocks in column halves (128 x "
                   f"{self.bn // 2})" if self.tail_split else ""),
                *((f"clusters of {self.cluster}: a unit's tile rows on the blocks of a cluster, B multicast to both "
                   "where the rows share a group",) if self.cluster > 1 else ()),
                f"C: 64-row sub-tiles wholly inside their group through {C_BUFFERS} shared-memory buffers of "
                f"{C_SUB_ROWS}x{self.c_sub_cols} per warpgroup and TMA stores; a sub-tile crossing its group's end "
                "stored from the accumulators, masked at the end")

    def lines_k(self) -> tuple[str, ...]:
        return (f"hopper_grouped (grouped K): tile {self.bm}x{self.bn}x{self.bk} {self.compute} of one group's "
                f"reduction; {self.stages} stages of {self.stage_bytes // 1024} KiB (TMA, 128-byte swizzle, "
                "mbarriers), A M-major (X^T) and B N-major through 2-D tensor maps over the reduction's rows",
                f"1 producer warp (setmaxnreg {self.producer_regs}) + {self.consumers} consumer warpgroups: 64x"
                f"{self.bn} each (wgmma m64n{self.bn}k16, A and B transposed), setmaxnreg {self.consumer_regs}",
                f"scheduler: persistent grid of one block per SM; every block derives the groups' k ranges from the "
                f"clamped ends and orders the groups longest first ({self.sched_smem} B of shared memory for up to "
                f"{self.max_groups} groups); block b takes tile b, then claims the next from a counter in the "
                "workspace (longest processing time first)",
                "k edges: the k-rows of a group's last k-tile past its end zeroed in shared memory before the wgmma "
                "(the next group's rows never enter a product); a group of no rows stores beta * C",
                f"C: G x M x N, 64-row sub-tiles inside their group through {C_BUFFERS} shared-memory buffers of "
                f"{C_SUB_ROWS}x{self.c_sub_cols} per warpgroup and TMA stores; past M stored from the accumulators, "
                "masked")

    def lines_list(self) -> tuple[str, ...]:
        lay = f"B {'K' if self.b_kmajor else 'N'}-major"
        return (f"hopper_grouped (grouped list): tile {self.bm}x{self.bn}x{self.bk} {self.compute}, or {self.small_bm}x"
                f"{self.bn}x{self.bk} for a problem's last {self.small_bm} rows or fewer; {self.stages} stages of "
                f"{self.stage_bytes // 1024} KiB (TMA, 128-byte swizzle, mbarriers), A K-major, {lay}",
                f"tensor maps: three a problem (A, B, C: {self.list_maps_bytes} B of workspace for up to "
                f"{self.max_groups} problems), written by a planning kernel from template maps encoded once on the "
                "host (tensormap.replace of the address, dims and stride in shared memory, then "
                "tensormap.cp_fenceproxy to the workspace); the main kernel acquires each problem's maps "
                "(fence.proxy.tensormap::generic) before the first TMA that reads them",
                f"1 producer warp (setmaxnreg {self.producer_regs}) + {self.consumers} consumer warpgroups: 64x"
                f"{self.bn} each on a 128-row tile (wgmma m64n{self.bn}k16), 64x{self.bn // 2} each on a 64-row tile "
                f"(m64n{self.bn // 2}k16), setmaxnreg {self.consumer_regs}",
                f"scheduler: persistent grid of one block per SM; every block sums the problems' tiles "
                f"({self.sched_smem} B of shared memory); block b takes tile b, then claims the next from a counter "
                "in the workspace; a problem of K = 0 stores beta * C, one of M = 0 or N = 0 has no tiles",
                f"C: 64-row sub-tiles inside M through {C_BUFFERS} shared-memory buffers of {C_SUB_ROWS}x"
                f"{self.c_sub_cols} per warpgroup and TMA stores where C's base and leading dimension are 16-byte "
                "multiples; else stored from the accumulators, masked")
