"""Batches sized at run time (the dynamic family), without a GPU: the language and its errors, the plan, the device
scheduler against a float64 model of which tile covers which outputs, and the scheduler's device code compiled for the
CPU against the NumPy model. The generated kernels compile with nvcc and hipcc through examples/moe.gs
(tests/test_codegen.py), whose golden plans hold `inspect`'s size-class table."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

import gemmc
from gemmc.codegen.env import render
from gemmc.families.dynamic import codegen, scheduler
from gemmc.families.dynamic.plan import DynamicPlan
from gemmc.ir.dynamic import INT32_MAX, DynamicBatch, Grouping
from tests.conftest import ROOT
from tests.gpu.helpers import TLP_ANCHOR, TLP_LIST, TLP_MOE, tlp_probe

GXX = shutil.which("g++")

MOE = """
kernel moe {
  layout B col
  grouped M  n 96  k 40  groups 24
}
"""


def kernel_of(text: str, name: str | None = None) -> gemmc.CompiledKernel:
    prog = gemmc.compile_string(text)
    return prog[name] if name else next(iter(prog))


def errors(text: str) -> list[str]:
    with pytest.raises(gemmc.GemmcError) as info:
        gemmc.compile_string(text, filename="s.gs")
    return info.value.render().splitlines()


# ---- the language -----------------------------------------------------------------------------------------------

def test_the_three_forms_lower_to_their_declaration():
    prog = gemmc.compile_string("""
        kernel up { grouped M n 2048 k 7168 groups 128 rows 65536 }
        kernel wg { grouped k M 7168 N 2048 groups 128 }
        kernel vl { grouped list problems 512 }""")
    assert prog["up"].ir.dynamic == DynamicBatch(Grouping.M, n=2048, k=7168, max_groups=128, max_rows=65536)
    assert prog["wg"].ir.dynamic == DynamicBatch(Grouping.K, m=7168, n=2048, max_groups=128)
    assert prog["vl"].ir.dynamic == DynamicBatch(Grouping.LIST, max_groups=512)
    assert prog["wg"].ir.dynamic.max_rows == INT32_MAX
    for k in prog:
        assert k.ir.problems == () and k.ir.family == "dynamic"


def test_plan_for_refuses_a_batch_sized_at_run_time():
    # it has no plan per size (the device derives the tiles): E400 naming the kernel, not a static re-plan of the
    # grouped kernel (f32) or an error about tensor-core precisions (bf16 on the Hopper loop)
    for text in (MOE, "kernel moe { dtype bf16 layout B col grouped M n 96 k 40 groups 24 }",
                 "kernel moe { grouped list problems 8 }"):
        with pytest.raises(gemmc.GemmcError) as info:
            kernel_of(text).plan_for([(4, 4, 4)])
        assert info.value.code == "E400" and "kernel 'moe' is a batch sized at run time" in str(info.value)
        assert "`schedule_for(sizes)` shows what the device scheduler does with given sizes" in str(info.value)


def test_static_schedules_are_untouched():
    k = kernel_of("kernel s { gemm 64 x 64 x 64 }")
    assert k.ir.dynamic is None and k.ir.family == "simt"


@pytest.mark.parametrize("stmt, expected", [
    ("grouped N n 5 k 5 groups 2", ["s.gs:1:20: error[E204]: unknown grouped form 'N'",
                                    "hint: expected one of M, K, list"]),
    ("grouped M m 5 n 5 k 5 groups 2",
     ["s.gs:1:12: error[E202]: M is the grouped dimension: its sizes come with each call"]),
    ("grouped M n 5 groups 2", ["s.gs:1:12: error[E202]: 'grouped M' needs k"]),
    ("grouped K m 5 n 5", ["s.gs:1:12: error[E202]: 'grouped K' needs groups"]),
    ("grouped M n 5 k 5 groups 2 flavor 3", ["s.gs:1:39: error[E204]: unknown key 'flavor' of 'grouped'"]),
    ("grouped M n 5 k 5 n 6 groups 2", ["s.gs:1:30: error[E200]: 'n' is given twice"]),
    ("grouped M n 0 k 5 groups 2", ["s.gs:1:24: error[E201]: n must be at least 1, not 0"]),
    ("grouped M n 5 k 5 groups 3000000000", ["s.gs:1:37: error[E205]: groups must be at most 2147483647, not "
                                             "3000000000"]),
    ("grouped M n 5 k 5 groups 5000", ["s.gs:1:12: error[E201]: a batch sized at run time takes at most 4096 "
                                       "groups, not 5000"]),
    ("grouped list", ["s.gs:1:12: error[E202]: 'grouped list' needs a bound on the problems of a call"]),
    ("grouped list groups 4", ["s.gs:1:25: error[E204]: unknown key 'groups' of 'grouped'"]),
    ("gemm 8 x 8 x 8 grouped M n 5 k 5 groups 2",
     ["s.gs:1:27: error[E200]: 'grouped' and 'gemm' both give the problems in kernel 'q'"]),
    ("grouped M n 5 k 5 groups 2 precision tf32",
     ["s.gs:1:39: error[E900]: a batch sized at run time with precision tf32 (tensor cores) is not supported yet"]),
    ("grouped M n 5 k 5 groups 2 algorithm simt",
     ["s.gs:1:39: error[E202]: algorithm simt cannot compute a batch sized at run time"]),
    ("gemm 8 x 8 x 8 algorithm dynamic",
     ["s.gs:1:27: error[E202]: algorithm dynamic computes batches sized at run time"]),
    ("grouped M n 5 k 5 groups 2 batching binary",
     ["s.gs:1:39: error[E202]: batching binary packs a plan's tiles on the host; the persistent kernel takes its "
      "tiles on the device"]),
    ("grouped M n 5 k 5 groups 2 tile 64x64x16 kslices 2",
     ["s.gs:1:39: error[E900]: kslices and ksplit with a batch sized at run time are not supported yet"]),
])
def test_errors_point_at_the_statement(stmt, expected):
    lines = errors("kernel q { " + stmt + " }")
    for line in expected:
        assert line in lines, "\n".join(lines)


def test_a_compiled_kernel_whose_registers_leave_too_few_threads_a_block_is_refused(monkeypatch):
    import types

    from gemmc.ir.hardware import TARGETS
    from gemmc.runtime import dynamic

    kern = kernel_of(MOE)
    assert kern.executable.ir.plan.threads == 256
    monkeypatch.setattr(dynamic, "hardware", lambda: TARGETS["sm_90"])
    monkeypatch.setattr(dynamic, "device_function",
                        lambda rendered, entry: types.SimpleNamespace(num_regs=255, max_threads_per_block=128))
    with pytest.raises(gemmc.GemmcError) as info:
        dynamic.state(kern.executable)
    assert str(info.value) == ("error[E302]: kernel 'moe': the compiled kernel uses 255 registers per thread, so at "
                               "most 128 threads fit in a block; the plan needs 256")


def test_an_explicit_tile_is_the_only_size_class():
    k = kernel_of("kernel t { tile 64x64x16 grouped M n 100 k 50 groups 4 }")
    plan = k.ir.plan
    assert isinstance(plan, DynamicPlan)
    assert [(c.variant.bm, c.variant.bn, c.variant.bk) for c in plan.classes] == [(64, 64, 16)]
    # no half-width variant: the last round's tiles would each take two claims and run whole in the first
    assert not plan.tail_split and "column halves" not in "\n".join(plan.lines())
    assert "gemmc_dyn_apart" not in k.source  # one level: its one variant inline, no wrapper for the levels below



@pytest.mark.parametrize("target", ["cuda sm_90", "hip gfx942"])
def test_the_tlp_sums_shuffle_only_in_blocks_of_whole_32_lane_groups(target):
    """The TLP sums are added over 32 lanes by shuffles (then one shared atomic per 32 lanes), which read lanes past
    the block's last thread where its threads are not a multiple of 32: the ladder's blocks are, and a ladder of one
    level (an explicit tile) has no cap to choose and sums nothing. (A tile of threads that are not whole warps is
    refused: tests/test_passes.py.)"""
    one = kernel_of(f"target {target}\nkernel t {{ tile 32x64x8 grouped M n 100 k 50 groups 4 }}")
    assert isinstance(one.ir.plan, DynamicPlan) and one.ir.plan.threads == 128 and len(one.ir.plan.levels) == 1
    assert "GEMMC_SHFL_DOWN(sum" not in one.source and "atomicAdd(&s_tlp" not in one.source
    for dtype in ("f32", "f64", "bf16"):
        ladder = kernel_of(f"target {target}\nkernel t {{ dtype {dtype} grouped M n 100 k 50 groups 4 }}")
        plan = ladder.ir.plan
        assert isinstance(plan, DynamicPlan) and len(plan.levels) > 1 and plan.threads % 32 == 0
        assert "GEMMC_SHFL_DOWN(sum, off)" in ladder.source and "static_assert(NT % 32 == 0" in ladder.source


@pytest.mark.parametrize("text", [TLP_MOE, TLP_LIST], ids=["M", "list"])
def test_the_tlp_probe_of_the_gpu_tests_applies_once_and_compiles(text, tmp_path):
    """tests/gpu/test_dynamic_tlp_gpu.py reads the device's TLP sums and cap through a store patched into the kernel's
    source after the barrier that completes the sums (tests.gpu.helpers.tlp_probe): that anchor is there exactly once,
    a source without it is refused, and the probed source compiles (nvcc here; the GPU machine compiles it with
    NVRTC, as the runtime does)."""
    k = kernel_of(text)
    levels = len(k.ir.plan.levels)
    assert levels > 1 and k.source.count(TLP_ANCHOR) == 1
    with pytest.raises(AssertionError, match="anchor occurs 0 times"):
        tlp_probe(k.source.replace(TLP_ANCHOR, ""), levels)
    if shutil.which("nvcc") is None:
        pytest.skip("needs nvcc")
    src = tmp_path / "k.cu"
    src.write_text(tlp_probe(k.source, levels))
    proc = subprocess.run(["nvcc", *k.rendered.build_flags, "-std=c++17", "-c", str(src), "-o", str(src) + ".o"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]


APART = [("kernel k { layout B col  grouped M n 2048 k 1024 groups 64 }", "sm_90"),
         ("kernel k { layout A col  grouped K m 1024 n 2048 groups 64 }", "sm_90"),
         ("kernel k { dtype f64  alpha runtime beta runtime  grouped list problems 512 }", "sm_90"),
         ("kernel k { dtype A bf16, B bf16, C f32  grouped M n 1024 k 2048 groups 64 }", "sm_80")]


@pytest.mark.parametrize("text, target", APART, ids=["M-f32", "K-f32", "list-f64", "M-bf16-f32c"])
def test_the_variants_below_the_top_level_compile_apart_without_a_stack_frame(text, target, tmp_path):
    """The top level's variants stay inline in the tile switch; the levels below call gemmc_dyn_apart (__noinline__,
    the problem's sizes by value), which ptxas compiles without a stack frame: a problem passed by reference took a
    48-byte frame (bench/results/dynamic/2026-11-28_h100_variants-apart.json)."""
    k = gemmc.compile_string(text, target=target)["k"]
    plan = k.ir.plan
    assert isinstance(plan, DynamicPlan)
    top = max(c.level for c in plan.classes)
    below = sum(c.level < top for c in plan.classes)
    assert below > 0 and k.source.count("gemmc_dyn_apart<") == below and "__noinline__ void gemmc_dyn_apart" in k.source
    if shutil.which("nvcc") is None:
        pytest.skip("needs nvcc")
    src = tmp_path / "k.cu"
    src.write_text(k.standalone)
    proc = subprocess.run(["nvcc", *k.rendered.build_flags, "-std=c++17", "-c", str(src), "-o", str(src) + ".o",
                           "-Xptxas", "-v"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]
    lines = proc.stderr.splitlines()
    apart = [i for i, line in enumerate(lines) if "Function properties for _Z15gemmc_dyn_apart" in line]
    frames = [line.strip() for line in lines if "bytes stack frame" in line]
    assert len(apart) == below, proc.stderr[-4000:]  # each variant below the top a function of its own
    assert all(f.startswith("0 bytes stack frame, 0 bytes spill stores") for f in frames), proc.stderr[-4000:]


def test_inspect_shows_the_size_classes_and_the_scheduler(tmp_path):
    path = tmp_path / "m.gs"
    path.write_text(MOE)
    out = subprocess.run([str(ROOT / ".venv/bin/gemmc") if (ROOT / ".venv/bin/gemmc").exists() else "gemmc",
                          "inspect", str(path)], capture_output=True, text=True, check=True).stdout
    assert "problems: grouped M  n 96  k 40  (up to 24 groups)" in out
    assert "size classes at n 96 (top cap): rows 1-32 -> 32x128, rows 33-64 -> 64x128, rows 65+ -> 128x128" in out
    assert "persistent kernel: block 256 threads, grid SMs x" in out
    assert "tiles derived on the device" in out


def test_inspect_counts_the_tiles_each_size_class_takes_at_the_declared_rows():
    """The equal-groups line says which tiles the groups run: 8-row groups one row of 32 x 128 tiles each, 300-row
    groups two rows of 128 x 128 and a last row of 64 x 128."""
    def line(rows: int) -> str:
        plan = kernel_of(f"kernel m {{ layout B col grouped M n 2048 k 512 groups 128 rows {rows} }}").plan
        return next(x for x in plan.splitlines() if "equal groups" in x)

    assert "2048 tiles (2048 of 32x128)" in line(1024)
    assert "6144 tiles (4096 of 128x128, 2048 of 64x128)" in line(128 * 300)


# ---- the scheduler: NumPy model, float64 reference, coverage ----------------------------------------------------

def skewed(rng: np.random.Generator, groups: int, rows: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each group's rows, `rows` in all: uniform, half the groups emptied, one group with everything."""
    uniform = rng.multinomial(rows, np.full(groups, 1.0 / groups))
    empty = uniform.copy()
    empty[rng.choice(groups, groups // 2, replace=False)] = 0
    one = np.zeros(groups, dtype=np.int64)
    one[rng.integers(groups)] = rows
    return uniform, empty, one


def routings(seed: int, groups: int, rows: int) -> list[np.ndarray]:
    """Cumulative ends of random routings: uniform, empty groups, one group with everything, sizes 1 and primes."""
    rng = np.random.default_rng(seed)
    uniform, empty, one = skewed(rng, groups, rows)
    small = rng.choice([0, 1, 2, 3, 5, 7, 13, 17, 31, 61, 127], size=groups)
    zipf = np.minimum(rng.zipf(1.5, size=groups), rows)
    return [np.cumsum(s).astype(np.int64) for s in (uniform, empty, one, small, zipf)]


def reference_schedule(plan: DynamicPlan, m: np.ndarray, n: np.ndarray, threshold: int) -> tuple[int, list[int]]:
    """The scheduler's rules in float64, group by group and tile by tile: the variant whose tiles (edge tiles in the
    last row or column at their half variant's weight) weigh least under each cap, the TLP per cap, the largest cap
    whose TLP reaches the threshold."""
    caps = len(plan.levels)
    tlp = np.zeros(caps)
    chosen = np.zeros((caps, len(m)), dtype=np.int64)
    for g in range(len(m)):
        for c in range(caps):
            best, best_cost = 0, None
            for v, cls in enumerate(plan.classes):
                if cls.level > c:
                    continue
                cost = sum(float(plan.classes[variant].weight) for *_, variant in model_tiles(plan, m[g], n[g], v))
                if best_cost is None or cost <= best_cost:
                    best, best_cost = v, cost
            cls = plan.classes[best]
            chosen[c, g] = best
            tlp[c] += np.ceil(m[g] / cls.variant.bm) * np.ceil(n[g] / cls.variant.bn) * cls.variant.threads
    reached = [c for c in range(caps) if tlp[c] >= threshold]
    cap = max(reached) if reached else 0
    return cap, chosen[cap].tolist()


def model_tiles(plan: DynamicPlan, m: int, n: int, v: int) -> list[tuple[int, int, int]]:
    """(m0, n0, variant) of every tile of variant v over m x n, n fastest: a tile whose rows (columns) left need at
    most half its height (width) runs the variant of that half, where the ladder has one (float64 arithmetic)."""
    cls = plan.classes[v].variant
    out = []
    for i in range(int(np.ceil(m / cls.bm))):
        for j in range(int(np.ceil(n / cls.bn))):
            m0, n0 = i * cls.bm, j * cls.bn
            half_h, half_w = float(m - m0) <= cls.bm / 2.0, float(n - n0) <= cls.bn / 2.0
            want = (cls.bm // 2 if half_h else cls.bm, cls.bn // 2 if half_w else cls.bn)
            runs = [u for u, c in enumerate(plan.classes)
                    if (c.variant.bm, c.variant.bn) == want and c.variant.threads == cls.threads]
            if not runs:  # no such corner: the half along one side, else the tile itself
                runs = [u for u, c in enumerate(plan.classes) if c.variant.threads == cls.threads and (
                    (c.variant.bm, c.variant.bn) in ((cls.bm // 2, cls.bn) if half_h else (0, 0),
                                                     (cls.bm, cls.bn // 2) if half_w else (0, 0)))] or [v]
            out.append((m0, n0, runs[0]))
    return out


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("threshold", [1, 20_000, 10**9])
def test_the_schedule_matches_a_float64_model_and_covers_every_output_once(seed, threshold):
    plan = kernel_of(MOE).ir.plan
    assert isinstance(plan, DynamicPlan)
    rows, n = 500, 96
    for ends in routings(seed, 24, rows):
        starts = scheduler.clamped_starts(ends, rows)
        m, nn, kk = scheduler.group_sizes(plan, starts, n=n, k=40)
        sched = scheduler.schedule(plan, m, nn, threshold, kk)
        assert (sched.cap, sched.variant.tolist()) == reference_schedule(plan, m, nn, threshold)
        split = [model_parts(plan, m[g], n, sched.variant[g]) for g in range(len(m))]
        first = [(p, g) for p in range(plan.parts)
                 for g in sorted(range(len(m)), key=lambda g, p=p: (-plan.classes[split[g][p][0][2]].weight * 40
                                                                    if split[g][p] else 0, g))]
        assert sched.order.tolist() == [p * len(m) + g for p, g in first], \
            "whole rows before half-height last rows, each by the costliest tiles first, ties in group order"
        covered = np.zeros((rows, n), dtype=np.int64)
        bm, bn = scheduler.column(plan, "bm"), scheduler.column(plan, "bn")
        table = scheduler.tile_table(plan, sched, m, nn)
        want = [(g, m0, n0, v) for p, g in first for m0, n0, v in split[g][p]]
        assert [tuple(row) for row in table.tolist()] == want
        for g, m0, n0, v in table:
            assert 0 <= m0 < m[g] and 0 <= n0 < n, "a tile starts outside its group"
            lo, hi = starts[g] + m0, min(starts[g] + m0 + bm[v], starts[g + 1])
            covered[lo:hi, n0:min(n0 + bn[v], n)] += 1
        inside = np.zeros(rows, dtype=bool)
        inside[:starts[-1]] = True
        assert (covered[inside] == 1).all(), "an output of a group is missed or computed twice"
        assert (covered[~inside] == 0).all(), "a row outside every group is written"


@pytest.mark.parametrize("text", [MOE, "kernel l { dtype f64 grouped list problems 40 }"], ids=["grouped", "list"])
def test_the_last_round_in_column_halves_covers_every_output_once(text):
    """DynamicPlan.tail_split: every claim of a launch (scheduler.claim_table, the model of gemmc_dyn_whole,
    gemmc_dyn_claim and gemmc_dyn_half that test_the_device_scheduler_agrees_with_the_numpy_model checks against the
    device code) computes its rows and columns of its group, clipped to the group as the tile function clips them:
    every output exactly once whatever the grid (fewer tiles than blocks, whole rounds, a last round of more or at
    most half the blocks), edge tiles whose variant has no half-width one running whole in their left half's claim."""
    plan = kernel_of(text).ir.plan
    assert isinstance(plan, DynamicPlan) and plan.tail_split
    bm, bn = scheduler.column(plan, "bm"), scheduler.column(plan, "bn")
    rng = np.random.default_rng(11)
    seen = {"split": 0, "whole in its left half": 0, "no split": 0, "fewer tiles than blocks": 0}
    for _ in range(60):
        groups = int(rng.integers(1, 12))
        m = rng.choice([0, 1, 17, 63, 64, 65, 100, 127, 129, 191, 193, 300, 511], size=groups)
        n = rng.choice([1, 31, 33, 64, 65, 96, 127, 129, 200, 548], size=groups)
        k = rng.choice([1, 40, 333], size=groups)
        sched = scheduler.schedule(plan, m, n, int(rng.choice([1, 50_000, 10**9])), k)
        total = sched.total
        for blocks in {1, 2, 3, 132, max(total, 1), total + 1, 2 * total, 2 * total + 1, max(total - 1, 1),
                       int(rng.integers(1, 2 * total + 2))}:
            table = scheduler.claim_table(plan, sched, m, n, blocks)
            whole = scheduler.whole_claims(total, blocks)
            assert len(table) == 2 * total - whole
            if whole < total:
                assert 2 * (total - whole) <= blocks and (whole % blocks == 0), "only a last round of <= half the grid"
                tiles = scheduler.tile_table(plan, sched, m, n)[whole:]
                left, right = table[whole::2], table[whole + 1::2]
                seen["split"] += int((right[:, 3] >= 0).sum())
                # split where the tile's variant has a half-width one; its right half runs where it holds a column of
                # the group (a 128 x 64 edge tile of at most 32 columns leaves its right 128 x 32 half empty)
                inside = right[:, 2] < np.asarray(n)[right[:, 0]]
                split = (bn[left[:, 3]] < bn[tiles[:, 3]]) & inside
                assert ((right[:, 3] >= 0) == split).all(), "a tile split or not"
                seen["whole in its left half"] += int((right[:, 3] < 0).sum())
                seen["fewer tiles than blocks"] += int(whole == 0)
            else:
                seen["no split"] += 1
            covered = [np.zeros((int(a), int(b)), dtype=np.int64) for a, b in zip(m, n, strict=True)]
            for g, m0, n0, v in table:
                if v < 0:
                    continue
                assert 0 <= m0 < m[g] and 0 <= n0 < n[g], "a claim starts outside its group"
                covered[g][m0:m0 + bm[v], n0:n0 + bn[v]] += 1
            assert all((c == 1).all() for c in covered), "an output is missed or computed twice"
    assert all(seen.values()), seen


def model_parts(plan: DynamicPlan, m: int, n: int, v: int) -> list[list[tuple[int, int, int]]]:
    """model_tiles in the plan's parts: with two, the tiles of the rows of whole height, then those of a last row that
    needs at most half the height (float64 arithmetic)."""
    tiles = model_tiles(plan, m, n, v)
    if plan.parts == 1:
        return [tiles]
    half = [t for t in tiles if float(m - t[0]) <= plan.classes[v].variant.bm / 2.0]
    return [[t for t in tiles if t not in half], half]


def test_half_height_rows_are_numbered_after_every_whole_row():
    """The longest-first order over all tiles: every group's whole-height tiles, then the half-height last rows, so
    that the blocks claim the shortest tiles last (`grouped M` alone: calibration.PARTS)."""
    plan = kernel_of(MOE.replace("n 96", "n 256")).ir.plan
    assert isinstance(plan, DynamicPlan) and plan.parts == 2
    m, n = np.array([300, 256, 40, 320]), np.full(4, 256)
    sched = scheduler.schedule(plan, m, n, threshold=1, k=np.full(4, 40))
    table = scheduler.tile_table(plan, sched, m, n)
    heights = [plan.classes[v].variant.bm for v in table[:, 3]]
    assert heights == sorted(heights, reverse=True), "no whole tile after a half-height one"
    assert [int(g) for g in table[-6:, 0]] == [0, 0, 2, 2, 3, 3] and heights[-6:] == [64] * 6
    single = kernel_of(MOE.replace("groups 24", "groups 2000")).ir.plan
    assert isinstance(single, DynamicPlan) and single.parts == 1, "past SPLIT_GROUPS one part a group"
    assert single.sched_smem < 48 * 1024 and plan.sched_smem < single.sched_smem
    for text in ("kernel l { grouped list problems 40 }", "kernel w { grouped K m 64 n 64 groups 24 }"):
        other = kernel_of(text).ir.plan
        assert isinstance(other, DynamicPlan) and other.parts == 1, "depths that differ by group: one part"


def test_the_launcher_opts_in_to_the_tiles_shared_memory_whatever_the_scheduler_takes():
    """The scheduler's static arrays count against the 48 KiB a block gets without opting in, beside the tiles': the
    launcher opts in to the tiles' bytes at every size (valid below 48 KiB too), so no estimate decides it."""
    for groups in (24, 1024, 2000):
        k = kernel_of(MOE.replace("groups 24", f"groups {groups}"))
        plan = k.ir.plan
        assert isinstance(plan, DynamicPlan)
        assert f"FuncAttributeMaxDynamicSharedMemorySize, {plan.tile_smem});" in k.standalone


def test_bad_ends_are_clamped_inside_the_rows():
    ends = np.array([5, 3, -4, 12, 9, 40, 2])
    starts = scheduler.clamped_starts(ends, 20)
    assert starts.tolist() == [0, 5, 5, 5, 12, 12, 20, 20]
    assert (np.diff(starts) >= 0).all() and starts[-1] <= 20


def test_small_groups_take_small_tiles_and_large_ones_large_tiles():
    plan = kernel_of(MOE.replace("n 96", "n 2048")).ir.plan
    assert isinstance(plan, DynamicPlan)
    m = np.array([1, 40, 31 * 128 + 100, 31 * 128 + 60])
    sched = scheduler.schedule(plan, m, np.full(4, 2048), threshold=1)
    table = scheduler.tile_table(plan, sched, m, np.full(4, 2048))
    shape = {g: {(plan.classes[v].variant.bm, plan.classes[v].variant.bn) for gg, _, _, v in table if gg == g}
             for g in range(4)}
    assert shape[0] == {(32, 128)}, "a group of at most 32 rows runs one row of 32-row tiles (calibration.THIN)"
    assert shape[1] == {(64, 128)}, "a group of a few rows runs half-height tiles"
    assert shape[2] == {(128, 128)}, "the last row needs more than half a tile: 128 x 128 tiles"
    assert shape[3] == {(128, 128), (64, 128)}, "a last row of half-height edge tiles"


def test_the_body_holds_the_top_tile_its_edges_and_the_quarter_area_tiles():
    """One kernel body holds every variant: the ladder is the static plan's uniform tile and its edge tiles, and for
    f32 the quarter's area as 32 x 128 and 128 x 32 too (calibration.THIN), weighed by measured cost factors
    (calibration.TILE_COST): the same area and micro-tile weigh alike."""
    plan = kernel_of(MOE).ir.plan
    assert isinstance(plan, DynamicPlan)
    tiles = [(c.variant.bm, c.variant.bn) for c in plan.classes]
    assert tiles == [(64, 64), (32, 128), (128, 32), (128, 64), (64, 128), (128, 128)]
    assert [c.level for c in plan.classes] == [0, 0, 0, 1, 1, 2]
    assert {c.variant.threads for c in plan.classes} == {256}
    assert plan.classes[5].edges == (4, 3, 0) and plan.classes[4].edges == (1, 0, 1)
    assert plan.classes[0].edges == (0, 0, 0)
    assert plan.classes[0].weight == plan.classes[1].weight < plan.classes[3].weight < plan.classes[5].weight
    f64 = kernel_of("kernel l { dtype f64 grouped list problems 40 }").ir.plan
    assert isinstance(f64, DynamicPlan)
    assert max(c.variant.tm * c.variant.tn for c in f64.classes) == 16


def test_the_longest_tiles_are_numbered_first():
    """The list form's problems by decreasing cost of a tile (weight x k), as the static planner orders its tiles;
    past SORT_GROUPS groups they keep their order."""
    plan = kernel_of("kernel l { grouped list problems 2000 }").ir.plan
    assert isinstance(plan, DynamicPlan)
    m, n, k = np.array([300, 300, 40, 300, 0]), np.array([300, 300, 300, 300, 9]), np.array([10, 500, 500, 500, 9])
    sched = scheduler.schedule(plan, m, n, 1, k)
    assert sched.order.tolist() == [1, 3, 2, 0, 4]
    table = scheduler.tile_table(plan, sched, m, n)
    assert table[0, 0] == 1 and table[-1, 0] == 0
    many = scheduler.schedule(plan, np.full(1500, 8), np.full(1500, 8), 1, np.arange(1500))
    assert many.order.tolist() == list(range(1500))


def test_the_level_cap_refines_until_the_tlp_reaches_the_threshold():
    plan = kernel_of(MOE.replace("n 96", "n 512")).ir.plan
    assert isinstance(plan, DynamicPlan)
    m, n = np.array([4096] * 8), np.array([512] * 8)
    top = scheduler.schedule(plan, m, n, threshold=1)
    assert top.cap == len(plan.levels) - 1
    finer = scheduler.schedule(plan, m, n, threshold=int(top.tlp[-1]) + 1)
    assert finer.cap < top.cap and finer.total > top.total
    assert scheduler.schedule(plan, m, n, threshold=10**12).cap == 0


# ---- the device code of the scheduler, compiled for the CPU --------------------------------------------------------

HARNESS = r"""
#define __host__
#define __device__
#include <cstdio>
#include <vector>
%s
// Input: "groups threshold blocks", then "m n k" per group. Output: the cap, then each tile as "group m0 n0 variant",
// computed as every block of the kernel computes them (sequentially here), then "claims", then each claim of a launch
// on `blocks` blocks with the last round in column halves (dynamic.cu.j2's tail_split) the same way (variant -1: no
// work).
int main() {
  int groups = 0;
  long long threshold = 0, blocks = 0;
  if (scanf("%%d %%lld %%lld", &groups, &threshold, &blocks) != 3) return 1;
  std::vector<long long> m(groups), n(groups), k(groups);
  unsigned long long tlp[GEMMC_DYN_LEVELS] = {};
  for (int g = 0; g < groups; ++g) {
    if (scanf("%%lld %%lld %%lld", &m[g], &n[g], &k[g]) != 3) return 1;
    int choice[GEMMC_DYN_LEVELS];
    long long add[GEMMC_DYN_LEVELS];
    gemmc_dyn_choices(m[g], n[g], choice, add);
    for (int c = 0; c < GEMMC_DYN_LEVELS; ++c) tlp[c] += add[c];
  }
  const int cap = gemmc_dyn_cap(tlp, threshold);
  const int P = GEMMC_DYN_PARTS * groups;
  std::vector<int> ends(P), var(groups), order(P);
  std::vector<unsigned> keys(P);
  for (int g = 0; g < groups; ++g) {
    var[g] = gemmc_dyn_variant(m[g], n[g], cap);
    for (int part = 0; part < GEMMC_DYN_PARTS; ++part) {
      long long first, m0, n0;
      keys[part * groups + g] = gemmc_dyn_part(m[g], n[g], var[g], part, &first) > 0
                                    ? gemmc_dyn_key(gemmc_dyn_tile(first, m[g], n[g], var[g], &m0, &n0), k[g]) : 0u;
    }
  }
  for (int g = 0; g < groups; ++g)
    for (int part = 0; part < GEMMC_DYN_PARTS; ++part)
      order[part * groups + gemmc_dyn_rank(keys.data() + part * groups, groups, g)] = part * groups + g;
  long long total = 0;
  for (int i = 0; i < P; ++i) {
    const int part = order[i] >= groups, g = order[i] - part * groups;
    long long first;
    total += gemmc_dyn_part(m[g], n[g], var[g], part, &first);
    ends[i] = (int)total;
  }
  printf("%%d\n", cap);
  for (long long t = 0; t < total; ++t) {
    const int i = gemmc_dyn_group(ends.data(), P, t);
    const int part = order[i] >= groups, g = order[i] - part * groups;
    long long m0, n0, first;
    gemmc_dyn_part(m[g], n[g], var[g], part, &first);
    const int v = gemmc_dyn_tile(first + t - (i ? ends[i - 1] : 0), m[g], n[g], var[g], &m0, &n0);
    printf("%%d %%lld %%lld %%d\n", g, m0, n0, v);
  }
  printf("claims\n");
  const long long whole = gemmc_dyn_whole(total, blocks);
  for (long long u = 0; u < 2 * total - whole; ++u) {
    int half;
    const long long t = gemmc_dyn_claim(u, whole, &half);
    const int i = gemmc_dyn_group(ends.data(), P, t);
    const int part = order[i] >= groups, g = order[i] - part * groups;
    long long m0, n0, first;
    gemmc_dyn_part(m[g], n[g], var[g], part, &first);
    int v = gemmc_dyn_tile(first + t - (i ? ends[i - 1] : 0), m[g], n[g], var[g], &m0, &n0);
    if (half >= 0) v = gemmc_dyn_half(v, half, n[g], &n0);
    printf("%%d %%lld %%lld %%d\n", g, m0, n0, v);
  }
  return 0;
}
"""


@pytest.mark.skipif(GXX is None, reason="g++ is not installed")
@pytest.mark.parametrize("text", [MOE, "kernel l { dtype f64 grouped list problems 40 }"], ids=["grouped", "list"])
def test_the_device_scheduler_agrees_with_the_numpy_model(text, tmp_path):
    k = kernel_of(text)
    plan = k.ir.plan
    assert isinstance(plan, DynamicPlan) and plan.tail_split  # the harness claims as a tail_split kernel does
    source = tmp_path / "harness.cpp"
    source.write_text(HARNESS % render("dynamic_sched.cuh.j2", codegen.context(k.ir, k.target)))
    binary = tmp_path / "harness"
    subprocess.run([GXX, "-std=c++17", "-O1", str(source), "-o", str(binary)], check=True, capture_output=True)
    rng = np.random.default_rng(7)
    for trial in range(6):
        groups = int(rng.integers(1, 40))
        m = rng.choice([0, 1, 2, 15, 16, 17, 31, 63, 64, 65, 127, 129, 300, 1000], size=groups)
        n = rng.choice([0, 1, 7, 16, 33, 96, 128, 131, 512], size=groups) if trial % 2 else np.full(groups, 96)
        k = rng.choice([0, 1, 40, 333, 3000, 2**31 - 1], size=groups)
        threshold = int(rng.choice([1, 5_000, 50_000, 10**9]))
        sched = scheduler.schedule(plan, m, n, threshold, k)
        blocks = int(rng.choice([1, 7, 132, 2 * max(sched.total, 1) + 1, max(sched.total - 1, 1)]))
        text_in = (f"{groups} {threshold} {blocks}\n"
                   + "".join(f"{a} {b} {c}\n" for a, b, c in zip(m, n, k, strict=True)))
        run = subprocess.run([str(binary)], input=text_in, capture_output=True, text=True, check=True)
        head, claims = run.stdout.split("claims\n")
        out = head.split("\n")
        assert int(out[0]) == sched.cap
        device = [tuple(map(int, line.split())) for line in out[1:] if line]
        assert device == [tuple(row) for row in scheduler.tile_table(plan, sched, m, n).tolist()]
        device = [tuple(map(int, line.split())) for line in claims.split("\n") if line]
        assert device == [tuple(row) for row in scheduler.claim_table(plan, sched, m, n, blocks).tolist()]
