"""Collective communication (Part V): an all-reduce simulator with alpha-beta-gamma cost models, ring and
tree algorithms, gradient compression, and the same collectives over MPI (mpi4py)."""
