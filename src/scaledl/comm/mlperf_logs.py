"""ResNet-50 epoch timings from MLPerf Training result logs (MLCommons), extracted by tools/mlperf_extract.py
into ``mlperf_logs.json`` beside this module (generated, do not edit). Per system: where it comes from (repository,
commit, path), what the system description says, and per result log the global batch, the optimizer, run_start
to run_stop in ms, and per block of epochs between two evaluations [first epoch, epochs, training ms
(block_start to eval_start), evaluation ms (eval_start to eval_stop)]."""

import json
from pathlib import Path

DATA_FILE = Path(__file__).with_name("mlperf_logs.json")
SYSTEMS = tuple(json.loads(DATA_FILE.read_text(encoding="utf-8")))
