"""Pruning (magnitude, OBD, random; layer-wise or global), masks kept through training, and N:M sparsity.

==================  ===========================================================================
``masks``           exact-count masks: ``magnitude_mask``, ``nm_mask``, ``random_mask``, ``top_k_mask``
``nm``              ``compress_nm`` / ``decompress_nm``: values + 2-bit positions, as sparse tensor cores
``saliency``        ``obd_saliency`` (0.5 h w^2) and ``hessian_diagonal`` of a model (Gauss-Newton/Fisher)
``prune``           ``prune_masks`` of a ``scaledl.nn`` model, layer-wise or global; ``nm_masks``
``schedules``       ``prune_and_retrain``: one-shot, iterative, gradual (cubic, Zhu and Gupta 2017)
``analysis``        ``zero_multiplies`` (multiplies with a zero weight or input), ``sensitivity_scan``
``toggles``         ``bus_toggles``: wire switching of a value stream, with and without zero gating
``study``           chapters 11-12's experiments: trained baselines, the seed sweep
``views``           ``pruning_view``, chapter 11's explorer (matplotlib imported inside it)
==================  ===========================================================================

CSR and CSC matrices are ``scipy.sparse`` ones (``scipy.sparse.csr_array(w * mask)``); the kernels in
:mod:`scaledl.kernels.spmv` take them directly.

>>> import numpy as np
>>> w = np.arange(1.0, 9.0).reshape(2, 4)
>>> int(nm_mask(w, 2, 4, axis=1).sum()), int(magnitude_mask(w, 0.75).sum())
(4, 2)
"""

from scaledl.sparsity.analysis import LayerZeros, sensitivity_scan, zero_multiplies
from scaledl.sparsity.masks import (density, kept_count, magnitude_mask, nm_mask, random_mask, score_mask,
                                    top_k_mask)
from scaledl.sparsity.nm import compress_nm, decompress_nm, metadata_words
from scaledl.sparsity.prune import model_sparsity, nm_masks, prunable, prune_masks, scores
from scaledl.sparsity.saliency import hessian_diagonal, obd_saliency
from scaledl.sparsity.schedules import PruneRun, cubic_sparsity, iterative_sparsities, prune_and_retrain

__all__ = [
    "magnitude_mask", "nm_mask", "random_mask", "score_mask", "top_k_mask", "kept_count", "density",
    "compress_nm", "decompress_nm", "metadata_words",
    "obd_saliency", "hessian_diagonal",
    "prunable", "scores", "prune_masks", "nm_masks", "model_sparsity",
    "cubic_sparsity", "iterative_sparsities", "prune_and_retrain", "PruneRun",
    "zero_multiplies", "LayerZeros", "sensitivity_scan",
]
