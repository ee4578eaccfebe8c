"""A small NumPy neural-network library written for reading; the training substrate every chapter shares."""
