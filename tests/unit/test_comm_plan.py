"""Chapter 13's planner: memory, pipeline schedules and their bubble, tensor-parallel splits, step time."""

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

from scaledl.comm import plan as P  # noqa: E402
from scaledl.nn import ops  # noqa: E402
from scaledl.comm import views as CV


def test_memory_and_gpu_count():
    assert P.training_bytes(1e9) == 16e9
    assert P.gpus_to_hold(1.2e12) == 240 and P.gpus_to_hold(5e9) == 1
    with pytest.raises(ValueError, match=r"params must be a positive finite number, got -1"):
        P.training_bytes(-1)


@pytest.mark.parametrize("kind", ["gpipe", "1f1b"])
@pytest.mark.parametrize("p, m", [(1, 1), (2, 3), (4, 4), (4, 12), (5, 7)])
def test_schedules_have_the_bubble_of_the_formula(kind, p, m):
    sched = P.pipeline_schedule(kind, p, m)
    assert len(sched) == 2 * p * m
    makespan = max(e[4] for e in sched)
    busy = m * (1.0 + 2.0)
    assert 1 - busy / makespan == pytest.approx(P.bubble_fraction(p, m), abs=1e-12)
    for s, op, j, start, end in sched:  # dependencies hold
        if op == "F" and s > 0:
            assert start >= next(e[4] for e in sched if e[:3] == (s - 1, "F", j))
        if op == "B" and s < p - 1:
            assert start >= next(e[4] for e in sched if e[:3] == (s + 1, "B", j))


def test_1f1b_keeps_fewer_activations():
    assert P.in_flight(P.pipeline_schedule("gpipe", 4, 8)) == [8, 8, 8, 8]
    assert P.in_flight(P.pipeline_schedule("1f1b", 4, 8)) == [4, 3, 2, 1]
    with pytest.raises(ValueError, match=r"unknown pipeline schedule 'zb'"):
        P.pipeline_schedule("zb", 2, 2)
    with pytest.raises(ValueError, match=r"microbatches must be an int >= 1, got 0"):
        P.bubble_fraction(2, 0)


def test_column_split_is_bitwise_and_row_split_within_rounding():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 37)).astype(np.float32)
    w = rng.standard_normal((37, 23)).astype(np.float32)
    full = ops.matmul(x, w)
    cols = P.column_parallel(x, w, 4, matmul=ops.matmul)
    assert np.array_equal(np.concatenate(cols, axis=1), full)  # each output computed in the same order
    rows = P.row_parallel(x, w, 4, matmul=ops.matmul)
    summed = rows[0] + rows[1] + rows[2] + rows[3]
    # a different order of 37 additions: within 37 eps sum|x w| (Higham's bound), far looser than what happens
    bound = 37 * np.finfo(np.float32).eps * ops.matmul(np.abs(x), np.abs(w))
    assert np.all(np.abs(summed - full) <= bound)


def test_step_time_terms():
    r = P.step_time(P.Layout(175e9, tp=8, pp=8, dp=16, microbatches=16))
    assert (r["layers"], r["hidden"], r["gpus"]) == (96, 12288, 1024)
    assert r["bubble_fraction"] == pytest.approx(7 / 23)
    assert r["bubble_s"] == pytest.approx(r["compute_s"] * 7 / 16)
    assert r["memory_per_gpu_B"] == pytest.approx(175e9 * 16 / 64)
    one = P.step_time(P.Layout(1e9))
    assert one["tp_comm_s"] == one["dp_comm_s"] == one["bubble_s"] == 0.0
    with pytest.raises(ValueError, match=r"tp must be <= 8"):
        P.step_time(P.Layout(1e9, tp=16))


