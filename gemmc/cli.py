"""The `gemmc` command: compile, inspect, run, bench."""

from __future__ import annotations

import argparse
import sys
import traceback
from pathlib import Path

from gemmc.api import CompiledProgram, compile_file, compile_string, front_end
from gemmc.concurrent.plan import plan_groups
from gemmc.errors import GemmcError
from gemmc.ir.nodes import Program
from gemmc.ir.printer import format_program
from gemmc.passes import PASS_NAMES, run_pipeline
from gemmc.version import __version__

EXIT_USER = 1
EXIT_INTERNAL = 70  # EX_SOFTWARE
VERIFY_HELP = "check the IR's invariants after every pass (a broken one is a gemmc bug: exit 70)"


STDIN = "-"  # the schedule argument that reads standard input
SOURCE_SUFFIXES = (".cu", ".hip")  # `-o` names a file, not a folder, when it ends with one of these


def read_schedule(name: str) -> tuple[str, str]:
    """The schedule's text and the file name its errors cite; `-` is standard input."""
    if name == STDIN:
        return sys.stdin.read(), "<stdin>"
    try:
        return Path(name).read_text(), name
    except OSError as err:
        raise GemmcError(f"cannot read {name}: {err.strerror}") from None


def load(name: str, target: str | None, verify: bool = False) -> CompiledProgram:
    if name == STDIN:
        return compile_string(sys.stdin.read(), filename="<stdin>", target=target, verify=verify)
    return compile_file(name, target=target, verify=verify)


def cmd_compile(args: argparse.Namespace) -> int:
    prog = load(args.schedule, args.target, verify=args.verify)
    wanted = set(args.kernel or ())
    # (name, source, header, its extension, what the line after `wrote` says) per kernel and group to write
    outputs = [(k.name, k.rendered.standalone, k.rendered.header, k.rendered.extension,
                f"{k.rendered.launcher}() runs {k.ir.batch_size} GEMM(s) with the {k.ir.family or '?'} family; "
                f"build it with {' '.join(k.rendered.build_flags)}") for k in prog if not wanted or k.name in wanted]
    outputs += [(g.name, g.rendered.source, g.rendered.header, g.rendered.extension,
                 f"{g.rendered.launcher}() runs group {g.name}'s {len(g.members)} GEMM(s) ({g.mode.value}); "
                 f"build it with {' '.join(g.rendered.build_flags)}")
                for g in prog.groups if not wanted or g.name in wanted]
    out = Path(args.output)
    if out.suffix in SOURCE_SUFFIXES:  # one file (and its header beside it)
        if len(outputs) != 1:
            names = ", ".join(o[0] for o in outputs) or "none"
            raise GemmcError(f"-o {out} names one file, but {len(outputs)} kernels would be written ({names}): "
                             "pick one with --kernel, or give a folder")
        if out.suffix != f".{outputs[0][3]}":
            language = {"cu": "CUDA", "hip": "HIP"}[outputs[0][3]]
            raise GemmcError(f"-o {out}: kernel '{outputs[0][0]}' is {language} source; "
                             f"name the file {out.with_suffix('.' + outputs[0][3]).name}")
        files = [(out, out.with_suffix(".h"))]
    else:
        files = [(out / f"{name}.{ext}", out / f"{name}.h") for name, _, _, ext, _ in outputs]
    for (src, header), (_, source, declarations, _, what) in zip(files, outputs, strict=True):
        src.parent.mkdir(parents=True, exist_ok=True)
        src.write_text(source)
        header.write_text(declarations)
        print(f"wrote {src} and {header}: {what}")
    return 0


def cmd_inspect(args: argparse.Namespace) -> int:
    text, filename = read_schedule(args.schedule)
    program = front_end(text, filename=filename, target=args.target)
    seconds: dict[str, float] = {}
    if args.after == "all":  # one run, the program printed after each pass

        def show(name: str, after: Program) -> None:
            print(f"=== after {name} ===")
            if name == PASS_NAMES[-1]:  # groups are planned from their members' final plans
                after = plan_groups(after)
            print(format_program(after), end="")

        run_pipeline(program, source=text, timings=seconds, observe=show, verify=args.verify)
    else:
        planned = run_pipeline(program, source=text, stop_after=args.after, timings=seconds, verify=args.verify)
        if args.after == PASS_NAMES[-1]:
            planned = plan_groups(planned)
        print(format_program(planned), end="")
    print("planner time: " + ", ".join(f"{k} {s * 1e3:.2f} ms" for k, s in seconds.items()) + "\n")
    if args.source:
        for kernel in compile_string(text, filename=filename, target=args.target, verify=args.verify):
            print(kernel.source)
    return 0


