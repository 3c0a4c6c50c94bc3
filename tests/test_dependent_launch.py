"""Programmatic dependent launch without a GPU: every hopper and hopper_grouped kernel waits for the kernel before it
(`gemmc_grid_wait`) before its first read or write of global memory, at the top level of its body where every
thread reaches it; the C++ launchers launch those kernels with the attribute; runtime/pdl.py's ctypes structures
match cuda.h's and its arguments keep the width the kernel reads."""

from __future__ import annotations

import ctypes
import dataclasses
import re
from typing import Any

import numpy as np
import pytest

import gemmc
from gemmc.runtime import pdl
from tests.test_hopper import VARIANTS as HOPPER
from tests.test_hopper_grouped import VARIANTS as GROUPED_M
from tests.test_hopper_grouped import VARIANTS_K as GROUPED_K

GROUPED_LIST = [
    "dtype bf16 layout B col grouped list problems 512",
    "dtype A f16, B f16, C f32 alpha runtime beta runtime grouped list problems 64",
    "dtype bf16 layout B col tile 128x256x64 grouped list problems 8",
]
WAIT = "gemmc_grid_wait();"
# What reaches global memory other than through a pointer parameter's name.
GLOBAL_ACCESS = ("gemmc_tma_load", "gemmc_tma_multicast", "gemmc_tma_store", "gemmc_tmap_acquire", "atomic",
                 "ld.global", "st.global", "red.global", "cp.async", "__ldg")


def hopper(text: str) -> gemmc.CompiledKernel:
    return gemmc.compile_string(f"kernel k {{ {text} }}")["k"]


def grouped(text: str, cluster: int | None = None) -> gemmc.CompiledKernel:
    k = gemmc.compile_string(f"target cuda sm_90\nkernel k {{ {text} }}")["k"]
    if cluster is not None and cluster != k.ir.plan.cluster:
        k = k.with_plan(dataclasses.replace(k.ir.plan, cluster=cluster, tail_split=False))
    return k


def kernels() -> list[tuple[str, gemmc.CompiledKernel]]:
    found = [(f"hopper: {t}", hopper(t)) for t in HOPPER]
    found += [(f"grouped M, cluster {c}: {t}", grouped(t, c)) for t in GROUPED_M for c in (1, 2)]
    found += [(f"grouped K: {t}", grouped(t)) for t in GROUPED_K]
    found += [(f"grouped list: {t}", grouped(t)) for t in GROUPED_LIST]
    return found


KERNELS = kernels()


def code_only(text: str) -> str:
    """C++ without its comments and string literals (a static_assert's message names C, A and B)."""
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    return re.sub(r"//[^\n]*", "", text)


def body_before_wait(source: str, entry: str) -> tuple[list[str], str]:
    """The kernel `entry`'s pointer parameters and its body's code up to its one gemmc_grid_wait (AssertionError:
    no wait, a second one, or one inside a block that not every thread enters)."""
    source = code_only(source)
    start = source.index(f" {entry}(")
    open_paren = start + len(entry) + 1
    depth, i = 0, open_paren
    while True:
        depth += {"(": 1, ")": -1}.get(source[i], 0)
        if depth == 0:
            break
        i += 1
    params = source[open_paren + 1:i]
    pointers = [re.findall(r"\w+", p)[-1] for p in params.split(",") if "*" in p]
    body_start = source.index("{", i) + 1
    depth, j = 1, body_start
    while depth:
        depth += {"{": 1, "}": -1}.get(source[j], 0)
        j += 1
    body = source[body_start:j - 1]
    assert body.count(WAIT) == 1, f"{entry}: {body.count(WAIT)} waits"
    before = body[:body.index(WAIT)]
    assert before.count("{") == before.count("}"), f"{entry}: the wait is inside a block not every thread enters"
    assert not re.search(r"\breturn\b", before), f"{entry}: a thread may return before the wait"
    return pointers, before


def accesses_before_wait(source: str, entry: str) -> list[str]:
    pointers, before = body_before_wait(source, entry)
    named = [p for p in pointers if re.search(rf"\b{p}\b", before)]
    return named + [g for g in GLOBAL_ACCESS if g in before]


@pytest.mark.parametrize(("name", "k"), KERNELS, ids=[name for name, _ in KERNELS])
def test_the_kernel_waits_before_its_first_global_access(name, k):
    entry = k.rendered.entry
    assert accesses_before_wait(k.source, entry) == [], name
    pointers, _ = body_before_wait(k.source, entry)
    assert "C" in pointers or "problems" in pointers  # the parameters were read


