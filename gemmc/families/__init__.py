"""Kernel families: one package each (simt, tensorcore, tsm2r, tsm2l), each implementing the `KernelFamily`
protocol of `base.py`, listed once in `registry.py`."""
