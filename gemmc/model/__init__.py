"""Hardware models every family shares: occupancy and thread-level parallelism (papers 000 and 001), and the
work list as the kernels read it."""
