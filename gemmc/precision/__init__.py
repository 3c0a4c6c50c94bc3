"""Precision tools: the numpy emulator of every tensor-core split (emulate.py)."""
