#!/usr/bin/env bash
# Start-up cost of the agentspec binary: `agentspec version` against
# `rg --version`, each run N times interleaved; prints the median user+sys CPU
# of each and their ratio, then the GODEBUG=inittrace sum of the project's own
# packages against the jsonschema library's own init.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-21}
# BIN names an agentspec binary to measure instead of building this tree's.
if [[ -z ${BIN:-} ]]; then
	BIN=$(mktemp -d)/agentspec
	go build -o "$BIN" ./cmd/agentspec
fi
RG=${RG:-rg}

# A run takes a few ms; time's 10 ms resolution needs a batch of runs each.
batch() {
	local reps=${REPS:-20}
	/usr/bin/time -f '%U %S' bash -c 'for ((i = 0; i < '"$reps"'; i++)); do "$@" >/dev/null 2>&1; done' _ "$@" 2>&1 >/dev/null |
		tail -1 | awk -v r="$reps" '{printf "%.6f\n", ($1 + $2) / r}'
}
median() { sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

as=() rs=()
for ((i = 0; i < N; i++)); do
	as+=("$(batch "$BIN" version)")
	rs+=("$(batch "$RG" --version)")
done
a=$(printf '%s\n' "${as[@]}" | median)
r=$(printf '%s\n' "${rs[@]}" | median)
awk -v a="$a" -v r="$r" -v n="$N" 'BEGIN {
	printf "agentspec version  %.2f ms CPU (median of %d)\n", a * 1000, n
	printf "rg --version       %.2f ms CPU (median of %d)\n", r * 1000, n
	printf "ratio              %.2fx\n", (r > 0 ? a / r : 0)
}'

# inittrace: the project's packages against the jsonschema library's init,
# each the median of N runs (one run is at the mercy of a single page fault).
ps=() js=() alls=()
for ((i = 0; i < N; i++)); do
	read -r p j all < <(GODEBUG=inittrace=1 "$BIN" version 2>&1 >/dev/null | awk '
		/^init github.com\/agentspec\/agentspec/ { p += $5 }
		/^init github.com\/santhosh-tekuri\/jsonschema/ { j += $5 }
		/^init / { all += $5 }
		END { printf "%.3f %.3f %.3f\n", p, j, all }')
	ps+=("$p") js+=("$j") alls+=("$all")
done
printf 'inittrace: project packages %s ms, jsonschema library %s ms, all packages %s ms (medians of %d)\n' \
	"$(printf '%s\n' "${ps[@]}" | median)" "$(printf '%s\n' "${js[@]}" | median)" "$(printf '%s\n' "${alls[@]}" | median)" "$N"
