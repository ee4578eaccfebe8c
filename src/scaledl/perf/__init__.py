"""Performance models: what hardware can do, and how long a piece of deep-learning work takes on it.

=================  ===================================================================================
``hardware``       one frozen :class:`~scaledl.perf.hardware.Device` per GPU (Fermi to Hopper), with
                   dense peak rates per precision, memory, power and the datasheet each number comes from
``training``       training time from a FLOP count, a device, a count and a utilization (and back)
``demand``         compute demand of landmark models (petaflop-days), unit conversions, growth rates
``fleet``          the automotive fleet example: data collected -> dataset -> years of training
``huang``          Huang's law: ~1000x single-GPU inference in ten years, decomposed into its causes
``progress``       gains from outside the chip: algorithmic efficiency, software (MLPerf), data scale
``energy``         energy per operation and instruction overhead
``sparse_traffic`` CSR vs dense vs 2:4: bytes per non-zero, the density crossovers in bytes and in
                   roofline time, the 2:4 speedup when compute or memory bound
``warp_ctc``       warp-ctc's README timings: speedup ranges over Eesen and Theano, against seed 001's "100-400X"
``cluster``        DGX POD sizing (rack units, power, experiment hours, developers), Saturn V, input bandwidth,
                   FPGA vs ASIC measurements, the int4 accelerator's efficiency points
``frameworks``     NVIDIA's 2018 framework table as data, with dated, sourced corrections
``views``          the chapters' figures and explorers of these models (``plot_roofline``, ``demand_figure``, ...)
=================  ===================================================================================

``interconnect`` moved to :mod:`scaledl.comm.interconnect` and ``kernel_model`` to
:mod:`scaledl.kernels.kernel_model` (ARCHITECTURE.md: ``perf`` imports neither ``comm`` nor ``kernels``); their old
names remain for notebooks released before the move.

The submodules are imported on demand (``from scaledl.perf import hardware``), so importing this package
costs nothing.
"""
