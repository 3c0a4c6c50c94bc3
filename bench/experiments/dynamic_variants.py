"""Where the dynamic kernel's device time goes against gemmc's static plan on MoE steps of few large groups
(E8 T65536 N512 K512: docs/PERFORMANCE-dynamic.md), and changes to its persistent loop, its tile loop and its register
budget, measured side by side.
GPU machine only, from the tree's root:

    OUT=... python3 bench/experiments/dynamic_variants.py measure [--apply]
    python3 bench/experiments/dynamic_variants.py apply NAME     # edit the template as variant NAME does
    ncu --section WarpStateStats ... python3 bench/experiments/dynamic_variants.py once  # one launch of each kernel

Variants of families/dynamic/dynamic.cu.j2, each rendered from the edited template in its own process:
- current: the template as it is;
- claim_ahead: a block claims its next tile from the counter before computing the current one and publishes it
  after (the atomic's round trip to L2 overlaps the tile instead of following it);
- noinline: each variant's tile function behind a __noinline__ wrapper, so that ptxas allocates the main loop's
  registers apart from the persistent loop's schedule state (the static kernel's situation);
- both: the two together;
- fragments_ahead (simt.cu.j2, the tile function): each k step's fragments read into a second register buffer
  before the previous step's FMAs;
- one_tile: the persistent loop's body once, on a grid of the launch's tiles;
- regcap224, regcap200, regcap168: the current source with `__maxnreg__(N)` in place of its launch bounds;
- all_inline, top_only, apart_by_reference: edits of the rendered source (SOURCE_EDITS, below) around the template's
  variants below the top level compiled apart (bench/results/dynamic/2026-11-28_h100_variants-apart.json).
`VARIANTS=a,b` measures only those beside `current`. Each is timed as graph replays of 20 launches on the first draw
of a few routings, with its registers and local memory, next to gemmc's static plan of the same sizes and checked
against float64. `--apply` edits the template as the variant with the lowest geometric mean over the cases does,
where that is at least 1% below `current`. `once` launches the dynamic kernel (the template as it stands) and the
static plan once each on the first uniform draw of E8 T65536, for ncu. Results: $OUT/variants.json and the ncu
sections beside it (bench/results/dynamic/2026-11-27_h100_variants.json, 2026-11-27_h100_variants_ncu.csv). The
register caps (CAPS; run with VARIANTS=regcap224,regcap200,regcap168):
bench/results/dynamic/2026-11-28_h100_variants-regcap.json; the tile's k steps with their fragments read a step ahead
(VARIANTS=fragments_ahead, an edit of simt.cu.j2): bench/results/dynamic/2026-11-28_h100_variants-fragments.json; one
tile a block (VARIANTS=one_tile): bench/results/dynamic/2026-11-28_h100_variants-one-tile.json.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEMPLATE = os.path.join(ROOT, "gemmc", "families", "dynamic", "dynamic.cu.j2")
SIMT_TEMPLATE = os.path.join(ROOT, "gemmc", "families", "simt", "simt.cu.j2")  # the tile function both kernels run

CLAIM_FROM = "    if (tid == 0) s_next = (long long)gridDim.x + atomicAdd(&counter[0], 1);\n"
CLAIM_TO = "    if (tid == 0) s_next = (long long)gridDim.x + claimed;\n"
LOOP = "  for (long long t = blockIdx.x; t < tiles; t = s_next) {\n"
LOOP_AHEAD = (LOOP
              + "    // The next tile is claimed before this one is computed and published after it: the atomic's round"
              " trip\n    // to L2 overlaps the tile instead of following it.\n"
              "    int claimed = 0;\n"
              "    if (tid == 0) claimed = atomicAdd(&counter[0], 1);\n")
CALL_FROM = "          gemmc_simt_tile<{{ T }}, "
CALL_TO = "          gemmc_dyn_run<{{ T }}, "
WRAP_AFTER = '{% include "dynamic_sched.cuh.j2" %}\n'
WRAPPER = """
// One variant's tile, compiled apart (__noinline__): ptxas allocates the main loop's registers for the main loop
// alone, not together with the persistent loop's schedule state around it.
template <typename T, int BM, int BN, int BK, int TM, int TN, int NT, int KS, int STAGES, int PAD, bool A_KC,
          bool B_KC, bool C_ROW, int SMEM>