@pytest.mark.parametrize(("name", "k"), KERNELS, ids=[name for name, _ in KERNELS])
def test_the_cpp_launcher_launches_it_with_programmatic_stream_serialization(name, k):
    entry = k.rendered.entry
    launcher = k.standalone
    assert f"{entry}<<<" not in launcher, name
    assert launcher.count(f"LaunchKernelEx(&config, {entry},") == 1, name
    assert "attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;" in launcher
    assert "attr[0].val.programmaticStreamSerializationAllowed = 1;" in launcher
    # the kernels launched before it on the stream in the same call keep the plain launch: they do not wait
    for helper in ("_maps", "_prep", "_validate"):
        assert f"{entry}{helper}<<<" in launcher or f"{entry}{helper}(" not in launcher


def test_the_check_sees_a_read_moved_above_the_wait():
    """The checks above fail where a kernel reads global memory before it waits."""
    k = grouped(GROUPED_M[0])
    early = k.source.replace(f"  {WAIT}", "", 1).replace("  __syncwarp();\n  __syncthreads();",
                                                         f"  __syncwarp();\n  __syncthreads();\n  {WAIT}", 1)
    assert early != k.source and accesses_before_wait(early, k.rendered.entry) == ["group_end"]
    k = grouped(GROUPED_LIST[0])
    early = k.source.replace(f"  {WAIT}", "", 1).replace("  const int units = s_tiles[G];",
                                                         f"  {WAIT}\n  const int units = s_tiles[G];", 1)
    assert early != k.source and accesses_before_wait(early, k.rendered.entry) == ["problems"]
    inside = k.source.replace(f"  {WAIT}", f"  if (G > 0) {{ {WAIT} }}", 1)
    with pytest.raises(AssertionError, match="inside a block"):
        body_before_wait(inside, k.rendered.entry)
    k = hopper(HOPPER[0])
    with pytest.raises(AssertionError, match="0 waits"):
        body_before_wait(k.source.replace(WAIT, ""), k.rendered.entry)


def test_ctypes_structures_match_cuda_h():
    """CUlaunchAttribute: the id, 4 bytes of padding, a 64-byte value union (8-byte aligned: 72 bytes, the value at
    8); CUlaunchConfig: 7 unsigned ints, the stream at 32, the attributes at 40, their count at 48 (56 bytes); the
    attribute id CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6 (cuda.h of CUDA 12 and 13)."""
    attr, config = pdl._Attribute, pdl._Config
    assert ctypes.sizeof(attr) == 72 and attr.value.offset == 8 and attr.id.offset == 0
    assert ctypes.sizeof(config) == 56
    assert (config.grid.offset, config.block.offset, config.smem.offset) == (0, 12, 24)
    assert (config.stream.offset, config.attrs.offset, config.count.offset) == (32, 40, 48)
    assert pdl.PROGRAMMATIC_STREAM_SERIALIZATION == 6
    assert (pdl._ATTRIBUTE.contents.id, pdl._ATTRIBUTE.contents.value) == (6, 1)


WIDTHS = {"gemmc_tmap": 128, "int": 4, "long long": 8, "float": 4}  # the kernels' parameter types but pointers


def _width(kind: str) -> int:
    """The bytes the driver copies for a kernel parameter of C type `kind`: 8 for a pointer, else WIDTHS' (a type
    missing there fails the test rather than being read at a guessed width)."""
    return 8 if kind.endswith("*") else WIDTHS[kind]


def _parameters(source: str, entry: str) -> list[tuple[str, str]]:
    """(type, name) of each parameter of the kernel `entry`, from its source."""
    head = source[source.index(f" {entry}(") + len(entry) + 2:]
    params = head[:head.index(") {")].replace("\n", " ")
    found = []
    for param in params.split(","):
        words = param.replace("__restrict__", "").replace("__grid_constant__", "").replace("const ", "").split()
        found.append((" ".join(words[:-1]), words[-1]))
    return found


@pytest.mark.parametrize("dependent", [True, False], ids=["dependent", "plain"])
@pytest.mark.parametrize("schedule", ["kernel g { dtype bf16 gemm 300 x 200 x 104 }",
                                      "kernel s { precision split f16 x3 gemm 256 x 256 x 256 }"],
                         ids=["bf16", "split-prologue"])
