"""The planner computes per problem over numpy columns (tiling.py, worklist.py, batching.py). These tests hold it to
the one-at-a-time definitions it replaced, on random batches: the same tiles in the same order, the same
Algorithm 1 and lockstep choices, and a cost model whose per-problem tile counts equal counting the tiles."""

from __future__ import annotations

import dataclasses
import heapq

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gemmc.families.simt import planner as simt
from gemmc.families.simt import tiling
from gemmc.ir.hardware import TARGETS
from gemmc.ir.nodes import Kernel, Problem, ProblemRow, ProblemTable, TileTable, WorkTile
from gemmc.model.raster import table as raster_table
from gemmc.model.tlp import ceil_div
from gemmc.model.worklist import GROUP_M, Sizes, one_tile_per_block

H100 = TARGETS["sm_90"]
batches = st.lists(st.tuples(st.integers(1, 700), st.integers(1, 700), st.integers(1, 600)), min_size=1, max_size=60)


def _problems(shapes):
    return tuple(Problem(f"p{i}", m, n, k) for i, (m, n, k) in enumerate(shapes))


def _tiles_one_by_one(index, m, n, bm, bn, variant):
    out = []
    tiles_m, tiles_n = ceil_div(m, bm), ceil_div(n, bn)
    for g in range(0, tiles_m, GROUP_M):
        for tn in range(tiles_n):
            for tm in range(g, min(g + GROUP_M, tiles_m)):
                out.append(WorkTile(index, tm * bm, tn * bn, variant))
    return out


def _loadbalanced_with_a_heap(problems, count, hw, threshold, metric):
    """Paper 000 Algorithm 1 (corrected) with a priority queue, one step at a time: the planner's former code."""
    levels = [tiling.initial_level(p) for p in problems]
    launch = max(lv.tall.threads for lv in tiling.LOADBALANCED_LEVELS)

    def contribution(i):
        v = tiling.LOADBALANCED_LEVELS[levels[i]].pick(problems[i])
        threads = ceil_div(v.threads, hw.warp_size) * hw.warp_size if metric == "new" else launch
        return tiling.tiles(problems[i], v) * count * threads

    parts = [contribution(i) for i in range(len(problems))]
    tlp = sum(parts)
    heap = [(-levels[i], -problems[i].flops, i) for i in range(len(problems)) if levels[i] > 0]
    heapq.heapify(heap)
    steps = 0
    while tlp < threshold and heap:
        _, _, i = heapq.heappop(heap)
        levels[i] -= 1
        new = contribution(i)
        tlp += new - parts[i]
        parts[i] = new
        steps += 1
        if levels[i] > 0:
            heapq.heappush(heap, (-levels[i], -problems[i].flops, i))
    return tuple(tiling.LOADBALANCED_LEVELS[lv].pick(p) for lv, p in zip(levels, problems, strict=True)), steps


def _coordinated_with_queues(problems, count, threshold, max_outputs):
    steps, chosen = 0, []
    for threads in (256, 128):
        strategies = [v for _, v in tiling.COORDINATED[threads] if v.tm * v.tn <= max_outputs]
        queues = [[v for v in strategies if v.bm <= p.m and v.bn <= p.n] or [strategies[0]] for p in problems]
        first = True
        while True:
            if not first:
                for q in queues:
                    if len(q) > 1:
                        q.pop(0)
            first = False
            chosen = [q[0] for q in queues]
            if sum(tiling.tiles(p, v) * count for p, v in zip(problems, chosen, strict=True)) * threads <= threshold:
                return tuple(chosen), steps
            if all(len(q) == 1 for q in queues):
                break
            steps += 1
    return tuple(chosen), steps


@settings(max_examples=80, deadline=None)
@given(batches, st.sampled_from([1, 3]), st.integers(1, 1 << 21), st.sampled_from(["new", "old"]))
def test_algorithm_1_matches_the_priority_queue(shapes, count, threshold, metric):
    problems = _problems(shapes)
    t = tiling.loadbalanced(problems, count, H100, threshold, metric)
    assert (t.variants, t.steps) == _loadbalanced_with_a_heap(problems, count, H100, threshold, metric)


