#!/usr/bin/env bash
# Whole-process CPU of the walker tools against ripgrep: `agentspec tool ...`
# and the rg command doing the same work, each run as a process, their CPU
# (user+sys of the child, from bash's times) taken in interleaved pairs, the
# order swapped every pair. Prints, per row, the median CPU of each side and
# the median of the pairs' ratios, x-rg = tool / rg. Two trees: the Go source
# tree ($(go env GOROOT)/src) and a generated 100,000-file tree (100
# directories of 1,000 small files, the same bytes every run).
#
# Every row stays under the tools' default result caps (1000), so that no
# tool stops early and flatters its ratio; a warm-up run checks that the tool
# and rg find as many results.
#
#   scripts/bench-process.sh               # N=5 pairs per row
#   BIN=path/to/agentspec scripts/bench-process.sh
#   FORMAT=tsv scripts/bench-process.sh    # "row<TAB>x-rg" lines, for bench-rg.sh
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
N=${N:-5}
FORMAT=${FORMAT:-table}

if ! command -v rg >/dev/null 2>&1; then
	echo "ripgrep (rg) is not installed: the benchmarks need it as their anchor" >&2
	exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [[ -z ${BIN:-} ]]; then
	BIN=$tmp/agentspec
	"$GO" build -o "$BIN" ./cmd/agentspec
fi
src=$("$GO" env GOROOT)/src

# The generated tree: d000..d099, each with f0000.txt..f0999.txt of three
# lines; one file in 200 also holds a line the search pattern matches, so a
# search finds 500 lines.
tree=$tmp/tree
mkdir "$tree"
awk -v root="$tree" 'BEGIN {
	for (d = 0; d < 100; d++) {
		dir = sprintf("%s/d%03d", root, d)
		system("mkdir " dir)
		for (f = 0; f < 1000; f++) {
			p = sprintf("%s/f%04d.txt", dir, f)
			printf "package d%03d\n// file %d of directory %d\nvar x%d = %d\n", d, f, d, f, d * f > p
			if ((d * 1000 + f) % 200 == 7) printf "func NewThing%d(x int) int { return x }\n", f > p
			close(p)
		}
	}
}'

# cpu DIR CMD...: the CPU milliseconds (user+sys) of CMD run in DIR, its
# output discarded. times' second line is the subshell's waited-for
# children: CMD and, for list_files, the rg it runs.
cpu() {
	local dir=$1
	shift
	(
		cd "$dir"
		"$@" >/dev/null 2>&1 || true
		times
	) | awk 'NR == 2 {
		split($1, u, "m"); split($2, s, "m")
		printf "%.1f\n", (u[1] * 60 + u[2] + s[1] * 60 + s[2]) * 1000
	}'
}

median() { sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

# count DIR CMD...: the number of results CMD prints (NUL- or line-separated).
count() {
	local dir=$1
	shift
	(cd "$dir" && "$@" 2>/dev/null || true) | tr '\0' '\n' | grep -c . || true
}

rows=()
# pair NAME DIR TOOL ARGS_JSON -- RG_ARGS...: N interleaved pairs.
pair() {
	local name=$1 dir=$2 tool=$3 args=$4
	shift 5
	local t=("$BIN" tool --root . "$tool" "$args") r=(rg "$@")
	local out
	out=$(cd "$dir" && "${t[@]}" 2>&1 || true)
	if [[ $out == *"[... truncated"* ]]; then
		echo "bench-process: $name: the tool's output was truncated; pick a narrower pattern" >&2
		exit 1
	fi
	local nt nr
	nt=$(count "$dir" "${t[@]}")
	nr=$(count "$dir" "${r[@]}")
	if [[ $nt != "$nr" ]]; then
		echo "bench-process: $name: the tool found $nt results, rg $nr: not the same work" >&2
		exit 1
	fi
	local ts=() rs=() xs=() a b
	for ((i = 0; i < N; i++)); do
		if ((i % 2 == 0)); then
			a=$(cpu "$dir" "${t[@]}")
			b=$(cpu "$dir" "${r[@]}")
		else
			b=$(cpu "$dir" "${r[@]}")
			a=$(cpu "$dir" "${t[@]}")
		fi
		ts+=("$a") rs+=("$b")
		xs+=("$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.3f", (b > 0 ? a / b : 0)}')")
	done
	rows+=("$name	$(printf '%s\n' "${ts[@]}" | median)	$(printf '%s\n' "${rs[@]}" | median)	$(printf '%s\n' "${xs[@]}" | median)	$nt")
}

new='func New[A-Z]\w*\('
# search_files against rg -uu -n with the same pattern: both search hidden
# and ignored files' contents alike (the trees have few or none), skip binary
# files and print path:line:text.
pair search_files/goroot "$src" search_files "{\"pattern\": \"func New[A-Z]\\\\w*\\\\(\"}" -- -uu -n --regexp "$new" -- .
pair search_files/100k "$tree" search_files "{\"pattern\": \"func New[A-Z]\\\\w*\\\\(\"}" -- -uu -n --regexp "$new" -- .
# find_files against rg --files -u -g: the same walk of every directory and
# the same name test on every file. -u, not -uu: find_files skips hidden
# entries, as rg does without --hidden, and reads no ignore files, as rg
# does with -u. A **/ glob matches at any depth, as a slashless rg glob does.
pair find_files/goroot "$src" find_files '{"pattern": "**/*_linux.go"}' -- --files -u -g '*_linux.go'
pair find_files/100k "$tree" find_files '{"pattern": "**/f*999.txt"}' -- --files -u -g 'f*999.txt'
# list_files runs rg itself: its anchor is that rg command, with exactly the
# arguments list_files gives it.
pair list_files/goroot "$src" list_files '{"glob": "*.s"}' -- --no-config --null --color=never --files --sort path --glob '*.s'
pair list_files/100k "$tree" list_files '{"glob": "f*999.txt"}' -- --no-config --null --color=never --files --sort path --glob 'f*999.txt'

if [[ $FORMAT == tsv ]]; then
	printf '%s\n' "${rows[@]}" | awk -F'\t' '{print $1 "\t" $4}'
	exit 0
fi
echo "rg: $(rg --version | sed -n 1p); trees: $src and a generated 100,000-file tree"
echo "CPU = user+sys of the process (and its children), median of $N interleaved pairs"
printf '%s\n' "${rows[@]}" | awk -F'\t' '
BEGIN { printf "%-20s %8s %10s %10s %7s\n", "row", "results", "tool ms", "rg ms", "x-rg" }
{ printf "%-20s %8d %10.1f %10.1f %7.3f\n", $1, $5, $2, $3, $4 }'

# The runtime's sleeps and wake-ups in one search, against rg's: counted
# with perf's syscall tracepoints when they are readable, which cost the
# process nothing, else skipped (strace's own slowness multiplies them).
if perf stat -e syscalls:sys_enter_futex true >/dev/null 2>&1; then
	echo
	echo "one search_files over GOROOT/src: nanosleep and futex calls, context switches"
	for side in tool rg; do
		if [[ $side == tool ]]; then
			cmd=("$BIN" tool --root . search_files "{\"pattern\": \"func New[A-Z]\\\\w*\\\\(\"}")
		else
			cmd=(rg -uu -n --regexp "$new" -- .)
		fi
		(cd "$src" && perf stat -x, -e syscalls:sys_enter_nanosleep,syscalls:sys_enter_futex,context-switches "${cmd[@]}" 2>&1 >/dev/null) |
			awk -F, -v side="$side" '$3 ~ /nanosleep/ {n = $1} $3 ~ /futex/ {f = $1} $3 ~ /context/ {c = $1}
				END {printf "%-5s nanosleep %6d  futex %6d  context switches %6d\n", side, n, f, c}'
	done
fi
