"""Checking students' lab work: side-by-side comparison with a reference at odd sizes, on random data,
with poisoned outputs, so the classic kernel bugs (no bounds guard, no syncthreads) are caught."""