def test_data_parallel_compute_halves_and_communication_does_not():
    g = np.array([16, 32, 64, 128])
    compute, comm = P.data_parallel_scaling(g, compute_1gpu_s=100.0, gradient_B=1e8)
    assert np.allclose(compute[1:] / compute[:-1], 0.5)
    # never falls: the bandwidth term tends to 2 n beta, the latency term grows with p
    assert np.all(np.diff(comm) > 0)
    _, bandwidth = P.data_parallel_scaling(g, compute_1gpu_s=100.0, gradient_B=1e8, alpha_s=0.0)
    assert np.all(np.diff(bandwidth) > 0) and bandwidth[-1] / bandwidth[0] == pytest.approx((127 / 128) / (15 / 16))


def test_layout_view():
    fig = CV.layout_view(175, 8, 8, 16, 16)
    assert "1024 GPUs" in fig._suptitle.get_text()
    matplotlib.pyplot.close(fig)
    assert CV.layout_view(175, 16, 1, 1).startswith("not a valid layout: tp must be <= 8")


def test_resnet50_training_flop_is_two_flop_per_multiply_add_times_three_passes():
    # 4.1 G multiply-adds forward = 8.2 GFLOP; forward + backward = 3 x forward = 24.6 GFLOP per image
    assert P.FLOP_PER_MULTIPLY_ADD == 2 and P.TRAIN_OVER_FORWARD == 3
    assert P.RESNET50_FORWARD_MULTIPLY_ADDS == 4.1e9
    flop = P.training_flop_per_example(P.RESNET50_FORWARD_MULTIPLY_ADDS)
    assert flop == pytest.approx(24.6e9, rel=1e-12)
    assert flop != pytest.approx(12.3e9, rel=0.1)  # the old count forgot the 2 FLOP per multiply-add
    with pytest.raises(ValueError, match=r"forward_multiply_adds must be a positive finite number, got -1"):
        P.training_flop_per_example(-1)


def _resnet50(**kw):
    # Chapter 13, section 5: global batch 8192 on H100s at 40 % of dense BF16 peak, FP32 gradients, ring
    # all-reduce with alpha = 5 us over NVLink inside an 8-GPU node and 50 GB/s InfiniBand NDR NICs beyond.
    compute_1 = P.training_flop_per_example(P.RESNET50_FORWARD_MULTIPLY_ADDS) * 8192 / (0.4 * 989e12)
    gpus = 2 ** np.arange(0, 11)
    comp, comm = P.data_parallel_scaling(gpus, compute_1gpu_s=compute_1, gradient_B=4 * P.RESNET50_PARAMS, **kw)
    return gpus, comp, comm


def test_resnet50_communication_overtakes_compute_at_256_gpus_on_the_nodes_eight_rails():
    assert P.HGX_H100.compute_nics == 8  # DGX H100: eight 400 Gb/s ConnectX-7 for the compute fabric
    gpus, comp, comm = _resnet50()
    # the ring by hand beyond one node: 2 (g-1) alpha + 2 (g-1)/g n / (8 NICs x 50 GB/s)
    for g in (16, 128, 256, 1024):
        by_hand = 2 * (g - 1) * 5e-6 + 2 * (g - 1) / g * 4 * 25.6e6 / (8 * 50e9)
        assert comm[list(gpus).index(g)] == pytest.approx(by_hand, rel=1e-12)
    assert comp[list(gpus).index(128)] > comm[list(gpus).index(128)]
    assert P.crossover_gpus(gpus, comp, comm) == 256
    # weak scaling (1024 images per GPU): 99 % at 16 GPUs, 86 % at 1024
    c8 = comp[list(gpus).index(8)]
    weak = [round(100 * c8 / (c8 + comm[list(gpus).index(g)])) for g in (16, 1024)]
    assert weak == [99, 86]


