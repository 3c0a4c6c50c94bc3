"""Emulated contention for GO-kernel tuning (paper 004 §3.3): streams on green contexts that own 1/2 and 1/4 of
the SMs (the CUDA driver's SM partitioning: cuDevSmResourceSplitByCount, cuGreenCtxCreate,
cuGreenCtxStreamCreate, through cuda-bindings).

Why green contexts and not a capped persistent grid: a green context confines every block of a kernel to its
SMs in hardware, whatever the kernel's grid, so each candidate is timed unmodified, as it will run; a capped grid
would need every family's kernels to loop over their work, and an SM-hogging co-runner takes SMs only as the block
scheduler happens to place it. Green contexts partition SMs only: L2 and memory bandwidth stay shared (there is no
public L2 partition), so the RC step constrains SMs, not cache (docs/INTERNALS.md, "Concurrent groups").
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from gemmc.runtime.device import cupy
from gemmc.runtime.streams import external_stream

SM_GRANULE = 8  # sm_90 splits SMs in groups of 8 (at least 8)


@dataclass(frozen=True)
class Partitions:
    streams: dict[int, Any]  # share -> a CuPy stream whose kernels run on that share of the SMs
    sms: dict[int, int]  # share -> SMs it got
    how: str  # the mechanism, or why there is none


def _check(result: Any) -> Any:
    from cuda.bindings import driver

    err, *values = result if isinstance(result, tuple) else (result,)
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"{err}")
    return values[0] if len(values) == 1 else values


_keep: list[Any] = []  # green contexts and streams live as long as the process


@cache
def partitions() -> Partitions:
    """Streams on green contexts of 1/2 and 1/4 of the current device's SMs (rounded down to SM_GRANULE), made
    once per process; empty, with the reason, where the driver or cuda-bindings lacks them."""
    try:
        from cuda.bindings import driver
    except ImportError:
        return Partitions({}, {}, "no green contexts (cuda-bindings is not installed)")
    try:
        cp = cupy()
        _check(driver.cuInit(0))
        dev = _check(driver.cuDeviceGet(cp.cuda.Device().id))
        whole = _check(driver.cuDeviceGetDevResource(dev, driver.CUdevResourceType.CU_DEV_RESOURCE_TYPE_SM))
        total = int(whole.sm.smCount)
        streams, sms = {}, {}
        for share in (2, 4):
            want = max(SM_GRANULE, total // share // SM_GRANULE * SM_GRANULE)
            groups, _, _ = _check(driver.cuDevSmResourceSplitByCount(1, whole, 0, want))
            desc = _check(driver.cuDevResourceGenerateDesc([groups[0]], 1))
            ctx = _check(driver.cuGreenCtxCreate(desc, dev,
                                                 driver.CUgreenCtxCreate_flags.CU_GREEN_CTX_DEFAULT_STREAM))
            raw = _check(driver.cuGreenCtxStreamCreate(ctx, driver.CUstream_flags.CU_STREAM_NON_BLOCKING, 0))
            _keep.extend((ctx, raw))
            streams[share] = external_stream(int(raw))
            sms[share] = int(groups[0].sm.smCount)
        how = "green contexts of " + ", ".join(f"{n} SMs (1/{s})" for s, n in sms.items()) + f" of {total}"
        return Partitions(streams, sms, how)
    except Exception as err:  # noqa: BLE001 - any driver refusal means: no partitions, said in the tuning record
        return Partitions({}, {}, f"no green contexts ({type(err).__name__}: {err})")
