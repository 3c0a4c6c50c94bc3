"""Experiment: how many thread-block clusters the GPU holds at once, by cluster size and blocks per SM.

A cluster's blocks run on one GPC at the same time, so where a GPC's free block slots are not a multiple of the
cluster size some slots stay empty. `cuOccupancyMaxActiveClusters` says how many clusters fit; this prints, for
cluster sizes 1-8 and 1-8 resident blocks of 128 threads per SM (forced by dynamic shared memory), the share of
the SMs' block slots the clusters can fill. `gemmc.ir.hardware` keeps the table for the H100
(`Hardware.cluster_fill`), which `gemmc.families.tsm2r.planner.cluster_fill` reads.

    python3 bench/experiments/cluster_occupancy.py --out $OUT
"""
from __future__ import annotations

import argparse
import ctypes

from gemmc.bench import timing

SOURCE = """
extern "C" __global__ void __cluster_dims__({c}, 1, 1) probe(float* out) {{
  extern __shared__ float s[];
  s[threadIdx.x] = threadIdx.x;
  if (out) out[blockIdx.x] = s[threadIdx.x];
}}
"""


class LaunchConfig(ctypes.Structure):  # CUlaunchConfig
    _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3), ("smem", ctypes.c_uint),
                ("stream", ctypes.c_void_p), ("attrs", ctypes.c_void_p), ("nattrs", ctypes.c_uint)]


def active_clusters(function, cluster: int, block: int, smem: int) -> int:
    """cuOccupancyMaxActiveClusters: how many clusters of `cluster` blocks (the size the function was compiled
    with) of `block` threads and `smem` dynamic shared-memory bytes the GPU holds at once; minus the CUDA error
    code where the call fails. `function`: a CuPy Function or RawKernel."""
    function = getattr(function, "kernel", function)  # a RawKernel's cupy.cuda.function.Function
    config = LaunchConfig((cluster * 64, 1, 1), (block, 1, 1), smem, None, None, 0)
    count = ctypes.c_int(-1)
    status = ctypes.CDLL("libcuda.so.1").cuOccupancyMaxActiveClusters(
        ctypes.byref(count), ctypes.c_void_p(function.ptr), ctypes.byref(config))
    return count.value if status == 0 else -status


def main() -> None:
    import cupy as cp

    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args()
    libcuda = ctypes.CDLL("libcuda.so.1")
    props = cp.cuda.runtime.getDeviceProperties(0)
    sms, smem_sm = props["multiProcessorCount"], props["sharedMemPerMultiprocessor"]
    reserved = props.get("reservedSharedMemPerBlock", 1024)
    rows = []
    for c in range(1, 9):
        fn = cp.RawModule(code=SOURCE.format(c=c), options=("-std=c++17",)).get_function("probe")
        for per_sm in range(1, 9):
            smem = min(props["sharedMemPerBlockOptin"], smem_sm // per_sm // 128 * 128 - reserved)  # 128-byte units
            fn.max_dynamic_shared_size_bytes = smem
            resident = ctypes.c_int(-1)
            libcuda.cuOccupancyMaxActiveBlocksPerMultiprocessor(ctypes.byref(resident), ctypes.c_void_p(fn.kernel.ptr),
                                                                128, ctypes.c_size_t(smem))
            blocks = resident.value if resident.value > 0 else per_sm
            count = active_clusters(fn, c, 128, smem)
            fill = count * c / (blocks * sms) if count >= 0 and blocks else float("nan")
            rows.append({"cluster": c, "blocks_per_sm": blocks, "smem": smem, "max_clusters": count, "fill": fill})
            print(rows[-1], flush=True)
    print("fill by blocks per SM (rows) and cluster size (columns 1-8):")
    for per_sm in range(1, 9):
        print(per_sm, " ".join(f"{r['fill']:.3f}" for r in rows if r["blocks_per_sm"] == per_sm))
    print(f"wrote {timing.write_results(args.out, 'cluster-occupancy', rows)}")


if __name__ == "__main__":
    main()
