"""`CompiledKernel.schedule_for` and `gemmc inspect --sizes`, without a GPU: the preview of a batch sized at run time
against the dynamic family's NumPy scheduler (which tests/test_dynamic.py compares with the device code) and against
plain models of the hopper_grouped templates' tile rows, units and last round, on random routings (empty groups, one
group with everything, sizes 1, primes); the sizes a call refuses, refused alike; the command line's table."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

import gemmc
from gemmc import cli
from gemmc.families.dynamic import scheduler
from gemmc.families.dynamic.plan import DynamicPlan
from gemmc.families.hopper_grouped.plan import HopperGroupedPlan
from gemmc.runtime.grouped_list import tma_misfits
from tests.conftest import ROOT
from tests.test_dynamic import skewed

MOE = ROOT / "examples" / "moe.gs"
PRIMES = [2, 3, 5, 7, 11, 13, 17, 31, 61, 127, 257, 509, 1021]


def kernel(text: str, target: str = "cuda sm_90") -> gemmc.CompiledKernel:
    return gemmc.compile_string(f"target {target}\nkernel k {{ {text} }}")["k"]


def routings(seed: int, groups: int, rows: int) -> list[list[int]]:
    """Each group's rows: uniform, half the groups empty, one group with everything, sizes 1, primes, no group."""
    rng = np.random.default_rng(seed)
    uniform, empty, one = skewed(rng, groups, rows)
    return [s.tolist() for s in (uniform, empty, one, np.ones(groups, dtype=np.int64),
                                 rng.choice(PRIMES, size=groups), np.zeros(0, dtype=np.int64))]


def shapes_of(plan: DynamicPlan, table: np.ndarray, groups: int) -> list[dict[str, int]]:
    """Per group, its tiles by shape from a tile table (group, m0, n0, variant)."""
    bm, bn = scheduler.column(plan, "bm"), scheduler.column(plan, "bn")
    out: list[dict[str, int]] = [{} for _ in range(groups)]
    for g, _, _, v in table.tolist():
        name = f"{bm[v]}x{bn[v]}"
        out[g][name] = out[g].get(name, 0) + 1
    return out


# ---- the dynamic family: the NumPy scheduler ---------------------------------------------------------------------

DYNAMIC = ["layout B col grouped M n 2048 k 1024 groups 64 rows 32768", "grouped M n 96 k 40 groups 24",
           "layout A col grouped K m 1024 n 200 groups 64", "dtype f64 grouped K m 96 n 33 groups 24"]


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("text", DYNAMIC)
@pytest.mark.parametrize("sm_count", [None, 7, np.int64(114)])
def test_a_grouped_preview_is_the_numpy_schedulers(text, seed, sm_count):
    k = kernel(text)
    plan, dyn = k.ir.plan, k.ir.dynamic
    assert isinstance(plan, DynamicPlan) and dyn is not None
    grid = (sm_count or k.target.sm_count) * plan.blocks_per_sm
    for sizes in routings(seed, dyn.max_groups, 5000):  # primes: more rows
        got = k.schedule_for(sizes, sm_count=sm_count)
        assert got == k.schedule_for(offsets=np.cumsum(sizes, dtype=np.int64).astype(np.int32), sm_count=sm_count)
        starts = scheduler.clamped_starts(np.cumsum(sizes), sum(sizes))
        m, n, kk = scheduler.group_sizes(plan, starts, dyn.m, dyn.n, dyn.k)
        threshold = plan.threshold(grid)
        sched = scheduler.schedule(plan, m, n, threshold, kk)
        table = scheduler.tile_table(plan, sched, m, n)
        whole = scheduler.whole_claims(sched.total, grid) if plan.tail_split else sched.total
        # the last round's claims as the device's gemmc_dyn_half runs them: a tile is split where its right half runs
        right = scheduler.claim_table(plan, sched, m, n, grid)[whole + 1::2]
        assert (got.cap, got.threshold, got.tlp) == (sched.cap, threshold, tuple(sched.tlp.tolist()))
        assert (got.grid, got.tiles, got.units) == (grid, sched.total, sched.total)
        assert (got.tail, got.split) == (sched.total - whole, int((right[:, 3] >= 0).sum()))
        assert got.rounds == pytest.approx(sched.total / grid)
        assert [(g.m, g.n, g.k) for g in got.groups] == list(zip(m.tolist(), n.tolist(), kk.tolist(), strict=True))
        assert [dict(g.tiles) for g in got.groups] == shapes_of(plan, table, len(m))
        assert all(g.count == 0 and g.tile == "" and g.tiles == () for g in got.groups if g.m * g.n == 0)