def pass_name(text: str) -> str:
    """An `--after` value: a pass of the pipeline, or `all`."""
    if text not in (*PASS_NAMES, "all"):
        raise argparse.ArgumentTypeError(f"no pass named '{text}'; the passes, in order: {', '.join(PASS_NAMES)} "
                                         "(or all)")
    return text


def cmd_run(args: argparse.Namespace) -> int:
    from gemmc.runtime.check import check_kernel  # needs CuPy and a GPU

    prog = load(args.schedule, args.target)
    failed = False
    for kernel in prog:
        if args.kernel and kernel.name not in args.kernel:
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
    return 1 if failed else 0


def cmd_bench(argv: list[str]) -> int:
    from gemmc.bench.__main__ import main as bench  # the suites import torch and rich when they run

    bench(argv, prog="gemmc bench")
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gemmc", description="Compile GEMM schedules (.gs) into CUDA/HIP kernels.")
    p.add_argument("--version", action="version", version=f"gemmc {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    c = sub.add_parser("compile", help="write <kernel>.cu/.hip and <kernel>.h for every kernel and group")
    c.add_argument("schedule", help="a .gs file, or - for standard input")
    c.add_argument("-o", "--output", default="out",
                   help="output folder (default: out), or a .cu/.hip file (and its .h beside it) for one kernel")
    c.add_argument("--target", help="cuda | hip | sm_80 | sm_86 | sm_89 | sm_90 | gfx908 | gfx90a | gfx942 "
                                    "(default: the file's `target`, else sm_90)")
    c.add_argument("--kernel", action="append", help="only this kernel (repeatable)")
    c.add_argument("--verify", action="store_true", help=VERIFY_HELP)
    c.set_defaults(fn=cmd_compile)

    i = sub.add_parser("inspect", help="print the IR after a pass and what the passes decided")
    i.add_argument("schedule", help="a .gs file, or - for standard input")
    i.add_argument("--after", default=PASS_NAMES[-1], type=pass_name, metavar="PASS",
                   help=f"print the program after this pass (default: the last), or after each (all): "
                        f"{', '.join(PASS_NAMES)}")
    i.add_argument("--verify", action="store_true", help=VERIFY_HELP)
    i.add_argument("--target")
    i.add_argument("--source", action="store_true", help="also print the generated kernel source")
    i.set_defaults(fn=cmd_inspect)

    r = sub.add_parser("run", help="(GPU) run every kernel on random inputs, compare with float64, time it")
    r.add_argument("schedule", help="a .gs file, or - for standard input")
    r.add_argument("--check", action="store_true", help="exit 1 when an error exceeds --tolerance")
    r.add_argument("--tolerance", type=float, default=1e-5)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--no-time", action="store_true")
    r.add_argument("--target")
    r.add_argument("--kernel", action="append")
    r.set_defaults(fn=cmd_run)

    # listed here for --help; main() hands everything after `bench` to gemmc.bench, which parses it
    sub.add_parser("bench", help="(GPU) run a benchmark suite, or `report` the docs' tables and plots: gemmc bench "
                                 "--help lists them", add_help=False)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["bench"]:
        return cmd_bench(argv[1:])
    args = parser().parse_args(argv)
    try:
        return args.fn(args)
    except GemmcError as err:
        print(err.render(), file=sys.stderr)
        return EXIT_USER
    except KeyboardInterrupt:
        return 130
    except Exception:  # noqa: BLE001 - anything else is gemmc's fault, and says so
        print("gemmc: internal error: this is a bug in gemmc, please report it with the schedule and this trace.",
              file=sys.stderr)
        traceback.print_exc()
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
