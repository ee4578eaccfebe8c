"""The hints that name a classic bug and its fix: one source for the labs' own checks and the grader's judges.

A check in a lab notebook (:mod:`scaledl.labs.check` and the per-lab check modules) prints ``Yours`` beside
``Spec`` and, under them, ``Hint: ...``; the grader's judge (:mod:`scaledl.course.tasks`) raises a message with
its first mismatches and ``Hint: ...``. Both take the text from here, and where a hint depends on what the wrong
output looks like, both call the same function to decide it (``rounding_hints`` for lab 03, ``prune_hint`` for
lab 04, ...), so a student's check cell names the same likely bug as the feedback page.
``tests/unit/test_lab_hints.py`` and ``tests/sim/test_lab_kernel_hints.py`` run, for every hint here, a wrong
implementation of its kind through the notebook's check and through the task's judge and compare the texts.

Hints are grouped by lab (``"kernel"`` is shared by the kernel tasks of labs 01, 02 and 04); each is one or more
sentences ending with a full stop, starting in lower case so that it reads after "Hint: ".

>>> hint("lab07", "busy")
'dispatching while busy: return 0 when busy is True (one server runs one batch).'
>>> with_hints("Task 1.1: batch_dispatch(3, True, 5): Yours 3, Spec 0", [hint("lab07", "busy")])[:72]
'Task 1.1: batch_dispatch(3, True, 5): Yours 3, Spec 0. Hint: dispatching'
"""

from __future__ import annotations

E4M3_MAX = 448.0
E4M3_MIN_NORMAL = 2.0**-6
E4M3_MIN_SUBNORMAL = 2.0**-9
_SATURATE = ("E4M3 (float8_e4m3fn) has no infinity, and this lab's rule saturates anything beyond the largest finite "
             "value to +-448, keeping the sign.")