def test_a_list_preview_is_the_numpy_schedulers():
    k = kernel("dtype f64 grouped list problems 40")
    plan = k.ir.plan
    assert isinstance(plan, DynamicPlan)
    rng = np.random.default_rng(5)
    grid = k.target.sm_count * plan.blocks_per_sm
    for count in (0, 1, 7, 40):
        shapes = rng.choice([0, 1, 2, 17, 31, 64, 127, 300, 1021], size=(count, 3))
        got = k.schedule_for(shapes.tolist())
        m, n, kk = (shapes[:, i] for i in range(3))
        sched = scheduler.schedule(plan, m, n, plan.threshold(grid), kk)
        table = scheduler.tile_table(plan, sched, m, n)
        assert (got.cap, got.tiles) == (sched.cap, sched.total)
        assert [dict(g.tiles) for g in got.groups] == shapes_of(plan, table, count)


def test_the_cap_says_which_level_reached_the_threshold():
    k = kernel("layout B col grouped M n 512 k 64 groups 8")
    top, smallest = k.schedule_for([4096] * 8), k.schedule_for([1])
    assert top.cap == 2 and "cap level 2 (huge), the top: its TLP" in top.why
    assert smallest.cap == 0 and "the smallest: no level's TLP reaches the threshold" in smallest.why
    low = kernel("layout B col grouped M n 512 k 64 groups 8 tlp threshold 60000")
    mid = low.schedule_for([700] * 8)
    assert mid.cap == 1 and "the largest level whose TLP" in mid.why and "`tlp threshold 60000`" in mid.why
    assert mid.tlp[1] >= 60000 > mid.tlp[2]


def test_the_last_round_in_column_halves():
    k = gemmc.compile_file(MOE)["moe_up"]
    s = k.schedule_for([40, 4000, 0, 12])  # 16 + 512 + 16 tiles: 4 rounds of 132 and 16 left, at most half
    assert (s.tiles, s.tail, s.cap) == (544, 16, 2)
    assert [g.tiles for g in s.groups] == [(("64x128", 16),), (("128x128", 496), ("64x128", 16)), (), (("32x128", 16),)]
    # 40 rows take the 128 x 128 class, whose half-height edge tiles cover them: the largest tile run is 64 x 128
    assert s.groups[0].tile == "64x128"
    # the last 16 tiles are group 3's 32 x 128 ones, whose variant has no half-width one: each runs whole in its
    # first claim (gemmc_dyn_half), the second claim empty
    assert (s.tail, s.split) == (16, 0)
    assert "the last round's 16 tiles run whole (no half-width variant)" in str(s)
    rows = k.schedule_for([128 * 67])  # 1072 tiles of 128 x 128: 8 rounds, then the last row's 16 in halves
    assert (rows.tail, rows.split) == (16, 16)
    assert "the last round's 16 tiles in column halves (32 claims)" in str(rows)
    assert k.schedule_for([128 * 66], sm_count=132).tail == 0  # 1056 tiles: 8 whole rounds


# A last round of split and whole tiles, and why those run whole: only the reasons that hold. Numbered last (tiles by
# decreasing cost): the 128-row group's last row of tiles, then the 12-row group's row of 32 x 128 tiles, which have no
# half-width variant. At n 2068 each row ends in a 128 x 64 tile over 20 columns, whose 128 x 32 right half starts at
# 2080, past n.
@pytest.mark.parametrize("n, sizes, tail, split, words", [
    (2048, [128 * 67, 12], 32, 16, "1088 tiles on a grid of 132 blocks: 8.24 rounds of 132 blocks; of the last round's "
     "32 tiles, 16 run in column halves and 16 whole (no half-width variant)"),  # 67 x 16 + 16 = 8 x 132 + 32
    (2068, [128 * 133], 17, 16, "2261 tiles on a grid of 132 blocks: 17.13 rounds of 132 blocks; of the last round's "
     "17 tiles, 16 run in column halves and 1 whole (the right half past n)"),  # 133 x 17 = 17 x 132 + 17
    (2068, [128 * 133, 12], 34, 16, "2278 tiles on a grid of 132 blocks: 17.26 rounds of 132 blocks; of the last "
     "round's 34 tiles, 16 run in column halves and 18 whole (no half-width variant, or the right half past n)"),
])
def test_a_last_round_of_split_and_whole_tiles_says_how_many_of_each(n, sizes, tail, split, words):
    k = kernel(f"layout B col grouped M n {n} k 1024 groups 64 rows 32768")  # examples/moe.gs's moe_up at n 2048
    s = k.schedule_for(sizes, sm_count=132)
    assert (s.tail, s.split) == (tail, split)
    assert f"  {words}" in s.lines()


