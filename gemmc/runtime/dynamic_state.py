"""What the runtime keeps of a kernel of a batch sized at run time (`Executable.dynamic`): its loaded functions and
launch constants, and the launcher that calls it without CuPy's per-call argument conversion. Apart from
runtime/dynamic.py so that the list form's module (dynamic_list.py) can name the state without importing it back."""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass
from typing import Any


class Launcher:
    """cuLaunchKernel on an argument block built once: a call stores the values that change into it (a few ctypes
    stores) rather than converting every argument through CuPy's kernel call, which cost 40-70 us of host time per
    call with this kernel's thirteen arguments (bench/results/2026-11-26_h100_dynamic_call2-partial.json,
    gemmc_issue_us). A lock keeps two threads from interleaving their stores."""

    def __init__(self, fn: Any, types: tuple[Any, ...]):
        from cupy.cuda import driver  # type: ignore[import-not-found]

        self.launch_kernel = driver.launchKernel
        self.func = int(fn.kernel.ptr)
        self.values = [t() for t in types]
        self.params = (ctypes.c_void_p * len(types))(*(ctypes.addressof(v) for v in self.values))
        self.address = ctypes.addressof(self.params)
        self.lock = threading.Lock()

    def set(self, index: int, value: Any) -> None:
        self.values[index].value = value

    def __call__(self, grid: int, block: int, smem: int, stream: Any, values: tuple[Any, ...],
                 scalars: tuple[float, float]) -> None:
        """Launch with `values` as the leading arguments and `scalars` as the last two (alpha, beta); the arguments
        between keep what `set` stored."""
        with self.lock:
            for slot, value in zip(self.values, values, strict=False):
                slot.value = value
            self.values[-2].value, self.values[-1].value = scalars
            self.launch_kernel(self.func, grid, 1, 1, block, 1, 1, smem, stream.ptr, self.address, 0)


@dataclass
class DynamicState:
    """A dynamic kernel's loaded functions and launch constants, made on its first call (the only compile)."""

    fn: Any
    validate: Any
    grid: int
    threshold: int
    smem: int
    block: int
    sizes: tuple[Any, ...] = ()  # the fixed m, n, k and the TLP threshold as the kernel's int64 arguments
    fast: Launcher | None = None  # None: CuPy's kernel call (a CuPy without the driver binding)
    workspace: Any = None  # int32[4]: the validation result
    ring: Any = None  # the list form's staging buffers (runtime/dynamic_list.py)