__device__ __noinline__ void gemmc_dyn_run(const gemmc_problem& p, long long m0, long long n0,
                                           const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c,
                                           T alpha, T beta, T* __restrict__ smem, int tid, int rank) {
  gemmc_simt_tile<T, BM, BN, BK, TM, TN, NT, KS, STAGES, PAD, A_KC, B_KC, C_ROW, SMEM>(p, m0, n0, a, b, c, alpha,
                                                                                      beta, smem, tid, rank);
}
"""


FRAGMENTS = """#pragma unroll
    for (int kk = 0; kk < KSLICE; ++kk) {
      T a[TM], b[TN];
#pragma unroll
      for (int q = 0; q < TM / VM; ++q) {
        const gemmc_vec<T, VM> v = *reinterpret_cast<const gemmc_vec<T, VM>*>(a_s + kk * LDA + q * TY * VM);
#pragma unroll
        for (int j = 0; j < VM; ++j) a[q * VM + j] = v.v[j];
      }
#pragma unroll
      for (int q = 0; q < TN / VN; ++q) {
        const gemmc_vec<T, VN> v = *reinterpret_cast<const gemmc_vec<T, VN>*>(b_s + kk * LDB + q * TX * VN);
#pragma unroll
        for (int j = 0; j < VN; ++j) b[q * VN + j] = v.v[j];
      }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = GEMMC_FMA(a[i], b[j], acc[i][j]);
    }
"""
FRAGMENTS_AHEAD = """    // k step kk + 1's fragments are read into the other register buffer before step kk's FMAs.
    auto frag = [&](int kk, T* fa, T* fb) {
#pragma unroll
      for (int q = 0; q < TM / VM; ++q) {
        const gemmc_vec<T, VM> v = *reinterpret_cast<const gemmc_vec<T, VM>*>(a_s + kk * LDA + q * TY * VM);
#pragma unroll
        for (int j = 0; j < VM; ++j) fa[q * VM + j] = v.v[j];
      }
#pragma unroll
      for (int q = 0; q < TN / VN; ++q) {
        const gemmc_vec<T, VN> v = *reinterpret_cast<const gemmc_vec<T, VN>*>(b_s + kk * LDB + q * TX * VN);
#pragma unroll
        for (int j = 0; j < VN; ++j) fb[q * VN + j] = v.v[j];
      }
    };
    T a[2][TM], b[2][TN];
    frag(0, a[0], b[0]);
#pragma unroll
    for (int kk = 0; kk < KSLICE; ++kk) {
      if (kk + 1 < KSLICE) frag(kk + 1, a[(kk + 1) & 1], b[(kk + 1) & 1]);
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = GEMMC_FMA(a[kk & 1][i], b[kk & 1][j], acc[i][j]);
    }
"""


CLAIMS_LOOP = "  for (long long u = blockIdx.x; u < s_claims; u = s_next) {\n"
ONE_TILE_LOOP = "  for (long long u = blockIdx.x; u < s_claims; u = s_claims) {  // one tile a block\n"


def one_tile(text: str) -> str:
    """The persistent loop run once: block b computes claim b and leaves (no atomic claim). Launched on a grid of
    exactly the launch's tiles (`measure` counts them with the scheduler's NumPy model), so that no last round is
    split and the hardware hands the tiles to the SMs, as it does for the static plan's one tile a block; every
    block still runs the scheduler's prologue."""
    assert text.count(CLAIMS_LOOP) == 1 and text.count(CLAIM_FROM) == 1, "the persistent loop's text changed"
    return text.replace(CLAIMS_LOOP, ONE_TILE_LOOP).replace(CLAIM_FROM, "")


def fragments_ahead(text: str) -> str:
    assert text.count(FRAGMENTS) == 1, "the tile's k-step loop changed"
    return text.replace(FRAGMENTS, FRAGMENTS_AHEAD)


