"""Concurrent groups of independent GEMMs (paper 004, GOLDYLOC): share plans, the predictor, the fused launch.

`plan.plan_groups` runs after the pass pipeline has planned every member kernel; the runtime side (GO-kernel
tuning under contention, streams, events) is gemmc/runtime/concurrent.py.
"""
