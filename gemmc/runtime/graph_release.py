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
from functools import cache
from typing import Any

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
