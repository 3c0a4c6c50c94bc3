"""The `gemmc` command: compile, inspect, run, bench."""

from __future__ import annotations

import argparse
import dataclasses
import os
import secrets
import sys
import traceback
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

from gemmc.api import (
    CompiledKernel,
    CompiledProgram,
    compile_file,
    compile_string,
    decode_schedule,
    front_end,
    read_schedule,
    slower_path,
)
from gemmc.concurrent.plan import plan_groups
from gemmc.errors import Diagnostic, GemmcError, NoGpuError, PerformanceWarning, printable
from gemmc.ir.printer import format_program
from gemmc.ir.program import Program
from gemmc.ir.types import counted
from gemmc.passes import PASS_NAMES, run_pipeline
from gemmc.version import __version__

EXIT_USER = 1  # the schedule or an argument is wrong, or a file cannot be read or written
EXIT_USAGE = 2  # the command line itself (argparse's own code)
EXIT_NO_GPU = 3  # `run` without CuPy or a GPU
EXIT_CHECK = 4  # `run --check`: an error above the tolerance
EXIT_INTERNAL = 70  # EX_SOFTWARE: a bug in gemmc
VERIFY_HELP = "check the IR's invariants after every pass (a broken one is a gemmc bug: exit 70)"
EXIT_INTERRUPTED = 130  # 128 + SIGINT
EXIT_CLOSED_PIPE = 141  # 128 + SIGPIPE: what a tool killed by writing to a closed pipe reports

STDIN = "-"  # the schedule argument that reads standard input
SOURCE_SUFFIXES = (".cu", ".hip")  # `-o` names one file, not a folder, when it ends with one of these

EXIT_CODES = f"""exit status:
  0    success
  {EXIT_USER}    the schedule or an argument is wrong, or a file cannot be read or written (one message on stderr)
  {EXIT_USAGE}    the command line is wrong
  {EXIT_NO_GPU}    `run` found no GPU (CuPy is missing, or no device)
  {EXIT_CHECK}    `run --check` found an error above the tolerance
  {EXIT_INTERNAL}   an internal error: a bug in gemmc (the message asks for a report)
  {EXIT_INTERRUPTED}  interrupted
  {EXIT_CLOSED_PIPE}  standard output was closed (a pipe such as `| head` ended)"""


class CommandError(Exception):
    """An argument of the command that cannot be used, or an output that cannot be written: one line, exit 1."""


def write_whole(path: Path, text: str) -> None:
    """Write `path` all at once: into a new file beside it, renamed over it when complete. A reader never sees half
    a file, a failed write leaves what was there, and a symbolic link at `path` is replaced, never followed."""
    temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    created = False
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o666)
        created = True
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temp, path)
    except OSError as err:
        raise CommandError(f"cannot write {printable(str(path))}: {err.strerror or err}") from None
    finally:  # after the rename the temporary name is gone; after a failure or an interrupt, it goes
        if created:
            temp.unlink(missing_ok=True)


