#!/usr/bin/env bash
# Start-up cost of the agentspec binary: `agentspec version`, a one-tool call
# (`agentspec tool file_info`) and `agentspec mcp` on closed input, against a
# plain Go hello world built the same way, each run N times interleaved; prints
# the median user+sys CPU of each and their ratio (target: at most 5x), then the
# GODEBUG=inittrace sum of the project's own packages against the jsonschema
# library's own init.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-21}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# BIN names an agentspec binary to measure instead of building this tree's.
if [[ -z ${BIN:-} ]]; then
	BIN=$scratch/agentspec
	go build -o "$BIN" ./cmd/agentspec
fi
mkdir "$scratch/hello"
printf 'module hello\n\ngo 1.26\n' >"$scratch/hello/go.mod"
printf 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("hello, world") }\n' >"$scratch/hello/main.go"
(cd "$scratch/hello" && go build -o hello .)
HELLO=$scratch/hello/hello
mkdir "$scratch/root"
echo hi >"$scratch/root/a.txt"

# A run takes a few ms; time's 10 ms resolution needs a batch of runs each.
batch() {
	local reps=${REPS:-20}
	/usr/bin/time -f '%U %S' bash -c 'for ((i = 0; i < '"$reps"'; i++)); do "$@" >/dev/null 2>&1; done' _ "$@" 2>&1 >/dev/null |
		tail -1 | awk -v r="$reps" '{printf "%.6f\n", ($1 + $2) / r}'
}
median() { sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

vs=() ts=() ms=() hs=()
for ((i = 0; i < N; i++)); do
	hs+=("$(batch "$HELLO")")
	vs+=("$(batch "$BIN" version)")
	ts+=("$(batch "$BIN" tool --root "$scratch/root" file_info '{"path": "a.txt"}')")
	ms+=("$(batch "$BIN" mcp --root "$scratch/root" </dev/null)")
done
h=$(printf '%s\n' "${hs[@]}" | median)
for name in version tool mcp; do
	case $name in
	version) m=$(printf '%s\n' "${vs[@]}" | median) label="agentspec version" ;;
	tool) m=$(printf '%s\n' "${ts[@]}" | median) label="agentspec tool file_info" ;;
	mcp) m=$(printf '%s\n' "${ms[@]}" | median) label="agentspec mcp, no input" ;;
	esac
	awk -v a="$m" -v h="$h" -v n="$N" -v l="$label" 'BEGIN {
		printf "%-26s %.2f ms CPU (median of %d), %.2fx a Go hello world\n", l, a * 1000, n, (h > 0 ? a / h : 0)
	}'
done
awk -v h="$h" -v n="$N" 'BEGIN { printf "%-26s %.2f ms CPU (median of %d)\n", "Go hello world", h * 1000, n }'

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
