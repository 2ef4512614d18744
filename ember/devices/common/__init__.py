"""Kernels written once in Python array API standard operations, by family: any array library that follows the
standard runs them; a device overrides one where its library has something faster (``cpu/`` for NumPy)."""
