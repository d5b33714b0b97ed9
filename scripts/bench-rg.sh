#!/usr/bin/env bash
# Benchmarks the FileSystem walker tools against ripgrep, two ways, and prints
# one table with a row per tool:
#
#   - in-process: the Go benchmarks over the Go source tree ($(go env
#     GOROOT)/src), each timing the tool call and the rg command doing the
#     same work alternately in one loop. Each benchmark runs COUNT times and
#     the table keeps the median of its x-rg ratios (tool / rg); a tool with
#     several benchmarks shows its worst.
#   - whole-process: scripts/bench-process.sh, `agentspec tool ...` against
#     the rg command, the CPU (user+sys) of each process in interleaved
#     pairs, over the Go source tree and a generated 100,000-file tree.
#
#   scripts/bench-rg.sh                  # BENCHTIME=10x COUNT=5 N=5
#   BENCHTIME=20x COUNT=7 scripts/bench-rg.sh
#   STRICT=1 scripts/bench-rg.sh         # exit 1 when a ratio misses its target
set -euo pipefail

cd "$(dirname "$0")/.."
GO=${GO:-go}
BENCHTIME=${BENCHTIME:-10x}
COUNT=${COUNT:-5}
if ((COUNT < 5)); then
	echo "COUNT=$COUNT: a median needs at least 5 runs" >&2
	exit 1
fi

if ! command -v rg >/dev/null 2>&1; then
	echo "ripgrep (rg) is not installed: the benchmarks need it as their anchor" >&2
	exit 1
fi

# Only the benchmarks that time an rg anchor; the others (read_file, the large
# tree, the watcher) have their own lines in scripts/bench.sh.
out=$("$GO" test -run '^$' -bench '^Benchmark(SearchFiles|FindFiles|ListFiles|Grep)' -benchtime "$BENCHTIME" -count "$COUNT" ./capabilities/filesystem/)
printf '%s\n' "$out" | grep -E '^(goos|goarch|cpu):' || true
proc=$(FORMAT=tsv scripts/bench-process.sh)
echo "rg: $(rg --version | sed -n 1p); trees: $("$GO" env GOROOT)/src, and a generated 100,000-file tree (100k)"
echo "in-process: median x-rg of $COUNT runs of each benchmark (wall time, tool and rg in one loop), worst benchmark of the tool"
echo "process: median x-rg of ${N:-5} interleaved pairs of CPU (user+sys), agentspec tool against rg (scripts/bench-process.sh)"
echo

# Targets: in-process, search_files within 1.5x of rg -uu -n, find_files
# within 1.0x of rg --files, the rg-backed tools within 1.2x of rg run with
# their arguments; as a process, search_files within 1.0x.
{
	printf '%s\n' "$out"
	printf '%s\n' "$proc" | sed 's/^/process\t/'
} | awk -v strict="${STRICT:-0}" '
function median(name,    n, i, j, t, v) {
	n = split(runs[name], v, " ")
	for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j-1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j-1]; v[j-1] = t }
	return v[int((n + 1) / 2)]
}
function toolOf(name) {
	if (name ~ /^SearchFiles/) return "search_files"
	if (name ~ /^FindFiles/) return "find_files"
	if (name ~ /^ListFiles/) return "list_files"
	if (name ~ /^Grep/) return "grep"
	return name
}
/^Benchmark/ {
	name = $1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
	for (i = 2; i < NF; i++) if ($(i+1) == "x-rg") runs[name] = runs[name] " " $i
	if (!(name in seen)) { seen[name] = 1; names[++nn] = name }
}
/^process\t/ { split($2, k, "/"); proc[k[1], k[2]] = $3 }
END {
	for (i = 1; i <= nn; i++) {
		t = toolOf(names[i]); m = median(names[i])
		if (!(t in inproc) || m > inproc[t]) inproc[t] = m
		if (!(t in tseen)) { tseen[t] = 1; tools[++nt] = t }
	}
	if (nt == 0) { print "no benchmark ran (is rg installed?)"; exit 1 }
	printf "%-14s %12s %7s   %14s %13s %7s\n", "tool", "in-process", "target", "process goroot", "process 100k", "target"
	failed = 0
	for (i = 1; i <= nt; i++) {
		t = tools[i]
		target = 1.2; ptarget = ""
		if (t == "search_files") { target = 1.5; ptarget = 1.0 }
		if (t == "find_files") target = 1.0
		mark = ""
		if (inproc[t] > target) { mark = "  over target"; failed = 1 }
		g = ((t, "goroot") in proc) ? sprintf("%.3f", proc[t, "goroot"]) : "-"
		h = ((t, "100k") in proc) ? sprintf("%.3f", proc[t, "100k"]) : "-"
		if (ptarget != "" && (proc[t, "goroot"] > ptarget || proc[t, "100k"] > ptarget)) { mark = mark "  process over target"; failed = 1 }
		printf "%-14s %12.3f %7.1f   %14s %13s %7s%s\n", t, inproc[t], target, g, h, (ptarget == "" ? "-" : sprintf("%.1f", ptarget)), mark
	}
	if (strict && failed) exit 1
}'
