#!/usr/bin/env bash
# Builds bin/agentspec for the demos, saying first that the first build
# compiles every dependency (a few minutes on 2 cores; seconds after that)
# and listing each package as it compiles, so a cold build shows progress.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "building bin/agentspec (the first build compiles the dependencies and takes a few minutes; later ones take seconds)" >&2
total=$(go list -deps ./cmd/agentspec | wc -l)
go build -v -o bin/agentspec ./cmd/agentspec 2>&1 | awk -v t="$total" '{ n++; printf "  compiled %d of at most %d: %s\n", n, t, $0 > "/dev/stderr"; fflush("/dev/stderr") }'
