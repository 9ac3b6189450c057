#!/usr/bin/env bash
# Every test: the Rust workspace's, then the Python package's (python/), built into a virtual
# environment of its own under target/ with what it needs from PyPI (maturin, NumPy, pytest, and
# onnx for weft.onnx's tests, pinned: python/tests/onnx_expected_failures.txt lists its
# conformance cases weft fails, and another release has other cases).
set -euo pipefail
cd "$(dirname "$0")"
cargo test --workspace --all-features "$@"

venv=target/python-venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  "maturin>=1.7,<2" "numpy>=1.21" "pytest>=7" "onnx==1.23.2"
# An editable install of python/ into that environment (release build: the tests compile and
# run real kernels).
(cd python && VIRTUAL_ENV="$PWD/../$venv" PATH="$PWD/../$venv/bin:$PATH" \
  maturin develop --release --quiet)
"$venv/bin/python" -m pytest python/tests -q
