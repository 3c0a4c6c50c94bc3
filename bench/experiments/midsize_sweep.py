"""Experiment: every configuration the hopper family builds for the members of the two bf16 groups of the concurrent
suite where gemmc trails cuBLAS run one after another (bench/results/concurrent/2026-11-27_h100_bf16-floor-every-
stream.json: "bf16 FFN1 dX+dW H1024 T2048" at 0.93x, "bf16 QKV H1024 T2048" at 0.96x), each against cuBLAS (torch.mm
in a CUDA graph) on the same inputs: which tile N, cluster, split K and raster band, if any, beats cuBLAS there, and
how far the planner's choice (planner.choose_tile's waves model, choose_cluster) is from the best.

The members, their layouts as the suite writes them (gemmc/concurrent/table3.py):
    qkv     2048 x 1024 x 1024, A row, B row   (x3 in its group)
    ffn1.dX 2048 x 1024 x 4096, A row, B col
    ffn1.dW 1024 x 4096 x 2048, A col, B row
Configurations: tile N in planner.TILE_N, clusters of 1 and 2, k-slices in planner.KSPLITS, raster bands of
BAND_TILES and BAND_TILES / 2 m-tiles (a band that holds every m-tile walks as a wider one does: the narrower only),
each the rest of its plan decided as the planner decides it (planner.with_tile: stages, the TMA-store epilogue).
Refused, and listed with the reason: split K at a tile N the family does not split (TILE_N_KSPLIT; a schedule's
`ksplit` there is error E202), a slice of fewer than MIN_SLICE_KBLOCKS k-blocks, and whatever the family's limits
refuse (split K with a multicast pair). The planned kernel is the plan the group's members run (its canonical
kernels) and is timed on its own beside its twin in the sweep: the two times show the run's noise.

Protocol (gemmc/bench/timing.py, DESIGN.md): each kernel first checked on NaN-poisoned C against float64 (bound: one
bf16 rounding plus f32 accumulation of K products, gemmc.bench.concurrent.bound) and against torch.mm's own C; then
ROUNDS rounds, each timing cuBLAS and every configuration in turn (CUDA events around CALLS back-to-back graph
replays, median of WINDOWS windows); a configuration's time is the median of its rounds. 3 x 7 x 100 = 2100 timed
replays a kernel; about 70 kernels, 25 ms of timing a round each: well under a minute of GPU time beside the compiles.

GPU machine, from the repository root (needs torch and CuPy beside gemmc's own dependencies):

    PYTHONPATH=. python3 bench/experiments/midsize_sweep.py [OUT.json]
    PYTHONPATH=. python3 bench/experiments/midsize_sweep.py --list      # the configurations only, no GPU needed

OUT.json defaults to bench/results/half/<date>_<gpu>_midsize-sweep.json; an existing file is never written over.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

GROUPS = ("bf16 QKV H1024 T2048", "bf16 FFN1 dX+dW H1024 T2048")  # gemmc.bench.concurrent.bf16_cases
ROUNDS, CALLS, WINDOWS = 3, 100, 7
HANG_SECONDS = 10.0  # a checked call still running after this long is a hung configuration: the run stops there


class Hung(Exception):
    """A kernel's check did not finish (a configuration no test runs may deadlock its pipeline)."""


@dataclass(frozen=True)
class Config:
    bn: int  # tile N
    cluster: int  # 1, or 2: B multicast to a pair of m-tiles
    ksplit: int  # blocks of a cluster sharing a tile's K
    band: int  # raster band in m-tiles (HopperPlan.band is in the cluster's units: band // cluster)

    @property
    def label(self) -> str:
        return f"bn {self.bn} c{self.cluster} ks{self.ksplit} band {self.band}"


