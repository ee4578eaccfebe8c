"""Planning a large training run (chapter 13): memory per GPU, pipeline schedules and their bubble, tensor-
parallel splits, and a step-time model of a TP x PP x DP layout built on :mod:`scaledl.comm.cost`.

Every constant is named and cited where it is defined. The step-time model is deliberately simple (stated in
:func:`step_time`): it is for seeing which term dominates, not for predicting a real run.

>>> round(training_bytes(1.2e12) / 1e12, 1)  # TB of weights, gradients and Adam state at 16 bytes/param
19.2
>>> gpus_to_hold(1.2e12)  # 80 GB H100s, before a single activation
240
>>> bubble_fraction(4, 12)
0.2
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from scaledl.comm.cost import allreduce_time, nccl_tree_allreduce_time
from scaledl.comm.topology import IB_NDR_Bps, NVLINK4_H100_Bps
from scaledl._args import count, one_of, positive

__all__ = ["BYTES_PER_PARAM_MIXED_ADAM", "H100_SXM", "HGX_H100", "GPUSpec", "training_bytes", "gpus_to_hold",
           "bubble_fraction", "pipeline_schedule", "in_flight", "column_parallel", "row_parallel",
           "gpt_shape", "Layout", "step_time", "DATA_PARALLEL_ALGORITHMS", "data_parallel_scaling",
           "FLOP_PER_MULTIPLY_ADD", "TRAIN_OVER_FORWARD", "RESNET50_PARAMS", "RESNET50_FORWARD_MULTIPLY_ADDS",
           "training_flop_per_example", "crossover_gpus"]

# Mixed-precision Adam: FP16/BF16 weights (2) and gradients (2), FP32 master weights, momentum and variance
# (4 + 4 + 4) = 16 bytes per parameter (Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training
# Trillion Parameter Models", SC 2020, section 3.1). Activations come on top.
BYTES_PER_PARAM_MIXED_ADAM = 16

# A multiply-add (one MAC, as papers that report "FLOPs" of convolutional networks usually count) is two
# floating-point operations. Training costs about three forward passes: the backward pass computes the
# gradient of the activations and of the weights, each a product as large as the forward one.
FLOP_PER_MULTIPLY_ADD = 2
TRAIN_OVER_FORWARD = 3
# ResNet-50 (He et al., "Deep Residual Learning for Image Recognition", CVPR 2016): 25.6 M parameters, and
# 4.1 G multiply-adds per 224x224 forward pass as torchvision's ResNet-50 counts them (4.09 G: the "v1.5"
# variant, stride 2 in the 3x3 rather than the first 1x1 convolution of a downsampling block; He et al.'s
# table 1 gives 3.8 G "FLOPs", which are multiply-adds, for the original).
RESNET50_PARAMS = 25.6e6
RESNET50_FORWARD_MULTIPLY_ADDS = 4.1e9


@dataclass(frozen=True)
class GPUSpec:
    """One accelerator's numbers used by the planner (units in the names)."""
    name: str
    memory_B: float
    dense_bf16_flops: float
    nvlink_Bps: float  # per direction, to the NVSwitch fabric
    power_W: float


# NVIDIA H100 Tensor Core GPU datasheet (SXM5, 2022-2023): 80 GB HBM3, 989 TFLOPS dense BF16 (1979 with 2:4
# sparsity), 3958 TFLOPS FP8 with sparsity, up to 700 W, NVLink 900 GB/s (both directions together).
H100_SXM = GPUSpec("H100 SXM", 80e9, 989e12, NVLINK4_H100_Bps, 700.0)
H100_FP8_SPARSE_FLOPS = 3958e12


@dataclass(frozen=True)
class HGXNode:
    """An 8-GPU HGX H100 board and the DGX H100 server built on it."""
    gpus: int
    nvswitch_chips: int
    gpu: GPUSpec
    system_power_W: float
    compute_nics: int  # network cards of the compute fabric (400 Gb/s each), not counting storage/management

    @property
    def fp8_sparse_flops(self) -> float:
        """The "32 petaflops" of NVIDIA's HGX H100 material: FP8 with 2:4 sparsity, all 8 GPUs."""
        return self.gpus * H100_FP8_SPARSE_FLOPS

    @property
    def dense_bf16_flops(self) -> float:
        return self.gpus * self.gpu.dense_bf16_flops


