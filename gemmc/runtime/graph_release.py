"""A flag the CUDA driver raises once a CUDA graph is gone: the buffers a captured call left to its graph (the list
form's problem table, tensor maps and tile counters; the grouped forms' tile counters) can then go to another
capture.

The graph being captured holds a CUDA user object (cuUserObjectCreate, cuGraphRetainUserObject) whose destructor the
driver runs when the graph and every copy of it (an executable graph made from it, a clone, a graph that embeds
it as a child node: each takes a reference) are destroyed and their launches have completed.
A destructor may not call CUDA, and one that took Python's lock could wait on a thread that waits for the driver, so
it is no Python function: it is libc's sem_post on a POSIX semaphore of this object (thread-safe, async-signal-safe,
one pointer argument), which Python reads with sem_getvalue."""

from __future__ import annotations

import ctypes
import threading
from functools import cache
from typing import Any

from gemmc.errors import InternalError
from gemmc.runtime.device import driver_call

SEM_BYTES = 64  # sizeof(sem_t): 32 on x86-64 and aarch64 glibc, with room to spare
NO_DESTRUCTOR_SYNC = 1  # CU_USER_OBJECT_NO_DESTRUCTOR_SYNC: the only flag cuUserObjectCreate takes
MOVE = 1  # CU_GRAPH_USER_OBJECT_MOVE: the graph takes over the reference the object was made with


@cache
def _libc() -> Any:
    libc = ctypes.CDLL(None, use_errno=True)
    for name in ("sem_init", "sem_getvalue", "sem_trywait"):
        getattr(libc, name).restype = ctypes.c_int
    libc.calloc.restype = ctypes.c_void_p
    libc.calloc.argtypes = [ctypes.c_size_t, ctypes.c_size_t]
    return libc


def _semaphore_memory() -> ctypes.c_void_p:
    """SEM_BYTES from libc's calloc, never freed: a graph's destructor may post the semaphore after every Python
    object that knew it is gone (a graph destroyed after its kernel, or at interpreter exit, after the modules'
    objects are freed), and a post into freed memory would corrupt the heap. calloc aligns to 16 bytes, sem_t's
    alignment or more."""
    address = _libc().calloc(1, SEM_BYTES)
    if not address:
        raise MemoryError("calloc of a semaphore")
    return ctypes.c_void_p(address)


@cache
def _driver() -> Any:
    """The driver's user-object calls, or None where the driver has none (CUDA before 11.3, or no driver)."""
    try:
        create, retain = driver_call("cuUserObjectCreate"), driver_call("cuGraphRetainUserObject")
    except OSError:
        return None
    create.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint,
                       ctypes.c_uint]
    retain.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint]
    create.restype = retain.restype = ctypes.c_int
    return create, retain, ctypes.cast(_libc().sem_post, ctypes.c_void_p).value


class GraphRelease:
    """One semaphore, posted by the driver when the graph it is attached to is gone. Attached to one graph at a time:
    `reset` once it is posted (that graph's destructor has run and runs no more) before attaching it to another."""

    def __init__(self) -> None:
        self.sem = _semaphore_memory()  # the address the destructor posts; never freed
        if _libc().sem_init(self.sem, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "sem_init")
        self.attached = False

    def attach(self, graph: int) -> bool:
        """Have the graph (a CUgraph handle, the one being captured) post this semaphore when it is gone. False where
        the driver cannot: then nothing posts it."""
        calls = _driver()
        if calls is None:
            return False
        create, retain, sem_post = calls
        handle = ctypes.c_void_p()
        if create(ctypes.byref(handle), self.sem, sem_post, 1, NO_DESTRUCTOR_SYNC) != 0:
            return False
        # Where the graph refuses the reference the object is left unreleased (its release would post this
        # semaphore for no graph): a few bytes of the driver's, once.
        self.attached = retain(ctypes.c_void_p(graph), handle, 1, MOVE) == 0
        return self.attached

    def posted(self) -> bool:
        """Whether the graph it was attached to is gone."""
        value = ctypes.c_int(0)
        _libc().sem_getvalue(self.sem, ctypes.byref(value))
        return value.value > 0

    def reset(self) -> None:
        """Back to unposted and unattached, for the next graph (after `posted`)."""
        while _libc().sem_trywait(self.sem) == 0:
            pass
        self.attached = False


class GraphHeld:
    """Entries (a slot of tile counters, a set of a captured call's buffers), each held by one CUDA graph while that
    graph exists: `reserve` takes an entry for a call being captured, `attach` leaves it to the graph being captured
    (the graph posts the entry's GraphRelease once it and every copy of it are gone), `give_back` returns a reservation
    whose call put nothing in a graph. An entry is free when never reserved, given back, or left to a graph that is
    gone; one whose graph the driver could not give a release stays held for the process's lifetime. Entries are
    numbered from 0, at most `limit`; what an entry holds is its owner's (a list indexed alike). `reserve`, `attach`
    and `give_back` run under `lock`, which their owner takes around its own bookkeeping too; `held` takes it
    itself."""

    def __init__(self, limit: int):
        self.limit = limit
        self.reserved: list[bool] = []
        self.releases: list[GraphRelease | None] = []
        self.lock = threading.Lock()

    def __len__(self) -> int:
        """The entries reserved so far, held or free."""
        return len(self.reserved)

    def free(self, index: int) -> bool:
        """Whether `reserve` may take entry `index`: never reserved, given back, or left to a graph that is gone."""
        release = self.releases[index]
        return not self.reserved[index] or (release is not None and release.attached and release.posted())

    @property
    def held(self) -> int:
        """The entries a reservation cannot take now (under the lock: `reserve` grows two lists)."""
        with self.lock:
            return sum(not self.free(i) for i in range(len(self.reserved)))

    def reserve(self) -> int | None:
        """The index of a free entry, now reserved, the lowest first; `len(self)` before the call where none is free
        and fewer than `limit` exist (the owner makes that entry); None where `limit` entries are held."""
        index = next((i for i in range(len(self.reserved)) if self.free(i)), None)
        if index is None:
            if len(self.reserved) >= self.limit:
                return None
            index = len(self.reserved)
            self.reserved.append(False)
            self.releases.append(None)
        release = self.releases[index]
        if release is not None and release.attached:  # posted: its graph and its destructor are done
            release.reset()
        self.reserved[index] = True
        return index

    def attach(self, index: int, graph: int | None) -> None:
        """Leave reserved entry `index` to `graph` (a CUgraph handle, the one being captured; None or 0: none known,
        and the entry stays held). Once per reservation: a release attached to two graphs would be posted when the
        first is gone, and the entry taken while the second still replays it."""
        release = self.releases[index]
        if not self.reserved[index] or (release is not None and release.attached):
            raise InternalError("runtime.graph_release", f"entry {index} left to a graph without a reservation of "
                                                         "its own (not reserved, or already attached)")
        if graph:
            if release is None:
                release = self.releases[index] = GraphRelease()
            release.attach(graph)

    def give_back(self, index: int) -> None:
        """Free reserved entry `index`, whose call put nothing in its graph (never one left to a graph: that graph
        may still replay it)."""
        release = self.releases[index]
        if release is not None and release.attached:
            raise InternalError("runtime.graph_release", f"entry {index} given back while a graph holds it")
        self.reserved[index] = False
