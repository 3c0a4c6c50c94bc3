"""cuLaunchKernel / cuLaunchKernelEx on an argument block built once per kernel (or per checked set of arguments),
for the launches whose host time counts: the kernels of batches sized at run time and the single GEMM through TMA."""

from __future__ import annotations

import ctypes
import threading
from typing import Any

from gemmc.runtime import pdl


class Launcher:
    """cuLaunchKernel on an argument block built once: a call stores the values that change into it (a few ctypes
    stores) rather than converting every argument through CuPy's kernel call, which cost 40-70 us of host time per
    call with the dynamic kernel's arguments (bench/results/dynamic/2026-11-26_h100_dynamic_call2-partial.json,
    gemmc_issue_us). A lock keeps two threads from interleaving their stores.

    `values`: the block's arguments, ctypes objects (their values those of every launch until `set` or a call
    stores others); a call stores its values from argument `first` on, and the tile counters' address at argument
    `counter` (None: the kernel takes none). A block whose `first` is past its last argument takes no values from a
    call: the grouped TMA forms build one per checked set of arguments (runtime/grouped_tma.py), its tensor maps
    stored once. A call may instead pass its first arguments by value from memory it keeps (`structs`: the addresses
    of the single GEMM's tensor maps, runtime/tma.py). `dependent`: the kernel waits for the one before it on the
    stream (`gemmc_grid_wait`), so it is launched with programmatic stream serialization (runtime/pdl.py)."""

    def __init__(self, fn: Any, values: list[Any], counter: int | None, first: int = 0, dependent: bool = False):
        from cupy.cuda import driver  # type: ignore[import-not-found]

        self.launch_kernel = driver.launchKernel
        self.config = pdl.new_config() if dependent else None  # used under the lock
        self.func = int(fn.kernel.ptr)
        self.values = values
        self.per_call = values[first:]  # the slots a call's `values` go to, in turn
        self.counter = values[counter] if counter is not None else None  # the slot of the tile counters' address
        self.params = (ctypes.c_void_p * len(values))(*(ctypes.addressof(v) for v in values))
        self.address = ctypes.addressof(self.params)
        self.lock = threading.Lock()

    def set(self, index: int, value: Any) -> None:
        self.values[index].value = value

    def __call__(self, grid: int, block: int, smem: int, stream: int, values: tuple[Any, ...], counter: int = 0,
                 scalars: tuple[float, float] | None = None, structs: tuple[int, ...] = ()) -> None:
        """Launch on the raw stream handle `stream` with `values` as the arguments from `first` on, the tile counters
        at `counter`, `scalars` as the last two (alpha, beta; None: those stored before) and the first arguments
        read from the host addresses `structs`; the other arguments keep what was stored."""
        with self.lock:
            for index, address in enumerate(structs):
                self.params[index] = address
            for slot, value in zip(self.per_call, values, strict=False):
                slot.value = value
            if self.counter is not None:
                self.counter.value = counter
            if scalars is not None:
                self.values[-2].value, self.values[-1].value = scalars
            if self.config is not None and pdl.ENABLED:
                pdl.launch_params(self.func, grid, block, smem, stream, self.address, self.config)
            else:
                self.launch_kernel(self.func, grid, 1, 1, block, 1, 1, smem, stream, self.address, 0)
