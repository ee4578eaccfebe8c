"""The cluster model of a data-parallel run (scaledl.comm.cluster_model).

- Closed-form consistency: one node at its own batch is efficiency 1; infinite bandwidth and zero latency
  leave only the small-batch loss; a faster NIC never slows a step; the two losses add up to 1 - efficiency.
- Overlap as bucketed all-reduce behaves: a bucket starts when its gradients exist, so one bucket never
  hides and the last bucket always shows; the exposed time against its closed forms in both regimes.
- Calibrations through two measured points; the communication-only baseline; a one-GPU baseline.
- The simulator (netsim on topology.cluster) agrees with the closed forms on uncontended clusters at small
  sizes to float64 rounding (1e-12 relative, as test_comm_netsim), at odd GPU counts and node counts.
- Bad arguments raise ValueError / TypeError naming the argument, the value and what was expected.
"""

import math

import pytest

from scaledl.comm import cost
from scaledl.comm.cluster_model import (ALGORITHMS, P100_RESNET50, P100_TF_BENCHMARKS, V100_RESNET50, Calibration,
                                        DataParallelRun, communication_only, exposed_allreduce_s, fixed_overhead_s,
                                        predict)

REL = 1e-12


def small(**kw):
    """A small uncontended cluster: one NIC per GPU, a 1e5-parameter model."""
    base = dict(calibration=P100_RESNET50, gpus=15, gpus_per_node=5, nics_per_node=5, intra_Bps=50e9,
                intra_latency_s=0.5e-6, nic_Bps=12.5e9, nic_latency_s=3e-6, params=1e5, batch=16)
    base.update(kw)
    return DataParallelRun(**base)


def test_calibration_passes_through_its_published_points_and_falls_with_batch():
    # the P100 line goes through both of TensorFlow's measured points: its fixed part is measured
    for model, batch, rate in P100_TF_BENCHMARKS:
        if model == "ResNet-50":
            assert P100_RESNET50.samples_per_s(batch) == pytest.approx(rate, rel=REL)
    assert P100_RESNET50.fixed_measured and P100_RESNET50.fixed_s == pytest.approx(
        32 / 195 - 32 * (64 / 219 - 32 / 195) / 32, rel=REL)
    assert V100_RESNET50.samples_per_s(256) == pytest.approx(1200.0, rel=REL)
    rates = [V100_RESNET50.samples_per_s(b) for b in (8, 16, 32, 64, 128, 256)]
    assert rates == sorted(rates) and rates[0] < 0.6 * rates[-1]
    # the V100's fixed part is the roofline (assumed): 525 kernels x 10 us + 22 B x 25.6 M params / 900 GB/s
    assert not V100_RESNET50.fixed_measured
    assert V100_RESNET50.fixed_s == pytest.approx(525 * 10e-6 + 22 * 25.6e6 / 900e9, rel=REL)


def test_from_steps_is_the_line_through_two_points_whatever_their_order():
    a = Calibration.from_steps("A100", "m", flop_per_sample=1e9, points=((10, 0.02), (30, 0.04)))
    b = Calibration.from_steps("A100", "m", flop_per_sample=1e9, points=((30, 0.04), (10, 0.02)))
    for c in (a, b):
        assert c.fixed_s == pytest.approx(0.01, rel=REL) and c.compute_s(20) == pytest.approx(0.03, rel=REL)
        assert c.sustained_FLOPs == pytest.approx(1e9 / 1e-3, rel=REL)
    for points, words in [(((10, 0.02),), r"two \(batch, step_s\) pairs"), (((10, 0.02), (10, 0.03)), "10 twice"),
                          (((10, 0.04), (30, 0.02)), "grows with the batch"),
                          (((10, 0.01), (30, 0.05)), "fixed part >= 0")]:
        with pytest.raises(ValueError, match=words):
            Calibration.from_steps("A100", "m", flop_per_sample=1e9, points=points)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_one_node_at_its_own_batch_is_efficiency_one(algorithm):
    for gpus in (1, 3, 8):
        p = predict(DataParallelRun(P100_RESNET50, gpus=gpus, gpus_per_node=8, algorithm=algorithm))
        assert p.efficiency == pytest.approx(1.0, rel=REL)
        assert p.loss_to_batch == 0 and abs(p.loss_to_communication) < 1e-12