# HGX H100 8-GPU: 8 H100 SXM and 4 third-generation NVSwitch chips (NVIDIA HGX H100 product page and the H100
# architecture whitepaper, 2022). DGX H100 datasheet: about 10.2 kW maximum system power, and four OSFP ports
# serving eight single-port ConnectX-7 cards of up to 400 Gb/s InfiniBand/Ethernet for the compute fabric, as
# many as GPUs (the DGX H100 user guide's port table pairs each card with one GPU: the "rails"), plus two
# dual-port ConnectX-7 for storage and management, not counted here.
HGX_H100 = HGXNode(8, 4, H100_SXM, 10.2e3, 8)


def training_bytes(params, bytes_per_param: float = BYTES_PER_PARAM_MIXED_ADAM) -> float:
    """Bytes of weights, gradients and optimizer state for ``params`` parameters (no activations)."""
    return positive("params", params) * positive("bytes_per_param", bytes_per_param)


def gpus_to_hold(params, *, gpu_memory_B: float = H100_SXM.memory_B,
                 bytes_per_param: float = BYTES_PER_PARAM_MIXED_ADAM) -> int:
    """The fewest GPUs whose memory holds :func:`training_bytes` (a lower bound: activations excluded)."""
    return math.ceil(training_bytes(params, bytes_per_param) / positive("gpu_memory_B", gpu_memory_B))


def bubble_fraction(stages, microbatches):
    """Idle fraction of a GPipe or 1F1B pipeline step: (p - 1) / (m + p - 1) (Narayanan et al., "Efficient
    Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", SC 2021)."""
    p, m = count("stages", stages), count("microbatches", microbatches)
    return (p - 1) / (m + p - 1)


def pipeline_schedule(kind: str, stages: int, microbatches: int, *, forward: float = 1.0,
                      backward: float = 2.0) -> list[tuple[int, str, int, float, float]]:
    """Every stage's forward ("F") and backward ("B") passes as (stage, kind, microbatch, start, end).

    ``"gpipe"`` (Huang et al., "GPipe", NeurIPS 2019): each stage runs all m forwards, then all m backwards.
    ``"1f1b"`` (PipeDream-Flush; Narayanan et al. 2021): stage s runs min(p - s - 1, m) forwards to fill the
    pipe, then alternates one forward and one backward, then drains the backwards; at most p - s
    microbatches' activations are alive at once instead of m.

    A forward of microbatch j on stage s needs its forward on stage s - 1; a backward needs the backward on
    stage s + 1 (and its own forward); each stage runs its passes one at a time in the order above.

    Raises:
        ValueError: an unknown kind, stages or microbatches < 1, non-positive pass times.
    """
    if kind not in ("gpipe", "1f1b"):
        raise ValueError(f"unknown pipeline schedule {kind!r}; expected 'gpipe' or '1f1b'")
    p, m = count("stages", stages), count("microbatches", microbatches)
    tf, tb = positive("forward", forward), positive("backward", backward)
    orders = []
    for s in range(p):
        if kind == "gpipe":
            order = [("F", j) for j in range(m)] + [("B", j) for j in range(m)]
        else:
            warm = min(p - s - 1, m)
            order = [("F", j) for j in range(warm)]
            f, b = warm, 0
            while b < m:
                if f < m:
                    order.append(("F", f))
                    f += 1
                order.append(("B", b))
                b += 1
        orders.append(order)
    done: dict = {}
    pos, free = [0] * p, [0.0] * p
    out = []
    remaining = 2 * p * m
    while remaining:
        progressed = False
        for s in range(p):
            while pos[s] < len(orders[s]):
                op, j = orders[s][pos[s]]
                deps = [(s - 1, "F", j)] if op == "F" and s > 0 else []
                if op == "B":
                    deps = [(s, "F", j)] + ([(s + 1, "B", j)] if s < p - 1 else [])
                if not all(d in done for d in deps):
                    break
                start = max([free[s]] + [done[d] for d in deps])
                end = start + (tf if op == "F" else tb)
                done[s, op, j] = free[s] = end
                out.append((s, op, j, start, end))
                pos[s] += 1
                remaining -= 1
                progressed = True
        assert progressed, "pipeline schedule deadlocked"  # cannot happen for these two orders
    return sorted(out, key=lambda e: (e[0], e[3]))


