#!/bin/bash
# tools/avx512-emu/test.sh [TEST...]: builds weft's integration tests TEST (default:
# leaf_loops) as static binaries and runs each on an emulated AVX-512F CPU (run.sh), so the
# 16-lane code paths (zmm leaf loops, the AVX-512 native routines) run on a host without
# AVX-512. PROPTEST_CASES (default 16) is passed to the guest; extra cargo-test arguments
# after `--` go to every test binary (a filter, say).
set -euo pipefail
cd "$(dirname "$0")/../.."
tests=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do tests+=("$1"); shift; done
[ $# -gt 0 ] && shift
[ ${#tests[@]} -gt 0 ] || tests=(leaf_loops)
args=()
for t in "${tests[@]}"; do args+=(--test "$t"); done
target_dir=${AVX512EMU_TARGET_DIR:-${CARGO_TARGET_DIR:-target}/avx512-static}
exes=$(RUSTFLAGS="-C target-feature=+crt-static" CARGO_TARGET_DIR="$target_dir" \
  cargo test --release --all-features "${args[@]}" --no-run \
    --target x86_64-unknown-linux-gnu --message-format=json |
  python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(m["executable"])')
# What tests read from the source tree, at the same paths in the guest.
data="$PWD/examples $PWD/bench/workloads $PWD/tests/findings $PWD/../shared/findings"
[ -e "$PWD/../shared/findings" ] || data="$PWD/examples $PWD/bench/workloads $PWD/tests/findings"
status=0
for exe in $exes; do
  echo "== $(basename "$exe") on an emulated AVX-512F CPU"
  AVX512EMU_ENV="PROPTEST_CASES=${PROPTEST_CASES:-16}" AVX512EMU_FILES="$data" \
    tools/avx512-emu/run.sh "$exe" \
    --test-threads 1 "$@" || status=$?
done
exit $status