def output_folder(name: str) -> Path:
    out = Path(name)
    if out.exists() and not out.is_dir():
        raise CommandError(f"-o {printable(name)}: not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise CommandError(f"cannot create the folder {printable(name)}: {err.strerror or err}") from None
    return out


STDIN_NAME = "<stdin>"  # the file name errors cite for a schedule read from standard input


def stdin_text() -> str:
    """Standard input's schedule, held to the same UTF-8 rule as a file's (E103 at the first bad byte)."""
    return decode_schedule(sys.stdin.buffer.read(), STDIN_NAME, "send UTF-8 text on standard input")


def schedule_text(name: str) -> tuple[str, str]:
    """The schedule's text and the file name its errors cite; `-` is standard input."""
    return (stdin_text(), STDIN_NAME) if name == STDIN else (read_schedule(name), name)


def load(name: str, target: str | None, verify: bool = False) -> CompiledProgram:
    if name == STDIN:
        return compile_string(stdin_text(), filename=STDIN_NAME, target=target, verify=verify)
    return compile_file(name, target=target, verify=verify)


def named(kernels: Sequence[str], groups: Mapping[str, Sequence[str]], wanted: list[str] | None,
          members: bool) -> set[str] | None:
    """The names `--kernel` selects (None without it: everything), with a named group's members where `members`; a
    name the schedule lacks (as a kernel or a group) is an error."""
    if not wanted:
        return None
    known = (*kernels, *groups)
    missing = [name for name in wanted if name not in known]
    if missing:
        raise CommandError(f"--kernel {printable(missing[0])}: the schedule has no such kernel; it defines "
                           + ", ".join(known))
    return {*wanted, *(m for g, names in groups.items() if g in wanted and members for m in names)}


def selected(prog: CompiledProgram, wanted: list[str] | None, members: bool = False) -> list[CompiledKernel]:
    """The kernels `--kernel` names (every kernel without it), with a named group's members where `members` (a
    group's own file holds them for `compile`; `inspect --svg` and `run` take them one by one)."""
    names = named(prog.names, {g.name: [k.name for k in g.members] for g in prog.groups}, wanted, members)
    return [k for k in prog if names is None or k.name in names]


def cmd_compile(args: argparse.Namespace) -> int:
    prog = load(args.schedule, args.target, verify=args.verify)
    kernels = selected(prog, args.kernel)
    groups = [g for g in prog.groups if not args.kernel or g.name in args.kernel]
    rendered = [(k, k.rendered) for k in kernels]  # every kernel and group renders before any file is written
    rendered_groups = [(g, g.rendered) for g in groups]
    file = Path(args.output)
    if file.suffix in SOURCE_SUFFIXES:  # one kernel's source, its header beside it
        written = [(k.name, r.extension) for k, r in rendered] + [(g.name, r.extension) for g, r in rendered_groups]
        if len(written) != 1:
            raise CommandError(f"-o {printable(args.output)} names one file, but {len(written)} kernels would be "
                               f"written ({', '.join(name for name, _ in written) or 'none'}): pick one with "
                               "--kernel, or give a folder")
        name, extension = written[0]
        if file.suffix != f".{extension}":
            raise CommandError(f"-o {printable(args.output)}: kernel '{name}' is {extension.upper()} source; name "
                               f"the file {printable(file.with_suffix('.' + extension).name)}")
        output_folder(str(file.parent))

    def paths(name: str, extension: str) -> tuple[Path, Path]:
        if file.suffix in SOURCE_SUFFIXES:
            return file, file.with_suffix(".h")
        return out / f"{name}.{extension}", out / f"{name}.h"

    out = file if file.suffix in SOURCE_SUFFIXES else output_folder(args.output)
    for kernel, r in rendered:
        src, header = paths(kernel.name, r.extension)
        write_whole(src, r.standalone)
        write_whole(header, r.header)
        size = kernel.ir.batch_size
        runs = "a batch sized at run time" if kernel.ir.dynamic else counted(size, "GEMM")
        print(f"wrote {printable(str(src))} and {printable(str(header))}: {r.launcher}() runs {runs} "
              f"with the {kernel.ir.family or '?'} family; build it with {' '.join(r.build_flags)}{link(r.header)}")
        note = slower_path(kernel)  # e.g. a statement that keeps a bf16 GEMM off the tensor cores
        if note is not None:
            print(f"{note[0]}: note: {note[1]}", file=sys.stderr)
    for group, g in rendered_groups:
        src, header = paths(g.name, g.extension)
        write_whole(src, g.source)
        write_whole(header, g.header)
        gemms = len(group.members)
        print(f"wrote {printable(str(src))} and {printable(str(header))}: {g.launcher}() runs group {g.name}'s "
              f"{counted(gemms, 'GEMM')} ({group.mode.value}); build it with {' '.join(g.build_flags)}"
              f"{link(g.header)}")
        note = slower_path(group)  # a `concurrency fused` the members cannot honour runs on streams
        if note is not None:
            print(f"{note[0]}: note: {note[1]}", file=sys.stderr)
    return 0


def link(header: str) -> str:
    """What `gemmc compile` adds to a file's build flags where its launcher calls the driver API (the header says
    so: hopper kernels encode TMA tensor maps with cuTensorMapEncodeTiled, which lives in libcuda)."""
    return " and link with -lcuda" if "-lcuda" in header else ""


def write_svgs(schedule: str, target: str | None, dest: str, wanted: list[str] | None = None,
               verify: bool = False) -> int:
    """`inspect --svg DEST`: each kernel's picture (those `--kernel` names, a group's by its members) into the folder
    DEST (an existing folder, or a path ending in /), else the one kernel's to the file DEST, or to standard output
    for -."""
    prog = load(schedule, target, verify)
    kernels = selected(prog, wanted, members=True)  # a group has no picture of its own: its members'
    if dest.endswith(("/", os.sep)) or Path(dest).is_dir():
        drawn = [k for k in kernels if k.ir.dynamic is None]  # a batch sized at run time has no fixed plan
        if len(kernels) == 1 and not drawn:
            kernels[0].svg()  # raises the error that says why
        if not drawn:
            raise GemmcError(Diagnostic("E900", ", ".join(k.name for k in kernels)
                                        + " are batches sized at run time: their tiles are derived on the device "
                                        "from each call's sizes, so there is no plan to draw",
                                        hint="`gemmc inspect` prints their size classes"))
        Path(dest).mkdir(parents=True, exist_ok=True)
        for kernel in kernels:
            if kernel not in drawn:
                print(f"skipped {kernel.name}: a batch sized at run time has no plan to draw (`gemmc inspect` "
                      "prints its size classes)", file=sys.stderr)
                continue
            write_whole(Path(dest) / f"{kernel.name}.svg", kernel.svg())
            print(f"wrote {Path(dest) / f'{kernel.name}.svg'}")
        return 0
    if len(kernels) != 1:
        raise CommandError(f"--svg {printable(dest)}: this schedule has {len(kernels)} kernels ("
                           + ", ".join(k.name for k in kernels) + "); give a folder (ending in /) for one file each, "
                           "or name one with --kernel")
    if dest == "-":
        sys.stdout.write(kernels[0].svg())
    else:
        write_whole(Path(dest), kernels[0].svg())
        print(f"wrote {dest}")
    return 0


def only(program: Program, wanted: list[str] | None) -> Program:
    """The kernels and groups `--kernel` names, a group with its members (all of them without it); a name the
    schedule lacks is an error."""
    names = named([k.name for k in program.kernels], {g.name: g.members for g in program.groups}, wanted, True)
    if names is None:
        return program
    return dataclasses.replace(program, kernels=tuple(k for k in program.kernels if k.name in names),
                               groups=tuple(g for g in program.groups if g.name in names))


def call_sizes(text: str) -> tuple[str, list]:
    """An `--sizes` value: "40,4000,0,12" (each group's rows or depth: grouped M and K) or "40x512x256,7x64x9" (each
    problem's m x n x k: grouped list); the form it is for and the sizes."""
    items = [item.strip() for item in text.split(",")] if text.strip() else []
    try:
        if all("x" not in item for item in items):
            return "grouped", [int(item) for item in items]
        shapes = [tuple(int(d) for d in item.split("x")) for item in items]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}': expected numbers separated by commas (each group's rows or "
                                         "depth), or m x n x k shapes such as 40x512x256 (a grouped list's problems)"
                                         ) from None
    if any(len(s) != 3 for s in shapes):
        raise argparse.ArgumentTypeError(f"'{text}': a grouped list's problems are m x n x k, such as 40x512x256")
    return "list", shapes


