"""Pruning (magnitude, sensitivity), masks kept through training, and 2:4 structured sparsity (Part IV)."""
