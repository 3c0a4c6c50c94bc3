"""Experiment: host time per call of the bf16 grouped M and grouped K calls (hopper_grouped, torch tensors, 64
experts, 8192 tokens, 8 routings cycled, plain calls not synchronised; three windows of 15 x 200 calls), of the tree on
PYTHONPATH; the argument names the tree in the output, so two trees run side by side in one process's turn:

    (cd OLD && PYTHONPATH=$PWD python3 NEW/bench/experiments/grouped_host_bf16.py old)
    PYTHONPATH=$PWD python3 bench/experiments/grouped_host_bf16.py new

Results: bench/results/dynamic/2026-11-27_h100_grouped-host-bf16.log (two turns each of the tree before and after the
grouped launches went through dynamic_state.Launcher).
"""
import json
import sys

import numpy as np
import torch

import gemmc
from gemmc.bench import timing

out = {}
M_TEXT = "target cuda sm_90\nkernel moe { dtype bf16 layout B col grouped M n 2048 k 1024 groups 64 }"
K_TEXT = "target cuda sm_90\nkernel wg { dtype bf16 layout A col grouped K m 1024 n 2048 groups 64 }"
m = gemmc.compile_string(M_TEXT)["moe"]
kk = gemmc.compile_string(K_TEXT)["wg"]
T = 8192
A = torch.randn(T, 1024, device="cuda").bfloat16()
W = torch.randn(64, 2048, 1024, device="cuda").bfloat16().transpose(1, 2)
C = torch.empty(T, 2048, device="cuda").bfloat16()
X = torch.randn(T, 1024, device="cuda").bfloat16()  # grouped K takes X^T (layout A col)
dY = torch.randn(T, 2048, device="cuda").bfloat16()
dW = torch.empty(64, 1024, 2048, device="cuda").bfloat16()
ends = [torch.tensor(np.cumsum(np.random.default_rng(i).multinomial(T, np.full(64, 1 / 64))), dtype=torch.int32,
                     device="cuda") for i in range(8)]
for e in ends:
    m(A, W, C, offsets=e)
    kk(X.t(), dY, dW, offsets=e)
torch.cuda.synchronize()
for name, fn in (("grouped_M_us", lambda i: m(A, W, C, offsets=ends[i % 8])),
                 ("grouped_K_us", lambda i: kk(X.t(), dY, dW, offsets=ends[i % 8]))):
    out[name] = [timing.host_seconds(fn, calls=200, windows=15, sync=False) * 1e6 for _ in range(3)]
print(sys.argv[1], json.dumps(out), flush=True)