def write_schedules(schedule: str, target: str | None, sizes: tuple[str, list], wanted: list[str] | None,
                    verify: bool = False) -> int:
    """`inspect --sizes`: what the device scheduler of each batch sized at run time (those `--kernel` names) does with
    the sizes of one call, as `CompiledKernel.schedule_for` previews it."""
    from gemmc.ir.dynamic import Grouping

    form, values = sizes
    kernels = selected(load(schedule, target, verify), wanted, members=True)
    fits = [k for k in kernels if k.ir.dynamic is not None  # no sizes at all: zero groups, whatever the form
            and ((k.ir.dynamic.grouping is Grouping.LIST) == (form == "list") or not values)]
    if not fits:
        spelled = "m x n x k shapes (a grouped list's problems)" if form == "list" else \
            "numbers (each group's rows or depth: grouped M and grouped K)"
        raise CommandError(f"--sizes gives {spelled}, and no kernel shown is such a batch sized at run time ("
                           + ", ".join(f"{k.name}: {k.ir.dynamic or 'a batch fixed in its schedule'}" for k in kernels)
                           + ")")
    for kernel in kernels:
        if kernel not in fits:
            why = ("a batch fixed in its schedule (`gemmc inspect` prints its plan)" if kernel.ir.dynamic is None
                   else f"{kernel.ir.dynamic}, whose sizes --sizes does not spell")
            print(f"skipped {kernel.name}: {why}", file=sys.stderr)
    shown = []
    for kernel in fits:  # every preview made before any is printed: a bad size is one error, naming its kernel
        try:
            shown.append(str(kernel.schedule_for(values)))
        except GemmcError as err:
            raise GemmcError(f"--sizes, kernel '{kernel.name}': {err.diagnostics[0].message}") from None
    print("\n\n".join(shown))
    return 0


