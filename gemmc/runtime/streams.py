"""The stream a call launches on, the same way for every kind of kernel: the caller's (a CuPy stream, a torch
stream or a raw cudaStream_t handle), else torch's current stream when the operands are torch tensors (inside
`torch.cuda.graph` that is the capturing stream, so a captured call lands in the graph), else CuPy's current
stream."""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any, TypeVar

from gemmc.runtime.device import cupy, driver_call, driver_error

T = TypeVar("T")

_STREAMS: dict[int, Any] = {}  # raw handle -> the CuPy stream object wrapping it, made once


def is_torch(operands: Any) -> bool:
    """Whether a call's operands (one array, a list of them, or a group's list of those) are torch tensors."""
    first = operands
    while isinstance(first, (list, tuple)) and len(first) > 0:
        first = first[0]
    return type(first).__module__.split(".")[0] == "torch"


def launch_stream(stream: Any, torch_args: bool) -> Any:
    """The CuPy stream object to launch on (see the module's docstring)."""
    cp = cupy()
    if stream is None:
        if not torch_args:
            return cp.cuda.get_current_stream()
        handle = torch_stream()
    elif isinstance(stream, int):
        handle = stream
    elif hasattr(stream, "cuda_stream"):  # torch.cuda.Stream
        handle = int(stream.cuda_stream)
    else:
        return stream
    found = _STREAMS.get(handle)
    if found is None:
        found = _STREAMS[handle] = external_stream(handle)
    return found


class _Handle:
    """A raw stream handle in the CUDA stream protocol (what CuPy's Stream.from_external takes)."""

    def __init__(self, handle: int):
        self.handle = handle

    def __cuda_stream__(self) -> tuple[int, int]:
        return 0, self.handle


def external_stream(handle: int) -> Any:
    """A CuPy stream object for a stream another library made (torch's)."""
    cp = cupy()
    try:
        return cp.cuda.Stream.from_external(_Handle(handle))
    except (AttributeError, TypeError):  # a CuPy before the stream protocol
        return cp.cuda.ExternalStream(handle)


def torch_stream() -> int:
    """The raw handle of torch's current stream on the current device."""
    import torch

    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    return int(raw(torch.cuda.current_device())) if raw is not None else int(torch.cuda.current_stream().cuda_stream)


RELAXED = 2  # CU_STREAM_CAPTURE_MODE_RELAXED
ACTIVE = 1  # CU_STREAM_CAPTURE_STATUS_ACTIVE


def capture_of(stream: int) -> tuple[int, int] | None:
    """(capture id, CUgraph handle) of the CUDA-graph capture the stream (a raw handle) is taking part in, or None where
    it is not being captured. Capture ids are unique over the process's lifetime. Without a CUDA driver (HIP) a
    stream being captured is refused: nothing names its capture, so its launches could not keep counters of their
    own."""
    if _capture_info() is None:
        if cupy().cuda.runtime.streamIsCapturing(stream) == 0:
            return None
        from gemmc.errors import GemmcError

        raise GemmcError("not supported yet: a grouped call captured in a graph without the CUDA driver (HIP); "
                         "call it outside the capture", code="E900")
    result, found = _query(stream)
    if result != 0:
        from gemmc.errors import GemmcError

        raise GemmcError(f"the CUDA driver could not say whether stream {stream:#x} is being captured: "
                         f"{driver_error(result)}")
    return found


def capture_graph(stream: int) -> int | None:
    """The CUgraph handle the stream (a raw handle) is being captured into, or None where it is not being captured or
    there is no CUDA driver to ask (HIP: a captured list call's buffers then stay its graph's for good)."""
    if _capture_info() is None:
        return None
    result, found = _query(stream)
    return found[1] if result == 0 and found is not None and found[1] else None


def _query(stream: int) -> tuple[int, tuple[int, int] | None]:
    """cuStreamGetCaptureInfo_v2 of the stream (a driver that has it: `_capture_info`): its result, and (capture id,
    graph) where the stream is capturing."""
    status, found, graph = ctypes.c_int(0), ctypes.c_uint64(0), ctypes.c_void_p()
    result = _capture_info()(ctypes.c_void_p(stream), ctypes.byref(status), ctypes.byref(found), ctypes.byref(graph),
                             None, None)
    return result, (int(found.value), int(graph.value or 0)) if status.value == ACTIVE else None


@cache
def _capture_info() -> Any:
    """The driver's cuStreamGetCaptureInfo_v2 (its six-parameter form, kept in CUDA 13's ABI), or None where there is
    no CUDA driver (HIP) or it lacks the call (a driver before CUDA 11.3); looked up once either way (every grouped
    launch asks)."""
    try:
        return driver_call("cuStreamGetCaptureInfo_v2")
    except OSError:
        return None


@cache
def _exchange_mode() -> Any:
    """The driver's cuThreadExchangeStreamCaptureMode, looked up once; None without a driver."""
    try:
        return driver_call("cuThreadExchangeStreamCaptureMode")
    except OSError:
        return None


@contextmanager
def relaxed_capture() -> Iterator[None]:
    """Work inside this block may run while a stream is being captured into a CUDA graph without becoming part of
    the graph: memory allocated (it outlives the graph), or copies and kernels on a stream of its own, waited for.
    This thread's capture mode is relaxed for the block (cuThreadExchangeStreamCaptureMode of the driver), as torch's
    caching allocator does for cudaMalloc. Without a driver (no GPU) there is no capture to relax."""
    exchange = _exchange_mode()
    if exchange is None:
        yield
        return
    mode = ctypes.c_int(RELAXED)
    status = exchange(ctypes.byref(mode))
    if status != 0:
        from gemmc.errors import GemmcError

        raise GemmcError(f"the CUDA driver refused to relax this thread's graph-capture mode: {driver_error(status)}")
    try:
        yield
    finally:
        exchange(ctypes.byref(mode))  # mode holds the thread's previous mode: put it back


FIRST_CALL = "the first call (it loads the kernel)"


# First calls load one at a time: two threads' first calls of one kernel find the first one's state (each `load`
# returns what the kernel keeps, once it is kept) instead of each building one, whose buffers the loser would free
# while its copies or kernels still run. Reentrant: a load may load another kernel.
FIRST_LOADS = threading.RLock()


def load_outside_capture(kernel: Any, load: Callable[[Any], T], stream: Any, torch_args: bool,
                         what: str = FIRST_CALL) -> T:
    """`load(kernel)`: what the first call of a kernel (an Executable, which imports this module) or of a kind of
    call loads, allocates and keeps, which cannot be part of a CUDA graph; a GemmcError instead, naming the kernel
    and `what`, where the stream the call launches on (`launch_stream`'s) is being captured. A caller asks only
    where nothing is loaded yet: later calls pay nothing. One load at a time (FIRST_LOADS)."""
    on = launch_stream(stream, torch_args)
    if cupy().cuda.runtime.streamIsCapturing(on.ptr):
        from gemmc.errors import GemmcError

        raise GemmcError(f"kernel '{kernel.ir.name}': {what} cannot run inside a CUDA-graph capture; make one such "
                         "call before capturing")
    with FIRST_LOADS:
        return load(kernel)