def test_infinite_bandwidth_leaves_only_the_small_batch_loss():
    run = DataParallelRun(V100_RESNET50, gpus=64, gpus_per_node=4, intra_Bps=math.inf, intra_latency_s=0.0,
                          nic_Bps=math.inf, nic_latency_s=0.0, batch=16, reference_batch=128)
    p = predict(run)
    want = V100_RESNET50.samples_per_s(16) / V100_RESNET50.samples_per_s(128)
    assert p.allreduce_s == 0 and p.efficiency == pytest.approx(want, rel=REL)
    assert p.loss_to_batch == pytest.approx(1 - want, rel=REL) and abs(p.loss_to_communication) < 1e-12
    # and with a real network, the communication loss appears on top, the two adding up
    q = predict(run.replace(nic_Bps=1e9, nic_latency_s=3e-6, intra_Bps=20e9, intra_latency_s=0.5e-6))
    assert q.loss_to_batch == pytest.approx(1 - want, rel=REL)
    assert q.loss_to_communication > 0.05
    assert q.loss_to_batch + q.loss_to_communication == pytest.approx(1 - q.efficiency, rel=REL)
    assert q.efficiency == pytest.approx(q.batch_efficiency * q.communication_efficiency
                                         / q.node_communication_efficiency, rel=REL)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("nics", [1, 2, 4])
def test_doubling_nic_bandwidth_never_slows_a_step(algorithm, nics):
    for overlap in (False, True):
        run = DataParallelRun(P100_RESNET50, gpus=64, gpus_per_node=4, nics_per_node=nics, nic_Bps=1e9,
                              algorithm=algorithm, overlap=overlap, bucket_B=4e6)
        steps = [predict(run.replace(nic_Bps=1e9 * 2 ** k)).step_s for k in range(8)]
        assert all(b <= a for a, b in zip(steps, steps[1:])), steps
        assert steps[-1] < steps[0]      # the last bucket always shows, so a faster NIC always helps


