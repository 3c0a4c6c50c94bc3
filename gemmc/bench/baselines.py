"""What a user has today for a batch of differently sized GEMMs, run without Python overhead (docs/PERFORMANCE.md):
a cuBLAS loop captured in a CUDA graph, a zero-padded torch.bmm in a graph, and cublasSgemmGroupedBatched
through ctypes (CUDA 12.5+), also replayed from a graph where capture works; for sizes that change every call
(gemmc/bench/dynamic.py), cublasSgemmGroupedBatched with the sizes on the host, as such code calls it per step."""

from __future__ import annotations

import ctypes
import glob
import os
from collections.abc import Callable
from functools import cache

from gemmc.bench import timing


def cublas_loop(As, Bs, outs) -> Callable[[], None]:
    import torch

    def run() -> None:
        for a, b, o in zip(As, Bs, outs, strict=True):
            torch.mm(a, b, out=o)

    return timing.torch_graph(run)


def padded_bmm(As, Bs) -> tuple[Callable[[], None], Callable[[], list]]:
    """Zero-pad every problem to the largest M, N, K and run one torch.bmm. Returns the graph replay and a
    function giving the per-problem results (views into the padded output)."""
    import torch

    m = max(a.shape[0] for a in As)
    k = max(a.shape[1] for a in As)
    n = max(b.shape[1] for b in Bs)
    A = torch.zeros(len(As), m, k, device="cuda")
    B = torch.zeros(len(As), k, n, device="cuda")
    for i, (a, b) in enumerate(zip(As, Bs, strict=True)):
        A[i, : a.shape[0], : a.shape[1]] = a
        B[i, : b.shape[0], : b.shape[1]] = b
    C = torch.empty(len(As), m, n, device="cuda")
    replay = timing.torch_graph(lambda: torch.bmm(A, B, out=C))
    return replay, lambda: [C[i, : a.shape[0], : b.shape[1]] for i, (a, b) in enumerate(zip(As, Bs, strict=True))]


@cache
def _cublas() -> ctypes.CDLL:
    import site

    import torch

    roots = [os.path.dirname(torch.__file__)] + [os.path.join(p, "nvidia") for p in site.getsitepackages()]
    for root in roots:
        for path in sorted(glob.glob(os.path.join(root, "**", "libcublas.so*"), recursive=True)):
            if "Lt" not in os.path.basename(path):
                return ctypes.CDLL(path)
    return ctypes.CDLL("libcublas.so")


