"""`python -m gemmc.bench <suite> [options]`: run one benchmark suite (see `gemmc.bench`)."""

from __future__ import annotations

import argparse
import importlib
import sys

from gemmc.bench import SUITES


def main(argv: list[str] | None = None, prog: str = "python -m gemmc.bench") -> None:
    argv = sys.argv[1:] if argv is None else argv
    listing = "\n".join(f"  {name:17} {what}" for name, what in SUITES.items())
    parser = argparse.ArgumentParser(prog=prog, formatter_class=argparse.RawDescriptionHelpFormatter,
                                     description="Run a benchmark suite; `<suite> --help` shows its options.",
                                     epilog=f"suites:\n{listing}\n")
    parser.add_argument("suite", choices=sorted(SUITES), metavar="suite")
    args, rest = parser.parse_known_args(argv[:1])
    importlib.import_module(f"gemmc.bench.{args.suite}").main(argv[1:] + rest)


if __name__ == "__main__":
    main()