def claim_ahead(text: str) -> str:
    assert text.count(LOOP) == 1 and text.count(CLAIM_FROM) == 1, "the persistent loop's text changed"
    return text.replace(LOOP, LOOP_AHEAD).replace(CLAIM_FROM, CLAIM_TO)


def noinline(text: str) -> str:
    assert text.count(CALL_FROM) == 1 and text.count(WRAP_AFTER) == 1, "the tile call's text changed"
    return text.replace(WRAP_AFTER, WRAP_AFTER + WRAPPER).replace(CALL_FROM, CALL_TO)


EDITS = {"current": lambda t: t, "claim_ahead": claim_ahead, "noinline": noinline,
         "both": lambda t: noinline(claim_ahead(t))}
SIMT_EDITS = {"fragments_ahead": fragments_ahead}  # edits of the tile function's template (simt.cu.j2)
ONE_TILE = {"one_tile": one_tile}  # launched on a grid of the launch's tiles
# The kernel as it is with a cap on its registers (`__maxnreg__`, CUDA 12.4+, in place of __launch_bounds__'s one block
# per SM, which leaves ptxas up to 255; NVRTC's --maxrregcount does not bind a kernel with launch bounds): under ncu the
# kernel's tile loop issues its fragment loads (LDS) in runs where the static plan's interleaves them with the FMAs
# (bench/results/dynamic/2026-11-28_h100_variants_source.csv.gz), and a cap changes what ptxas schedules.
CAPS = {"regcap224": 224, "regcap200": 200, "regcap168": 168}
BOUNDS = "__launch_bounds__(256, 1) gemmc_moe_dynamic_f32_rcr("


def capped(source: str, registers: int) -> str:
    assert source.count(BOUNDS) == 1, "the kernel's launch bounds changed"
    return source.replace(BOUNDS, f"__maxnreg__({registers}) gemmc_moe_dynamic_f32_rcr(")
# Edits of the rendered source. The template compiles the variants below the top level apart (gemmc_dyn_apart,
# __noinline__, the problem's sizes by value); `all_inline` puts every variant's tile function back inline in the
# switch, as it was before that; `top_only` keeps the top variant (128 x 128) alone (the other cases compute nothing,
# so a launch whose tiles take them is wrong: `_err` says); `apart_by_reference` calls the smaller variants through
# the by-reference wrapper above (gemmc_dyn_run: a 48-byte stack frame for the problem).
CASE = re.compile(r"      case (\d+):  // level[^\n]*\n(?:(?!      case |      default:).*\n)*?        break;\n")
APART = re.compile(r"gemmc_dyn_apart<(.*), float, float>\(\n\s*"
                   r"p\.m, p\.n, p\.k, p\.lda, p\.ldb, p\.ldc, m0, n0, (.*), tid\);")
KERNEL = 'extern "C" __global__ void __launch_bounds__(256, 1) gemmc_moe_dynamic_f32_rcr('


def _cases(source: str) -> list[re.Match]:
    found = list(CASE.finditer(source))
    assert len(found) == 4 and found[-1].group(0).count("128, 128, 16, 8, 8"), "the variant switch changed"
    return found


def all_inline(source: str) -> str:
    assert len(APART.findall(source)) == 3, "the smaller variants' calls changed"
    return APART.sub(lambda m: f"gemmc_simt_tile<{m.group(1)}>(\n              p, m0, n0, {m.group(2)}, tid, 0);",
                     source)


def top_only(source: str) -> str:
    for case in reversed(_cases(source)[:-1]):
        source = source[:case.start()] + source[case.end():]
    return source


def apart_by_reference(source: str) -> str:
    source = APART.sub(lambda m: f"gemmc_dyn_run<{m.group(1)}>(\n              p, m0, n0, {m.group(2)}, tid, 0);",
                       source)
    assert source.count(KERNEL) == 1, "the kernel's signature changed"
    return source.replace(KERNEL, WRAPPER + "\n" + KERNEL)