HINTS: dict[str, dict[str, str]] = {
    # check_kernel (the notebooks of labs 01, 02, 04) and judge_kernel_runs / the SpMV judge (the grader)
    "kernel": {
        "out_of_bounds": "an index went past the edge of an array: a thread whose element lies outside the data "
                         "must do nothing there. Add the bounds guard around the store (`if i < out.size:`, or "
                         "`if row < C.shape[0] and col < C.shape[1]:` for a matrix), and load 0 for tile elements "
                         "outside A or B.",
        "past_end": "the kernel wrote beyond the output array (the guard region after it changed): a thread outside "
                    "the data stored a value. Add the bounds guard before the store.",
        "never_written": "some outputs were never written (they still hold the NaN poured in before the launch): "
                         "the grid does not cover the whole output (round the number of blocks up: (n + T - 1) // T), "
                         "or the bounds guard is too strict (< where <= was meant, or the wrong dimension for rows "
                         "and columns).",
        "grid_stride": "the elements past the grid's last thread were never written: the kernel writes one element "
                       "per thread, and this grid has fewer threads than the array has elements. A grid smaller "
                       "than the array needs a grid-stride loop: start at cuda.grid(1) and step by "
                       "cuda.gridsize(1) while the index is inside the array.",
        "race": "two runs on the same data disagreed: threads race. Shared memory must be fully written before "
                "anyone reads it (cuda.syncthreads() after loading a tile) and fully read before it is overwritten "
                "(cuda.syncthreads() after using it).",
        "impossible": "some outputs are infinite or larger than any sum of K products of the inputs: memory nobody "
                      "wrote was read, typically a shared tile used before every thread loaded it (a missing "
                      "cuda.syncthreads() after the loads), or an accumulator never set to 0.",
        "compare": "compare Yours and Spec at the first indices: a transposed index (row/col, threadIdx.x/.y) or a "
                   "wrong stride shows up as values from the wrong place.",
        "wrong_grid": "a clean block of outputs at the end (whole tiles of rows or columns, or the tail of a vector) "
                      "was never written: the grid is too small. Round the number of blocks up in every dimension, "
                      "((N + T - 1) // T, (M + T - 1) // T) for a grid of (x: columns, y: rows), not N // T, and "
                      "check that x counts columns and y rows.",
        "partial_tile": "the last, partial tile of K is left out (range(K // TILE)): loop over the tiles rounded "
                        "up, range((K + TILE - 1) // TILE), and load 0 for the tile elements past K.",
    },
    # scaledl.kernels.sanitizer's findings, one per kind (check_kernel on the simulator, and the grader's judges)
    "sanitizer": {
        "race": "two threads touched one element with nothing ordering them, even if the values came out right "
                "here: a tile must be fully loaded before anyone reads it (cuda.syncthreads() after the loads) and "
                "fully read before the next tile overwrites it (cuda.syncthreads() at the end of the loop); a total "
                "that many threads add to needs cuda.atomic.add.",
        "barrier": "every thread of a block must reach the same cuda.syncthreads() the same number of times: move "
                   "the barrier out of the branch (or the loop whose trip count differs), and instead of returning "
                   "early put the thread's work inside `if` and let it reach the barriers with the others.",
        "uninitialized": "shared memory was read where no thread of the block wrote it: load every element of the "
                         "tile (0 for those outside the matrix) before the cuda.syncthreads() that ends the loads, "
                         "and read only what was loaded.",
        "out_of_bounds": "an index went outside an array: the bounds guard is missing. A thread whose element lies "
                         "outside the data must not load or store it: `if row < C.shape[0] and col < C.shape[1]:` "
                         "around the store (`if i < out.size:` for a vector), and 0 for tile elements outside A or B.",
    },
    "lab01": {
        "gemm_intensity": "count loads of A and of B separately: how many blocks (rounded up) read each row of A, "
                          "and each column of B? Then add the stores of C and multiply elements by 4 bytes.",
    },
    "lab02": {
        "tiled_loads": "A's row panel is read once per block column (ceil(N / tile) times) and B's column panel "
                       "once per block row; round the block counts up.",
    },
    "lab03": {
        "subnormals_flushed": f"values below the smallest normal {E4M3_MIN_NORMAL} (2^-6) were flushed to zero: "
                              f"E4M3 has subnormals, multiples of 2^-9 down to {E4M3_MIN_SUBNORMAL}; clamp the "
                              "exponent at -6 so the spacing stays 2^-9 below 2^-6 instead of dropping them.",
        "subnormals_clamped": f"values below the smallest normal {E4M3_MIN_NORMAL} (2^-6) were clamped to it: "
                              "E4M3 has subnormals, multiples of 2^-9 below 2^-6; round them on that grid.",
        "subnormals_too_precise": "subnormals came back with more precision than E4M3 has: below 2^-6 the spacing "
                                  f"stays 2^-9 ({E4M3_MIN_SUBNORMAL}); clamp the exponent at -6 before computing "
                                  "the spacing.",
        "truncated": "values were truncated toward zero instead of rounded to the nearest E4M3 value.",
        "ties_away": "ties (values exactly halfway between two E4M3 values) were rounded away from zero, as "
                     "floor(v + 0.5) does: E4M3 rounds half to even, to the neighbour whose last mantissa bit is 0 "
                     "(np.rint does this).",
        "ties_toward": "ties (values exactly halfway between two E4M3 values) were rounded toward zero: E4M3 rounds "
                       "half to even, to the neighbour whose last mantissa bit is 0 (np.rint does this).",
        "saturate_beyond": f"out-of-range values came back beyond 448 (rounded on, but not saturated); {_SATURATE}",
        "saturate_inf": f"out-of-range values overflowed to inf; {_SATURATE}",
        "saturate_nan": f"out-of-range values became NaN (what a plain cast to float8_e4m3fn gives); {_SATURATE}",
        "saturate_sign": "the sign was lost: saturate to -448 for negative values.",
    },
    "lab04": {
        "prune_threshold": "with tied magnitudes you kept the wrong number: a threshold (|w| >= t or > t) keeps all "
                           "the weights tied at it, or none. Rank the weights (np.argsort) and keep exactly "
                           "k = n - round(s n).",
        "prune_rounding": "the kept count is off although every magnitude is distinct: the density is off by "
                          "rounding. Prune exactly round(s n) weights (Python's round, half to even), not int(s n) "
                          "(truncates) or ceil.",
        "prune_ties": "the count is right but tied weights are chosen differently: keep the lower flat index among "
                      "equals. A stable sort does it: np.argsort(-np.abs(w).ravel(), kind='stable') (the default "
                      "quicksort is not stable).",
        "prune_signed": "the wrong weights are kept: rank by magnitude |w|, not by the signed value.",
        "nm_axis": "the groups of 4 run along the wrong axis. They follow the layer's reduction axis (the one the "
                   "dot products sum over: axis 0 of W in x @ W), because the sparse tensor core skips multiplies "
                   "inside one dot product.",
        "nm_two_per_group": "every group of 4 must keep exactly 2 entries (2 largest |w|; zeros count as values "
                            "when a group has fewer than 2 non-zeros).",
        "nm_which_two": "keep the 2 largest |w| of each group; among equal magnitudes the lower index "
                        "(np.argsort(-np.abs(groups), axis=-1, kind='stable')[..., :2]).",
        "compress_shapes": "values keep 2 of every 4 entries (K/2 columns); metadata has one 16-bit word per 16 "
                           "dense columns (four groups of two 2-bit indices).",
        "compress_values": "values: the two kept entries of each group, in the order of their positions.",
        "compress_metadata": "metadata: group g of a row is nibble g % 4 of word g // 4, counted from the low bits, "
                             "and holds idx0 | idx1 << 2 with idx0 < idx1.",
        "spmv_rows": "row r sums data[j] * x[indices[j]] for j from indptr[r] to indptr[r + 1] - 1, in a float32 "
                     "accumulator; an empty row is 0.",
        "prune_gradually": "prune gradually (several rounds or Zhu and Gupta's cubic ramp), retrain with the mask "
                           "fixed (model.set_masks), and make sure the masks were set before the last training.",
        "nm_network_groups": "a group holds more than 2 non-zeros: the mask was built along the wrong axis, or not "
                             "set on the model (model.set_masks) before retraining.",
        "nm_network_retrain": "retrain after pruning, with the masks set (model.set_masks) so that the pruned "
                              "weights stay zero while the others make up for them.",
    },
    "lab05": {
        "missing_reduction": "a reduction round is missing: the reduce-scatter needs p - 1 rounds of 'reduce' "
                             "(after step s each rank has added s + 1 contributions to one block); with fewer, "
                             "blocks are short of some ranks' values.",
        "reduce_then_copy": "the first p - 1 rounds must add ('reduce') what arrives and the last p - 1 overwrite "
                            "('copy'); a copy in the reduce-scatter throws partial sums away, a reduce in the "
                            "all-gather counts them twice.",
        "off_by_one": "off-by-one chunk: in the reduce-scatter step s rank i sends block (i - s) mod p, the one it "
                      "received and reduced in the step before; in the all-gather it passes on the block it "
                      "finished last: (i + 1 - s) mod p.",
        "ring_time": "the sums are right but the time is not the ring's: each of the 2 (p-1) rounds must send "
                     "exactly one block of about n/p elements from every rank to its right neighbour, with no extra "
                     "rounds and no larger messages.",
        "ring_compare": "compare Yours and Spec: a value that is too small misses a contribution (a block reduced too "
                        "few times), one that is too large counts a contribution twice.",
        "deadlock": "a deadlock: every rank is blocked in a send that waits for its neighbour to post the matching "
                    "receive, and the neighbour is itself blocked sending. MPICH buffers small messages (so the bug "
                    "hides at small sizes) but not large ones. Use comm.Sendrecv(sendbuf, dest=right, recvbuf=..., "
                    "source=left), which pairs the two, or post comm.Irecv before comm.Send.",
        "mpi_values": "check the block bounds (they must cover every element once, also when the length is not a "
                      "multiple of p) and that the first p - 1 steps add what arrives and the last p - 1 overwrite.",
        "ring_cost": "ring_cost: route each ring edge order[i] -> order[i + 1] (and the last back to the first) by "
                     "nx.shortest_path(topology, a, b, weight='latency_s'), count how many edges use each link, and "
                     "return the largest count / bandwidth_Bps over the links.",
        "ring_order": "best_ring_order: try every order that starts with rank 0 (itertools.permutations of the "
                      "others) and keep the one with the smallest ring_cost.",
    },
    "lab06": {
        "top_k_count": "return exactly k indices.",
        "top_k_indices": "return integer indices into v, not the values.",
        "top_k_sorted": "the right indices in the wrong order: return them sorted (np.sort), as a sparse message "
                        "lists them.",
        "top_k_signed": "you ranked by the signed value: rank by magnitude |v|; a large negative gradient moves the "
                        "weights as much as a large positive one.",
        "top_k_ties": "the right magnitudes, but ties broken the other way: among equal |v| keep the lower index. "
                      "np.argsort(-np.abs(v), kind='stable') does it (the default sort is not stable).",
        "top_k_compare": "compare Yours and Spec: Spec is the k largest |v|, listed in index order.",
        "ef_not_cleared": "sent + residual is too large where something was sent: after sending, set the residual "
                          "to 0 at the sent indices, or it is sent again later.",
        "ef_lost": "what was not sent is lost: keep it in the residual (residual += grad, send the top k of the "
                   "residual, clear only the sent entries).",
        "ef_count": "send k = ceil(ratio n) elements (at least one) per step and tensor.",
        "ef_accumulated": "send the k largest entries of the accumulated residual (residual + grad), not of this "
                          "step's gradient alone.",
        "dgc_no_momentum": "you send what top-k with error feedback on the raw gradient sends: that is SGD without "
                           "momentum. Momentum correction accumulates the velocity: u = m u + g, then v = v + u, "
                           "send from v.",
        "dgc_float32": "close to the spec but not bit for bit: keep u and v float32 and update in the optimizer's "
                       "order, u *= m; u += g; v += u (a float64 intermediate or g + m u computed another way "
                       "rounds differently).",
        "dgc_masking": "with masking on, u must be cleared where v was sent (momentum factor masking), as well as "
                       "v.",
        "dgc_masking_off": "with masking off, u must keep its value where v was sent; only v is cleared.",
        "dgc_compare": "compare Yours and Spec: u = m u + g; v = v + u; send the top k of |v|; clear v there (and u "
                       "too when masking).",
        "reducer_sum": "each worker w compresses its own tensors with compressors[w]; scatter every message's "
                       "values into zeros of the tensor's shape and add the workers' arrays.",
        "reducer_keys": "call compressors[w].compress(grad, name) once per tensor, passing the tensor's name as the "
                        "key, so each tensor keeps its own residual.",
        "reducer_bytes": "per step append the length of all workers' encoded messages (a uint32 index and a float32 "
                         "value per sent element: 8 bytes) to sent_bytes, and the float32 bytes of all workers' "
                         "dense gradients (4 per element) to dense_bytes.",
        "training_reducer": "make a fresh reducer for the run, and pass it to train(..., reducer=reducer).",
        "training_momentum": "DGC keeps accuracy at 0.1 % density when the momentum lives in the compressor "
                             "(SGD(momentum=0) outside) and training runs long enough for the residuals to catch "
                             "up.",
    },
    "lab07": {
        "busy": "dispatching while busy: return 0 when busy is True (one server runs one batch).",
        "cap": "off-by-one cap: a batch may hold max_batch requests, never more.",
        "partial": "never dispatching a partial batch: when the server is free, send what is waiting, even one "
                   "request; waiting for a full batch can stall forever.",
        "cap_short": "off-by-one cap: batches stop at max_batch - 1 (a < where <= was meant?).",
        "md1_wait": "W_q = rho / (2 mu (1 - rho)) = rho x service / (2 (1 - rho)).",
        "steady_batch": "b = lambda (a + c b)  =>  b (1 - lambda c) = lambda a.",
    },
}


def hint(group: str, key: str) -> str:
    """The hint ``key`` of ``group`` ("kernel", "lab01" ... "lab07").

    Raises:
        KeyError: naming the group's hints, for an unknown key.
    """
    try:
        return HINTS[group][key]
    except KeyError:
        raise KeyError(f"no hint {group}/{key}; {group} has {sorted(HINTS.get(group, {}))}") from None


def with_hints(message: str, hints) -> str:
    """A judge's ``message`` followed by ``Hint: ...`` with each of ``hints`` (unchanged when there is none)."""
    hints = [h for h in dict.fromkeys(hints) if h]
    if not hints:
        return message
    return f"{message[:-1] if message.endswith('.') else message}. Hint: " + " ".join(hints)
