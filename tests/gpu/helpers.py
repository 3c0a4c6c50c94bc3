"""Shared GPU-test helpers: run a schedule's kernel on fresh random, NaN-poisoned inputs against float64."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable

import gemmc

LAYOUTS = ["".join(c) for c in itertools.product("rc", repeat=3)]  # A, B, C: every row/col combination


def layout_line(code: str) -> str:
    """`layout A row, B col, C row` from a code such as "rcr"."""
    names = {"r": "row", "c": "col"}
    return f"layout A {names[code[0]]}, B {names[code[1]]}, C {names[code[2]]}"


TOLERANCE = {"f32": 1e-5, "f64": 1e-12}


def check_schedule(text: str, name: str | None = None, *, seed: int = 0, alpha: float = 1.5, beta: float = -0.5,
                   tolerance: float | None = None) -> dict:
    """Compile, run once, compare every problem with float64; assert on the worst relative Frobenius error."""
    from gemmc.runtime.check import check_kernel

    prog = gemmc.compile_string(text)
    kernel = prog[name] if name else next(iter(prog))
    result = check_kernel(kernel, seed=seed, alpha=alpha, beta=beta, time_it=False)
    err = result["errors"]
    limit = tolerance if tolerance is not None else TOLERANCE[kernel.ir.dtype.value]
    assert err["nonfinite"] == 0, f"{kernel.name}: {err['nonfinite']} outputs are NaN/inf (unwritten or wrong)"
    assert err["rel_fro"] < limit, f"{kernel.name}: relative error {err['rel_fro']:.3e} >= {limit:g}"
    return result


def check_plan(kernel, plan, *, seed: int = 0, alpha: float = 1.5, beta: float = -0.5) -> dict:
    """`kernel` run under another plan of its own family (a shape the planner would not pick by itself), its work
    list rebuilt, checked as check_schedule checks."""
    from gemmc.runtime.check import check_kernel

    result = check_kernel(kernel.with_plan(plan), seed=seed, alpha=alpha, beta=beta, time_it=False)
    err, limit = result["errors"], TOLERANCE[kernel.ir.dtype.value]
    assert err["nonfinite"] == 0, f"{err['nonfinite']} outputs are NaN/inf (unwritten or wrong)"
    assert err["rel_fro"] < limit, f"relative error {err['rel_fro']:.3e} >= {limit:g}"
    return result


# A C++ program that calls `gemmc compile`'s launcher of a group named `pair` captured in a CUDA graph, on
# NaN-poisoned outputs, and compares every GEMM with a float64 host product of the inputs as stored (exit 0: all
# within `unit` (C's rounding) + 2 K 2^-24 (f32 accumulation) relative Frobenius error).
GROUP_DRIVER = r"""
#include <cmath>
#include <cstdio>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <vector>
#include "pair.h"

typedef %(T)s T;
inline float widen(float x) { return x; }
inline float widen(__nv_bfloat16 x) { return __bfloat162float(x); }
inline void put(float& y, float x) { y = x; }
inline void put(__nv_bfloat16& y, float x) { y = __float2bfloat16(x); }

// Row-major or column-major element (r, c) of a rows x cols matrix.
static size_t at(bool col, int rows, int cols, int r, int c) {
  return col ? (size_t)c * rows + r : (size_t)r * cols + c;
}