SOURCE_EDITS = {"all_inline": all_inline, "top_only": top_only, "apart_by_reference": apart_by_reference}
SCHEDULE = "kernel moe {{ layout B col  grouped M n {n} k {k} groups 128 }}"  # the benchmark's
CASES = [(8, 65536, 512, 512, "uniform"), (32, 8192, 1024, 512, "uniform"), (32, 8192, 1024, 512, "half"),
         (8, 4096, 512, 512, "uniform")]


def apply(name: str) -> None:
    with open(TEMPLATE) as f:
        text = f.read()
    with open(TEMPLATE, "w") as f:
        f.write(EDITS[name](text))


def render(name: str) -> str:
    """The kernel's source with the template edited as `name`, rendered in a fresh process (the template restored)."""
    path, edit = (SIMT_TEMPLATE, SIMT_EDITS[name]) if name in SIMT_EDITS else (TEMPLATE, {**EDITS, **ONE_TILE}[name])
    with open(path) as f:
        original = f.read()
    try:
        with open(path, "w") as f:
            f.write(edit(original))
        code = ("import gemmc, sys; sys.stdout.write(next(iter(gemmc.compile_string("
                f"{SCHEDULE.format(n=8, k=8)!r}))).source)")
        return subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                              cwd=ROOT).stdout
    finally:
        with open(path, "w") as f:
            f.write(original)


def options(name: str) -> tuple[str, ...]:
    from gemmc.runtime.compile import OPTIONS

    return OPTIONS


def _compile(job: tuple[str, tuple[str, ...]]) -> None:
    import cupy as cp

    cp.RawModule(code=job[0], options=job[1]).get_function("gemmc_moe_dynamic_f32_rcr")  # CuPy's disk cache


def _static_compile(case: tuple) -> None:
    from gemmc.bench.dynamic import precompile

    precompile(("moe", *case[:4]))


def launcher(fn, grid: int, st, ptrs: tuple[int, int, int, int], groups: int, rows: int):
    """A launch of `fn` on torch's current stream with the arguments gemmc's runtime gives the kernel."""
    from gemmc.bench.dynamic import torch_stream

    def go(i: int = 0) -> None:
        on = torch_stream()
        fn((grid, 1, 1), (st.block, 1, 1),
           (*(np.uint64(p) for p in ptrs), np.uint64(0), np.int32(groups), np.int64(rows), *st.sizes,
            np.uint64(st.counter(on.ptr)), np.float32(1), np.float32(0)), shared_mem=st.smem, stream=on)

    return go