def test_one_nic_per_node_reproduces_the_single_nic_ring():
    gpus, comp, comm = _resnet50(nics_per_node=1)
    for g in (64, 128):  # 2 (g-1) alpha + 2 (g-1)/g n / 50 GB/s: the whole cross-node ring through one NIC
        by_hand = 2 * (g - 1) * 5e-6 + 2 * (g - 1) / g * 4 * 25.6e6 / 50e9
        assert comm[list(gpus).index(g)] == pytest.approx(by_hand, rel=1e-12)
    assert comp[list(gpus).index(64)] > comm[list(gpus).index(64)]
    assert P.crossover_gpus(gpus, comp, comm) == 128
    c8 = comp[list(gpus).index(8)]
    assert [round(100 * c8 / (c8 + comm[list(gpus).index(g)])) for g in (16, 1024)] == [94, 82]
    # with half the FLOP (multiply-adds counted as one operation) it would wrongly come at 64
    assert P.crossover_gpus(gpus, comp / 2, comm) == 64


@pytest.mark.parametrize("per_node", [4, 8])
def test_rails_divide_the_cross_node_bandwidth_term(per_node):
    g = np.array([1, 2, per_node, 2 * per_node, 64, 512])
    kw = dict(compute_1gpu_s=1.0, gradient_B=1e8, gpus_per_node=per_node, alpha_s=0.0)
    _, one = P.data_parallel_scaling(g, nics_per_node=1, **kw)
    _, rails = P.data_parallel_scaling(g, nics_per_node=per_node, **kw)
    inside = g <= per_node
    assert np.array_equal(one[inside], rails[inside])  # inside the node both run over NVLink
    assert np.allclose(one[~inside] / rails[~inside], per_node, rtol=1e-12)  # one NIC per GPU: per_node x faster
    # the latency term does not change: the rails' rings run side by side
    _, lat1 = P.data_parallel_scaling(g, compute_1gpu_s=1.0, gradient_B=1.0, gpus_per_node=per_node, nics_per_node=1)
    _, latn = P.data_parallel_scaling(g, compute_1gpu_s=1.0, gradient_B=1.0, gpus_per_node=per_node,
                                      nics_per_node=per_node)
    assert np.allclose(lat1 - latn, 2 * (g - 1) / g * 1.0 * (1 / 50e9 - 1 / (per_node * 50e9)) * ~inside, atol=1e-18)


def test_rails_are_no_faster_than_nvlink():
    g = np.array([16, 1024])
    kw = dict(compute_1gpu_s=1.0, gradient_B=1e8, alpha_s=0.0, nvlink_Bps=450e9)
    _, capped = P.data_parallel_scaling(g, nics_per_node=8, nic_Bps=200e9, **kw)  # 1.6 TB/s of NICs
    assert np.allclose(capped, 2 * (g - 1) / g * 1e8 / 450e9, rtol=1e-12)
    with pytest.raises(ValueError, match=r"nics_per_node must be an int >= 1, got 0"):
        P.data_parallel_scaling(g, nics_per_node=0, **kw)
    with pytest.raises(TypeError, match=r"nics_per_node must be an int, got 2.5"):
        P.data_parallel_scaling(g, nics_per_node=2.5, **kw)
    with pytest.raises(ValueError, match=r"nic_Bps must be a positive finite number, got 0"):
        P.data_parallel_scaling(g, nic_Bps=0, **kw)


def test_crossover_gpus_checks_its_input():
    assert P.crossover_gpus([1, 2], [2.0, 1.0], [0.0, 0.5]) is None
    with pytest.raises(ValueError, match=r"gpus must be strictly ascending, got \[2.0, 1.0\]"):
        P.crossover_gpus([2, 1], [1.0, 1.0], [0.0, 0.0])
    with pytest.raises(ValueError, match=r"must be 1-D of one length"):
        P.crossover_gpus([1, 2], [1.0], [0.0, 0.0])