def test_the_single_gemms_argument_block_has_the_kernels_parameters(monkeypatch, schedule, dependent):
    """The hopper GEMM's launch (runtime/tma.py) through its argument block, built once, dependent or plain
    (`pdl.ENABLED` off: cuLaunchKernel from the same block): every slot of the block is as wide as the kernel's
    parameter in the source (a narrower int slot reads back right at the wider width, its high bytes zero, so the
    widths are compared themselves) and holds the call's value (the maps' bytes, C, ldc, M, N, K, alpha, beta, and
    the pre-pass's scale addresses), the maps read from the bytes the kernel keeps; a second call with other maps and
    scalars reuses the block."""
    import sys
    from types import ModuleType, SimpleNamespace

    from gemmc.ir.hardware import TARGETS
    from gemmc.runtime import tma

    k = next(iter(gemmc.compile_string("target cuda sm_90\n" + schedule)))
    ex = k.executable
    params = _parameters(k.source, k.rendered.entry)
    launched, passed = [], []

    def read(address: int) -> list[Any]:  # each argument as the driver reads it: the parameter's width from its slot
        pointers = (ctypes.c_void_p * len(params)).from_address(address)
        passed.append(list(pointers[:3]))  # where the three maps' bytes are read from
        args = []
        for (kind, _), at in zip(params, pointers, strict=True):
            raw = ctypes.string_at(at, _width(kind))
            args.append(raw if len(raw) == 128 else
                        np.frombuffer(raw, {"float": np.float32, "int": np.int32}.get(kind, np.int64))[0])
        return args

    def launch(func, grid, block, smem, stream, address, config):
        assert dependent
        launched.append((func, grid, block, smem, stream, read(address)))

    def plain(func, gx, gy, gz, bx, by, bz, smem, stream, address, extra):
        assert not dependent and (gy, gz, by, bz, extra) == (1, 1, 1, 1, 0)
        launched.append((func, gx, bx, smem, stream, read(address)))

    cuda = ModuleType("cupy.cuda")
    cuda.driver = SimpleNamespace(launchKernel=plain)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cupy", ModuleType("cupy"))
    monkeypatch.setitem(sys.modules, "cupy.cuda", cuda)
    monkeypatch.setattr(pdl, "launch_params", launch)
    monkeypatch.setattr(pdl, "ENABLED", dependent)
    monkeypatch.setattr(tma, "hardware", lambda: TARGETS["sm_90"])
    monkeypatch.setattr(tma, "encode", lambda dtype, ptr, *rest: np.full(1, ptr % 251, dtype=tma.TMAP))
    ex.__dict__["function"] = SimpleNamespace(kernel=SimpleNamespace(ptr=77))
    ex.__dict__["prologue_function"] = lambda *args, **kw: None
    ex.scratch = lambda stream: SimpleNamespace(data=SimpleNamespace(ptr=1 << 36))  # type: ignore[method-assign]
    stream = SimpleNamespace(ptr=5)
    p = ex.ir.problems[0]
    for a, alpha, beta in ((1 << 32, 1.5, 0.0), ((1 << 32) + 4096, -2.0, 0.25)):
        tma.enqueue_tma(ex, a, 1 << 33, 1 << 34, np.float32(alpha), np.float32(beta), stream)
        func, grid, block, smem, on, args = launched[-1]
        assert (func, on, smem, block) == (77, 5, ex.ir.plan.smem_bytes, ex.ir.plan.threads)
        names = [name for _, name in params]
        got = dict(zip(names, args, strict=True))
        assert (got["M"], got["N"], got["K"], got["alpha"], got["beta"]) == (p.m, p.n, p.k, alpha, beta)
        assert got["C"] == 1 << 34 and got["ldc"] == p.n and got["c_by_tma"] in (0, 1)
        maps = [got[n] for n in ("tma_a", "tma_b")]
        assert all(len(m) == 128 for m in maps) and maps[0] != maps[1]  # each operand's own map, by value
        # from the bytes the kernel keeps (alive until the launch has copied them), not a copy freed before
        kept = {m.ctypes.data for m, _ in ex.tensor_maps.values()} | {tma._NO_MAP.ctypes.data}
        assert set(passed[-1]) <= kept
        if "inv_a" in got:  # the pre-pass's line scales, in its scratch
            assert got["inv_a"] > 1 << 36 and got["inv_b"] > got["inv_a"]
    assert ex.launcher is not None and len(launched) == 2
    assert [ctypes.sizeof(v) for v in ex.launcher.values] == [_width(kind) for kind, _ in params]