def in_flight(schedule) -> list[int]:
    """Per stage, the most microbatches whose forward has run and whose backward has not (activations kept)."""
    stages = max(e[0] for e in schedule) + 1
    peak = [0] * stages
    for s in range(stages):
        alive = 0
        for _, op, _, _, _ in (e for e in schedule if e[0] == s):
            alive += 1 if op == "F" else -1
            peak[s] = max(peak[s], alive)
    return peak


def column_parallel(x, w, parts: int, matmul=None) -> list[np.ndarray]:
    """Each of ``parts`` GPUs' output of a column-split layer: GPU i holds columns block i of ``w`` and computes
    ``x @ w[:, block i]``; concatenating the outputs (an all-gather) gives ``x @ w``."""
    matmul = matmul or np.matmul
    cuts = [(i * w.shape[1]) // parts for i in range(count("parts", parts) + 1)]
    return [matmul(x, np.ascontiguousarray(w[:, a:b])) for a, b in zip(cuts, cuts[1:])]


def row_parallel(x, w, parts: int, matmul=None) -> list[np.ndarray]:
    """Each GPU's partial output of a row-split layer: GPU i holds rows block i of ``w`` and the matching
    columns of ``x``, and computes ``x[:, block i] @ w[block i, :]``; summing them (an all-reduce) gives
    ``x @ w``, up to the order of the additions."""
    matmul = matmul or np.matmul
    cuts = [(i * w.shape[0]) // parts for i in range(count("parts", parts) + 1)]
    return [matmul(np.ascontiguousarray(x[:, a:b]), np.ascontiguousarray(w[a:b, :])) for a, b in zip(cuts, cuts[1:])]


def gpt_shape(params: float, *, width_per_layer: int = 128) -> tuple[int, int]:
    """(layers, hidden) of a GPT-style transformer with about ``params`` parameters: 12 L h^2 parameters per
    model (attention 4 h^2, MLP 8 h^2) and h = 128 L, the aspect of GPT-3 175B (96 layers, h = 12288; Brown
    et al., "Language Models are Few-Shot Learners", NeurIPS 2020). h is rounded to a multiple of 128.

    >>> gpt_shape(175e9)
    (96, 12288)
    """
    h = (positive("params", params) * width_per_layer / 12) ** (1 / 3)
    h = max(128, int(round(h / 128)) * 128)
    return max(1, round(h / width_per_layer)), h


@dataclass(frozen=True)
class Layout:
    """A TP x PP x DP split of a GPT-style model over ``tp * pp * dp`` GPUs."""
    params: float
    tp: int = 1
    pp: int = 1
    dp: int = 1
    microbatches: int = 8
    tokens_per_step: float = 4 * 2**20  # a global batch of 4 M tokens
    flops_efficiency: float = 0.4  # fraction of dense BF16 peak reached by the matrix products

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp


def step_time(layout: Layout, gpu: GPUSpec = H100_SXM, *, nic_Bps: float = IB_NDR_Bps,
              nvlink_alpha_s: float = 1e-6, nic_alpha_s: float = 5e-6) -> dict:
    """Memory per GPU and a step-time breakdown (seconds) of ``layout``.

    Model: compute = 6 x params x tokens / (gpus x efficiency x peak) (forward 2, backward 4 FLOPs per
    parameter and token); the pipeline adds compute x (pp - 1) / m of bubble; tensor parallelism all-reduces
    each layer's activations (tokens/dp x h x 2 bytes) twice in the forward and twice in the backward pass,
    over NVLink (a tp group must fit in one 8-GPU node); data parallelism all-reduces the BF16 gradients of
    one GPU's share of the weights over InfiniBand (one NIC per GPU), once per step and not overlapped with
    compute. Memory: 16 bytes per parameter over tp x pp GPUs; activations are not counted.

    Raises:
        ValueError: a layout whose tp exceeds 8 or whose pp exceeds the model's layers.
    """
    layers, hidden = gpt_shape(layout.params)
    tp, pp, dp = count("tp", layout.tp), count("pp", layout.pp), count("dp", layout.dp)
    m = count("microbatches", layout.microbatches)
    if tp > 8:
        raise ValueError(f"tp must be <= 8 (a tensor-parallel group stays inside one NVSwitch node), got {tp}")
    if pp > layers:
        raise ValueError(f"pp must be <= the model's {layers} layers, got {pp}")
    gpus = tp * pp * dp
    compute = 6 * layout.params * layout.tokens_per_step / (gpus * layout.flops_efficiency * gpu.dense_bf16_flops)
    bubble = compute * (pp - 1) / m
    act_B = layout.tokens_per_step / dp * hidden * 2
    tp_comm = 4 * math.ceil(layers / pp) * allreduce_time("ring", tp, act_B, alpha=nvlink_alpha_s,
                                                          beta=1 / gpu.nvlink_Bps) if tp > 1 else 0.0
    grad_B = 2 * layout.params / (tp * pp)
    dp_comm = allreduce_time("ring", dp, grad_B, alpha=nic_alpha_s, beta=1 / nic_Bps) if dp > 1 else 0.0
    memory = training_bytes(layout.params) / (tp * pp)
    return {"gpus": gpus, "layers": layers, "hidden": hidden, "memory_per_gpu_B": memory,
            "fits": memory <= gpu.memory_B, "compute_s": compute, "bubble_s": bubble, "tp_comm_s": tp_comm,
            "dp_comm_s": dp_comm, "step_s": compute + bubble + tp_comm + dp_comm,
            "bubble_fraction": bubble_fraction(pp, m)}


# The all-reduce algorithms of data_parallel_scaling: a flat ring, and NCCL's tree (a chain inside each node,
# a binary tree across the nodes) priced as NCCL's tuner prices it (cost.nccl_tree_allreduce_time).
DATA_PARALLEL_ALGORITHMS = ("ring", "tree")


def data_parallel_scaling(gpus, *, compute_1gpu_s: float, gradient_B: float, gpus_per_node: int = 8,
                          nics_per_node: int = HGX_H100.compute_nics, nvlink_Bps: float = NVLINK4_H100_Bps,
                          nic_Bps: float = IB_NDR_Bps, alpha_s: float = 5e-6,
                          algorithm: str = "ring") -> tuple[np.ndarray, np.ndarray]:
    """(compute_s, communication_s) per step of data parallelism with a fixed global batch: compute halves when
    the GPUs double, the all-reduce of the gradients does not (its bytes per GPU tend to 2 x gradient_B).

    Inside one node (``gpus <= gpus_per_node``) the all-reduce runs over NVLink. Beyond it, the gradient is cut
    into ``nics_per_node`` parts, each all-reduced at the same time by its own ring (or tree) that leaves every
    node through a different NIC (a "rail"; NCCL runs one ring per NIC). Each NIC therefore carries
    1/nics_per_node of the cross-node bytes: the bandwidth term runs at ``nics_per_node x nic_Bps``, but no
    faster than NVLink, which every ring also crosses inside each node (a ring runs at its slowest link), and
    the latency term is one ring's (or tree's). ``nics_per_node=1`` is one NIC carrying the whole cross-node
    ring. The default, 8, is the DGX H100's eight 400 Gb/s compute NICs (:data:`HGX_H100`).

    ``algorithm`` (one of :data:`DATA_PARALLEL_ALGORITHMS`):
      - ``"ring"``: a flat ring over all g GPUs, ``2 (g-1) alpha + 2 (g-1)/g x gradient_B x beta``; every one
        of its 2 (g-1) steps pays ``alpha_s``, the NVLink hops included.
      - ``"tree"``: NCCL's tree, ``2 ((ppn-1) alpha + floor(lg nodes) alpha) + 2 x gradient_B x beta`` with
        ppn GPUs in each of the nodes (NCCL's tuner, :func:`scaledl.comm.cost.nccl_tree_allreduce_time`),
        the same ``alpha_s`` for a hop inside a node and between nodes, as the ring has. Beyond one node,
        gpus must be whole nodes (multiples of gpus_per_node).

    >>> _, rails = data_parallel_scaling([16], compute_1gpu_s=1.0, gradient_B=1e8, alpha_s=0.0)
    >>> _, one = data_parallel_scaling([16], compute_1gpu_s=1.0, gradient_B=1e8, nics_per_node=1, alpha_s=0.0)
    >>> round(float(one[0] / rails[0]), 6)   # eight rails at 8 x 50 GB/s instead of one NIC at 50 GB/s
    8.0
    >>> _, ring = data_parallel_scaling([1024], compute_1gpu_s=1.0, gradient_B=1e8)
    >>> _, tree = data_parallel_scaling([1024], compute_1gpu_s=1.0, gradient_B=1e8, algorithm="tree")
    >>> round(float(ring[0]) * 1e3, 2), round(float(tree[0]) * 1e3, 2)  # ms: 2046 x 5 us of latency, or 28 x 5 us
    (10.73, 0.64)

    Raises:
        ValueError: gpus < 1, gpus_per_node or nics_per_node < 1, non-positive times, sizes or bandwidths, an
            unknown algorithm, or (tree) gpus beyond one node that are not whole nodes.
        TypeError: gpus_per_node or nics_per_node not an int.
    """
    one_of("algorithm", algorithm, DATA_PARALLEL_ALGORITHMS)
    g = np.asarray(gpus)
    if g.size and np.min(g) < 1:
        raise ValueError(f"gpus must be >= 1, got {g.tolist()}")
    per_node, nics = count("gpus_per_node", gpus_per_node), count("nics_per_node", nics_per_node)
    nvlink, nic = positive("nvlink_Bps", nvlink_Bps), positive("nic_Bps", nic_Bps)
    compute = positive("compute_1gpu_s", compute_1gpu_s) / g
    cross_Bps = min(nics * nic, nvlink)
    if algorithm == "ring":
        def allreduce(beta):
            return allreduce_time("ring", g, gradient_B, alpha=alpha_s, beta=beta)
    else:
        partial = (g > per_node) & (g % per_node != 0)
        if np.any(partial):
            raise ValueError(f"gpus beyond one node must be whole nodes (multiples of gpus_per_node={per_node}) "
                             f"for algorithm='tree', got {g[partial].tolist()}")
        nodes, ppn = np.where(g <= per_node, 1, g // per_node), np.minimum(g, per_node)

        def allreduce(beta):
            return nccl_tree_allreduce_time(nodes, ppn, gradient_B, intra_alpha=alpha_s, inter_alpha=alpha_s,
                                            beta=beta)
    comm = np.where(g <= per_node, allreduce(1 / nvlink), allreduce(1 / cross_Bps))
    return compute, comm


def training_flop_per_example(forward_multiply_adds, *, train_over_forward: float = TRAIN_OVER_FORWARD) -> float:
    """FLOP to train on one example: ``FLOP_PER_MULTIPLY_ADD x train_over_forward x forward_multiply_adds``.

    >>> training_flop_per_example(RESNET50_FORWARD_MULTIPLY_ADDS) / 1e9   # 2 x 3 x 4.1 G
    24.6
    """
    return (FLOP_PER_MULTIPLY_ADD * positive("train_over_forward", train_over_forward)
            * positive("forward_multiply_adds", forward_multiply_adds))


def crossover_gpus(gpus, compute_s, comm_s):
    """The first GPU count in ``gpus`` (ascending) at which ``comm_s`` exceeds ``compute_s``; None if none does.

    >>> crossover_gpus([1, 2, 4], [4.0, 2.0, 1.0], [0.0, 1.5, 1.5])
    4
    """
    g, c, a = (np.asarray(x, dtype=np.float64) for x in (gpus, compute_s, comm_s))
    if not (g.ndim == 1 and g.shape == c.shape == a.shape):
        raise ValueError(f"gpus, compute_s and comm_s must be 1-D of one length, got shapes {g.shape}, {c.shape}, "
                         f"{a.shape}")
    if np.any(np.diff(g) <= 0):
        raise ValueError(f"gpus must be strictly ascending, got {g.tolist()}")
    over = np.flatnonzero(a > c)
    return int(g[over[0]]) if over.size else None