def test_ring_is_the_default_and_unchanged_from_the_chapters_table():
    gpus, comp, comm = _resnet50()
    _, _, ring = _resnet50(algorithm="ring")
    assert np.array_equal(comm, ring)
    # chapter 13, section 5, as printed before the algorithm became a parameter (ms, 2 decimals)
    assert [round(x * 1e3, 2) for x in comm] == [0.0, 0.24, 0.37, 0.47, 0.63, 0.81, 1.13, 1.78, 3.06, 5.62,
                                                 10.74]
    # 95 % of the loss at 1024 GPUs is the latency term 2 (g-1) alpha
    assert round(100 * 2 * 1023 * 5e-6 / comm[-1]) == 95


def test_tree_is_nccls_closed_form_beyond_and_inside_a_node():
    gpus, comp, tree = _resnet50(algorithm="tree")
    n = 4 * 25.6e6
    for g in (2, 8):  # one node: a chain of g GPUs over NVLink, 2 (g-1) alpha + 2 n / 450 GB/s
        assert tree[list(gpus).index(g)] == pytest.approx(2 * (g - 1) * 5e-6 + 2 * n / 450e9, rel=1e-12)
    for g, lg in ((16, 1), (256, 5), (1024, 7)):  # 2 (7 alpha + lg(nodes) alpha) + 2 n / (8 x 50 GB/s)
        assert tree[list(gpus).index(g)] == pytest.approx(2 * (7 + lg) * 5e-6 + 2 * n / 400e9, rel=1e-12)
    assert tree[0] == 0.0


def test_tree_beats_the_ring_at_large_p_and_not_where_bandwidth_dominates():
    gpus, comp, ring = _resnet50()
    _, _, tree = _resnet50(algorithm="tree")
    inside = (gpus > 1) & (gpus <= 8)
    # inside a node both pay 2 (g-1) alpha, and the tree moves 2 n against the ring's 2 n (g-1)/g
    assert np.all(ring[inside] < tree[inside])
    assert np.all(tree[gpus >= 16] < ring[gpus >= 16])
    assert ring[-1] / tree[-1] > 15  # 2046 latency steps against 28
    # so the crossover moves from 256 to 1024 GPUs and weak scaling at 1024 from 86 % to 99 %
    assert P.crossover_gpus(gpus, comp, ring) == 256 and P.crossover_gpus(gpus, comp, tree) == 1024
    c8 = comp[list(gpus).index(8)]
    assert [round(100 * c8 / (c8 + x[-1])) for x in (ring, tree)] == [86, 99]


def test_algorithm_is_checked():
    kw = dict(compute_1gpu_s=1.0, gradient_B=1e8)
    with pytest.raises(ValueError, match=r"algorithm must be one of 'ring', 'tree', got 'flat'"):
        P.data_parallel_scaling([16], algorithm="flat", **kw)
    with pytest.raises(ValueError, match=r"multiples of gpus_per_node=8\) for algorithm='tree', got \[12, 20\]"):
        P.data_parallel_scaling([4, 12, 16, 20], algorithm="tree", **kw)
    _, ring = P.data_parallel_scaling([4, 12, 20], **kw)  # a ring takes any count
    assert ring.shape == (3,)


def test_data_parallel_view_shows_the_chosen_algorithm():
    for algorithm, cross, weak in (("ring", 256, 86), ("tree", 1024, 99)):
        fig = CV.data_parallel_view(algorithm)
        title = fig._suptitle.get_text()
        assert title.startswith(f"{algorithm} all-reduce, 8 NICs per node, alpha 5 us")
        assert f"from {cross} GPUs on" in title and title.endswith(f"weak scaling at 1024 GPUs {weak} %")
        matplotlib.pyplot.close(fig)
    fig = CV.data_parallel_view("tree", alpha_us=0.0, batch=65536)  # no latency, 8x the work: never crosses
    assert "at no count up to 1024 GPUs" in fig._suptitle.get_text()
    matplotlib.pyplot.close(fig)
    with pytest.raises(ValueError, match=r"algorithm must be one of 'ring', 'tree', got 'mesh'"):
        CV.data_parallel_view("mesh")