def cmd_inspect(args: argparse.Namespace) -> int:
    if args.svg and args.sizes is not None:
        raise CommandError("--svg and --sizes: give one (a batch sized at run time has no picture)")
    instead = "--svg" if args.svg else "--sizes" if args.sizes is not None else ""
    text_options = [o for o, given in (("--after", args.after != PASS_NAMES[-1]), ("--source", args.source)) if given]
    if instead and text_options:  # they choose what the plan's text shows, which these print instead of
        raise CommandError(f"{text_options[0]} and {instead}: give one ({instead} prints no plan text)")
    if args.svg:
        return write_svgs(args.schedule, args.target, args.svg, args.kernel, args.verify)
    if args.sizes is not None:
        return write_schedules(args.schedule, args.target, args.sizes, args.kernel, args.verify)
    text, filename = schedule_text(args.schedule)
    program = front_end(text, filename=filename, target=args.target)
    shown = {k.name for k in only(program, args.kernel).kernels}
    seconds: dict[str, float] = {}
    if args.after == "all":  # one run, the program printed after each pass

        def show(name: str, after: Program) -> None:
            print(f"=== after {name} ===")
            if name == PASS_NAMES[-1]:  # groups are planned from their members' final plans
                after = plan_groups(after)
            print(format_program(only(after, args.kernel)), end="")

        run_pipeline(program, source=text, timings=seconds, observe=show, verify=args.verify)
    else:
        planned = run_pipeline(program, source=text, stop_after=args.after, timings=seconds, verify=args.verify)
        if args.after == PASS_NAMES[-1]:
            planned = plan_groups(planned)
        print(format_program(only(planned, args.kernel)), end="")
    print("planner time: " + ", ".join(f"{k} {s * 1e3:.2f} ms" for k, s in seconds.items() if k in shown) + "\n")
    if args.source:
        for kernel in compile_string(text, filename=filename, target=args.target, verify=args.verify):
            if kernel.name in shown:
                print(kernel.source)
    return 0


def pass_name(text: str) -> str:
    """An `--after` value: a pass of the pipeline, or `all`."""
    if text not in (*PASS_NAMES, "all"):
        raise argparse.ArgumentTypeError(f"no pass named '{text}'; the passes, in order: {', '.join(PASS_NAMES)} "
                                         "(or all)")
    return text


def cmd_run(args: argparse.Namespace) -> int:
    from gemmc.runtime.check import check_kernel
    from gemmc.runtime.device import require_gpu

    prog = load(args.schedule, args.target)
    kernels = selected(prog, args.kernel, members=True)  # a group is checked member by member
    require_gpu()
    failed = False
    for kernel in kernels:
        if kernel.ir.dynamic is not None:  # no sizes of its own: random_batch would draw an empty batch
            print(f"skipped {kernel.name}: a batch sized at run time has no sizes of its own to draw inputs for; "
                  "call it from Python with sizes of yours", file=sys.stderr)
            continue
        res = check_kernel(kernel, seed=args.seed, time_it=not args.no_time)
        err = res["errors"]
        line = (f"{kernel.name}: {res['gflop']:.3f} GFLOP on {res['device']}: rel. Frobenius error "
                f"{err['rel_fro']:.2e}, max error {err['max_abs']:.2e}, MRED {err['mred']:.2e}")
        if "seconds" in res:
            line += f"; {res['seconds'] * 1e6:.1f} us per call, {res['tflops']:.2f} TFLOP/s"
        print(line)
        if "sgemm_errors" in res:
            ref = res["sgemm_errors"]
            print(f"  cuBLAS SGEMM on the same inputs: rel. Frobenius error {ref['rel_fro']:.2e}, max error "
                  f"{ref['max_abs']:.2e}, MRED {ref['mred']:.2e}")
        tolerance = args.tolerance
        if args.check and not (err["rel_fro"] <= tolerance and err["nonfinite"] == 0):
            print(f"  FAILED: error above {tolerance:g} or non-finite outputs", file=sys.stderr)
            failed = True
    return EXIT_CHECK if failed else 0


def cmd_bench(argv: list[str]) -> int:
    from gemmc.bench import NEEDS_GPU
    from gemmc.bench.__main__ import main as bench  # the suites import torch and rich when they run
    from gemmc.runtime.device import require_gpu

    if argv[:1] and argv[0] in NEEDS_GPU and not {"-h", "--help"} & set(argv):
        try:
            import torch  # noqa: F401 - the suites' baselines
        except ImportError:
            print(f"gemmc: error: the {argv[0]} benchmark needs torch and the bench extras: pip install "
                  "'gemmc[bench]' (in a clone: pip install -e '.[bench]')", file=sys.stderr)
            return EXIT_USER
        try:
            require_gpu()
        except NoGpuError as err:
            print(err.render(), file=sys.stderr)
            return EXIT_NO_GPU
    bench(argv, prog="gemmc bench")
    return 0


