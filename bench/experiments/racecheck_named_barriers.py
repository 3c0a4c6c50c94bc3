"""Probe: does compute-sanitizer racecheck report a hazard in a trivially ordered kernel that uses named barriers
of part of a block (`bar.sync id, 64`) in a thread-block cluster? Stop 16's TSM2R column kernel with k slices of 2
warps reported RAW hazards between a shared-memory write and a read that two __syncthreads() separate, only with
clusters, while every result matched float64. Each kernel below: two groups of 2 warps sync on their own named
barrier a few times (group 1 one time more), every thread writes its word, __syncthreads(), every thread reads
another warp's word. GPU machine:

    compute-sanitizer --tool racecheck python3 bench/experiments/racecheck_named_barriers.py VARIANT

VARIANT: cluster-named (cluster of 2 + named barriers), named (no cluster), cluster (cluster, no named barriers).
"""
from __future__ import annotations

import sys

import cupy as cp

SOURCE = r"""
extern "C" __global__ void @ATTR@ probe(float* out, int iters) {
  __shared__ float s[128];
  const int warp = threadIdx.x / 32, group = warp / 2;
  if (@NAMED@)
    for (int i = 0; i < iters + group; ++i) asm volatile("bar.sync %0, %1;" ::"r"(1 + group), "r"(64) : "memory");
  s[threadIdx.x] = (float)threadIdx.x;
  __syncthreads();
  out[blockIdx.x * 128 + threadIdx.x] = s[127 - threadIdx.x];
  @SYNC@
}
"""
CLUSTER_SYNC = ('asm volatile("barrier.cluster.arrive.release.aligned;\\n\\tbarrier.cluster.wait.acquire.aligned;" '
                '::: "memory");')


def main(variant: str) -> None:
    cluster = variant.startswith("cluster")
    named = variant.endswith("named")
    source = (SOURCE.replace("@ATTR@", "__cluster_dims__(2, 1, 1)" if cluster else "")
              .replace("@NAMED@", str(int(named))).replace("@SYNC@", CLUSTER_SYNC if cluster else ""))
    kernel = cp.RawKernel(source, "probe", options=("--std=c++17", "-arch=sm_90"))
    out = cp.zeros(4 * 128, dtype=cp.float32)
    kernel((4,), (128,), (out, cp.int32(3)))
    cp.cuda.Device().synchronize()
    expect = cp.tile(cp.arange(127, -1, -1, dtype=cp.float32), 4)
    print(variant, "correct" if bool((out == expect).all()) else "WRONG", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
