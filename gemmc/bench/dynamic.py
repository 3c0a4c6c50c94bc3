"""Batches sized at run time: mixture-of-experts steps with the routing redrawn every call, and lists of
random GEMMs with new sizes every call, f32. gemmc's dynamic kernels against what users run, in one process, on the
same inputs (the protocol of docs/PERFORMANCE.md). GPU machine only:

    python -m gemmc.bench dynamic [--quick]

Per MoE case and routing (uniform, Zipf-skewed, a quarter of the experts empty, one expert with half the tokens;
cases past BIG_FLOPS run the first and last, past HUGE_FLOPS those of --huge-routings), a pool of ROUTINGS draws is
cycled so that every call has other group sizes than the one before:
- gemmc: `k(A, W, C, offsets=ends)`, the ends on the device. host_us: plain calls, wall time per call synchronised
  once per window (host and device overlap, as in a training loop); issue_us: the host's own time per call (calls
  not synchronised; for the list form at most dynamic_list.RING of them, past which a call waits for a kernel;
  table_us: the list form's argument checks and problem table alone);
  device_us: graph replays of 100 calls cycling the ends (no host in the way); compiles / tuning runs / plans
  counted over the timed calls (gemmc.stats()).
- torch loop: the counts copied to the host (a synchronisation), then torch.mm per expert, plain calls.
- cuBLAS grouped: cublasSgemmGroupedBatched with the sizes on the host (the counts copied back, the pointer arrays
  uploaded per call).
- torch._grouped_mm with the device ends where it takes f32; its bf16 time beside, for reference (another dtype).
- static: gemmc's own static plan for the first draw's sizes (tile auto, the model's choice), graph replays: the
  in-house roof for device time.
The list form: 64 and 512 problems, M, N, K in 8..640, new sizes every call: gemmc list form, a torch.mm loop,
cuBLAS grouped (host sizes, pointer arrays uploaded per call), and the static plan of the first set (device time).
"""

from __future__ import annotations

import os
import statistics
import time
from functools import partial
from typing import Any, NamedTuple

import numpy as np

import gemmc
from gemmc.bench import baselines, harness, timing

os.environ.setdefault("GEMMC_TUNE", "0")  # the static roof runs the model's plan: no alternatives compiled

COLUMNS = ("case", "routing", "gemmc_host_us", "gemmc_issue_us", "gemmc_device_us", "static_device_us",
           "device_vs_static", "torch_loop_host_us", "cublas_grouped_host_us", "grouped_mm_bf16_host_us",
           "speedup_host", "timed_compiles")
ROUTINGS = 8  # draws per routing kind, cycled call by call
MOE = "kernel moe {{ layout B col  grouped M n {n} k {k} groups 128 }}"  # the GPU tests' schedule: one compile
LIST = "kernel varlen { alpha runtime beta runtime grouped list problems 512 }"
MOE_COLD = f"kernel moe_cold_{os.getpid()} {{ layout B col  grouped M n 8 k 8 groups 128 }}"  # no cache has it
STATIC = "kernel roof {{ layout B col  batch {{ p 1 x {n} x {k} }} }}"
LIST_STATIC = "kernel roof { batch { p 8 x 8 x 8 } }"
CASES = [  # experts, tokens, n, k
    (32, 8192, 1024, 512),  # the table
    (8, 4096, 512, 512),
    (8, 65536, 512, 512),
    (64, 16384, 1024, 2048),
    (128, 8192, 2048, 7168),  # DeepSeek-like
]
KINDS = ("uniform", "zipf", "empty", "half")
BIG_FLOPS = 5e10  # cases past this run two routings (uniform, half): each takes seconds per routing and method
HUGE_FLOPS = 2e11  # cases past this run the routings of --huge-routings (E128 K7168: about a minute per routing)


def draws(experts: int, tokens: int, kind: str) -> list[np.ndarray]:
    """The routing pool of a case and kind (seeded: the precompiling workers draw the same)."""
    rng = np.random.default_rng([experts, tokens, KINDS.index(kind)])
    return [counts(kind, experts, tokens, rng) for _ in range(ROUTINGS)]