@settings(max_examples=80, deadline=None)
@given(batches, st.sampled_from([1, 3]), st.integers(1, 1 << 21), st.sampled_from([32, 64]))
def test_lockstep_tiling_matches_the_queues(shapes, count, threshold, max_outputs):
    problems = _problems(shapes)
    t = tiling.coordinated(problems, count, threshold, max_outputs)
    assert (t.variants, t.steps) == _coordinated_with_queues(problems, count, threshold, max_outputs)


@settings(max_examples=60, deadline=None)
@given(batches, st.sampled_from([1, 2]))
def test_cost_model_counts_equal_the_tiles_it_would_launch(shapes, count):
    # The estimate's tiles per problem (ceil(M/bm) x ceil(N/bn), computed per problem) and its Eq. 3 / Eq. 4
    # figures must equal what counting each candidate's launched tiles one by one gives.
    problems = _problems(shapes)
    kernel = Kernel("k", problems, count=count if count > 1 else None)
    for t in simt.candidate_tilings(kernel, H100, Sizes.of(problems)):
        launched = [0] * len(problems)
        warps = 0
        for i, v in enumerate(t.variants):
            tiles = _tiles_one_by_one(i, problems[i].m, problems[i].n, v.bm, v.bn, 0)
            launched[i] = len(tiles) * count
            warps += len(tiles) * count * ceil_div(v.threads, H100.warp_size)
        assert t.tile_counts(problems, count) == launched
        plan = simt.with_edges(simt.plan_from(kernel, H100, t))
        est = tiling.estimate(plan, problems, count, H100)
        assert est.active_warps == warps and est.tlp_new == warps * H100.warp_size
        assert est.tlp_old == sum(launched) * max(v.threads for v in t.variants)
        # the tiles the estimate simulates, edge tiles included, are the work list's
        variant, counts = tiling.launched_tiles(plan, Sizes.of(problems))
        simulated = np.bincount(variant.ravel(), weights=(counts * count).ravel(), minlength=len(plan.variants))
        ir = dataclasses.replace(kernel, plan=plan)
        work = simt.worklist(ir, plan, H100)
        if work.raster is not None:  # a uniform launch: its tiles listed, their edge variants as the kernel picks
            table, _ = raster_table(work.raster)
            s = Sizes.of_rows(work.problems)
            table[:, 3] = simt.edge_variants(plan, table, s.m, s.n)
        else:
            table = np.frombuffer(work.tiles.data, dtype="<i4").reshape(-1, 4)
        assert simulated.tolist() == np.bincount(table[:, 3], minlength=len(plan.variants)).tolist()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 900), st.integers(1, 900)), min_size=1, max_size=20),
       st.lists(st.sampled_from([(16, 16), (32, 64), (64, 32), (128, 128), (48, 40)]), min_size=1, max_size=3))
def test_tile_table_is_every_problems_tiles_in_grouped_order(sizes, shapes):
    rows = ProblemTable.of(ProblemRow(m, n, 1, 1, 1, 1) for m, n in sizes)
    assignment = tuple(i % len(shapes) for i in range(len(sizes)))
    work = one_tile_per_block(rows, tuple(shapes), assignment, 128, 0)
    expected = [t for i, (m, n) in enumerate(sizes)
                for t in _tiles_one_by_one(i, m, n, *shapes[assignment[i]], assignment[i])]
    assert list(work.tiles) == expected and work.tiles == TileTable.of(expected)


def test_packed_tables_read_as_records():
    table = TileTable.of([WorkTile(0, 0, 0, 1), WorkTile(2, 64, 32, 0)])
    assert len(table) == 2 and table[1] == WorkTile(2, 64, 32, 0) and table[-1] == table[1]
    assert list(table[1:]) == [WorkTile(2, 64, 32, 0)] and table.rows() == [(0, 0, 0, 1), (2, 64, 32, 0)]
    assert np.frombuffer(table.data, dtype="<i4").tolist() == [0, 0, 0, 1, 2, 64, 32, 0]
    assert table == TileTable(table.data) and hash(table) == hash(TileTable(table.data))