@dataclass(frozen=True)
class Member:
    group: str  # the suite's case
    name: str  # table3's GEMM name
    count: int  # how many times the group runs it
    m: int
    n: int
    k: int
    layout_a: str
    layout_b: str
    index: int  # its first position in the group's schedule

    @property
    def schedule(self) -> str:
        return (f"kernel k {{ dtype bf16 layout A {self.layout_a}, B {self.layout_b} "
                f"gemm {self.m} x {self.n} x {self.k} }}")

    @property
    def shape(self) -> str:
        return f"{self.m}x{self.n}x{self.k} A {self.layout_a} B {self.layout_b}"


def group_cases() -> dict[str, tuple[str, list]]:
    """The suite's (suite, GEMMs) of GROUPS, by case name."""
    from gemmc.bench.concurrent import bf16_cases

    found = {name: (suite, gemms) for suite, name, gemms in bf16_cases(False) if name in GROUPS}
    assert set(found) == set(GROUPS), f"the concurrent suite lost a case: {set(GROUPS) - set(found)}"
    return found


def members() -> list[Member]:
    """Each distinct GEMM of GROUPS with how often its group runs it."""
    out = []
    for case, (_, gemms) in group_cases().items():
        seen: dict[tuple, int] = {}
        for i, g in enumerate(gemms):
            seen.setdefault(g.key, i)
        for key, i in seen.items():
            g = gemms[i]
            out.append(Member(case, g.name, sum(x.key == key for x in gemms), g.m, g.n, g.k, g.layout_a, g.layout_b,
                              i))
    return out


def group_plan(member: Member):
    """The plan the group's call runs for this member (its canonical kernel: sequential, and own kernels on
    streams)."""
    import gemmc
    from gemmc.bench.concurrent import schedule

    suite, gemms = group_cases()[member.group]
    run = gemmc.compile_string(schedule(gemms, suite))["c"].group_run
    return run.canonical[member.index].ir.plan


def config_of(plan) -> Config:
    return Config(plan.bn, plan.cluster, plan.ksplit, plan.band * plan.cluster)


