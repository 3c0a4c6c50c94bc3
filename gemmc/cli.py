"""The `gemmc` command: compile, inspect, run."""

from __future__ import annotations

import argparse
import sys
import traceback
from pathlib import Path

from gemmc.api import compile_file, front_end
from gemmc.concurrent.plan import plan_groups
from gemmc.errors import GemmcError
from gemmc.ir.nodes import Program
from gemmc.ir.printer import format_program
from gemmc.passes import PASS_NAMES, run_pipeline
from gemmc.version import __version__

EXIT_USER = 1
EXIT_INTERNAL = 70  # EX_SOFTWARE
VERIFY_HELP = "check the IR's invariants after every pass (a broken one is a gemmc bug: exit 70)"


def cmd_compile(args: argparse.Namespace) -> int:
    prog = compile_file(args.schedule, target=args.target, verify=args.verify)
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    for kernel in prog:
        if args.kernel and kernel.name not in args.kernel:
            continue
        r = kernel.rendered
        src = out / f"{kernel.name}.{r.extension}"
        src.write_text(r.standalone)
        (out / f"{kernel.name}.h").write_text(r.header)
        runs = "a batch sized at run time" if kernel.ir.dynamic else f"{kernel.ir.batch_size} GEMM(s)"
        print(f"wrote {src} and {out / (kernel.name + '.h')}: {r.launcher}() runs {runs} "
              f"with the {kernel.ir.family or '?'} family; build it with {' '.join(r.build_flags)}")
    for group in prog.groups:
        if args.kernel and group.name not in args.kernel:
            continue
        g = group.rendered
        src = out / f"{g.name}.{g.extension}"
        src.write_text(g.source)
        (out / f"{g.name}.h").write_text(g.header)
        print(f"wrote {src} and {out / (g.name + '.h')}: {g.launcher}() runs group {g.name}'s "
              f"{len(group.members)} GEMM(s) ({group.mode.value}); build it with {' '.join(g.build_flags)}")
    return 0


def cmd_inspect(args: argparse.Namespace) -> int:
    path = Path(args.schedule)
    try:
        text = path.read_text()
    except OSError as err:
        raise GemmcError(f"cannot read {path}: {err.strerror}") from None
    program = front_end(text, filename=str(path), target=args.target)
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
        for kernel in compile_file(path, target=args.target, verify=args.verify):
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

    prog = compile_file(args.schedule, target=args.target)
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


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gemmc", description="Compile GEMM schedules (.gs) into CUDA/HIP kernels.")
    p.add_argument("--version", action="version", version=f"gemmc {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    c = sub.add_parser("compile", help="write <kernel>.cu/.hip and <kernel>.h for every kernel and group")
    c.add_argument("schedule")
    c.add_argument("-o", "--output", default="out", help="output folder (default: out)")
    c.add_argument("--target", help="cuda | hip | sm_80 | sm_86 | sm_89 | sm_90 | gfx908 | gfx90a | gfx942 "
                                    "(default: the file's `target`, else sm_90)")
    c.add_argument("--kernel", action="append", help="only this kernel (repeatable)")
    c.add_argument("--verify", action="store_true", help=VERIFY_HELP)
    c.set_defaults(fn=cmd_compile)

    i = sub.add_parser("inspect", help="print the IR after a pass and what the passes decided")
    i.add_argument("schedule")
    i.add_argument("--after", default=PASS_NAMES[-1], type=pass_name, metavar="PASS",
                   help=f"print the program after this pass (default: the last), or after each (all): "
                        f"{', '.join(PASS_NAMES)}")
    i.add_argument("--verify", action="store_true", help=VERIFY_HELP)
    i.add_argument("--target")
    i.add_argument("--source", action="store_true", help="also print the generated kernel source")
    i.set_defaults(fn=cmd_inspect)

    r = sub.add_parser("run", help="(GPU) run every kernel on random inputs, compare with float64, time it")
    r.add_argument("schedule")
    r.add_argument("--check", action="store_true", help="exit 1 when an error exceeds --tolerance")
    r.add_argument("--tolerance", type=float, default=1e-5)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--no-time", action="store_true")
    r.add_argument("--target")
    r.add_argument("--kernel", action="append")
    r.set_defaults(fn=cmd_run)
    return p


def main(argv: list[str] | None = None) -> int:
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
