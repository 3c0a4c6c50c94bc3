"""GPU side of gemmc: the only package that imports CuPy, and only when a kernel is called."""
