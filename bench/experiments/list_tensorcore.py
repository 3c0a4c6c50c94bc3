"""`grouped list` of bf16 on the Hopper tensor cores (the hopper_grouped family's list form: tensor maps built on the
device) against torch and the dynamic family's SIMT list of the same schedule (`algorithm dynamic`), one process, the
protocol of docs/PERFORMANCE.md. GPU machine only:

    python bench/experiments/list_tensorcore.py --out DIR

MoE-like lists: problem e multiplies its m_e routed tokens (m_e drawn anew for every call, uniform or Zipf-skewed,
zeros included) by its own weight (K x N, column-major: an expert's N x K rows); every problem has its own A, B and C.
Per case and routing, a pool of DRAWS lists is cycled so that every call has other sizes than the one before.
- gemmc (tensor cores) and gemmc (SIMT, the dynamic family): host_us: plain calls with new sizes, wall time per call
  synchronised once per window; table_us: the argument checks and the problem table alone; device_us: the kernels
  alone on a staged problem table, replayed from a CUDA graph (100 calls a window); compiles / plans / tuning runs
  during the timed calls (gemmc.stats()).
- torch loop: torch.mm per problem, plain calls (host_us), and the same loop captured in a CUDA graph (device_us).
- torch._grouped_mm: the list stacked once into one A (tokens x K) and one B (E x K x N) with device offsets (the
  contiguous form the list is expressible as); plain calls cycling the offsets (host_us) and events around 100 calls
  (device_us).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np
import torch

import gemmc
from gemmc.bench import timing
from gemmc.bench.dynamic import graph_seconds

TC = "target cuda sm_90\nkernel list_tc_{p} {{ dtype bf16 layout B col grouped list problems {p} }}"
SIMT = ("target cuda sm_90\nkernel list_simt_{p} {{ dtype bf16 layout B col algorithm dynamic "
        "grouped list problems {p} }}")
CASES = [(64, 16384, 2048, 1024), (512, 32768, 1024, 512)]  # problems, tokens, n, k
ROUTINGS = ("uniform", "zipf")
DRAWS = 8


def counts(kind: str, problems: int, tokens: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "uniform":
        return rng.multinomial(tokens, np.full(problems, 1 / problems))
    w = 1.0 / np.arange(1, problems + 1) ** 1.2
    return rng.multinomial(tokens, rng.permutation(w / w.sum()))


def raw_tc(kern, table, count: int):
    """The two launches of the tensor-core list on a staged table (no host checks): its device time."""
    from gemmc.runtime.grouped_list import build_maps, state
    from gemmc.runtime.streams import torch_stream

    st = state(kern.executable)

    def run(i: int) -> None:
        on = torch_stream()
        maps = int(st.ring.maps[0].data.ptr)  # the calls run one after another on one stream: one slot's maps
        build_maps(st, table.data_ptr(), count, maps, on)
        st.main(st.grid, st.block, st.smem, on, (table.data_ptr(), count, maps), st.counter(on), (1.0, 0.0))

    return run


def raw_simt(kern, table, count: int):
    from gemmc.bench.dynamic import torch_stream
    from gemmc.runtime.dynamic import state

    st = state(kern.executable)
    zero = np.uint64(0)

    def run(i: int) -> None:
        on = torch_stream()
        st.fn((st.grid, 1, 1), (st.block, 1, 1),
              (zero, zero, zero, zero, np.uint64(table.data_ptr()), np.int32(count), np.int64(0), np.int64(0),
               np.int64(0), np.int64(0), np.int64(st.threshold), np.uint64(st.counter(on.ptr)), np.float32(1.0),
               np.float32(0.0)), shared_mem=st.smem, stream=on)

    return run


def rel_error(As, Bs, Cs) -> float:
    worst = 0.0
    for a, b, c in list(zip(As, Bs, Cs, strict=True))[:: max(1, len(As) // 8)]:
        if c.numel():
            ref = a.double() @ b.double()
            worst = max(worst, float(torch.linalg.norm(c.double() - ref) / torch.linalg.norm(ref)))
    return worst


def case(problems: int, tokens: int, n: int, k: int, kind: str, first_call: dict) -> dict:
    from gemmc.runtime.dynamic_list import problem_table

    rng = np.random.default_rng(problems)
    W = torch.randn(problems, n, k, device="cuda").to(torch.bfloat16)  # expert e's B: W[e].t(), K x N column-major
    Bs = [W[e].t() for e in range(problems)]
    sets = []
    for _ in range(DRAWS):
        m = counts(kind, problems, tokens, rng)
        As = [torch.randn(int(r), k, device="cuda").to(torch.bfloat16) for r in m]
        Cs = [torch.empty(int(r), n, device="cuda", dtype=torch.bfloat16) for r in m]
        sets.append((As, Bs, Cs, m))
    flops = float(np.mean([2.0 * int(s[3].sum()) * n * k for s in sets]))
    row: dict = {"case": f"list x{problems}", "routing": kind, "problems": problems, "tokens": tokens, "n": n, "k": k,
                 "flops": flops}
    tc = next(iter(gemmc.compile_string(TC.format(p=problems))))
    simt = next(iter(gemmc.compile_string(SIMT.format(p=problems))))
    for name, kern in (("tc", tc), ("simt", simt)):
        if name not in first_call:
            t0 = time.perf_counter()
            kern(*sets[0][:3])
            torch.cuda.synchronize()
            first_call[name] = (time.perf_counter() - t0) * 1e3
        As, _, Cs, _ = sets[0]
        for c in Cs:
            c.fill_(float("nan"))
        kern(*sets[0][:3])
        torch.cuda.synchronize()
        row[f"{name}_rel_error"] = rel_error(As, Bs, Cs)
        before = gemmc.stats()
        row[f"{name}_host_us"] = timing.host_seconds(lambda i, kern=kern: kern(*sets[i % DRAWS][:3])) * 1e6
        after = gemmc.stats()
        row.update({f"{name}_timed_{key}": after[key] - before[key] for key in after})
        device = torch.cuda.current_device()
        row[f"{name}_table_us"] = timing.host_seconds(  # the checks and the table alone (host)
            lambda i, kern=kern, name=name, device=device: problem_table(kern.executable, *sets[i % DRAWS][:3],
                                                                         device, views=name == "tc"), sync=False) * 1e6
        table = torch.from_numpy(problem_table(kern.executable, *sets[0][:3], device, views=name == "tc")).cuda()
        raw = raw_tc(kern, table, problems) if name == "tc" else raw_simt(kern, table, problems)
        row[f"{name}_device_us"] = graph_seconds(raw) * 1e6

    def loop(i: int) -> None:
        As, Bs_, Cs, _ = sets[i % DRAWS]
        for a, b, c in zip(As, Bs_, Cs, strict=True):
            torch.mm(a, b, out=c)

    row["torch_loop_host_us"] = timing.host_seconds(loop) * 1e6
    row["torch_loop_device_us"] = timing.device_seconds(timing.torch_graph(lambda: loop(0))) * 1e6
    # torch._grouped_mm on the list stacked once (its own contiguous copy), offsets cycled on the device
    A = torch.cat(sets[0][0])
    C = torch.empty(A.shape[0], n, device="cuda", dtype=torch.bfloat16)
    offs = [torch.tensor(np.cumsum(s[3]), dtype=torch.int32, device="cuda") for s in sets]
    offs = [o.clamp(max=A.shape[0]) for o in offs]
    Wt = W.transpose(1, 2)  # E x K x N (column-major per expert)
    out = torch._grouped_mm(A, Wt, offs=offs[0])
    ref = torch.cat([a.double() @ b.double() for a, b in zip(sets[0][0], Bs, strict=True)])
    row["grouped_mm_rel_error"] = float(torch.linalg.norm(out.double() - ref) / torch.linalg.norm(ref))
    del C
    row["grouped_mm_host_us"] = timing.host_seconds(lambda i: torch._grouped_mm(A, Wt, offs=offs[i % DRAWS])) * 1e6
    row["grouped_mm_device_us"] = timing.device_seconds(lambda: torch._grouped_mm(A, Wt, offs=offs[0])) * 1e6
    row["tc_vs_simt_device"] = row["simt_device_us"] / row["tc_device_us"]
    row["tc_vs_torch_loop_device"] = row["torch_loop_device_us"] / row["tc_device_us"]
    row["tc_vs_grouped_mm_device"] = row["grouped_mm_device_us"] / row["tc_device_us"]
    row["tc_vs_torch_loop_host"] = row["torch_loop_host_us"] / row["tc_host_us"]
    row["tc_vs_grouped_mm_host"] = row["grouped_mm_host_us"] / row["tc_host_us"]
    row["tc_tflops_device"] = flops / row["tc_device_us"] / 1e6
    print(json.dumps(row), flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=".")
    parser.add_argument("--quick", action="store_true", help="the uniform routing only")
    args = parser.parse_args()
    first_call: dict = {}
    rows = []
    for problems, tokens, n, k in CASES:
        for kind in ROUTINGS[:1] if args.quick else ROUTINGS:
            rows.append(case(problems, tokens, n, k, kind, first_call))
    result = {"gpu": torch.cuda.get_device_name(), "date": time.strftime("%Y-%m-%d"), "torch": torch.__version__,
              "first_call_ms": first_call, "rows": rows,
              "geomean_tc_vs_simt_device": statistics.geometric_mean([r["tc_vs_simt_device"] for r in rows]),
              "geomean_tc_vs_grouped_mm_device": statistics.geometric_mean([r["tc_vs_grouped_mm_device"]
                                                                            for r in rows])}
    Path(args.out, "list-tensorcore.json").write_text(json.dumps(result, indent=1))
    print(json.dumps({k: v for k, v in result.items() if k != "rows"}), flush=True)


if __name__ == "__main__":
    main()
