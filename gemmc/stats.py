"""Process-wide counters of the expensive steps, so that a test or a benchmark can show there were none after
warm-up: `compiles` (kernel modules built: NVRTC, or CuPy's disk cache), `tuning_runs` (first-call timings of a
plan's alternatives), `plans` (kernels run through the pass pipeline)."""

from __future__ import annotations

_COUNTS = {"compiles": 0, "tuning_runs": 0, "plans": 0}


def count(name: str, n: int = 1) -> None:
    _COUNTS[name] += n


def stats() -> dict[str, int]:
    """The counters since the process started, as a new dict: `compiles` (kernel modules built, by NVRTC or from
    CuPy's disk cache), `tuning_runs` (first calls that timed a plan's alternatives) and `plans` (kernels run
    through the pass pipeline). A warmed-up `grouped` kernel adds to none of them.

    Example:
        ```python
        before = gemmc.stats()
        k(A, B, C, offsets=ends)
        assert gemmc.stats() == before
        ```
    """
    return dict(_COUNTS)
