"""Numba CUDA kernels, one module per operation: NumPy reference first, numbered variants, then a launcher.

Planned (Part II): GEMM (naive, shared-memory tiled, register-blocked), bandwidth and FMA-throughput probes,
a reduction, direct and Winograd convolution. Every variant runs on the active backend (see
:mod:`scaledl.device`) and is checked against its reference at odd sizes before anything is timed.
"""