def configs(member: Member) -> tuple[Any, list[tuple[Config, Any]], list[tuple[Config, str]]]:
    """(the planned kernel, [(config, kernel)] the family builds, [(config, why not)] with the widest band for
    those it refuses): CPU only."""
    import gemmc
    from gemmc.families.hopper import planner
    from gemmc.ir.hardware import TARGETS

    hw = TARGETS["sm_90"]
    base = gemmc.compile_string(member.schedule)["k"]
    planned = base.with_plan(group_plan(member), "planned")
    tiles_m = -(-member.m // planned.ir.plan.bm)
    kblocks = -(-member.k // planned.ir.plan.bk)
    built: list[tuple[Config, Any]] = []
    refused: list[tuple[Config, str]] = []
    # a band of every m-tile walks as any wider one does: the narrower of the two stands for both
    bands = ([planner.BAND_TILES, planner.BAND_TILES // 2] if tiles_m > planner.BAND_TILES // 2
             else [planner.BAND_TILES // 2])
    for bn in planner.TILE_N:
        for cluster in (1, 2):
            for ksplit in planner.KSPLITS:
                cfg = Config(bn, cluster, ksplit, bands[0])
                if ksplit > 1 and bn not in planner.TILE_N_KSPLIT:
                    refused.append((cfg, f"split K at tile N {bn}: the family splits at {planner.TILE_N_KSPLIT} "
                                         "(E202 for a schedule's ksplit)"))
                    continue
                if ksplit > 1 and kblocks < ksplit * planner.MIN_SLICE_KBLOCKS:
                    refused.append((cfg, f"{kblocks} k-blocks: a slice under {planner.MIN_SLICE_KBLOCKS}"))
                    continue
                plan = planner.with_tile(base.ir, base.ir.plan, bn, ksplit, hw)
                try:  # the family's limits refuse a plan whatever its band: the first band tells
                    for band in bands:
                        cfg = Config(bn, cluster, ksplit, band)
                        built.append((cfg, base.with_plan(
                            dataclasses.replace(plan, cluster=cluster, band=max(1, band // cluster)), cfg.label)))
                except ValueError as err:
                    refused.append((cfg, str(err).split("cannot build this plan: ")[-1]))
    return planned, built, refused


def model(member: Member, cfg: Config) -> dict:
    """The planner's figures for a configuration: tiles, waves (blocks over SMs), its waves-model cost
    (planner.split_cost, which has no term for the cluster or the band)."""
    from gemmc.families.hopper import planner
    from gemmc.ir.hardware import TARGETS

    hw = TARGETS["sm_90"]
    tiles = -(-member.m // 128) * -(-member.n // cfg.bn)
    return {"tiles": tiles, "waves": tiles * cfg.ksplit / hw.sm_count,
            "model_cost": planner.split_cost(member.m, member.n, member.k, cfg.bn, cfg.ksplit, hw)}


def list_configs() -> None:
    for mem in members():
        planned, built, refused = configs(mem)
        pc = config_of(planned.ir.plan)
        print(f"{mem.group} / {mem.name} x{mem.count}: {mem.shape}; planned {pc.label}; "
              f"{len(built)} built, {len(refused)} refused")
        for cfg, kern in built:
            p = kern.ir.plan
            mark = "  <- planned" if p == planned.ir.plan else ""
            f = model(mem, cfg)
            print(f"  {cfg.label:24} stages {p.stages} {'tma-store' if p.tma_store else 'direct'}  "
                  f"{f['tiles']:4} tiles  {f['waves']:5.2f} waves  cost {f['model_cost']}{mark}")
        for cfg, why in refused:
            print(f"  {cfg.label:24} refused: {why}")


def group_kernels() -> list:
    """The executables the groups' `sequential` mode launches (measure_group): the planned kernels under the
    group's names."""
    import gemmc
    from gemmc.bench.concurrent import schedule

    return [k for suite, gemms in group_cases().values()
            for k in gemmc.compile_string(schedule(gemms, suite))["c"].group_run.canonical]


def compile_all(rendered: list) -> float:
    """NVRTC-compile every distinct kernel source (gemmc's Rendered) in parallel processes into the disk caches (no
    compile is timed); returns the seconds it took."""
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    t0 = time.time()
    unique = {(r.source, r.entry): (r, r.entry) for r in rendered}
    jobs = max(1, min(16, os.cpu_count() or 1))
    with ProcessPoolExecutor(jobs, mp_context=get_context("spawn")) as pool:
        failed = [why for why in pool.map(compile_quietly, unique.values()) if why]
    print(f"compiled {len(unique)} kernels in {time.time() - t0:.0f} s"
          + "".join(f"\n  compile failed: {why}" for why in failed), flush=True)
    return time.time() - t0


def compile_quietly(item) -> str | None:
    """In a worker: one kernel into the disk caches; why it failed, or None. A kernel that fails here fails again
    at its check and is reported there; the others still run."""
    from gemmc.bench.concurrent import compile_one

    try:
        compile_one(item)
    except Exception as err:  # noqa: BLE001 - reported, not raised: one kernel must not stop the sweep
        return f"{item[1]}: {type(err).__name__}: {err}"[:300]
    return None


def check(kern, label: str, a, b, c, ref, ref_norm: float, c_torch, bound: float) -> dict:
    """One call on NaN-poisoned C: relative error against float64 and against torch.mm's C."""
    import torch

    c.fill_(float("nan"))
    kern([a], [b], [c])
    done = torch.cuda.Event()
    done.record()
    deadline = time.time() + HANG_SECONDS
    while not done.query():
        if time.time() > deadline:
            raise Hung(f"{label}: still running after {HANG_SECONDS:.0f} s")
        time.sleep(1e-3)
    err = float(torch.linalg.norm(c.double() - ref)) / ref_norm
    diff = float(torch.linalg.norm(c.double() - c_torch.double())) / ref_norm
    err, diff = (x if x == x else float("inf") for x in (err, diff))
    return {"err": err, "diff_vs_torch": diff, "ok": err < bound and diff < 2 * bound}


def measure(mem: Member, planned, built: list[tuple[Config, Any]], rounds: int, calls: int,
            windows: int) -> dict:
    import torch

    from gemmc.bench.concurrent import bound, operands
    from gemmc.bench.timing import device_seconds, gemmc_graph, torch_graph
    from gemmc.concurrent.table3 import Gemm

    torch.manual_seed(mem.index + 1000 * GROUPS.index(mem.group))
    As, Bs, Cs = operands([Gemm("sweep", mem.name, mem.m, mem.n, mem.k, mem.layout_a, mem.layout_b)], "bf16")
    a, b, c = As[0], Bs[0], Cs[0]
    ref = a.double() @ b.double()
    ref_norm = float(torch.linalg.norm(ref))
    c_torch = torch.mm(a, b)
    c_graph = torch.empty_like(c)
    limit = bound("bf16", mem.k)
    cublas_err = float(torch.linalg.norm(c_torch.double() - ref)) / ref_norm
    entries = [("planned", config_of(planned.ir.plan), planned)] + [(cfg.label, cfg, k) for cfg, k in built]
    rows: dict[str, dict] = {}
    replays = {"cublas": torch_graph(lambda: torch.mm(a, b, out=c_graph))}
    for label, cfg, kern in entries:
        p = kern.ir.plan
        row = {"config": dataclasses.asdict(cfg), "label": label, "stages": p.stages, "tma_store": p.tma_store,
               "is_planned": p == planned.ir.plan, **model(mem, cfg)}
        try:
            row.update(check(kern, f"{mem.name} {label}", a, b, c, ref, ref_norm, c_torch, limit))
            if row["ok"]:
                replays[label] = gemmc_graph(lambda kern=kern: kern([a], [b], [c]))
        except Hung:
            raise
        except Exception as err:  # noqa: BLE001 - one broken configuration must not hide the others' numbers
            row.update({"ok": False, "failed": f"{type(err).__name__}: {err}"[:400]})
        if not row["ok"]:
            why = row.get("failed") or (f"error {row['err']:.2e}, {row['diff_vs_torch']:.2e} from torch.mm, "
                                        f"bound {limit:.2e}")
            print(f"  {mem.name} {label}: NOT TIMED: {why}", flush=True)
        rows[label] = row
    samples: dict[str, list[float]] = {name: [] for name in replays}
    for _ in range(rounds):  # every kernel in each round: drift over the run falls on all alike
        for name, replay in replays.items():
            samples[name].append(device_seconds(replay, calls=calls, windows=windows) * 1e6)
    cublas = statistics.median(samples["cublas"])
    for label, row in rows.items():
        if label in samples:
            us = statistics.median(samples[label])
            row.update({"us": us, "rounds_us": samples[label], "vs_cublas": cublas / us,
                        "tflops": 2 * mem.m * mem.n * mem.k / us / 1e6})
    timed = [r for label, r in rows.items() if label != "planned" and "us" in r]
    best = min(timed, key=lambda r: r["us"]) if timed else None
    planned_us = rows["planned"].get("us", float("nan"))
    return {"group": mem.group, "member": mem.name, "count": mem.count, "m": mem.m, "n": mem.n, "k": mem.k,
            "layout_a": mem.layout_a, "layout_b": mem.layout_b, "bound": limit, "cublas_err": cublas_err,
            "cublas_us": cublas, "cublas_rounds_us": samples["cublas"],
            "cublas_tflops": 2 * mem.m * mem.n * mem.k / cublas / 1e6,
            "planned": rows["planned"], "best": best, "best_vs_planned": planned_us / best["us"] if best else None,
            "configs": [r for label, r in rows.items() if label != "planned"]}


def measure_group(case: str, rounds: int, calls: int, windows: int) -> dict:
    """The group as the suite times it (gemmc.bench.concurrent.run_case): its members one after another, cuBLAS's
    torch.mm loop in a graph against gemmc's `sequential` mode (each member's planned kernel), on the suite's
    operands: the figure the member rows add up to."""
    from functools import partial

    import torch

    import gemmc
    from gemmc.bench import concurrent
    from gemmc.bench.timing import device_seconds, gemmc_graph, torch_graph

    suite, gemms = group_cases()[case]
    torch.manual_seed(GROUPS.index(case))
    As, Bs, Cs = concurrent.operands(gemms, "bf16")
    seq = gemmc.compile_string(concurrent.schedule(gemms, suite))["c"].with_mode("sequential")
    err = concurrent.check(partial(seq, As, Bs, Cs), As, Bs, Cs, f"{case} sequential")
    replays = {"cublas_seq": torch_graph(lambda: [torch.mm(a, b, out=c) for a, b, c in zip(As, Bs, Cs, strict=True)]),
               "gemmc_sequential": gemmc_graph(partial(seq, As, Bs, Cs))}
    samples: dict[str, list[float]] = {name: [] for name in replays}
    for _ in range(rounds):
        for name, replay in replays.items():
            samples[name].append(device_seconds(replay, calls=calls, windows=windows) * 1e6)
    us = {name: statistics.median(v) for name, v in samples.items()}
    return {"cublas_seq_us": us["cublas_seq"], "gemmc_sequential_us": us["gemmc_sequential"],
            "sequential_vs_cublas": us["cublas_seq"] / us["gemmc_sequential"], "rounds_us": samples,
            "max_rel_error": err}


def print_shape(s: dict) -> None:
    print(f"\n{s['group']} / {s['member']} x{s['count']}: {s['m']}x{s['n']}x{s['k']} A {s['layout_a']} "
          f"B {s['layout_b']}  cuBLAS {s['cublas_us']:.2f} us ({s['cublas_tflops']:.0f} TFLOP/s)"
          + (f"; best {s['best']['label']}, {s['best_vs_planned']:.3f}x the planned" if s["best"] else ""))
    print(f"  {'config':26} {'stages':>6} {'tiles':>5} {'waves':>5} {'cost':>6} {'us':>8} {'xcuBLAS':>7} "
          f"{'spread':>6} {'err':>8}")
    for r in [s["planned"], *sorted(s["configs"], key=lambda r: r.get("us", float("inf")))]:
        spread = (max(r["rounds_us"]) - min(r["rounds_us"])) / r["us"] if "us" in r else 0.0
        us = f"{r['us']:8.2f} {r['vs_cublas']:7.3f}" if "us" in r else f"{'-':>8} {'-':>7}"
        mark = " *planned" if r["is_planned"] and r["label"] != "planned" else ""
        err = r.get("err", float("nan"))
        print(f"  {r['label']:26} {r['stages']:6} {r['tiles']:5} {r['waves']:5.2f} {r['model_cost']:6} {us} "
              f"{spread:6.1%} {err:8.1e}{mark}")


def summary(shapes: list[dict]) -> dict:
    """Per group: its members one after another, each count times: cuBLAS, the planned kernels, the best ones."""
    out = {}
    for case in GROUPS:
        mine = [s for s in shapes if s["group"] == case]
        total = {"cublas_us": sum(s["count"] * s["cublas_us"] for s in mine),
                 "planned_us": sum(s["count"] * s["planned"].get("us", float("nan")) for s in mine),
                 "best_us": sum(s["count"] * (s["best"]["us"] if s["best"] else float("nan")) for s in mine),
                 "best": {s["member"]: s["best"]["label"] if s["best"] else None for s in mine}}
        total["planned_vs_cublas"] = total["cublas_us"] / total["planned_us"]
        total["best_vs_cublas"] = total["cublas_us"] / total["best_us"]
        out[case] = total
    return out


def default_out(gpu: str) -> Path:
    from gemmc.bench.harness import gpu_short

    return Path("bench/results/half") / f"{date.today().isoformat()}_{gpu_short(gpu)}_midsize-sweep.json"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", nargs="?", help="results file (default: bench/results/half/<date>_<gpu>_midsize-sweep.json)")
    ap.add_argument("--list", action="store_true", help="print the configurations and exit (no GPU needed)")
    ap.add_argument("--rounds", type=int, default=ROUNDS)
    ap.add_argument("--calls", type=int, default=CALLS)
    ap.add_argument("--windows", type=int, default=WINDOWS)
    ap.add_argument("--groups", help="the suite's bf16 cases to sweep instead of GROUPS, comma-separated")
    args = ap.parse_args(argv)
    if args.groups:
        global GROUPS
        GROUPS = tuple(g.strip() for g in args.groups.split(","))
    if args.list:
        list_configs()
        return 0
    if args.out and Path(args.out).exists():  # results files are kept, never rewritten
        print(f"{args.out} exists: name another file", file=sys.stderr)
        return 2
    import torch

    t0 = time.time()
    gpu = torch.cuda.get_device_name()
    out = Path(args.out) if args.out else default_out(gpu)
    if out.exists():
        print(f"{out} exists: name another file", file=sys.stderr)
        return 2
    todo = [(mem, *configs(mem)) for mem in members()]
    head = {"experiment": "bench/experiments/midsize_sweep.py", "gpu": gpu, "date": date.today().isoformat(),
            "protocol": f"CUDA events around {args.calls} back-to-back graph replays, median of {args.windows} "
                        f"windows, after warm-up; {args.rounds} rounds over cuBLAS and every kernel in turn, each "
                        "kernel's time the median of its rounds; cuBLAS is torch.mm in a CUDA graph",
            "note": "bf16 A, B, C with the concurrent suite's layouts; us: device time per call; vs_cublas: cuBLAS "
                    "us / gemmc us; best_vs_planned: planned us / best us; model_cost: planner.split_cost (no "
                    "cluster or band term); err: relative Frobenius error against float64, diff_vs_torch: against "
                    "torch.mm's C (both over ||ref||); band in m-tiles",
            "compile_s": compile_all([k.executable.rendered for _, planned, built, _ in todo
                                      for k in [planned] + [k for _, k in built]]
                                     + [k.rendered for k in group_kernels()])}
    shapes: list[dict] = []
    whole: dict[str, dict] = {}

    def save(status: str) -> None:  # after every shape: a run stopped later keeps what it measured
        groups = {case: {**t, "as_the_suite_runs_it": whole.get(case)} for case, t in summary(shapes).items()} \
            if status == "complete" else {}
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({**head, "status": status, "wall_s": time.time() - t0, "shapes": shapes,
                                   "groups": groups}, indent=1) + "\n")

    for mem, planned, built, refused in todo:
        try:
            s = measure(mem, planned, built, args.rounds, args.calls, args.windows)
        except Hung as err:  # the hung kernel holds the GPU: only leaving the process frees it
            save(f"stopped: {err}")
            print(f"HUNG {err}; wrote {out} with the shapes before it", flush=True)
            os._exit(3)
        s["refused"] = [{"config": dataclasses.asdict(cfg), "label": cfg.label, "why": why} for cfg, why in refused]
        shapes.append(s)
        print_shape(s)
        save("partial")
    for case in GROUPS:
        try:
            whole[case] = measure_group(case, args.rounds, args.calls, args.windows)
        except Exception as err:  # noqa: BLE001 - the member rows stand without it
            whole[case] = {"failed": f"{type(err).__name__}: {err}"[:400]}
    save("complete")
    print()
    for case, t in summary(shapes).items():
        print(f"{case}: members one after another: cuBLAS {t['cublas_us']:.1f} us, planned {t['planned_us']:.1f} us "
              f"({t['planned_vs_cublas']:.3f}x), best {t['best_us']:.1f} us ({t['best_vs_cublas']:.3f}x) {t['best']}")
        g = whole[case]
        print("  the group as the suite runs it: " + (f"cuBLAS {g['cublas_seq_us']:.1f} us, gemmc sequential "
              f"{g['gemmc_sequential_us']:.1f} us ({g['sequential_vs_cublas']:.3f}x)" if "failed" not in g
              else g["failed"]))
    print(f"wrote {out} ({time.time() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