# ---- the hopper_grouped family: the templates' arithmetic ----------------------------------------------------------

def tile_rows(sizes: list[int]) -> list[tuple[int, int]]:
    """(group, rows) of every tile row in the kernel's order: a group's 128-row rows (the last one partial where more
    than 64 rows are left), then its 64-row one (tests/test_hopper_grouped.py's model)."""
    out = []
    for g, m in enumerate(sizes):
        full = m // 128 + (m % 128 > 64)
        out += [(g, 128)] * full + ([(g, 64)] if 0 < m % 128 <= 64 else [])
    return out


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("text", ["dtype bf16 layout B col grouped M n 1024 k 512 groups 32",
                                  "dtype f16 grouped M n 2048 k 4096 groups 16",
                                  "dtype bf16 layout B col grouped M n 96 k 40 groups 24"])
def test_a_grouped_m_preview_counts_the_templates_tile_rows_and_units(text, seed):
    k = kernel(text)
    plan = k.ir.plan
    assert isinstance(plan, HopperGroupedPlan)
    dyn = k.ir.dynamic
    tiles_n = -(-dyn.n // plan.bn)
    for sm_count in (132, 7):
        for sizes in routings(seed, dyn.max_groups, 3000):
            got = k.schedule_for(sizes, sm_count=sm_count)
            rows = tile_rows(sizes)
            for g, group in enumerate(got.groups):
                mine = [h for gg, h in rows if gg == g]
                want = {f"{h}x{plan.bn}": mine.count(h) * tiles_n for h in (128, 64) if h in mine}
                assert dict(group.tiles) == want
            units = -(-len(rows) // plan.cluster) * tiles_n
            grid = sm_count // plan.cluster * plan.cluster
            rest = units % grid
            tail = rest if plan.tail_split and rest and 2 * rest <= grid else 0
            # units by tile row, n fastest: a 64-row unit of the last round runs whole, its second half's step empty
            split = sum(rows[u // tiles_n][1] == 128 for u in range(units - tail, units))
            assert (got.grid, got.cluster, got.units, got.tail, got.split) == (grid, plan.cluster, units, tail, split)
            assert got.tiles == len(rows) * tiles_n and got.cap is None
            assert got.rounds == pytest.approx(units / (grid // plan.cluster))


def test_clusters_pair_tile_rows_and_never_split_the_last_round():
    k = kernel("dtype bf16 grouped M n 2048 k 4096 groups 64")
    assert k.ir.plan.cluster == 2 and not k.ir.plan.tail_split
    s = k.schedule_for([40, 4000, 0, 129, 1])  # 1 + 32 + 0 + 2 + 1 tile rows: 18 pairs by 8 n-tiles
    assert (s.tiles, s.units, s.grid, s.split) == (288, 144, 132, 0)
    assert "288 tiles in 144 units of 2 tile rows by one n-tile on a grid of 132 blocks: 2.18 rounds of 66 " \
           "clusters" in str(s)


def test_a_plan_in_raster_bands_says_so():
    import dataclasses

    k = kernel("dtype bf16 layout B col grouped M n 1024 k 512 groups 32")
    assert "by n-tiles, n fastest" in str(k.schedule_for([300, 5]))
    banded = k.with_plan(dataclasses.replace(k.ir.plan, band=4), "banded")
    s = banded.schedule_for([300, 5])
    assert "in bands of 4 unit rows walked rows-fastest before the next n-tile" in str(s)
    assert s == dataclasses.replace(k.schedule_for([300, 5]), notes=s.notes)  # the same tiles, another walk


def test_a_grouped_k_preview_gives_every_group_the_same_tiles():
    k = kernel("dtype bf16 layout A col grouped K m 1000 n 512 groups 16")
    plan = k.ir.plan
    assert isinstance(plan, HopperGroupedPlan) and plan.grouped_k
    s = k.schedule_for([512, 0, 77, 1])
    per = 8 * -(-512 // plan.bn)
    assert [g.tiles for g in s.groups] == [((f"128x{plan.bn}", per),)] * 4 and s.units == 4 * per
    assert [(g.m, g.n, g.k) for g in s.groups] == [(1000, 512, 512), (1000, 512, 0), (1000, 512, 77), (1000, 512, 1)]


def test_a_list_preview_sends_what_tma_cannot_read_to_cuda_cores_as_a_call_does():
    k = kernel("dtype bf16 layout B col grouped list problems 64")
    plan = k.ir.plan
    assert isinstance(plan, HopperGroupedPlan) and plan.grouped_list and plan.b_kmajor
    shapes = [(40, 512, 256), (0, 3, 4), (1000, 17, 3), (100, 256, 0), (65, 7, 64), (1, 1, 8), (129, 300, 13)]
    s = k.schedule_for(shapes)
    # a call's problem table of dense arrays at aligned addresses: m, n, k, lda = k, ldb = k (B col), ldc = n
    table = np.array([(m, n, kk, kk, kk, n, 256, 256, 256) for m, n, kk in shapes], dtype=np.int64)
    assert [bool(g.elsewhere) for g in s.groups] == tma_misfits(table).tolist() == [0, 0, 1, 0, 0, 0, 1]
    assert s.groups[2].elsewhere.startswith("CUDA cores (the dynamic family): TMA cannot read A's lines of 3")
    assert [g.tiles for g in s.groups][:2] == [(("64x128", 4),), ()]
    assert s.groups[3].tiles == (("128x128", 2),)  # k 0: tiles that store beta * C
    assert s.groups[4].tiles == (("128x128", 1),) and s.groups[5].tiles == (("64x128", 1),)
    assert s.tiles == s.units == 8 and s.split == 0
    assert "run first in a launch of the dynamic family" in str(s)


# ---- what a call refuses -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("call, words", [
    (lambda k: k.schedule_for([1] * 25), "sizes: 25 groups, but the schedule allows at most 24"),
    (lambda k: k.schedule_for([3, -1]), "sizes[1] = -1: sizes are 0 or more"),
    (lambda k: k.schedule_for([6000]), "sizes: 6000 rows, but the schedule allows at most 5000 (`rows` in the"),
    (lambda k: k.schedule_for(), "schedule_for: give each group's rows, or offsets=the cumulative group ends"),
    (lambda k: k.schedule_for([1], offsets=[1]), "(not both)"),
    (lambda k: k.schedule_for(offsets=[5, 3]), "offsets[1] = 3 is below offsets[0] = 5: group ends must be cumulative"),
    (lambda k: k.schedule_for(offsets=[-2]), "offsets[0] = -2 is negative"),
    (lambda k: k.schedule_for([[1, 2]]), "sizes: expected one number per group, got an array of shape (1, 2)"),
    (lambda k: k.schedule_for([1.5]), "sizes: expected whole numbers, got float64 values"),
    (lambda k: k.schedule_for([1], sm_count=0), "sm_count: expected a whole number of SMs of at least 1, got 0"),
    (lambda k: k.schedule_for([2**62, 2**62]), "sizes[0] = 4611686018427387904: sizes are at most 2147483647"),
    (lambda k: k.schedule_for([3, 2**64]), "sizes: 18446744073709551616 is past 64 bits: sizes are at most 2147483647"),
    (lambda k: k.schedule_for(offsets=[1, 2**31]), "offsets[1] = 2147483648: a call's group ends are int32"),
])
def test_what_a_call_refuses_the_preview_refuses(call, words):
    k = kernel("grouped M n 96 k 40 groups 24 rows 5000")
    with pytest.raises(gemmc.GemmcError) as info:
        call(k)
    assert info.value.code == "E400" and words in str(info.value)


@pytest.mark.parametrize("text, sizes, words", [
    ("grouped M n 2048 k 40 groups 24", [2**31 - 1], "sizes: 2147483647 rows give more tiles than the int32 tile"),
    ("grouped M n 2048 k 40 groups 24", [2**30] * 2, "sizes: 2147483648 rows, but the schedule allows at most"),
    ("grouped list problems 4", [(2**31 - 1, 2**31 - 1, 1)], "sizes: the problems give more tiles than the int32"),
    ("dtype bf16 grouped list problems 4", [(2**31 - 1, 2**20, 8)], "sizes: the problems give more tiles than"),
    ("grouped list problems 4", [(2**40, 1, 1)], "sizes[0] = [1099511627776, 1, 1]: sizes are at most 2147483647"),
])
def test_sizes_past_32_bits_are_refused_as_a_call_refuses_them(text, sizes, words):
    """A call's group ends are int32 and its tile numbering int32 (runtime/dynamic.py, runtime/dynamic_list.py):
    sizes past them are refused, not previewed with int64 products that wrap (a list's 2^40 x 2^40 gave 0 tiles)."""
    k = kernel(text)
    with pytest.raises(gemmc.GemmcError) as info:
        k.schedule_for(sizes)
    assert info.value.code == "E400" and words in str(info.value)


def test_a_list_takes_shapes_and_a_fixed_batch_has_its_plan():
    k = kernel("grouped list problems 4")
    for bad, words in (([(1, 2)], "expected the (m, n, k) of each problem, got an array of shape (1, 2)"),
                       ([(1, 2, 3)] * 5, "5 problems, but the schedule allows at most 4"),
                       ([(1, -2, 3)], "sizes[0] = [1, -2, 3]: sizes are 0 or more")):
        with pytest.raises(gemmc.GemmcError, match=r"\(m, n, k\)|problems|sizes\[0\]") as info:
            k.schedule_for(bad)
        assert words in str(info.value)
    with pytest.raises(gemmc.GemmcError, match="takes the \\(m, n, k\\) of each problem, not group ends"):
        k.schedule_for(offsets=[3])
    with pytest.raises(gemmc.GemmcError, match="has a batch fixed in its schedule") as info:
        kernel("gemm 64 x 64 x 64").schedule_for([1])
    assert info.value.code == "E400"


# ---- the command line --------------------------------------------------------------------------------------------

def test_inspect_sizes_prints_the_table_of_each_kernel_its_sizes_fit(capsys):
    assert cli.main(["inspect", str(MOE), "--sizes", "40,4000,0,12"]) == 0
    out, err = capsys.readouterr()
    assert out == "\n\n".join(str(gemmc.compile_file(MOE)[name].schedule_for([40, 4000, 0, 12]))
                              for name in ("moe_up", "moe_wgrad")) + "\n"
    lines = out.splitlines()
    assert lines[0] == "schedule of moe_up (dynamic, grouped M) for 4 groups"
    assert lines[2:7] == ["  group     m     n     k  tiles  run as",
                          "      0    40  2048  1024     16  64x128 x 16",
                          "      1  4000  2048  1024    512  128x128 x 496, 64x128 x 16",
                          "      2     0  2048  1024      0  -",
                          "      3    12  2048  1024     16  32x128 x 16"]
    assert "skipped varlen: grouped list of up to 512 problems, whose sizes --sizes does not spell" in err


def test_inspect_sizes_of_a_list(capsys):
    assert cli.main(["inspect", str(MOE), "--kernel", "varlen", "--sizes", "40x512x256,0x3x4"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("schedule of varlen (dynamic, grouped list) for 2 problems\n")
    assert "        1   0    3    4      0  -" in out


@pytest.mark.parametrize("args, code, words", [
    (["--sizes", "40,-1"], cli.EXIT_USER, "error[E400]: --sizes, kernel 'moe_up': sizes[1] = -1: sizes are 0 or more"),
    (["--kernel", "moe_up", "--sizes", "1x2x3"], cli.EXIT_USER,
     "gemmc: error: --sizes gives m x n x k shapes (a grouped list's problems), and no kernel shown is such a batch"),
    (["--sizes", "4a"], cli.EXIT_USAGE, "argument --sizes: '4a': expected numbers separated by commas"),
    (["--sizes", "1x2"], cli.EXIT_USAGE, "a grouped list's problems are m x n x k, such as 40x512x256"),
    (["--sizes", "1", "--svg", "-"], cli.EXIT_USER, "--svg and --sizes: give one"),
    (["--sizes", "1", "--source"], cli.EXIT_USER, "--source and --sizes: give one (--sizes prints no plan text)"),
    (["--sizes", "1", "--after", "check"], cli.EXIT_USER, "--after and --sizes: give one"),
    (["--svg", "-", "--after", "all"], cli.EXIT_USER, "--after and --svg: give one (--svg prints no plan text)"),
])
def test_inspect_sizes_errors(args, code, words, capsys):
    with pytest.raises(SystemExit) if code == cli.EXIT_USAGE else contextlib.nullcontext() as exit_:
        got = cli.main(["inspect", str(MOE), *args])
    if code == cli.EXIT_USAGE:
        assert exit_.value.code == code
    else:
        assert got == code
    assert words in capsys.readouterr().err

