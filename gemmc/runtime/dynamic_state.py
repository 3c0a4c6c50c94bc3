"""What the runtime keeps of a kernel of a batch sized at run time (`Executable.dynamic`): its loaded functions and
launch constants, and the launcher that calls it without CuPy's per-call argument conversion. Apart from
runtime/dynamic.py so that the list form's module (dynamic_list.py) can name the state without importing it back."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from gemmc.errors import caller_level
from gemmc.runtime.graph_release import GraphHeld
from gemmc.runtime.launcher import Launcher
from gemmc.runtime.streams import capture_graph, capture_of


class StreamSlots(dict[int, int]):
    """Launch stream (a raw handle) -> the device address of its slot, one of `limit` slots of `size` bytes of one
    allocation, taken on the stream's first launch and kept (the stream may launch at any time). Launches in stream
    order share a slot (a kernel leaves its tile counters zeroed); launches on two streams at once must not. A lookup
    of a stream seen before is the dictionary's own (`slot`); `take` adds one under a lock; a stream past `limit` is
    refused (E900), naming the kernel and what the slots hold."""

    def __init__(self, limit: int, size: int, kernel: str, what: str):
        super().__init__()
        self.limit = limit
        self.size = size
        self.kernel = kernel
        self.what = what
        self.lock = threading.Lock()

    def slot(self, stream: int, memory: Any) -> int:
        """The slot of `stream` in `memory` (a device array): a dictionary lookup, else `take`."""
        found = self.get(stream)
        return found if found is not None else self.take(stream, memory)

    def take(self, stream: int, memory: Any) -> int:
        """The slot of `stream` in `memory` (a device array), taken where the stream has none yet."""
        with self.lock:
            found = self.get(stream)
            if found is None:
                if len(self) >= self.limit:
                    from gemmc.errors import GemmcError

                    raise GemmcError(f"stream: kernel '{self.kernel}' has run on {self.limit} streams, the most it "
                                     f"keeps {self.what} for; launch it on fewer streams", code="E900")
                found = self[stream] = int(memory.data.ptr) + self.size * len(self)
            return found


class GraphSlots:
    """(capture id, stream) -> the device address of its slot among `limit` slots of `size` bytes from byte `start` of
    one allocation: taken on the key's first launch and held by the graph being captured while it exists (a graph may
    replay at any time; `GraphHeld`), then taken by a later capture (the launches left its counters zeroed). Copies of
    a graph share its slot, so they replay one after another. Where every slot is held, `full(key)`: a slot another
    key holds. A lookup of a key seen before is a dictionary's (`slot`); `take` finds a slot under the pool's lock;
    `found` holds at most `limit` keys (a slot taken again drops its last key's)."""

    def __init__(self, limit: int, size: int, full: Callable[[Any], int], start: int = 0):
        self.size = size
        self.full = full
        self.start = start
        self.pool = GraphHeld(limit)
        self.found: dict[Hashable, int] = {}  # key -> its slot's address
        self.keys: list[Hashable] = []  # slot -> the key that took it last

    def __len__(self) -> int:
        """The slots taken so far, held or given back."""
        return len(self.pool)

    @property
    def held(self) -> int:
        """The slots whose graphs still exist (or could not be given a release)."""
        return self.pool.held

    def slot(self, key: Hashable, graph: int, memory: Any) -> int:
        """The slot of `key`, a launch being captured into `graph` (a CUgraph handle), in `memory` (a device array)."""
        found = self.found.get(key)
        return found if found is not None else self.take(key, graph, memory)

    def take(self, key: Hashable, graph: int, memory: Any) -> int:
        """`slot` under the lock: a slot never taken, or one whose graph is gone."""
        with self.pool.lock:
            found = self.found.get(key)
            if found is not None:
                return found
            index = self.pool.reserve()
            if index is None:
                return self.full(key)
            if index < len(self.keys):
                del self.found[self.keys[index]]  # its capture has ended: no launch asks for it again
                self.keys[index] = key
            else:
                self.keys.append(key)
            self.pool.attach(index, graph)
            found = self.found[key] = int(memory.data.ptr) + self.start + self.size * index
            return found


COUNTER_SLOTS = 64  # streams a kernel keeps tile counters for (each launch's stream takes its own pair)
CAPTURES = 8  # captured list calls whose buffers a list-form kernel makes when it is loaded (later ones make theirs)
MAX_CAPTURES = 256  # calls captured in CUDA graphs a list-form kernel keeps buffers for (each graph reads its own)
CAPTURED_COUNTERS = 256  # (graph, stream) pairs a grouped-form kernel keeps tile counters of their own for at once
COUNTER_INTS = 8  # int32 per slot: the kernel's two counters, padded to 32 bytes
COUNTER_BYTES = 4 * COUNTER_INTS


def zeroed_counters() -> Any:
    """The tile counters of a persistent kernel ((COUNTER_SLOTS + CAPTURED_COUNTERS) x COUNTER_INTS int32: a slot per
    stream, then one per capture and stream of the grouped forms), zero before any stream's first launch reads them:
    the memset runs on CuPy's current stream, and a first launch on another stream (a torch side stream,
    non-blocking) would not wait for it."""
    from gemmc.runtime.device import cupy

    cp = cupy()
    counters = cp.zeros((COUNTER_SLOTS + CAPTURED_COUNTERS) * COUNTER_INTS, dtype=cp.int32)
    cp.cuda.get_current_stream().synchronize()
    return counters


@dataclass
class Captured:
    """The buffers of one list call captured in a CUDA graph, which its graph reads at every replay and no other
    call shares while that graph exists (DynamicState.capture): its problem table and, on the tensor cores, its tensor
    maps (`ring`, a one-slot dynamic_list.Ring) and its tile counters (COUNTER_INTS int32, zeroed; every launch leaves
    them zeroed). Made by dynamic_list.captured."""

    ring: Any
    counters: Any

    @property
    def counter(self) -> int:
        """The device address of the tile counters."""
        return int(self.counters.data.ptr)


@dataclass
class DynamicState:
    """A dynamic kernel's loaded functions and launch constants, made on its first call (the only compile).

    Its tile counters are taken three ways: per launch stream (`stream_counters`) and per capture and stream of the
    grouped forms (`graph_counters`, `launch_counter`), each in a region of its own of one allocation (`counters`),
    and per captured call of the list form, with its problem table (`capture`, `capture_counter`: `Captured`)."""

    name: str  # the kernel's (its schedule's name), for the errors
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
    captures: list[Captured] = field(default_factory=list)  # the list form's buffers, one set per captured call
    new_capture: Callable[[], Captured] | None = None  # makes the next set (dynamic_list.make_tables)
    side: Any = None  # a stream outside every graph: captured list calls' buffers are zeroed on it, the tensor-core
    #                   list's also filled
    capture_graphs: GraphHeld = field(default_factory=lambda: GraphHeld(MAX_CAPTURES))  # `captures` graphs hold
    counters: Any = None  # int32, zeroed once (`zeroed_counters`): the tile counters
    stream_counters: StreamSlots = field(init=False)  # raw stream handle -> its counters
    graph_counters: GraphSlots = field(init=False)  # (capture id, stream) -> the counters of its calls
    warned: bool = False  # that a capture shared its stream's counters (graph_counters' lock)
    seen: dict[tuple, tuple] = field(default_factory=dict)  # checked grouped calls' metadata -> their launch values
    baked: bool = True  # alpha and beta are the schedule's constants

    def __post_init__(self) -> None:
        self.stream_counters = StreamSlots(COUNTER_SLOTS, COUNTER_BYTES, self.name, "tile counters")
        self.graph_counters = GraphSlots(CAPTURED_COUNTERS, COUNTER_BYTES, self._share_stream_counters,
                                         start=COUNTER_BYTES * COUNTER_SLOTS)

    def capture(self) -> int:
        """Reserve a set of the list form's buffers (`Captured`) for a call being captured in a CUDA graph, which its
        graph reads at every replay and no other call takes while that graph exists (`keep`, `capture_graphs`): one
        never taken, given back, or left to a graph that is gone. The kernel makes CAPTURES sets when it is loaded, and
        a capture that finds none free makes one (`new_capture`, allocated while the stream captures), up to
        MAX_CAPTURES. Returns the set's index in `captures`."""
        with self.capture_graphs.lock:
            index = self.capture_graphs.reserve()
            if index is None:
                from gemmc.errors import GemmcError

                raise GemmcError(f"kernel '{self.name}' is captured in {MAX_CAPTURES} CUDA graphs that still exist, "
                                 "the most it keeps problem tables for (a graph that is destroyed gives its tables "
                                 "back)", code="E900")
            if index == len(self.captures):
                try:
                    if self.new_capture is None:
                        from gemmc.errors import InternalError

                        raise InternalError("runtime.dynamic_state", f"kernel '{self.name}': a list-form state "
                                                                     "without its capture buffers (make_tables)")
                    self.captures.append(self.new_capture())
                except BaseException:
                    self.capture_graphs.give_back(index)  # the next capture makes this set again
                    raise
            return index

    @property
    def captures_held(self) -> int:
        """The sets of buffers a capture cannot take now."""
        return self.capture_graphs.held

    def keep(self, index: int, stream: int) -> None:
        """Captured call `index` is in the graph `stream` is being captured into: the graph posts the set's release
        once it is destroyed, and a later capture then takes the set. Where the driver cannot attach the release,
        the set stays reserved for the process's lifetime."""
        with self.capture_graphs.lock:
            self.capture_graphs.attach(index, capture_graph(stream))

    def uncapture(self, index: int) -> None:
        """Give back a reservation whose call put nothing in its graph (it raised before sending its table, or had no
        work)."""
        with self.capture_graphs.lock:
            self.capture_graphs.give_back(index)

    def capture_counter(self, index: int) -> int:
        """The device address of captured list call `index`'s own tile counters: a graph never shares its counters
        with another graph or with plain calls, so any of them may run at once."""
        return self.captures[index].counter

    def launch_counter(self, stream: int) -> int:
        """The tile counters of a launch on `stream` (a raw handle) of a grouped form. Launches of one capture on one
        stream (calls in order in one graph) share counters of their own while that graph exists (`graph_counters`,
        CAPTURED_COUNTERS such pairs at once), so graphs captured on one stream (torch.cuda.graph's one capture
        stream) may replay at once, beside each other and beside plain calls. A capture while CAPTURED_COUNTERS
        pairs' graphs exist shares its stream's counters, with a warning (its graph must replay in turn with that
        stream's calls). Other calls share their stream's (`counter`)."""
        capture = capture_of(stream)
        if capture is None:
            return self.stream_counters.slot(stream, self.counters)
        return self.graph_counters.slot((capture[0], stream), capture[1], self.counters)

    def _share_stream_counters(self, key: tuple[int, int]) -> int:
        """`graph_counters`' `full`: a capture while every slot's graph exists launches with its stream's counters.
        Called under `graph_counters`' lock (GraphSlots.take), which keeps `warned` to one warning."""
        if not self.warned:
            self.warned = True
            warnings.warn(f"gemmc: kernel '{self.name}' keeps tile counters of their own for {CAPTURED_COUNTERS} "
                          "(graph, capture stream) pairs whose CUDA graphs still exist, the most it keeps; until one "
                          "of those graphs is destroyed, a capture shares its stream's counters, so its graph must "
                          "not replay at the same time as that stream's plain calls or other graphs captured "
                          "meanwhile", stacklevel=caller_level())
        return self.counter(key[1])  # (`stream_counters` takes its own lock)

    def counter(self, stream: int) -> int:
        """The device address of the tile counters for launches on `stream` (a raw handle): the kernel leaves them
        zeroed, so launches in stream order share them; launches on two streams at once must not
        (`stream_counters`)."""
        return self.stream_counters.slot(stream, self.counters)