def test_one_bucket_never_hides_and_the_last_bucket_always_shows():
    run = DataParallelRun(P100_RESNET50, gpus=256, gpus_per_node=8, nic_Bps=50e9 / 8, batch=32, overlap=True)
    one = predict(run)                                    # bucket_B None: all gradients in one bucket
    assert one.hidden_s == 0 and one.exposed_s == one.allreduce_s
    assert one.step_s == pytest.approx(predict(run.replace(overlap=False)).step_s, rel=REL)
    for bucket in (1e6, 4e6, 25e6):
        p = predict(run.replace(bucket_B=bucket))
        total = run.gradient_B
        rest = total - (total // bucket) * bucket           # the last bucket: what the full ones leave
        last = predict(run.replace(params=(rest or bucket) / 4, overlap=False)).allreduce_s   # it alone
        assert p.exposed_s >= last * (1 - 1e-12) and p.hidden_s + p.exposed_s == pytest.approx(p.allreduce_s)
        assert p.step_s <= predict(run.replace(bucket_B=bucket, overlap=False)).step_s


def test_exposed_time_matches_its_closed_forms_in_both_regimes():
    # K equal buckets of t seconds, backward B: compute-bound (t <= B/K) exposes t; network-bound B/K + K t - B
    for k, t, backward in [(4, 0.1, 1.0), (10, 0.05, 1.0), (4, 0.5, 1.0), (7, 0.3, 1.0), (1, 0.2, 1.0)]:
        want = t if t <= backward / k else backward / k + k * t - backward
        assert exposed_allreduce_s([t] * k, backward) == pytest.approx(want, rel=REL, abs=1e-15)
    assert exposed_allreduce_s([], 1.0) == 0
    # a long bucket early, then short ones: the queue it leaves delays them
    assert exposed_allreduce_s([0.9, 0.01, 0.01, 0.01], 1.0) == pytest.approx(0.25 + 0.9 + 0.03 - 1.0, rel=REL)
    with pytest.raises(ValueError, match="bucket_s must be a finite number >= 0, got -0.1"):
        exposed_allreduce_s([-0.1], 1.0)


def test_a_one_gpu_baseline_charges_all_of_the_communication():
    net = dict(nic_Bps=25e9 / 8, intra_Bps=16e9, batch=64)
    node = predict(DataParallelRun(P100_RESNET50, gpus=128, gpus_per_node=4, **net))
    gpu = predict(DataParallelRun(P100_RESNET50, gpus=128, gpus_per_node=4, reference_gpus=1, **net))
    assert gpu.node_communication_efficiency == 1 and gpu.efficiency < node.efficiency
    assert gpu.efficiency == pytest.approx(gpu.communication_efficiency, rel=REL)
    with pytest.raises(ValueError, match="reference_gpus must be at most one node .* got 8"):
        DataParallelRun(P100_RESNET50, gpus=128, gpus_per_node=4, reference_gpus=8)


def test_communication_only_charges_every_allreduce_at_the_baselines_cost_per_sample():
    run = DataParallelRun(P100_RESNET50, gpus=64, gpus_per_node=8, nic_Bps=1e9, batch=16, reference_batch=64)
    base = run.baseline()
    base_comm = predict(base).allreduce_s
    step, eff = communication_only(run)
    per_sample = P100_RESNET50.compute_s(64) / 64
    assert step == pytest.approx(16 * per_sample + predict(run).allreduce_s, rel=REL)
    assert eff == pytest.approx((16 / step) / (64 / (64 * per_sample + base_comm)), rel=REL)
    # with a measured baseline step, its cost per sample is that step less the baseline's own all-reduce
    step2, _ = communication_only(run, reference_step_s=0.5)
    assert step2 == pytest.approx(16 * (0.5 - base_comm) / 64 + predict(run).allreduce_s, rel=REL)
    # no fixed part: it is blind to the small-batch loss the calibration measures
    assert eff > predict(run).efficiency
    with pytest.raises(ValueError, match="reference_step_s must exceed the baseline's own all-reduce"):
        communication_only(run, reference_step_s=base_comm / 2)


def test_in_network_reduction_costs_one_trip_up_and_down_the_switches():
    run = small(algorithm="hierarchical", inter_algorithm="in_network", bucket_B=None)
    g, n = 5, 4e5
    inside = cost.hierarchical_allreduce_time(1, g, n, intra_alpha=0.5e-6, intra_beta=1 / 50e9, inter_alpha=0,
                                              inter_beta=0)
    assert predict(run).allreduce_s == pytest.approx(inside + 2 * 3e-6 + n / g / 12.5e9, rel=REL)
    # and it does not grow with the node count
    assert predict(run.replace(gpus=500)).allreduce_s == pytest.approx(predict(run).allreduce_s, rel=REL)
    with pytest.raises(ValueError, match="in_network.*simulate=False"):
        predict(run, simulate=True)


def test_buckets_pay_latency_each():
    run = small(algorithm="ring", nic_Bps=math.inf, intra_Bps=math.inf)    # latency only
    one = predict(run).allreduce_s
    assert one == pytest.approx(2 * 14 * 3e-6, rel=REL)
    # 4e5 bytes in buckets of 1.5e5: two full buckets and one of 1e5
    assert predict(run.replace(bucket_B=1.5e5)).allreduce_s == pytest.approx(3 * one, rel=REL)


def test_hierarchical_closed_form_charges_gpus_sharing_a_nic():
    run = DataParallelRun(P100_RESNET50, gpus=32, gpus_per_node=8, nics_per_node=2, nic_Bps=1e9,
                          intra_Bps=20e9, intra_latency_s=1e-6, nic_latency_s=5e-6, params=1e6,
                          inter_algorithm="rabenseifner")
    want = cost.hierarchical_allreduce_time(4, 8, 4e6, intra_alpha=1e-6, intra_beta=1 / 20e9, inter_alpha=5e-6,
                                            inter_beta=4 / 1e9, inter="rabenseifner")
    assert predict(run).allreduce_s == pytest.approx(want, rel=REL)


@pytest.mark.parametrize("algorithm,gpus,per_node,cols", [
    ("ring", 15, 5, None), ("ring", 21, 3, None), ("hierarchical", 15, 5, None), ("hierarchical", 21, 3, None),
    ("torus_2d", 15, 5, None), ("torus_2d", 21, 3, None), ("torus_2d", 24, 4, 8),
])
def test_simulation_agrees_with_closed_form_when_uncontended(algorithm, gpus, per_node, cols):
    run = small(algorithm=algorithm, gpus=gpus, gpus_per_node=per_node, nics_per_node=per_node,
                torus_cols=cols, bucket_B=1.5e5)
    closed, simulated = predict(run), predict(run, simulate=True)
    assert simulated.method == "netsim" and closed.method == "closed_form"
    assert simulated.allreduce_s == pytest.approx(closed.allreduce_s, rel=REL)
    assert simulated.efficiency == pytest.approx(closed.efficiency, rel=REL)


def test_hierarchical_rabenseifner_across_odd_node_counts_agrees_when_uncontended():
    for nodes in (3, 5):
        run = small(gpus=4 * nodes, gpus_per_node=4, nics_per_node=4, inter_algorithm="rabenseifner")
        assert predict(run, simulate=True).allreduce_s == pytest.approx(predict(run).allreduce_s, rel=REL)


def test_closed_form_bounds_the_simulation_when_gpus_share_a_nic():
    run = small(algorithm="hierarchical", gpus=16, gpus_per_node=4, nics_per_node=1)
    assert predict(run, simulate=True).allreduce_s < predict(run).allreduce_s
    big = run.replace(params=2.5e7)      # bandwidth-bound: the queueing latency no longer matters
    assert predict(big, simulate=True).allreduce_s == pytest.approx(predict(big).allreduce_s, rel=0.01)


@pytest.mark.parametrize("change,words", [
    (dict(gpus=0), ["gpus", "0", ">= 1"]),
    (dict(gpus=12, gpus_per_node=8), ["gpus", "12", "multiple"]),
    (dict(nics_per_node=3, gpus_per_node=8, gpus=8), ["nics_per_node", "3", "divide"]),
    (dict(nic_Bps=-1.0), ["nic_Bps", "-1.0", "positive"]),
    (dict(intra_Bps=0), ["intra_Bps", "0", "positive"]),
    (dict(nic_latency_s=-1e-6), ["nic_latency_s", "-1e-06", ">= 0"]),
    (dict(batch=0), ["batch", "0", ">= 1"]),
    (dict(reference_batch=0), ["reference_batch", "0", ">= 1"]),
    (dict(algorithm="tree"), ["algorithm", "'tree'", "ring"]),
    (dict(inter_algorithm="torus"), ["inter_algorithm", "'torus'", "rabenseifner"]),
    (dict(torus_cols=7), ["torus_cols", "7", "multiple"]),
    (dict(reference_gpus=0), ["reference_gpus", "0", ">= 1"]),
    (dict(inter_algorithm="sharp"), ["inter_algorithm", "'sharp'", "in_network"]),
    (dict(backward_fraction=-0.1), ["backward_fraction", "-0.1", ">= 0"]),
    (dict(bucket_B=0.0), ["bucket_B", "0.0", "positive"]),
    (dict(gradient_bytes=0), ["gradient_bytes", "0", ">= 1"]),
])
def test_bad_arguments_say_what_was_expected(change, words):
    with pytest.raises(ValueError) as err:
        small(**change)
    for w in words:
        assert w in str(err.value), (w, str(err.value))


def test_bad_types_and_simulation_limits():
    with pytest.raises(TypeError, match="gpus must be an int, got 8.0"):
        small(gpus=8.0)
    with pytest.raises(TypeError, match="overlap must be True or False, got 1.0"):
        small(overlap=1.0)
    with pytest.raises(TypeError, match="calibration must be a Calibration"):
        small(calibration="P100")
    with pytest.raises(TypeError, match="run must be a DataParallelRun"):
        predict("run")
    with pytest.raises(TypeError, match="simulate must be True or False"):
        predict(small(), simulate=1)
    with pytest.raises(ValueError, match="nic_Bps must be finite to simulate, got inf"):
        predict(small(nic_Bps=math.inf), simulate=True)
    with pytest.raises(ValueError, match="gpus must be <= 4096 to simulate, got 8192"):
        predict(small(gpus=8192, gpus_per_node=8, nics_per_node=8), simulate=True)
    with pytest.raises(ValueError, match=r"fixed_s must be below batch / samples_per_s = 0.25 s, got 0.3"):
        Calibration.from_throughput("V100", "ResNet-50", flop_per_sample=1e9, batch=64, samples_per_s=256.0,
                                    fixed_s=0.3)
    with pytest.raises(ValueError, match="memory_Bps must be a positive finite number, got 0"):
        fixed_overhead_s(kernels=1, kernel_overhead_s=1e-6, optimizer_B=1.0, memory_Bps=0)


def test_buckets_add_up_to_their_closed_forms():
    run = small(algorithm="ring", bucket_B=1.5e5)          # 4e5 bytes: 1.5e5 + 1.5e5 + 1e5
    a, b = 3e-6, 1 / 12.5e9
    want = sum(cost.allreduce_time("ring", 15, n, alpha=a, beta=b) for n in (1.5e5, 1.5e5, 1e5))
    assert predict(run).allreduce_s == pytest.approx(want, rel=REL)


def test_a_ring_across_nodes_pays_the_slower_of_its_links():
    run = small(algorithm="ring", intra_Bps=1e9)           # the node's link slower than the NIC
    # each step lasts as long as its slower message: the NIC's (3 us + m / 12.5 GB/s) or the node's (0.5 us +
    # m / 1 GB/s)
    want = max(cost.allreduce_time("ring", 15, 4e5, alpha=3e-6, beta=1 / 12.5e9),
               cost.allreduce_time("ring", 15, 4e5, alpha=0.5e-6, beta=1 / 1e9))
    assert want > cost.allreduce_time("ring", 15, 4e5, alpha=3e-6, beta=1 / 12.5e9)
    assert predict(run).allreduce_s == pytest.approx(want, rel=REL)
    assert predict(run, simulate=True).allreduce_s == pytest.approx(want, rel=REL)


def test_double_binary_tree_takes_the_larger_latency_and_the_slower_link():
    run = small(algorithm="double_binary_tree", intra_Bps=1e9)
    want = cost.allreduce_time("double_binary_tree", 15, 4e5, alpha=3e-6, beta=1 / 1e9)
    assert predict(run).allreduce_s == pytest.approx(want, rel=REL)
    one_node = small(algorithm="double_binary_tree", gpus=5)
    assert predict(one_node).allreduce_s == pytest.approx(
        cost.allreduce_time("double_binary_tree", 5, 4e5, alpha=0.5e-6, beta=1 / 50e9), rel=REL)
