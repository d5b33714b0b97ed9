#!/usr/bin/env bash
# Counts the file system calls of a 1000-job batch run through the agentspec
# binary at -j 8 (each job reads input.txt, writes output.txt, reads it back),
# per job: the whole process's calls, less those of a one-job batch (start-up
# and spec loading), divided by the 999 jobs between them. Needs strace;
# prints nothing but a note without it. CACHE=1 runs a cache-filling batch.
set -euo pipefail
export LC_ALL=C # join and sort must agree on the order
cd "$(dirname "$0")/.."
GO=${GO:-go}
JOBS=${JOBS:-1000}
if ! command -v strace >/dev/null; then
	echo "bench-syscalls: strace not found, skipped"
	exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$GO" build -o "$tmp/agentspec" ./cmd/agentspec

cat >"$tmp/turns.yaml" <<'YAML'
turns:
  - tool_calls: [{name: read_file, arguments: {path: input.txt}}]
  - tool_calls: [{name: write_file, arguments: {path: output.txt, content: "The input, summarised.\n"}}]
  - tool_calls: [{name: read_file, arguments: {path: output.txt}}]
  - text: Done.
YAML
cache=""
if [ "${CACHE:-0}" = 1 ]; then cache="cache: {dir: .cache}"; fi
cat >"$tmp/agent.yaml" <<YAML
version: 1
model: script:turns.yaml
instructions: Summarise input.txt into output.txt.
capabilities: [FileSystem]
workspace:
  input_globs: [input.txt]
  expected_output_files: [output.txt]
$cache
YAML

# jobs N: N fresh workspaces under $tmp/jobsN.
jobs() {
	rm -rf "$tmp/jobs$1" "$tmp/.cache"
	mkdir -p "$tmp/jobs$1"
	for i in $(seq -f %04g 1 "$1"); do
		mkdir "$tmp/jobs$1/$i"
		printf 'A line of the job'"'"'s input.\n%.0s' $(seq 40) >"$tmp/jobs$1/$i/input.txt"
	done
}

# count N: "syscall calls" lines for a batch of N jobs.
count() {
	jobs "$1"
	(cd "$tmp" && strace -f -c -U name,calls -S name -e trace=%file,%desc -o "$tmp/strace$1" \
		./agentspec batch -q -j 8 agent.yaml "jobs$1/*" >/dev/null)
	awk 'NF == 2 && $2 ~ /^[0-9]+$/ {print $1, $2}' "$tmp/strace$1" | sort
}

count 1 >"$tmp/one"
count "$JOBS" >"$tmp/many"
echo "file syscalls per job ($((JOBS - 1)) jobs, a $JOBS-job batch less a 1-job one, -j 8${CACHE:+, cache filling}):"
join -a 2 -e 0 -o 0,1.2,2.2 "$tmp/one" "$tmp/many" | awk -v n=$((JOBS - 1)) '
	$1 != "total" { per = ($3 - $2) / n; if (per >= 0.05) { printf "  %-16s %6.2f\n", $1, per; total += per } }
	END { printf "  %-16s %6.2f\n", "total", total }'