TARGET_HELP = ("cuda | hip | sm_80 | sm_86 | sm_89 | sm_90 | gfx908 | gfx90a | gfx942 (default: the file's "
               "`target`, else sm_90)")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gemmc", description="Compile GEMM schedules (.gs) into CUDA/HIP kernels.",
                                epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"gemmc {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    c = sub.add_parser("compile", help="write <kernel>.cu/.hip and <kernel>.h for every kernel and group",
                       epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("schedule", help="a .gs file, or - for standard input")
    c.add_argument("-o", "--output", default="out", help="output folder, created if missing (default: out), or a "
                   ".cu/.hip file (and its .h beside it) for one kernel; each file is written whole, by a rename")
    c.add_argument("--target", help=TARGET_HELP)
    c.add_argument("--kernel", action="append", help="only this kernel or group (repeatable)")
    c.add_argument("--verify", action="store_true", help=VERIFY_HELP)
    c.set_defaults(fn=cmd_compile, usage_of=c)

    i = sub.add_parser("inspect", help="print the IR after a pass and what the passes decided", epilog=EXIT_CODES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    i.add_argument("schedule", help="a .gs file, or - for standard input")
    i.add_argument("--after", default=PASS_NAMES[-1], type=pass_name, metavar="PASS",
                   help=f"print the program after this pass (default: the last), or after each (all): "
                        f"{', '.join(PASS_NAMES)}")
    i.add_argument("--verify", action="store_true", help=VERIFY_HELP)
    i.add_argument("--target", help=TARGET_HELP)
    i.add_argument("--source", action="store_true", help="also print the generated kernel source")
    i.add_argument("--kernel", action="append", help="only this kernel, or a group and its members (repeatable)")
    i.add_argument("--svg", metavar="PATH", help="draw each planned kernel (tiles, blocks, TLP, occupancy) as SVG "
                                                 "instead: into the folder PATH as <kernel>.svg (an existing folder, "
                                                 "or PATH ending in /), to the file PATH or, with -, to stdout")
    i.add_argument("--sizes", type=call_sizes, metavar="SIZES",
                   help="instead: what the device scheduler of each batch sized at run time does with one call's "
                        "sizes: each group's rows (grouped M) or depth (grouped K), as 40,4000,0,12, or each "
                        "problem's m x n x k (grouped list), as 40x512x256,7x64x9")
    i.set_defaults(fn=cmd_inspect, usage_of=i)

    r = sub.add_parser("run", help="(GPU) run every kernel on random inputs, compare with float64, time it",
                       epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("schedule", help="a .gs file, or - for standard input")
    r.add_argument("--check", action="store_true", help=f"exit {EXIT_CHECK} when an error exceeds --tolerance")
    r.add_argument("--tolerance", type=float, default=1e-5,
                   help="the largest relative Frobenius error --check accepts (default: %(default)g)")
    r.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default: %(default)s)")
    r.add_argument("--no-time", action="store_true", help="check only, do not time")
    r.add_argument("--target", help=TARGET_HELP)
    r.add_argument("--kernel", action="append", help="only this kernel, or a group's members (repeatable)")
    r.set_defaults(fn=cmd_run, usage_of=r)

    # listed here for --help; main() hands everything after `bench` to gemmc.bench, which parses it
    sub.add_parser("bench", help="(GPU) run a benchmark suite, or `report` the docs' tables and plots: gemmc bench "
                                 "--help lists them", add_help=False)
    return p


def _close_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush does not meet the closed pipe again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["bench"]:
        return cmd_bench(argv[1:])
    # The commands say where a statement keeps a kernel off its fast path themselves (`compile`'s notes, `inspect`'s
    # decisions): the Python API's PerformanceWarning would say it twice.
    warnings.filterwarnings("ignore", category=PerformanceWarning)
    args, unknown = parser().parse_known_args(argv)
    if unknown:  # the command's usage, not gemmc's: `gemmc inspect s.gs --kernal k` shows inspect's options
        args.usage_of.error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        code = args.fn(args)
        sys.stdout.flush()  # here, where a closed pipe is caught, not at the interpreter's exit
        return code
    except BrokenPipeError:
        _close_stdout()
        return EXIT_CLOSED_PIPE
    except NoGpuError as err:
        print(err.render(), file=sys.stderr)
        return EXIT_NO_GPU
    except GemmcError as err:
        print(err.render(), file=sys.stderr)
        return EXIT_USER
    except CommandError as err:
        print(f"gemmc: error: {err}", file=sys.stderr)
        return EXIT_USER
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Exception:  # noqa: BLE001 - anything else is gemmc's fault, and says so
        print("gemmc: internal error: this is a bug in gemmc, please report it with the schedule and this trace.",
              file=sys.stderr)
        traceback.print_exc()
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