int main() {
  const int G = %(count)d;
  const int M[] = {%(m)s}, N[] = {%(n)s}, K[] = {%(k)s};
  const bool colA[] = {%(ca)s}, colB[] = {%(cb)s};
  std::vector<std::vector<T>> a(G), b(G);
  const void* A[G]; const void* B[G]; void* C[G];
  unsigned seed = %(seed)du;
  auto rnd = [&] { seed = seed * 1664525u + 1013904223u; return (float)((seed >> 8) %% 2001) / 1000.0f - 1.0f; };
  for (int g = 0; g < G; ++g) {
    a[g].resize((size_t)M[g] * K[g]); b[g].resize((size_t)K[g] * N[g]);
    for (auto& x : a[g]) put(x, rnd());
    for (auto& x : b[g]) put(x, rnd());
    void *da, *db, *dc;
    cudaMalloc(&da, a[g].size() * sizeof(T)); cudaMalloc(&db, b[g].size() * sizeof(T));
    cudaMalloc(&dc, (size_t)M[g] * N[g] * sizeof(T));
    cudaMemcpy(da, a[g].data(), a[g].size() * sizeof(T), cudaMemcpyHostToDevice);
    cudaMemcpy(db, b[g].data(), b[g].size() * sizeof(T), cudaMemcpyHostToDevice);
    cudaMemset(dc, 0xff, (size_t)M[g] * N[g] * sizeof(T));  // NaN: every output must be written
    A[g] = da; B[g] = db; C[g] = dc;
  }
  cudaStream_t s; cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  if (gemmc_pair_prepare() != cudaSuccess) { std::printf("prepare failed\n"); return 2; }
  cudaGraph_t graph; cudaGraphExec_t exec;
  cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
  cudaError_t err = gemmc_pair(A, B, C, s);
  cudaError_t cap = cudaStreamEndCapture(s, &graph);
  if (err != cudaSuccess || cap != cudaSuccess) {
    std::printf("capture failed: %%s / %%s\n", cudaGetErrorString(err), cudaGetErrorString(cap)); return 3; }
  if (cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) { std::printf("instantiate failed\n"); return 4; }
  cudaGraphLaunch(exec, s);
  if (cudaStreamSynchronize(s) != cudaSuccess) { std::printf("replay failed\n"); return 5; }
  int bad = 0;
  for (int g = 0; g < G; ++g) {
    std::vector<T> c((size_t)M[g] * N[g]);
    cudaMemcpy(c.data(), C[g], c.size() * sizeof(T), cudaMemcpyDeviceToHost);
    double num = 0, den = 0;
    for (int i = 0; i < M[g]; ++i)
      for (int j = 0; j < N[g]; ++j) {
        double ref = 0;
        for (int p = 0; p < K[g]; ++p)
          ref += (double)widen(a[g][at(colA[g], M[g], K[g], i, p)]) * widen(b[g][at(colB[g], K[g], N[g], p, j)]);
        double d = (double)widen(c[(size_t)i * N[g] + j]) - ref;
        num += d * d; den += ref * ref;
      }
    double e = std::sqrt(num / den);
    const double limit = %(unit)g + 2.0 * K[g] * 0x1p-24;
    std::printf("%%d %%.3e (bound %%.3e)\n", g, e, limit);
    if (!(e < limit)) bad = 1;
  }
  return bad;
}
"""

UNIT = {"bf16": 2.0 ** -8, "f16": 2.0 ** -11, "f32": 2.0 ** -24}  # one rounding to the type, relative
# relative Frobenius error allowed for C of each torch dtype: C rounded once (bf16, f16), f32 accumulation
TOL = {"bfloat16": 8e-3, "float16": 1e-3, "float32": 2e-5}


def run_group_driver(tmp_path, dtype: str, shapes: list[tuple[int, int, int, str, str]], mode: str,
                     gencode: list[str], libs: list[str], seed: int = 12345) -> None:
    """`gemmc compile` a group `pair` of GEMMs (m, n, k, layout A, layout B) in `dtype` ("f32" or "bf16") with
    `concurrency <mode>`, build GROUP_DRIVER against it with nvcc and assert that it runs and every GEMM is right."""
    import shutil
    import subprocess

    import pytest

    from gemmc.cli import main

    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not installed")
    members = " ".join(f"gemm m{i} {m} x {n} x {k} {{ layout A {la}, B {lb} }}"
                       for i, (m, n, k, la, lb) in enumerate(shapes))
    (tmp_path / "g.gs").write_text(f"group pair {{ concurrency {mode} dtype {dtype} {members} }}")
    assert main(["compile", str(tmp_path / "g.gs"), "-o", str(tmp_path), "--kernel", "pair"]) == 0

    def column(i: int) -> str:
        return ", ".join(str(s[i]) if i < 3 else "true" if s[i] == "col" else "false" for s in shapes)

    ctype = {"f32": "float", "bf16": "__nv_bfloat16"}[dtype]
    (tmp_path / "main.cu").write_text(GROUP_DRIVER % {
        "T": ctype, "count": len(shapes), "m": column(0), "n": column(1), "k": column(2), "ca": column(3),
        "cb": column(4), "unit": UNIT[dtype], "seed": seed})
    build = subprocess.run([nvcc, *gencode, "-std=c++17", "-I", str(tmp_path), str(tmp_path / "main.cu"),
                            str(tmp_path / "pair.cu"), "-o", str(tmp_path / "pair"), *libs],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-4000:]
    run = subprocess.run([str(tmp_path / "pair")], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def rel(got, ref) -> float:
    """The relative Frobenius error of a torch result against a float64 reference; every output must be finite."""
    import torch as t

    assert t.isfinite(got).all(), "an output is NaN/inf: unwritten or wrong"
    return float(t.linalg.norm(got.double() - ref) / max(float(t.linalg.norm(ref)), 1e-300))


def check_moe_graph_replay(kern, *, experts: int, tokens: int, n: int, k: int, dtype: str, b_col: bool,
                           tolerance: float) -> None:
    """A MoE step (routing, the `grouped M` kernel `kern`, combine) captured once in a torch CUDA graph and replayed
    with new routings (trial 1: one expert takes every token): each replay against float64, on a NaN-poisoned output,
    and no compile, plan or tuning run by the replays."""
    import torch as t

    dt = getattr(t, dtype)
    X = t.randn(tokens, k, device="cuda").to(dt)
    # each expert's k x n weight, stored n x k (column-major) for `layout B col`
    W = t.randn(experts, *((n, k) if b_col else (k, n)), device="cuda").to(dt)
    assign = t.randint(0, experts, (tokens,), device="cuda")
    Y = t.empty(tokens, n, device="cuda", dtype=dt)
    routed = t.empty(tokens, n, device="cuda", dtype=dt)
    ends = t.empty(experts, dtype=t.int32, device="cuda")
    ones = t.ones(tokens, device="cuda")

    def step():
        order = t.sort(assign, stable=True).indices
        counts = t.zeros(experts, device="cuda").scatter_add_(0, assign, ones)
        ends.copy_(t.cumsum(counts, 0).to(t.int32))
        kern(X.index_select(0, order), W, routed, offsets=ends)
        Y.index_copy_(0, order, routed)

    step()  # compile and load outside the capture
    t.cuda.synchronize()
    before = gemmc.stats()
    graph = t.cuda.CUDAGraph()
    with t.cuda.graph(graph):
        step()
    for trial in range(3):
        assign.copy_(t.randint(0, experts, (tokens,), device="cuda") if trial != 1 else
                     t.full((tokens,), 3, device="cuda"))
        X.copy_(t.randn(tokens, k, device="cuda").to(dt))
        Y.fill_(float("nan"))
        graph.replay()
        t.cuda.synchronize()
        ref = t.einsum("tk,tnk->tn" if b_col else "tk,tkn->tn", X.double(), W.double()[assign])
        assert rel(Y, ref) < tolerance, f"replay {trial}"
    assert gemmc.stats() == before


def check_graphs_of_one_stream(t, run, poison, check) -> None:
    """Argument sets 0 and 1 (`run(i)` calls the kernel on set i) captured in two torch graphs, both on torch's one
    capture stream, then three rounds of: every output poisoned (`poison(i)`), the two graphs replayed at once on two
    streams while set 2 runs three times as plain calls on a third, every output checked (`check(i, what)`). A
    captured launch shares no state (problem table, tensor maps, tile counters) with another graph or with plain
    calls, so all three are right whatever the overlap."""
    run(2)  # loads the kernel outside the captures
    t.cuda.synchronize()
    graphs = []
    for i in range(2):
        graph = t.cuda.CUDAGraph()
        with t.cuda.graph(graph):
            run(i)
        graphs.append(graph)
    streams = [t.cuda.Stream() for _ in range(3)]
    for round_ in range(3):
        for i in range(3):
            poison(i)
        t.cuda.synchronize()
        for graph, s in zip(graphs, streams, strict=False):
            with t.cuda.stream(s):
                graph.replay()
        with t.cuda.stream(streams[2]):
            for _ in range(3):
                run(2)
        t.cuda.synchronize()
        for i in range(3):
            check(i, f"set {i}, round {round_}")


def in_threads(run, count: int, what: str, timeout: float = 120.0) -> None:
    """run(i) for i < count, each in a thread of its own, all started before any is joined; fails with every error a
    thread raised (and its number), or with `what` where a thread has not returned within `timeout` seconds."""
    failed: list[tuple[int, BaseException]] = []

    def body(i: int) -> None:
        try:
            run(i)
        except BaseException as e:  # noqa: BLE001 - reported below, with the thread's number
            failed.append((i, e))

    threads = [threading.Thread(target=body, args=(i,)) for i in range(count)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout)
    assert not any(th.is_alive() for th in threads), what
    assert not failed, failed


def launcher(kern, tmp_path, argtypes: list | None = None) -> tuple:
    """The kernel's `gemmc compile` output built with nvcc into a library and loaded: (its launcher with `argtypes`,
    returning a cudaError_t, and its `_workspace_bytes` function). Default argtypes: the grouped M and K launchers'
    (A, B, C, the ends, groups, rows, workspace, stream)."""
    import ctypes
    import subprocess

    if argtypes is None:
        argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int, ctypes.c_longlong, ctypes.c_void_p, ctypes.c_void_p]
    src = tmp_path / f"{kern.rendered.launcher}.cu"
    src.write_text(kern.standalone)
    lib_path = tmp_path / f"lib{kern.rendered.launcher}.so"
    build = subprocess.run(["nvcc", *kern.rendered.build_flags, "-std=c++17", "-shared", "-Xcompiler", "-fPIC",
                            str(src), "-o", str(lib_path), "-lcuda"], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-4000:]
    lib = ctypes.CDLL(str(lib_path))
    fn = getattr(lib, kern.rendered.launcher)
    fn.restype, fn.argtypes = ctypes.c_int, argtypes
    size = getattr(lib, kern.rendered.launcher + "_workspace_bytes")
    size.restype = ctypes.c_size_t
    return fn, size


def capture_and_destroy(captured: Callable[[], tuple], replayed_right: Callable[..., bool], graphs: int) -> None:
    """`graphs` CUDA graphs from `captured()` (a tuple: the graph first), each destroyed before the next is captured;
    every 37th replayed first and checked by `replayed_right(*graph)`."""
    import gc

    for i in range(graphs):
        one = captured()
        if i % 37 == 0:
            assert replayed_right(*one), f"graph {i}"
        del one
        gc.collect()


# The dynamic kernel's per-level TLP sums are complete in shared memory (s_tlp) at this barrier, and the cap is read
# from them right after it (dynamic.cu.j2).
TLP_ANCHOR = "  __syncthreads();\n  const int cap = gemmc_dyn_cap(s_tlp, tlp_threshold);\n"
TLP_SEEN = "gemmc_test_tlp"  # the probe's device global: every level's sum, then the cap
# The schedules the probe runs on (tests/gpu/test_dynamic_tlp_gpu.py; tests/test_dynamic.py compiles them probed):
# grouped M up to 4096 groups, the most a schedule takes, and the list form
TLP_MOE = "kernel tlp_moe { grouped M n 97 k 8 groups 4096 }"
TLP_LIST = "kernel tlp_list { grouped list problems 512 }"


def tlp_probe(source: str, levels: int) -> str:
    """A dynamic kernel's `source` whose block 0, thread 0 stores every level's TLP sum and the cap it picked into the
    device global TLP_SEEN (levels + 1 values) once the block's sums are complete: a wrong sum changes only which tile
    variants run, never C, so only such a probe shows it. Fails where the anchor is not there exactly once (a template
    change must fail the tests that use the probe, not leave them reading nothing)."""
    assert source.count(TLP_ANCHOR) == 1, f"the TLP probe's anchor occurs {source.count(TLP_ANCHOR)} times"
    store = (f'  static_assert(GEMMC_DYN_LEVELS == {levels}, "the probe holds every level and the cap");\n'
             "  if (blockIdx.x == 0 && tid == 0) {\n"
             f"    for (int c = 0; c < GEMMC_DYN_LEVELS; ++c) {TLP_SEEN}[c] = s_tlp[c];\n"
             f"    {TLP_SEEN}[GEMMC_DYN_LEVELS] = (unsigned long long)cap;\n"
             "  }\n")
    return f"__device__ unsigned long long {TLP_SEEN}[{levels + 1}];\n" + source.replace(TLP_ANCHOR,
                                                                                          TLP_ANCHOR + store)
