"""IR -> source text. Everything here is deterministic: the same plan renders the same bytes."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath

from gemmc.codegen.env import render
from gemmc.errors import InternalError
from gemmc.families.registry import family
from gemmc.grammar import limits, names
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel
from gemmc.ir.types import DType, counted
from gemmc.version import __version__

RUNTIME_API = {
    "cuda": {"header": "cuda_runtime.h", "error_t": "cudaError_t", "stream_t": "cudaStream_t", "prefix": "cuda"},
    "hip": {"header": "hip/hip_runtime.h", "error_t": "hipError_t", "stream_t": "hipStream_t", "prefix": "hip"},
}
# Headers that declare the 16-bit storage types in a launcher's signature (HIP's _Float16 is built in).
TYPE_HEADERS = {("cuda", DType.BF16): "cuda_bf16.h", ("cuda", DType.F16): "cuda_fp16.h",
                ("hip", DType.BF16): "hip/hip_bfloat16.h"}
TILES_PER_LINE = 6
OFFSETS_PER_LINE = 16


@dataclass(frozen=True, slots=True)
class Rendered:
    name: str
    entry: str  # the __global__ function
    launcher: str  # the extern "C" host function of the standalone file
    source: str  # the kernel source the runtime compiles (no tables, no launcher)
    standalone: str  # source + baked tables + launcher: the .cu / .hip that `gemmc compile` writes
    header: str  # the .h declaring the launcher
    extension: str  # "cu" or "hip"
    prologue: str = ""  # the pre-pass kernel launched before `entry` (FamilyPlan.prologue), or ""
    device_arch: str = ""  # the device target the code needs: hw.arch, or "sm_90a" for wgmma kernels

    @property
    def build_flags(self) -> tuple[str, ...]:
        """nvcc/hipcc flags naming the device target the standalone file must be built for."""
        if self.extension == "hip":
            return (f"--offload-arch={self.device_arch}",)
        if self.device_arch.endswith("a"):  # architecture-specific: only the gencode form assembles it
            number = self.device_arch.removeprefix("sm_")
            return (f"-gencode=arch=compute_{number},code=sm_{number}",)
        return (f"-arch={self.device_arch}",)


def entry_name(kernel: Kernel) -> str:
    assert kernel.family is not None
    return names.entry_symbol(kernel.name, kernel.family, kernel.dtype_tag, kernel.layouts)


def device_ctype(dtype: DType, hw: Hardware) -> str:
    """The C type of one element in kernel code: `gemmc_bf16`/`gemmc_f16` (unsigned short, the prelude's typedef)
    for CUDA's 16-bit types, the launcher's type otherwise (hip_bfloat16 and _Float16 on HIP)."""
    if hw.vendor == "cuda" and dtype.half:
        return f"gemmc_{dtype.value}"
    return dtype.ctype_for(hw.vendor)


def scalar_type(kernel: Kernel) -> str:
    """The type of alpha, beta and the accumulators' combination: double for f64 data, else float."""
    return limits.scalar_ctype(kernel.dtype)


def comment_text(text: str) -> str:
    """`text` as it may stand in a // comment of generated code: printable ASCII, every other character (a line
    break would end the comment; a backslash at a line's end would splice the next line into it) escaped."""
    return "".join(c if " " <= c <= "~" and c != "\\" else _escape(c) for c in text)


def _escape(c: str) -> str:
    code = ord(c)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def literal(value: float | None, ctype: str) -> str | None:
    if value is None:
        return None
    text = repr(float(value))
    return text + "f" if ctype == "float" else text


def _chunks(items: list, size: int) -> list[list]:
    return [items[i:i + size] for i in range(0, len(items), size)]


def common_context(kernel: Kernel, hw: Hardware, family_knobs: list[str]) -> dict:
    S = scalar_type(kernel)
    lines = [comment_text(line) for line in (
        f"kernel {kernel.name}: family {kernel.family or '?'}, target {hw.vendor} {hw.arch}",
        f"dtype {kernel.dtypes}, layout A {kernel.layout_a.value} B {kernel.layout_b.value} "
        f"C {kernel.layout_c.value}, alpha {literal(kernel.alpha, 'double') or 'runtime'}, "
        f"beta {literal(kernel.beta, 'double') or 'runtime'}",
        f"precision {kernel.precision}, algorithm {kernel.algorithm}, batching {kernel.batching.value}",
        f"batch of {counted(kernel.batch_size, 'problem')}" if kernel.dynamic is None else "batch sized at run time",
        *family_knobs,
    )]
    return {
        "version": __version__,
        "header_lines": lines,
        "entry": entry_name(kernel),
        "name": comment_text(kernel.name),
        "vendor": hw.vendor,
        "arch": hw.arch,
        "cp_async": False,  # the prelude's gemmc_cp_async helpers; a family that copies with cp.async sets it
        "T": kernel.dtype.ctype_for(hw.vendor),
        "TC": kernel.c_dtype.ctype_for(hw.vendor),
        # The element types in kernel code (the prelude's conversions): the launcher's types, except that CUDA
        # kernels hold bf16/f16 as their 16-bit patterns (gemmc_bf16, gemmc_f16), so that NVRTC needs no
        # cuda_bf16.h/cuda_fp16.h. `half_storage`: the kernel's 16-bit storage type ("bf16", "f16"), or "".
        "DT": device_ctype(kernel.dtype, hw),
        "DTC": device_ctype(kernel.c_dtype, hw),
        "half_storage": kernel.dtype.value if kernel.dtype.half else "",
        "type_headers": sorted({TYPE_HEADERS[(hw.vendor, d)] for d in (kernel.dtype, kernel.c_dtype)
                                if (hw.vendor, d) in TYPE_HEADERS}),
        "S": S,
        "alpha_literal": literal(kernel.alpha, S),
        "beta_literal": literal(kernel.beta, S),
        "beta_is_zero": kernel.beta == 0.0,  # baked beta 0: the epilogue (epilogue.j2) emits no read of C
        # The dynamic shared memory of a block, as the plan counts it: each family's template static_asserts that
        # its own layout takes exactly this many bytes (one source for the size, docs/INTERNALS.md).
        "smem_bytes": kernel.work.smem_bytes if kernel.work else 0,
        "runtime_scalars": kernel.alpha is None or kernel.beta is None,
        "rt": RUNTIME_API[hw.vendor],
        "header_notes": [],  # lines a family adds to the .h comment (how to build and link its .cu)
    }


def launch_context(kernel: Kernel) -> dict:
    """The plan's tables and launch configuration as a C++ host launcher bakes them: the rows of the problem, block
    offset and tile tables, the grid, the block, the dynamic shared memory, the scratch and the pre-pass. The
    standalone file's launcher (launcher.j2) and a concurrent group's (gemmc/concurrent/render.py) read it."""
    work = kernel.work
    assert work is not None
    problems = work.problems.rows()
    offsets = list(work.block_offsets) or [0, 0]  # arithmetic families: empty tables, one dummy entry each
    tiles = work.tiles.rows() or [(0, 0, 0, 0)]
    return {
        "problems": problems,
        "block_offset_rows": _chunks(offsets, OFFSETS_PER_LINE),
        "block_offsets_len": len(offsets),
        "one_tile_per_block": not work.reads_offsets,  # no offsets table: a null pointer
        "tile_rows": _chunks(tiles, TILES_PER_LINE),
        "tiles_len": len(tiles),
        "batch": len(work.problems),
        "grid": work.grid,
        "block": work.block,
        "smem_bytes": work.smem_bytes,  # the same value common_context gives the kernel's template
        "scratch_bytes": kernel.plan.scratch_bytes if kernel.plan else 0,
        "prologue_launch": kernel.plan.prologue if kernel.plan else None,
    }


def render_kernel(kernel: Kernel, hw: Hardware, source_file: str = "<string>",
                  linkage: str = 'extern "C"') -> Rendered:
    """The kernel's source, its standalone file and header. `linkage` is that of a family launcher that takes
    host pointers (the hopper family's): `static` where a concurrent group's file calls it (concurrent/render.py)."""
    if kernel.family is None or kernel.work is None:
        raise InternalError("codegen", f"kernel '{kernel.name}' is not planned (family {kernel.family})")
    fam = family(kernel.family)
    ctx = common_context(kernel, hw, fam.knobs(kernel))
    ctx.update(fam.context(kernel, hw))
    source = render(fam.template(kernel), ctx)
    ctx.update(launch_context(kernel))
    ctx["launcher"] = names.launcher_symbol(kernel.name)
    ctx["linkage"] = linkage
    # no absolute paths: output must not depend on the checkout
    ctx["source_file"] = comment_text(PurePath(source_file).name)
    ctx["summary"] = ctx["header_lines"][0]
    shown = ", ".join(f"{p.name} {p.m}x{p.n}x{p.k}" for p in kernel.problems[:6])
    more = f", ... ({len(kernel.problems)} in all)" if len(kernel.problems) > 6 else ""
    ctx["problem_summary"] = comment_text(shown + more + (f", count {kernel.count}" if kernel.count else ""))
    standalone = source + render(fam.launcher, ctx)
    header = render(fam.header, ctx)
    return Rendered(name=kernel.name, entry=ctx["entry"], launcher=ctx["launcher"], source=source,
                    standalone=standalone, header=header, extension="hip" if hw.vendor == "hip" else "cu",
                    prologue=ctx["entry"] + "_prep" if ctx["prologue_launch"] else "",
                    device_arch=device_arch(kernel, hw))


def device_arch(kernel: Kernel, hw: Hardware) -> str:
    """The target's architecture, or its architecture-specific variant (sm_90a) for a plan that uses its
    instructions (FamilyPlan.arch_specific: wgmma)."""
    arch_specific = kernel.plan is not None and kernel.plan.arch_specific and hw.vendor == "cuda"
    return hw.arch + "a" if arch_specific else hw.arch
