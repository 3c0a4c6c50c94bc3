"""Every kind of kernel launches on the same stream for the same call: the caller's stream (CuPy, torch or a raw
handle), else torch's current stream for torch tensors, so a fixed-size kernel and a group called inside
`torch.cuda.graph` are captured and replay with new inputs (float64 reference, NaN-poisoned outputs)."""

from __future__ import annotations

import pytest

import gemmc

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

KERNEL = "kernel k { gemm 77 x 45 x 33 }"
GROUP = """target cuda sm_90
group pair {
  concurrency streams 2
  gemm a 100 x 36 x 70
  gemm b 37 x 129 x 21 { layout B col }
}"""


def _operands(shapes, cols=()):
    As = [torch.randn(m, k, device="cuda") for m, n, k in shapes]
    Bs = [torch.randn(n, k, device="cuda").t() if i in cols else torch.randn(k, n, device="cuda")
          for i, (m, n, k) in enumerate(shapes)]
    Cs = [torch.full((m, n), float("nan"), device="cuda") for m, n, k in shapes]
    return As, Bs, Cs


def _check(As, Bs, Cs):
    for a, b, c in zip(As, Bs, Cs, strict=True):
        ref = a.double() @ b.double()
        assert float((c.double() - ref).norm() / ref.norm()) < 2e-5


def _capture_and_replay(call, As, Bs, Cs):
    call()  # the first call tunes, outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        call()
    for x in As:
        x.copy_(torch.randn_like(x))
    for c in Cs:
        c.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    _check(As, Bs, Cs)


def test_a_fixed_size_kernel_is_captured_by_torch_cuda_graph():
    k = gemmc.compile_string(KERNEL)["k"]
    As, Bs, Cs = _operands([(77, 45, 33)])
    _capture_and_replay(lambda: k(As, Bs, Cs), As, Bs, Cs)


def test_a_group_is_captured_by_torch_cuda_graph():
    group = gemmc.compile_string(GROUP)["pair"]
    As, Bs, Cs = _operands([(100, 36, 70), (37, 129, 21)], cols=(1,))
    _capture_and_replay(lambda: group(As, Bs, Cs), As, Bs, Cs)


@pytest.mark.parametrize("how", ["torch", "handle", "current"])
def test_a_fixed_size_kernel_runs_on_a_torch_side_stream(how):
    k = gemmc.compile_string(KERNEL)["k"]
    As, Bs, Cs = _operands([(77, 45, 33)])
    k(As, Bs, Cs)  # tuned on the default stream
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        # The side stream is busy, then poisons C: a launch on another stream would run first, and its result
        # would be overwritten with NaN.
        torch.cuda._sleep(10_000_000)
        for c in Cs:
            c.fill_(float("nan"))
        if how == "torch":
            k(As, Bs, Cs, stream=side)
        elif how == "handle":
            k(As, Bs, Cs, stream=side.cuda_stream)
        else:
            k(As, Bs, Cs)
    side.synchronize()
    _check(As, Bs, Cs)


@pytest.mark.parametrize("library", ["torch", "cupy"])
def test_the_benchmarks_graph_holds_the_gemmc_call(library):
    """bench.timing.gemmc_graph, which every suite times gemmc with, captures the call for torch tensors (launched on
    torch's stream) and CuPy arrays (on CuPy's) alike: its replay recomputes C."""
    import cupy as cp

    from gemmc.bench.timing import gemmc_graph

    k = gemmc.compile_string(KERNEL)["k"]
    As, Bs, Cs = _operands([(77, 45, 33)])
    # CuPy views of the same memory (no copy: __cuda_array_interface__)
    args = (As, Bs, Cs) if library == "torch" else tuple([cp.asarray(x[0])] for x in (As, Bs, Cs))
    replay = gemmc_graph(lambda: k(*args))
    Cs[0].fill_(float("nan"))
    replay()
    torch.cuda.synchronize()
    _check(As, Bs, Cs)