class GroupedGemm:
    """cublasSgemmGroupedBatched, one group per problem. Row-major C = A B is computed as the column-major
    C^T = B^T A^T, so cuBLAS sees m = N, n = M, k = K with B first."""

    def __init__(self, As, Bs, outs):
        import torch

        lib = _cublas()
        self.lib = lib
        self.handle = ctypes.c_void_p()
        assert lib.cublasCreate_v2(ctypes.byref(self.handle)) == 0
        g = len(As)
        ints = ctypes.c_int * g
        self.trans = ints(*([0] * g))  # CUBLAS_OP_N
        self.m = ints(*[b.shape[1] for b in Bs])
        self.n = ints(*[a.shape[0] for a in As])
        self.k = ints(*[a.shape[1] for a in As])
        self.lda = ints(*[b.shape[1] for b in Bs])
        self.ldb = ints(*[a.shape[1] for a in As])
        self.ldc = ints(*[b.shape[1] for b in Bs])
        self.alpha = (ctypes.c_float * g)(*([1.0] * g))
        self.beta = (ctypes.c_float * g)(*([0.0] * g))
        self.sizes = ints(*([1] * g))
        self.ptrs = [torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64, device="cuda")
                     for ts in (Bs, As, outs)]
        self.g = g

    def __call__(self) -> None:
        import torch

        self.lib.cublasSetStream_v2(self.handle, ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
        status = self.lib.cublasSgemmGroupedBatched(
            self.handle, self.trans, self.trans, self.m, self.n, self.k, self.alpha,
            ctypes.c_void_p(self.ptrs[0].data_ptr()), self.lda, ctypes.c_void_p(self.ptrs[1].data_ptr()), self.ldb,
            self.beta, ctypes.c_void_p(self.ptrs[2].data_ptr()), self.ldc, ctypes.c_int(self.g), self.sizes)
        if status != 0:
            raise RuntimeError(f"cublasSgemmGroupedBatched failed with status {status}")


def grouped(As, Bs, outs) -> tuple[Callable[[], None], str]:
    """The grouped GEMM as a graph replay when capture works, else direct calls; says which."""
    call = GroupedGemm(As, Bs, outs)
    call()
    try:
        return timing.torch_graph(call), "graph"
    except Exception:  # noqa: BLE001 - some cuBLAS builds refuse capture of grouped GEMM; time it directly then
        import torch

        torch.cuda.synchronize()
        return call, "direct"


class GroupedHostSizes:
    """cublasSgemmGroupedBatched over the experts with sizes on the host, as a user calls it per step: the counts
    copied back, m/n/k and the pointer arrays built and uploaded. Row-major C_e = A_e W_e^T is the column-major
    C_e^T = W_e^T' A_e^T: m = n_out, n = rows, k = K, W transposed."""

    def __init__(self, A, W, C):

        self.lib = _cublas()
        self.handle = ctypes.c_void_p()
        assert self.lib.cublasCreate_v2(ctypes.byref(self.handle)) == 0
        self.A, self.W, self.C = A, W, C
        self.k, self.n = A.shape[1], C.shape[1]

    def __call__(self, rows_per_group) -> None:
        import numpy as np
        import torch

        live = np.flatnonzero(rows_per_group)
        g = len(live)
        if not g:
            return
        starts = np.concatenate([[0], np.cumsum(rows_per_group)[:-1]])[live]
        item = 4
        ptrs = np.concatenate([self.W.data_ptr() + live * self.n * self.k * item,
                               self.A.data_ptr() + starts * self.k * item, self.C.data_ptr() + starts * self.n * item])
        device = torch.tensor(ptrs, dtype=torch.int64, device="cuda")  # a fresh table: no call sees another's
        ints = ctypes.c_int * g
        trans_w, trans_a = ints(*([1] * g)), ints(*([0] * g))
        m, n, k = ints(*([self.n] * g)), ints(*rows_per_group[live].tolist()), ints(*([self.k] * g))
        ld_w, ld_a, ld_c = ints(*([self.k] * g)), ints(*([self.k] * g)), ints(*([self.n] * g))
        one, zero = (ctypes.c_float * g)(*([1.0] * g)), (ctypes.c_float * g)(*([0.0] * g))
        self.lib.cublasSetStream_v2(self.handle, ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
        base = device.data_ptr()
        status = self.lib.cublasSgemmGroupedBatched(
            self.handle, trans_w, trans_a, m, n, k, one, ctypes.c_void_p(base), ld_w, ctypes.c_void_p(base + 8 * g),
            ld_a, zero, ctypes.c_void_p(base + 16 * g), ld_c, ctypes.c_int(g), ints(*([1] * g)))
        if status != 0:
            raise RuntimeError(f"cublasSgemmGroupedBatched failed with status {status}")


class GroupedList:
    """cublasSgemmGroupedBatched over a list of row-major problems with new sizes every call: one handle, the sizes
    read off the arrays on the host and the pointer arrays uploaded per call (C = A B is C^T = B^T A^T)."""

    def __init__(self) -> None:
        self.lib = _cublas()
        self.handle = ctypes.c_void_p()
        assert self.lib.cublasCreate_v2(ctypes.byref(self.handle)) == 0

    def __call__(self, As, Bs, Cs) -> None:
        import torch

        g = len(As)
        device = torch.tensor([t.data_ptr() for t in (*Bs, *As, *Cs)], dtype=torch.int64, device="cuda")
        ints = ctypes.c_int * g
        m, k = ints(*[b.shape[1] for b in Bs]), ints(*[a.shape[1] for a in As])
        n = ints(*[a.shape[0] for a in As])
        trans = ints(*([0] * g))
        one, zero = (ctypes.c_float * g)(*([1.0] * g)), (ctypes.c_float * g)(*([0.0] * g))
        self.lib.cublasSetStream_v2(self.handle, ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
        base = device.data_ptr()
        status = self.lib.cublasSgemmGroupedBatched(
            self.handle, trans, trans, m, n, k, one, ctypes.c_void_p(base), m, ctypes.c_void_p(base + 8 * g), k,
            zero, ctypes.c_void_p(base + 16 * g), m, ctypes.c_int(g), ints(*([1] * g)))
        if status != 0:
            raise RuntimeError(f"cublasSgemmGroupedBatched failed with status {status}")
