"""The benchmarks' timing helpers time what they claim: a gemmc call captured by timing.gemmc_graph replays the
kernel, with torch tensors (which launch on torch's current stream) and with CuPy arrays (CuPy's current stream)."""

from __future__ import annotations

import pytest

import gemmc
from gemmc.bench.timing import gemmc_graph

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")


@pytest.mark.parametrize("arrays", ["torch", "cupy"])
def test_gemmc_graph_replays_the_call(arrays):
    m, n, k = 77, 45, 33
    kern = gemmc.compile_string(f"kernel k {{ gemm {m} x {n} x {k} }}")["k"]
    A, B = torch.randn(m, k, device="cuda"), torch.randn(k, n, device="cuda")
    C = torch.empty(m, n, device="cuda")
    if arrays == "cupy":
        cp = pytest.importorskip("cupy")
        A, B, C = cp.asarray(A), cp.asarray(B), cp.asarray(C)
    replay = gemmc_graph(lambda: kern([A], [B], [C]))
    torch.cuda.synchronize()
    out = torch.as_tensor(C, device="cuda")
    out.fill_(float("nan"))  # the calls before and during the capture wrote C; only the replay may write it now
    torch.cuda.synchronize()
    replay()
    torch.cuda.synchronize()
    ref = torch.as_tensor(A, device="cuda").double() @ torch.as_tensor(B, device="cuda").double()
    err = float((out.double() - ref).norm() / ref.norm())
    assert err < 1e-5, f"the replay left C at relative error {err}"
