"""Extract the ResNet-50 epoch timings of MLPerf Training result logs into scaledl/comm/mlperf_logs.json.

Run offline over local git mirrors of github.com/mlcommons/training_results_vX.Y (one bare or normal clone
per round); it reads, for each selected system, every result_N.txt of its resnet benchmark (the MLLOG lines)
and the system's description JSON, and writes plain data (JSON, read by scaledl.comm.mlperf_logs): per run
the global batch, the optimizer, run_start to run_stop, and the training time of each epoch (epoch_start to
epoch_stop, which excludes the evaluation that follows an epoch). Usage:

    python tools/mlperf_extract.py MIRRORS_DIR > src/scaledl/comm/mlperf_logs.json

where MIRRORS_DIR holds mlcommons+training_results_v1.0/repo and so on.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

# (round, submitter/results/system): one node and several nodes of the same code in the same round.
SYSTEMS = {
    "v0.7": ["NVIDIA/dgxa100_ngc20.06_mxnet", "NVIDIA/dgxa100_n2_ngc20.06_mxnet",
             "NVIDIA/dgxa100_n96_ngc20.06_mxnet", "NVIDIA/dgxa100_n192_ngc20.06_mxnet",
             "NVIDIA/dgxa100_n230_ngc20.06_mxnet"],
    "v1.0": ["NVIDIA/dgxa100_ngc21.05_mxnet", "NVIDIA/dgxa100_n8_ngc21.05_mxnet",
             "NVIDIA/dgxa100_n128_ngc21.05_mxnet", "NVIDIA/dgxa100_n310_ngc21.05_mxnet"],
    "v1.1": ["NVIDIA/dgxa100_ngc21.09_mxnet", "NVIDIA/dgxa100_n8_ngc21.09_mxnet",
             "NVIDIA/dgxa100_n128_ngc21.09_mxnet", "NVIDIA/dgxa100_n540_ngc21.09_mxnet"],
    "v2.0": ["NVIDIA/dgxa100_ngc22.04_mxnet", "NVIDIA/dgxa100_n8_ngc22.04_mxnet",
             "NVIDIA/dgxa100_n128_ngc22.04_mxnet", "NVIDIA/dgxa100_n527_ngc22.04_mxnet",
             "Dell/XE8545x4A100-SXM-40GB", "Dell/2xXE8545x4A100-SXM-40GB", "Dell/4xXE8545x4A100-SXM-40GB",
             "Dell/8xXE8545x4A100-SXM-40GB", "Dell/16xXE8545x4A100-SXM-40GB", "Dell/32xXE8545x4A100-SXM-40GB"],
    "v3.0": ["NVIDIA/dgxh100_ngc23.04_mxnet", "NVIDIA/dgxh100_n8_ngc23.04_mxnet",
             "NVIDIA/dgxh100_n64_ngc23.04_mxnet", "NVIDIA/dgxh100_n96_ngc23.04_mxnet"],
}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def mllog(text: str):
    for line in text.splitlines():
        if ":::MLLOG" in line:
            yield json.loads(line.split(":::MLLOG", 1)[1])


def run_record(text: str) -> dict:
    """One result log: its global batch, optimizer, run time, and per block of epochs (the epochs between two
    evaluations) the training time, from block_start to eval_start, and the evaluation time. The block's
    epoch_start/epoch_stop marks are not used: in later rounds they are logged when the host queues an epoch,
    before the GPUs finish it (an epoch of 28 ms at 527 nodes), while an evaluation starts only once the
    training before it is done."""
    events = list(mllog(text))
    first = {}
    for e in events:
        first.setdefault(e["key"], e)
    start = first["run_start"]["time_ms"]
    stop = [e for e in events if e["key"] == "run_stop"][-1]
    blocks, current, eval_start = [], None, None
    for e in events:
        if e["key"] == "block_start":
            md = e["metadata"]
            current = (md["first_epoch_num"], md["epoch_count"], e["time_ms"])
        elif e["key"] == "eval_start" and current is not None:
            eval_start = e["time_ms"]
        elif e["key"] == "eval_stop" and current is not None and eval_start is not None:
            first_epoch, count, t0 = current
            blocks.append([first_epoch, count, eval_start - t0, e["time_ms"] - eval_start])
            current, eval_start = None, None
    return dict(global_batch=first["global_batch_size"]["value"], optimizer=first.get("opt_name", {}).get("value"),
                run_ms=stop["time_ms"] - start, status=stop["metadata"].get("status", ""), blocks=blocks)


def main(mirrors: Path) -> None:
    out = []
    for rnd, systems in SYSTEMS.items():
        repo = mirrors / f"mlcommons+training_results_{rnd}" / "repo"
        commit = git(repo, "rev-parse", "HEAD").strip()
        files = git(repo, "ls-tree", "-r", "--name-only", "HEAD").splitlines()
        for name in systems:
            submitter, system = name.split("/")
            desc = json.loads(git(repo, "show", f"HEAD:{submitter}/systems/{system}.json"))
            logs = sorted((f for f in files if f.startswith(f"{submitter}/results/{system}/resnet/result_")),
                          key=lambda f: int(re.search(r"result_(\d+)", f).group(1)))
            runs, absent = [], []
            for f in logs:
                try:
                    runs.append((f, run_record(git(repo, "show", f"HEAD:{f}"))))
                except subprocess.CalledProcessError:   # a large log the mirror lists but does not hold
                    absent.append(Path(f).name)
            if not runs:
                print(f"# {rnd} {name}: no result log in the mirror", file=sys.stderr)
                continue
            rec = dict(round=rnd, submitter=submitter, system=system,
                       repository=f"github.com/mlcommons/training_results_{rnd}", commit=commit,
                       path=f"{submitter}/results/{system}/resnet/",
                       nodes=int(desc["number_of_nodes"]), accelerators_per_node=int(desc["accelerators_per_node"]),
                       accelerator=desc["accelerator_model_name"], host_networking=desc.get("host_networking", ""),
                       accelerator_interconnect=desc.get("accelerator_interconnect", ""),
                       framework=desc.get("framework", ""),
                       runs=[dict(log=Path(f).name, **r) for f, r in runs], logs_absent=absent)
            out.append(rec)
    print(json.dumps(out, indent=0, separators=(",", ":")))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