def measure(choose: bool) -> None:
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    only = [v for v in os.environ.get("VARIANTS", "").split(",") if v]
    names = [name for name in (*EDITS, *SIMT_EDITS, *ONE_TILE, *CAPS, *SOURCE_EDITS)
             if not only or name in only or name == "current"]
    sources = {name: capped(render("current"), CAPS[name]) if name in CAPS
               else SOURCE_EDITS[name](render("current")) if name in SOURCE_EDITS else render(name) for name in names}
    with ProcessPoolExecutor(8, mp_context=get_context("spawn")) as pool:
        list(pool.map(_compile, [(src, options(name)) for name, src in sources.items()]))
        list(pool.map(_static_compile, [c for c in CASES if c[4] == "uniform"]))

    import cupy as cp
    import torch

    os.environ.setdefault("GEMMC_TUNE", "0")
    import gemmc
    from gemmc.bench.dynamic import STATIC, draws, graph_seconds, moe_step, torch_stream
    from gemmc.families.dynamic import scheduler
    from gemmc.runtime.dynamic import blocks_per_sm, state

    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    fns = {name: cp.RawModule(code=src, options=options(name)).get_function("gemmc_moe_dynamic_f32_rcr")
           for name, src in sources.items()}
    res: dict = {"device": torch.cuda.get_device_name(), "sms": sms, "variants": {}}
    for name, fn in fns.items():
        static_smem = getattr(fn, "shared_size_bytes", 0)
        res["variants"][name] = {"registers": fn.num_regs, "local_bytes": getattr(fn, "local_size_bytes", None),
                                 "static_smem": static_smem,
                                 "blocks_per_sm": blocks_per_sm(fn, 256, 33280, static_smem)}
    print(res, flush=True)

    def rel(got, ref):
        return float(torch.linalg.norm(got.double() - ref) / torch.linalg.norm(ref))

    res["cases"] = {}
    for experts, tokens, n, k, kind in CASES:
        counts = draws(experts, tokens, kind)[0]
        kern = next(iter(gemmc.compile_string(SCHEDULE.format(n=n, k=k))))
        A, W, C, ends, bounds, ref = moe_step(experts, tokens, n, k, counts)
        kern(A, W, C, offsets=ends)
        st = state(kern.executable)
        row: dict = {}
        plan = kern.ir.plan
        tiles = scheduler.schedule(plan, counts, np.full(experts, n), st.threshold, np.full(experts, k)).total
        for name, fn in fns.items():
            grid = tiles if name in ONE_TILE else sms * res["variants"][name]["blocks_per_sm"]
            go = launcher(fn, grid, st,
                          (A.data_ptr(), W.data_ptr(), C.data_ptr(), ends.data_ptr()), experts, tokens)
            C.fill_(float("nan"))
            go()
            torch.cuda.synchronize()
            row[name + "_err"] = rel(C, ref)
            row[name + "_us"] = graph_seconds(go, 20) * 1e6
        if kind == "uniform":
            static = next(iter(gemmc.compile_string(STATIC.format(n=n, k=k))))
            live = [(s, e, g) for g, (s, e) in enumerate(bounds) if e > s]
            As, Ws, Cs = [A[s:e] for s, e, _ in live], [W[g].t() for _, _, g in live], [C[s:e] for s, e, _ in live]
            static(As, Ws, Cs)
            row["static_us"] = graph_seconds(lambda i, f=static, a=As, w=Ws, c=Cs: f(a, w, c, stream=torch_stream()),
                                             20) * 1e6
        label = f"moe E{experts} T{tokens} N{n} K{k} {kind}"
        res["cases"][label] = row
        print(label, row, flush=True)
    scores = {name: float(np.exp(np.mean([np.log(r[name + "_us"] / r["current_us"]) for r in res["cases"].values()])))
              for name in fns}
    best = min(scores, key=scores.__getitem__)
    ok = all(r[best + "_err"] < 1e-5 for r in res["cases"].values())
    res["geomean_vs_current"] = scores
    res["chosen"] = best if ok and scores[best] < 0.99 else "current"
    print("geomean against current:", scores, "chosen:", res["chosen"], flush=True)
    if choose and res["chosen"] in EDITS and res["chosen"] != "current":
        apply(res["chosen"])
    with open(os.path.join(os.environ.get("OUT", "/tmp"), "variants.json"), "w") as f:
        json.dump(res, f, indent=1)


def once() -> None:
    import torch

    os.environ.setdefault("GEMMC_TUNE", "0")
    import gemmc
    from gemmc.bench.dynamic import STATIC, draws, torch_stream

    experts, tokens, n, k, kind = CASES[0]
    counts = draws(experts, tokens, kind)[0]
    A, W = torch.randn(tokens, k, device="cuda"), torch.randn(experts, n, k, device="cuda") / k ** 0.5
    C = torch.empty(tokens, n, device="cuda")
    next(iter(gemmc.compile_string(SCHEDULE.format(n=n, k=k))))(
        A, W, C, offsets=torch.tensor(np.cumsum(counts), dtype=torch.int32, device="cuda"))
    live = [(s - c, s, g) for g, (s, c) in enumerate(zip(np.cumsum(counts), counts, strict=True)) if c]
    next(iter(gemmc.compile_string(STATIC.format(n=n, k=k))))(
        [A[s:e] for s, e, _ in live], [W[g].t() for _, _, g in live], [C[s:e] for s, e, _ in live],
        stream=torch_stream())
    torch.cuda.synchronize()


if __name__ == "__main__":
    if sys.argv[1] == "apply":
        apply(sys.argv[2])
    elif sys.argv[1] == "once":
        once()
    else:
        measure("--apply" in sys.argv)