def list_shapes(problems: int) -> list[list[tuple[int, int, int]]]:
    rng = np.random.default_rng(problems)
    draws = [[(int(m), int(n), int(k)) for m, n, k in rng.integers(8, 641, (problems, 3))] for _ in range(ROUTINGS)]
    return draws


def static_shapes(job: tuple) -> list[tuple[int, int, int]]:
    if job[0] == "list":
        return list_shapes(job[1])[0]
    _, experts, tokens, n, k = job
    return [(int(c), n, k) for c in draws(experts, tokens, "uniform")[0] if c]


def precompile(job: tuple) -> float:
    """In a worker process: compile a kernel the run needs (the disk cache then serves the measuring process);
    returns the seconds it took (a cold compile where the cache had nothing)."""
    from gemmc.runtime.compile import device_function

    t0 = time.perf_counter()
    if job[0] == "dynamic":
        kern = next(iter(gemmc.compile_string(job[1])))
    else:
        text = LIST_STATIC if job[0] == "list" else STATIC.format(n=job[3], k=job[4])
        kern = next(iter(gemmc.compile_string(text))).plan_for(static_shapes(job))
    device_function(kern.rendered, kern.rendered.entry)
    return time.perf_counter() - t0


def counts(kind: str, experts: int, tokens: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "uniform":
        return rng.multinomial(tokens, np.full(experts, 1.0 / experts))
    if kind == "zipf":
        p = 1.0 / np.arange(1, experts + 1) ** 1.2
        return rng.multinomial(tokens, rng.permutation(p / p.sum()))
    live = np.ones(experts, dtype=bool)
    if kind == "empty":
        live[rng.choice(experts, experts // 4, replace=False)] = False
        p = live / live.sum()
        return rng.multinomial(tokens, p)
    big = int(rng.integers(experts))
    rest = np.full(experts, 1.0 / (experts - 1))
    rest[big] = 0
    out = rng.multinomial(tokens - tokens // 2, rest)
    out[big] += tokens // 2
    return out


def graph_seconds(fn, calls: int = timing.CALLS) -> float:
    """Device seconds per call: a CUDA graph of `calls` back-to-back calls fn(0..calls-1) (warmed up once, outside
    the capture), replayed once per window; the median of timing.WINDOWS windows."""
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn(0)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(calls):
            fn(i)
    graph.replay()
    torch.cuda.synchronize()
    samples = []
    for _ in range(timing.WINDOWS):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        stop.record()
        stop.synchronize()
        samples.append(start.elapsed_time(stop) / 1e3 / calls)
    return statistics.median(samples)


def rel_error(got, ref) -> float:
    import torch

    return float(torch.linalg.norm(got.double() - ref) / torch.linalg.norm(ref))


def torch_stream():
    """torch's current stream as a CuPy stream: gemmc's static kernels launch on CuPy's, and a capture is torch's."""
    from gemmc.runtime.streams import external_stream
    from gemmc.runtime.streams import torch_stream as handle

    return external_stream(handle())


class MoeStep(NamedTuple):
    """An f32 MoE step's operands for given group sizes (`moe_step`)."""

    A: Any  # tokens x k
    W: Any  # experts x n x k: each group's B column-major (`layout B col`)
    C: Any  # tokens x n, NaN
    ends: Any  # int32 cumulative group ends on the device
    bounds: list[tuple[int, int]]  # each group's rows [start, end)
    ref: Any  # C's float64 reference


def moe_step(experts: int, tokens: int, n: int, k: int, sizes: np.ndarray) -> MoeStep:
    """Random operands of an f32 MoE step whose groups take `sizes` rows, C NaN-poisoned, and its float64
    reference: what the dynamic-batch experiments launch their kernels on."""
    import torch

    A = torch.randn(tokens, k, device="cuda")
    W = torch.randn(experts, n, k, device="cuda") / k ** 0.5
    ends = np.cumsum(sizes)
    bounds = [(int(e - c), int(e)) for e, c in zip(ends, sizes, strict=True)]
    ref = torch.cat([A[s:e].double() @ W[g].double().t() for g, (s, e) in enumerate(bounds)])
    return MoeStep(A, W, torch.full((tokens, n), float("nan"), device="cuda"),
                   torch.tensor(ends, dtype=torch.int32, device="cuda"), bounds, ref)


def static_kernel(n: int, k: int) -> Any:
    """gemmc's static plan for a MoE step's group sizes (STATIC: one batch, re-planned for the sizes of each call)."""
    return next(iter(gemmc.compile_string(STATIC.format(n=n, k=k))))


def static_seconds(static: Any, A: Any, W: Any, C: Any, bounds: list, calls: int = timing.CALLS) -> float:
    """Device seconds per call of `static` (static_kernel) on the non-empty groups of a MoE step: rows [s, e) of A
    and C for group g with bounds[g] = (s, e), times W[g]^T (W stored n x k per group), planned by a call outside the
    graph."""
    live = [(s, e, g) for g, (s, e) in enumerate(bounds) if e > s]
    As, Ws, Cs = [A[s:e] for s, e, _ in live], [W[g].t() for _, _, g in live], [C[s:e] for s, e, _ in live]
    static(As, Ws, Cs)
    return graph_seconds(lambda i: static(As, Ws, Cs, stream=torch_stream()), calls)


def moe_case(experts: int, tokens: int, n: int, k: int, kinds: tuple[str, ...], first_call: dict) -> list[dict]:
    import torch

    kern = next(iter(gemmc.compile_string(MOE.format(n=n, k=k))))
    A = torch.randn(tokens, k, device="cuda")
    W = torch.randn(experts, n, k, device="cuda") / k ** 0.5
    C = torch.empty(tokens, n, device="cuda")
    if "moe" not in first_call:
        t0 = time.perf_counter()
        kern(A, W, C, offsets=torch.tensor(np.cumsum(draws(experts, tokens, "uniform")[0]), dtype=torch.int32,
                                           device="cuda"))
        torch.cuda.synchronize()
        first_call["moe"] = (time.perf_counter() - t0) * 1e3
    ctx = {"kern": kern, "A": A, "W": W, "C": C, "grouped": baselines.GroupedHostSizes(A, W, C), "A16": A.bfloat16(),
           "W16": W.bfloat16(), "static": static_kernel(n, k)}
    rows = []
    for kind in kinds:
        row: dict[str, Any] = {"case": f"moe E{experts} T{tokens} N{n} K{k}", "routing": kind, "experts": experts,
                               "tokens": tokens, "n": n, "k": k, "flops": 2 * tokens * n * k}
        row.update(moe_routing(ctx, draws(experts, tokens, kind), kind == "uniform"))
        print(row, flush=True)
        rows.append(row)
    return rows


def moe_routing(ctx: dict, pool: list[np.ndarray], with_static: bool) -> dict:
    """One routing kind of a MoE case: every method, the pool's draws cycled call by call."""
    import torch

    kern, A, W, C, grouped = ctx["kern"], ctx["A"], ctx["W"], ctx["C"], ctx["grouped"]
    ends = [torch.tensor(np.cumsum(c), dtype=torch.int32, device="cuda") for c in pool]
    on_device = [torch.tensor(c, dtype=torch.int64, device="cuda") for c in pool]
    row: dict = {"max_rows": int(max(c.max() for c in pool)), "empty_groups": int(sum((c == 0).sum() for c in pool))}
    C.fill_(float("nan"))
    kern(A, W, C, offsets=ends[0])
    bounds = list(zip(np.cumsum(pool[0]) - pool[0], np.cumsum(pool[0]), strict=True))
    ref = torch.cat([A[s:e].double() @ W[g].double().t() for g, (s, e) in enumerate(bounds)])
    row["rel_error"] = rel_error(C, ref)

    def step(i: int) -> None:
        kern(A, W, C, offsets=ends[i % ROUTINGS])

    before = gemmc.stats()
    row["gemmc_host_us"] = timing.host_seconds(step) * 1e6
    row["gemmc_issue_us"] = timing.host_seconds(step, calls=20, sync=False) * 1e6
    row["gemmc_device_us"] = graph_seconds(step) * 1e6
    if with_static:  # the static roof's sizes: the first draw
        row["gemmc_device_first_draw_us"] = graph_seconds(lambda i: kern(A, W, C, offsets=ends[0])) * 1e6
    after = gemmc.stats()
    row.update({f"timed_{key}": after[key] - before[key] for key in after})

    def loop(i: int) -> None:
        sizes = on_device[i % ROUTINGS].cpu().tolist()  # the counts come back: a synchronisation
        start = 0
        for e, rows_e in enumerate(sizes):
            if rows_e:
                torch.mm(A[start:start + rows_e], W[e].t(), out=C[start:start + rows_e])
                start += rows_e

    row["torch_loop_host_us"] = timing.host_seconds(loop) * 1e6
    row["cublas_grouped_host_us"] = timing.host_seconds(lambda i: grouped(on_device[i % ROUTINGS].cpu().numpy())) * 1e6
    for dtype, a, w in (("f32", A, W), ("bf16", ctx["A16"], ctx["W16"])):
        try:
            torch._grouped_mm(a, w.transpose(1, 2), offs=ends[0])

            def grouped_mm(i: int, a: Any = a, w: Any = w) -> None:
                torch._grouped_mm(a, w.transpose(1, 2), offs=ends[i % ROUTINGS])

            row[f"grouped_mm_{dtype}_host_us"] = timing.host_seconds(grouped_mm) * 1e6
        except Exception as err:  # noqa: BLE001 - a dtype or GPU torch._grouped_mm refuses: say so
            row[f"grouped_mm_{dtype}"] = f"refused: {str(err).splitlines()[0][:120]}"
    if with_static:
        row["static_device_us"] = static_seconds(ctx["static"], A, W, C, bounds) * 1e6
        row["device_vs_static"] = row["gemmc_device_first_draw_us"] / row["static_device_us"]
    baselines_us = [row[key] for key in ("torch_loop_host_us", "cublas_grouped_host_us", "grouped_mm_f32_host_us")
                    if key in row]
    row["best_baseline_host_us"] = min(baselines_us)
    row["speedup_host"] = row["best_baseline_host_us"] / row["gemmc_host_us"]
    return row


def list_case(problems: int, first_call: dict) -> dict:
    import torch

    from gemmc.runtime.dynamic import state
    from gemmc.runtime.dynamic_list import RING, problem_table

    kern = next(iter(gemmc.compile_string(LIST)))
    sets = []
    for shapes in list_shapes(problems):
        sets.append(([torch.randn(m, k, device="cuda") for m, n, k in shapes],
                     [torch.randn(k, n, device="cuda") for m, n, k in shapes],
                     [torch.empty(m, n, device="cuda") for m, n, k in shapes], shapes))
    if "list" not in first_call:
        t0 = time.perf_counter()
        kern(*sets[0][:3], alpha=1.0, beta=0.0)
        torch.cuda.synchronize()
        first_call["list"] = (time.perf_counter() - t0) * 1e3
    row: dict[str, Any] = {"case": f"list x{problems}", "routing": "random 8..640", "problems": problems,
           "flops": int(np.mean([sum(2 * m * n * k for m, n, k in s[3]) for s in sets]))}
    As, Bs, Cs, _ = sets[0]
    for c in Cs:
        c.fill_(float("nan"))
    kern(As, Bs, Cs, alpha=1.0, beta=0.0)
    row["rel_error"] = max(rel_error(c, a.double() @ b.double()) for a, b, c in zip(As, Bs, Cs, strict=True))
    before = gemmc.stats()

    def call(i: int) -> None:
        kern(*sets[i % ROUTINGS][:3], alpha=1.0, beta=0.0)

    row["gemmc_host_us"] = timing.host_seconds(call) * 1e6
    # At most RING calls a window: the next would wait for the first one's kernel (its staging buffer).
    row["gemmc_issue_us"] = timing.host_seconds(call, calls=RING, sync=False) * 1e6
    after = gemmc.stats()
    row.update({f"timed_{key}": after[key] - before[key] for key in after})
    device = torch.cuda.current_device()  # the checks and the table alone (host), the rest of issue_us is the launch

    def checks(i: int) -> None:
        a, b, c, _ = sets[i % ROUTINGS]
        problem_table(kern.executable, a, b, c, device)

    row["gemmc_table_us"] = timing.host_seconds(checks, sync=False) * 1e6
    st = state(kern.executable)
    table = torch.from_numpy(problem_table(kern.executable, As, Bs, Cs, torch.cuda.current_device())).cuda()
    zero = np.uint64(0)

    def raw(i: int) -> None:  # the kernel alone on a staged table: its device time
        on = torch_stream()
        st.fn((st.grid, 1, 1), (st.block, 1, 1),
              (zero, zero, zero, zero, np.uint64(table.data_ptr()), np.int32(problems), np.int64(0), np.int64(0),
               np.int64(0), np.int64(0), np.int64(st.threshold), np.uint64(st.counter(on.ptr)), np.float32(1.0),
               np.float32(0.0)), shared_mem=st.smem, stream=on)

    row["gemmc_device_us"] = graph_seconds(raw) * 1e6

    def loop(i: int) -> None:
        for a, b, c in zip(*sets[i % ROUTINGS][:3], strict=True):
            torch.mm(a, b, out=c)

    row["torch_loop_host_us"] = timing.host_seconds(loop) * 1e6
    grouped = baselines.GroupedList()
    row["cublas_grouped_host_us"] = timing.host_seconds(lambda i: grouped(*sets[i % ROUTINGS][:3])) * 1e6
    replay, how = baselines.grouped(*sets[0][:3])  # the first set's tables built once: device time only
    row["cublas_grouped_device_us"] = timing.device_seconds(replay) * 1e6
    row["cublas_grouped_device_timing"] = how
    static = next(iter(gemmc.compile_string(LIST_STATIC)))
    static(As, Bs, Cs)
    row["static_device_us"] = graph_seconds(lambda i: static(As, Bs, Cs, stream=torch_stream())) * 1e6
    row["best_baseline_host_us"] = min(row["torch_loop_host_us"], row["cublas_grouped_host_us"])
    row["speedup_host"] = row["best_baseline_host_us"] / row["gemmc_host_us"]
    row["device_vs_static"] = row["gemmc_device_us"] / row["static_device_us"]
    print(row, flush=True)
    return row


def graph_step(experts: int, tokens: int, n: int, k: int) -> dict:
    """A MoE step captured once in a CUDA graph (routing: sort by expert and the ends; gemmc; combine: scatter back)
    and replayed with a new routing each time: right, and its replay time against its parts'."""
    import torch

    kern = next(iter(gemmc.compile_string(MOE.format(n=n, k=k))))
    X, W = torch.randn(tokens, k, device="cuda"), torch.randn(experts, n, k, device="cuda") / k ** 0.5
    pool = [torch.randint(0, experts, (tokens,), device="cuda") for _ in range(ROUTINGS)]
    assign = pool[0].clone()
    Y, routed = torch.empty(tokens, n, device="cuda"), torch.empty(tokens, n, device="cuda")
    ends, ones = torch.empty(experts, dtype=torch.int32, device="cuda"), torch.ones(tokens, device="cuda")
    sorted_x = torch.empty(tokens, k, device="cuda")

    def step(with_gemm: bool) -> None:
        order = torch.sort(assign, stable=True).indices
        ends.copy_(torch.cumsum(torch.zeros(experts, device="cuda").scatter_add_(0, assign, ones), 0).to(torch.int32))
        torch.index_select(X, 0, order, out=sorted_x)
        if with_gemm:
            kern(sorted_x, W, routed, offsets=ends)
        Y.index_copy_(0, order, routed)

    out: dict[str, Any] = {"case": f"graph step E{experts} T{tokens} N{n} K{k}", "routing": "uniform, new each replay"}
    for label, with_gemm in (("step", True), ("parts_without_gemmc", False)):
        graph = timing.torch_graph(partial(step, with_gemm))
        errors = []
        for i in range(3):
            assign.copy_(pool[i])
            graph()
            if with_gemm:
                ref = torch.einsum("tk,tnk->tn", X.double(), W.double()[assign])
                errors.append(rel_error(Y, ref))
        if errors:
            out["rel_error"] = max(errors)

        def replay(i: int, graph=graph) -> None:
            assign.copy_(pool[i % ROUTINGS])
            graph()

        out[f"{label}_us"] = timing.host_seconds(replay) * 1e6
    return out


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser("dynamic", __doc__)
    parser.add_argument("--quick", action="store_true", help="two MoE cases, two routings, the 64-problem list")
    parser.add_argument("--cases", default="", help="comma-separated indices into CASES (default: all)")
    parser.add_argument("--lists", default="", help="comma-separated list sizes (default: 64,512)")
    parser.add_argument("--huge-routings", default="uniform,half",
                        help=f"routings of the cases past {HUGE_FLOPS:.0e} FLOPs (default: %(default)s)")
    args = parser.parse_args(argv)
    cases = CASES[:2] if args.quick else CASES
    if args.cases:
        cases = [CASES[int(i)] for i in args.cases.split(",")]
    lists: tuple[int, ...] = (64,) if args.quick else (64, 512)
    if args.lists:
        lists = tuple(int(p) for p in args.lists.split(","))
    jobs = ([("dynamic", MOE.format(n=8, k=8)), ("dynamic", LIST), ("dynamic", MOE_COLD)]
            + [("moe", *case) for case in cases] + [("list", p) for p in lists])
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    t0 = time.perf_counter()
    with ProcessPoolExecutor(min(16, len(jobs)), mp_context=get_context("spawn")) as pool:
        seconds = list(pool.map(precompile, jobs))
    print(f"precompiled {len(jobs)} kernels in {time.perf_counter() - t0:.1f} s", flush=True)
    first_call: dict = {"cold_compile_s": seconds[2]}  # a dynamic kernel no earlier process compiled
    rows: list[dict] = []
    for experts, tokens, n, k in cases:
        flops = 2 * tokens * n * k
        kinds = (tuple(args.huge_routings.split(",")) if flops > HUGE_FLOPS else
                 ("uniform", "half") if args.quick or flops > BIG_FLOPS else KINDS)
        rows += moe_case(experts, tokens, n, k, kinds, first_call)
        harness.write_results(args.out, "dynamic", rows, {"partial": True, "first_call_ms": first_call}, tag=args.tag)
    for problems in lists:
        rows.append(list_case(problems, first_call))
        harness.write_results(args.out, "dynamic", rows, {"partial": True, "first_call_ms": first_call}, tag=args.tag)
    step = graph_step(*CASES[0])
    label = f"moe E{CASES[0][0]} T{CASES[0][1]} N{CASES[0][2]} K{CASES[0][3]}"
    gemm_us = next((r["gemmc_device_us"] for r in rows if r["case"] == label and r["routing"] == "uniform"), None)
    step["replay_vs_parts"] = (None if gemm_us is None  # CASES[0] not run: no device time of the kernel to add
                               else step["step_us"] / (step["parts_without_gemmc_us"] + gemm_us))
    print(step, flush=True)
    speedups = [r["speedup_host"] for r in rows]
    summary = {"geomean_speedup_host": statistics.geometric_mean(speedups), "min_speedup_host": min(speedups),
               "device_vs_static": {r["case"] + " " + r["routing"]: r["device_vs_static"] for r in rows
                                    if "device_vs_static" in r},
               "first_call_ms": first_call, "graph_step": step}
    path = harness.write_results(args.out, "dynamic", rows, {"summary": summary}, tag=args.tag)
    harness.table(rows, list(COLUMNS), "dynamic")
    print(summary)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
