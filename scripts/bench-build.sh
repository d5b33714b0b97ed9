#!/usr/bin/env bash
# A cold `go build ./cmd/agentspec` (an empty build cache, the module cache
# warm) against a Go hello world built the same way: CPU, elapsed time, peak
# memory; then the binary's size, plain and stripped, against the targets,
# the size of the provider SDKs alone (internal/buildbench/floor), and the
# build's CPU by module. It takes minutes: BENCH_BUILD=0 skips it in make bench.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ${BENCH_BUILD:-1} == 0 ]]; then
	echo "cold build: skipped (BENCH_BUILD=0)"
	exit 0
fi
"${GO:-go}" run ./internal/buildbench "$@"
