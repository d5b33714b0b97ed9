#!/usr/bin/env bash
# Builds bin/agentspec (or $BIN) for the demos, saying first that the first
# build compiles every dependency (a few minutes on 2 cores; seconds after
# that) and listing each package as it compiles, so a cold build shows
# progress. The go command's own lines (a module it downloads, a compile
# error) pass through as they are.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-bin/agentspec}
echo "building $bin (the first build downloads and compiles the dependencies and takes a few minutes; later ones take seconds)" >&2
total=$(go list -deps ./cmd/agentspec | wc -l)
# go build -v names each package it compiles on a line of its own, an import
# path; anything else it prints is a message to show unchanged.
go build -v -o "$bin" ./cmd/agentspec 2>&1 | awk -v t="$total" '
	/^[A-Za-z0-9._~\/+-]+$/ { n++; printf "  compiled %d of at most %d: %s\n", n, t, $0 > "/dev/stderr"; fflush("/dev/stderr"); next }
	{ print > "/dev/stderr"; fflush("/dev/stderr") }'
echo "built $bin" >&2
