#!/usr/bin/env bash
# Benchmarks the FileSystem walker tools against ripgrep over the Go source
# tree ($(go env GOROOT)/src) and prints, per benchmark, the tool's time, the
# anchor's (the rg command doing the same work, timed in the same loop) and
# their ratio x-rg = tool / rg. Each benchmark runs COUNT times; the table
# keeps each one's best ratio, since a busy machine only ever slows a run down.
#
#   scripts/bench-rg.sh                  # BENCHTIME=20x COUNT=2
#   BENCHTIME=50x COUNT=3 scripts/bench-rg.sh
#   STRICT=1 scripts/bench-rg.sh         # exit 1 when a ratio misses its target
set -euo pipefail

cd "$(dirname "$0")/.."
GO=${GO:-go}
BENCHTIME=${BENCHTIME:-20x}
COUNT=${COUNT:-2}

if ! command -v rg >/dev/null 2>&1; then
	echo "ripgrep (rg) is not installed: the benchmarks need it as their anchor" >&2
	exit 1
fi

# Only the benchmarks that time an rg anchor; the others (read_file, the large
# tree, the watcher) have their own lines in scripts/bench.sh.
out=$("$GO" test -run '^$' -bench '^Benchmark(SearchFiles|FindFiles|ListFiles|Grep)' -benchtime "$BENCHTIME" -count "$COUNT" ./capabilities/filesystem/)
printf '%s\n' "$out" | grep -E '^(goos|goarch|cpu):' || true
echo "rg: $(rg --version | head -n 1); tree: $("$GO" env GOROOT)/src"
echo

# Targets: search_files within 1.5x of rg -uu -n, find_files within 1.0x of
# rg --files, the rg-backed tools within 1.2x of rg run with their arguments.
printf '%s\n' "$out" | awk -v strict="${STRICT:-0}" '
/^Benchmark/ {
	name = $1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
	tool = ""; rg = ""; ratio = ""
	for (i = 2; i < NF; i++) {
		if ($(i+1) == "tool-ns/op") tool = $i
		if ($(i+1) == "rg-ns/op") rg = $i
		if ($(i+1) == "x-rg") ratio = $i
	}
	if (!(name in best) || ratio < best[name]) { best[name] = ratio; btool[name] = tool; brg[name] = rg }
	if (!(name in seen)) { seen[name] = 1; order[++n] = name }
}
END {
	printf "%-22s %10s %10s %7s %7s\n", "benchmark", "tool ms", "rg ms", "x-rg", "target"
	failed = 0
	for (i = 1; i <= n; i++) {
		name = order[i]
		target = 1.2
		if (name ~ /^SearchFiles/) target = 1.5
		if (name ~ /^FindFiles/) target = 1.0
		mark = ""
		if (best[name] > target) { mark = "  over target"; failed = 1 }
		printf "%-22s %10.1f %10.1f %7.3f %7.1f%s\n", name, btool[name] / 1e6, brg[name] / 1e6, best[name], target, mark
	}
	if (n == 0) { print "no benchmark ran (is rg installed?)"; exit 1 }
	if (strict && failed) exit 1
}'