def test_a_refused_launch_names_the_launch_and_the_drivers_error(monkeypatch):
    """A launch the driver refuses raises GemmcError with the grid, block, shared memory and the CUresult by name
    (cuGetErrorName), its number alone where there is no driver to name it."""
    import ctypes

    from gemmc.errors import GemmcError
    from gemmc.runtime import device

    def no_driver(name):
        raise OSError("no libcuda.so.1")

    monkeypatch.setattr(pdl, "_launch_ex", lambda: (lambda *args: 1))
    monkeypatch.setattr(device, "driver_call", no_driver)
    with pytest.raises(GemmcError, match=r"refused a launch \(cuLaunchKernelEx, CUfunction 0x4d, grid 132, block "
                                         r"384, 1000 B of shared memory\): CUresult 1$"):
        pdl.launch_params(77, 132, 384, 1000, 7, 0)

    def named(status, out):
        ctypes.cast(out, ctypes.POINTER(ctypes.c_char_p))[0] = b"CUDA_ERROR_INVALID_VALUE"
        return 0

    monkeypatch.setattr(device, "driver_call", lambda name: named)
    assert device.driver_error(1) == "CUDA_ERROR_INVALID_VALUE (1)"


def test_a_kept_map_evicted_by_another_thread_after_its_lookup_is_still_used(monkeypatch):
    """tma._kept between its lookup and its move to the front: another thread's calls may have evicted the map (the
    MAPS_KEPT most recent are kept); the call still launches with the map it found, rather than raising KeyError."""
    from collections import OrderedDict
    from types import SimpleNamespace

    from gemmc.ir.types import DType
    from gemmc.runtime import tma

    class EvictedAfterLookup(OrderedDict):
        def get(self, key, default=None):
            found = super().get(key, default)
            self.pop(key, None)  # the other thread's eviction, between this lookup and the move
            return found

    tmap = np.full(1, 7, dtype=tma.TMAP)
    maps = EvictedAfterLookup({("A", 4096, 128): (tmap, tmap.ctypes.data)})
    kernel = SimpleNamespace(tensor_maps=maps)
    monkeypatch.setattr(tma, "encode", lambda *args: pytest.fail("a map found is not encoded again"))
    found = tma._kept(kernel, ("A", 4096, 128), DType.BF16, 64, 64, (64, 64))  # type: ignore[arg-type]
    assert found[0] is tmap and found[1] == tmap.ctypes.data


def test_a_missing_driver_function_is_named_with_what_needs_it(monkeypatch):
    """device.driver_function, the lookup of every driver call gemmc makes through ctypes: without the driver (or a
    driver that lacks the call) the error names the call and what it was needed for."""
    from gemmc.runtime import device

    def missing(name: str) -> None:
        raise OSError(f"the CUDA driver has no {name}")

    monkeypatch.setattr(device, "driver_call", missing)
    with pytest.raises(gemmc.GemmcError, match=r"cuLaunchKernelEx \(libcuda.so.1\) is needed for a dependent launch"):
        device.driver_function("cuLaunchKernelEx", (ctypes.c_void_p,), "for a dependent launch")


def test_without_a_cuda_driver_libcuda_is_opened_once(monkeypatch):
    """device._libcuda: a process without libcuda.so.1 (HIP) pays the failed dlopen once, not at every lookup of a
    driver function (a launch path asks on every call)."""
    import ctypes

    from gemmc.runtime import device

    opened: list[str] = []

    def missing(name: str) -> None:
        opened.append(name)
        raise OSError(f"{name}: cannot open shared object file")

    device._libcuda.cache_clear()
    device.driver_call.cache_clear()
    monkeypatch.setattr(ctypes, "CDLL", missing)
    try:
        for name in ("cuStreamGetCaptureInfo_v2", "cuLaunchKernelEx", "cuStreamGetCaptureInfo_v2"):
            with pytest.raises(OSError, match="no CUDA driver"):
                device.driver_call(name)
        assert opened == ["libcuda.so.1"]
    finally:
        device._libcuda.cache_clear()
        device.driver_call.cache_clear()
