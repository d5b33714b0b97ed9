#!/usr/bin/env bash
# Builds bin/agentspec (or $BIN) for the demos, saying first that the first
# build compiles every dependency (a few minutes on 2 cores; seconds after
# that) and listing each package as it compiles, so a cold build shows
# progress; while one package takes long (the provider SDKs take a minute or
# more each), a line every 20 seconds ($BUILD_TICK) says the build goes on.
# The go command's own lines (a module it downloads, a compile error) pass
# through as they are.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-bin/agentspec}
echo "building $bin (the first build downloads and compiles the dependencies and takes a few minutes; later ones take seconds)" >&2
total=$(go list -deps ./cmd/agentspec | wc -l)
tick=${BUILD_TICK:-20}
start=$SECONDS
exec 3< <(go build -v -o "$bin" ./cmd/agentspec 2>&1)
build=$!
n=0
partial="" # what a read cut short by the tick had of a line
while true; do
	if IFS= read -r -t "$tick" -u 3 line; then
		line=$partial$line
		partial=""
		# go build -v names each package it compiles on a line of its own,
		# an import path; anything else is a message to show unchanged.
		if [[ $line =~ ^[A-Za-z0-9._~/+-]+$ ]]; then
			n=$((n + 1))
			printf '  compiled %d of at most %d: %s\n' "$n" "$total" "$line" >&2
		else
			printf '%s\n' "$line" >&2
		fi
	elif (($? > 128)); then
		# The tick came in the middle of a line: read keeps what it had.
		partial+=$line
		printf '  still compiling (%d of at most %d packages done, %ds so far)\n' "$n" "$total" $((SECONDS - start)) >&2
	else
		# The build has ended; its last line may lack a newline.
		line=$partial$line
		if [[ -n $line ]]; then
			printf '%s\n' "$line" >&2
		fi
		break
	fi
done
wait "$build"
echo "built $bin" >&2
