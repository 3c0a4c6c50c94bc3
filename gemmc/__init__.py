"""gemmc: a compiler from GEMM schedules (.gs) to CUDA and HIP kernels.

    import gemmc
    prog = gemmc.compile_file("examples/inception3.gs")   # no GPU needed
    k = prog["inception3"]
    print(k.source, k.plan)
    k(As, Bs, Cs)                                          # on a GPU, through CuPy
    gemmc.stats()                                          # compiles, tuning runs, plans so far
"""

from gemmc.api import CompiledKernel, CompiledProgram, compile_file, compile_string
from gemmc.errors import Diagnostic, GemmcError, InternalError, PerformanceWarning
from gemmc.stats import stats
from gemmc.version import __version__

__all__ = ["CompiledKernel", "CompiledProgram", "Diagnostic", "GemmcError", "InternalError", "PerformanceWarning",
           "__version__", "compile_file", "compile_string", "stats"]
