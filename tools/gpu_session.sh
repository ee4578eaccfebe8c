#!/usr/bin/env bash
# The GPU checklist (CONTRIBUTING.md, "On a lent GPU") in one command on a lent machine with no network.
# Usage, from the repository root, with the wheels in .whl/ (the book's own and the Jupyter pieces the image
# lacks; CONTRIBUTING says how to fetch them): OUT=/some/folder bash tools/gpu_session.sh [SECONDS]
# Everything it learns lands in $OUT as at most 8 files: doctor.txt, nvidia-smi.txt, validate.log,
# validate.tgz (report.json/.md, tests-gpu.xml, executed notebooks), hosted.log, hosted.tgz; with
# STAGES="experiments ncu validate" also experiments.log/.json and ncu.txt (VALIDATE_ARGS replaces --only ...).
set -u
budget=${1:-300}  # seconds for `scaledl validate`; the hosted dry run then takes at most 2 x 120 s
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
start=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    $(ls .whl/*.whl | grep -v '/scaledl-') || exit 3
export PYTHONPATH="$PWD/src:/tmp/site"
{ nvidia-smi; nvidia-smi -q | sed -n '1,40p'; } > "$OUT/nvidia-smi.txt" 2>&1
python3 -m scaledl doctor > "$OUT/doctor.txt" 2>&1
python3 -m pip list 2>/dev/null | grep -iE 'numba|cupy|cuda|numpy|ml.dtypes|ipykernel|nbclient|torch' >> "$OUT/doctor.txt"
stages=${STAGES:-validate hosted}  # also: experiments (tools/gpu_experiments.py), ncu (Nsight Compute on v3)
if [[ " $stages " == *" experiments "* ]]; then
  timeout -k 5 120 python3 tools/gpu_experiments.py "$OUT" ${EXPERIMENTS:-} > "$OUT/experiments.log" 2>&1
  echo "experiments exit $? after $(( $(date +%s) - start )) s" >> "$OUT/experiments.log"
fi
if [[ " $stages " == *" ncu "* ]]; then
  NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  timeout -k 5 150 "$NCU" -k regex:regblock -c 2 --section SpeedOfLight --section Occupancy \
      --section WarpStateStats --section LaunchStats --section MemoryWorkloadAnalysis \
      --section ComputeWorkloadAnalysis python3 tools/gpu_experiments.py /tmp ncu > "$OUT/ncu.txt" 2>&1
  echo "ncu exit $? after $(( $(date +%s) - start )) s" >> "$OUT/ncu.txt"
fi
[[ " $stages " == *" validate "* ]] || exit 0
timeout -k 10 "$budget" python3 -m scaledl validate --out /tmp/validate ${VALIDATE_ARGS:---only 04 05 06 12 18 lab01 lab02 lab04} \
    > "$OUT/validate.log" 2>&1
echo "validate exit $? after $(( $(date +%s) - start )) s" >> "$OUT/validate.log"
tar czf "$OUT/validate.tgz" -C /tmp validate
[[ " $stages " == *" hosted "* ]] || exit 0
# Hosted-notebook dry run: only the wheel (no checkout on the path, an empty folder) plus the Jupyter pieces,
# on the image's own numpy/numba/CuPy, as Colab would run chapter 04 and lab 02.
mkdir -p /tmp/hosted/site && cd /tmp/hosted || exit 4
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/hosted/site "$OLDPWD"/.whl/scaledl-*.whl
PYTHONPATH="$OLDPWD/src" python3 -c "from scaledl.validate.hosted import DRIVER; open('driver.py', 'w').write(DRIVER)"
for nb in chapters/04_writing_gemm_kernels.ipynb labs/solutions/lab02_tiled_gemm.ipynb; do
  d=/tmp/hosted/$(basename "$nb" .ipynb); mkdir -p "$d"; cp "$OLDPWD/$nb" "$d/"
  (cd "$d" && env -u SCALEDL_BOOK_ROOT PYTHONPATH=/tmp/hosted/site:/tmp/site timeout -k 5 120 \
     python3 /tmp/hosted/driver.py "$(basename "$nb")") >> "$OUT/hosted.log" 2>&1
  echo "$nb exit $?" >> "$OUT/hosted.log"
done
tar czf "$OUT/hosted.tgz" --exclude=hosted/site -C /tmp hosted
echo "all done after $(( $(date +%s) - start )) s" >> "$OUT/validate.log"
