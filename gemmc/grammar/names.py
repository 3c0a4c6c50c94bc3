"""Kernel names: which ones a schedule may use, and the C symbols each becomes (docs/LANGUAGE.md, "Reserved names").

A kernel's name reaches generated code only inside symbols that start with `gemmc_`: the launcher `gemmc_<name>`,
the kernel entry `gemmc_<name>_<family>_<dtype>_<layouts>` and the entry's tables and pre-pass. So a name is
refused where such a symbol would clash with an identifier the templates declare, with another kernel's symbols,
or with what C++ reserves; and where the name would not do as a file name (`<name>.cu`, `<name>.h`).
"""

from __future__ import annotations

MAX_NAME_LENGTH = 64  # a kernel's name is the stem of its output files and of symbols up to ~40 characters longer

# C and C++ keywords (C23, C++23, the alternative operator spellings): a kernel's name is meant to stand on its own
# as an identifier in the C++ that embeds it (a wrapper of its launcher, a namespace), as it does in Python.
KEYWORDS = frozenset("""
alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t char32_t class compl
concept const consteval constexpr constinit const_cast continue co_await co_return co_yield decltype default
delete do double dynamic_cast else enum explicit export extern false float for friend goto if inline int long
mutable namespace new noexcept not not_eq nullptr operator or or_eq private protected public register
reinterpret_cast requires restrict return short signed sizeof static static_assert static_cast struct switch
template this thread_local throw true try typedef typeid typename typeof typeof_unqual union unsigned using
virtual void volatile wchar_t while xor xor_eq
""".split())

# X for every identifier gemmc_X that the templates use (their helpers, types and macros' arguments): the launcher
# of a kernel named X would be that identifier. tests/test_names.py keeps this in step with templates/.
TEMPLATE_NAMES = frozenset("""
absmax arrive_cluster bf16 bf16_f32 bf16_rn c claims_done cluster_arrive_relaxed_divergent cluster_rank cluster_sync
cluster_sync_divergent cp_async cp_async_commit cp_async_wait desc dmma dsmem_load dyn_apart dyn_cap dyn_choices
dyn_claim dyn_class dyn_class_of dyn_cost dyn_depth dyn_group dyn_half dyn_key dyn_outputs dyn_part dyn_position_tiles
dyn_problem dyn_rank dyn_scan dyn_tile dyn_tiles dyn_variant dyn_whole elem f16 f16_f32 f16_rn f16_rz f32_at fence_acc
fence_async_smem fence_frag fence_regs frag_width get2 grid_wait grp_row grp_schedule grp_tile grp_tile_t grpk_ends
grpk_order grpk_tile hmul2 in k_at later ldmatrix_x4 lds lds4 line_scale list_c_by_tma list_place list_problem
list_rows list_tiles load4 mbar_expect mbar_init mbar_release mbar_wait mma mma0 narrow out prep_line prep_unit
problem put2 put2_smem raster raster_tile red_arrive_all red_arrive_all_release red_get red_map red_put red_wait
round_up simt_loader simt_tile smem_addr smem_dyn smem_raw split store2 store_parts sts sts4 swizzle swz tc_copy
tc_layout tc_scratch tc_tile tf32 tf32_a_load tf32_bits tf32_f32 tf32_parts tf32_rna tf32x4 tma_load tma_load3
tma_multicast tma_multicast3 tma_prefetch tma_store tma_store_read_wait tma_store_wait_all tmap tmap_acquire
tmap_point tsm2l tsm2r_b_at tsm2r_columns tsm2r_copy tsm2r_rows vec vec_ok warp_cols warp_scan warpgroup_sync
wg_commit wg_copy wg_fence wg_layout wg_tile wg_wait wgmma wgmma_half wgmma_tf32 widen zero_krows
""".split())

# What the templates append to a kernel's entry symbol: its baked tables, its pre-pass kernel, its tensor-map encoder,
# its offsets' validation kernel, the standalone launcher's pointer-table fill (kernel, argument struct, chunk size),
# the grouped list's planning kernel (its tensor maps).
ENTRY_SUFFIXES = ("_problems", "_block_offsets", "_tiles", "_prep", "_encode", "_validate", "_fill", "_pointers",
                  "_chunk", "_maps")
# What the launchers of a batch sized at run time append to the launcher's name: their other host functions.
LAUNCHER_SUFFIXES = ("_grid", "_validate", "_workspace_bytes")


def launcher_symbol(name: str) -> str:
    """The extern "C" host function of a kernel (the C++ embedding contract)."""
    return f"gemmc_{name}"


def entry_symbol(name: str, family: str, dtypes: str, layouts: str) -> str:
    """The __global__ function: the kernel's name and its configuration (`Kernel.dtype_tag`, `Kernel.layouts`)."""
    return f"gemmc_{name}_{family}_{dtypes}_{layouts}"


def symbols(name: str, dtypes: str, layouts: str, families: tuple[str, ...]) -> tuple[str, ...]:
    """Every symbol a kernel of this name, storage types and layouts may define, whichever of the registered
    `families` the passes choose."""
    entries = tuple(entry_symbol(name, family, dtypes, layouts) for family in families)
    launcher = launcher_symbol(name)
    return (launcher, *(launcher + s for s in LAUNCHER_SUFFIXES), *entries,
            *(e + s for e in entries for s in ENTRY_SUFFIXES))


def name_problem(name: str) -> tuple[str, str] | None:
    """(why, hint) when `name` cannot name a kernel, else None."""
    if len(name) > MAX_NAME_LENGTH:
        return (f"is {len(name)} characters long; a kernel name has at most {MAX_NAME_LENGTH}",
                "it names the output files and the C symbols; use a shorter name")
    if name.startswith("_"):
        return "starts with '_', which C and C++ reserve", "start the name with a letter"
    if "__" in name or name.endswith("_"):
        return (f"would give symbols such as '{entry_symbol(name, 'simt', 'f32', 'rrr')}' with '__' in "
                "them, which C++ reserves", "avoid '__' and a trailing '_'")
    if name.startswith("gemmc_"):
        return "starts with 'gemmc_', the prefix of gemmc's own symbols", "drop the 'gemmc_' prefix"
    if name in KEYWORDS:
        return "is a C/C++ keyword", "choose another name"
    if name in TEMPLATE_NAMES:
        return (f"would make the launcher '{launcher_symbol(name)}', an identifier the generated code declares",
                "choose another name")
    return None
