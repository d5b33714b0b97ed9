#!/usr/bin/env bash
# Runs agentspec's benchmarks. Each figure that has a target is reported as a
# ratio against its anchor measured in the same run (ripgrep for the walkers,
# os.ReadFile for read_file), or as a per-operation cost for the in-process
# paths (spec loading, one tool round of the agent loop, cache keys).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}

echo "== FileSystem walkers against ripgrep"
scripts/bench-rg.sh
echo

echo "== read_file against os.ReadFile, a 100,000-file tree, the change watcher, list_directory"
"$GO" test -run '^$' -bench 'ReadFileSmall' -benchtime "${BENCHTIME_SMALL:-5000x}" ./capabilities/filesystem/
"$GO" test -run '^$' -bench 'ReadFileLarge' -benchtime "${BENCHTIME_LARGE:-20x}" ./capabilities/filesystem/
"$GO" test -run '^$' -bench 'LargeTree|WatchOverhead|JobLifecycle|ListDirectory' -benchmem ./capabilities/filesystem/
echo

echo "== spec loading, the agent loop, cache keys"
"$GO" test -run '^$' -bench . -benchmem ./spec/ ./runtime/cache/
"$GO" test -run '^$' -bench 'ToolRounds' -benchmem ./runtime/

echo "== 1000 workspace jobs at -j 8"
"$GO" test -run '^$' -bench 'Batch1000' -benchtime "${BENCHTIME_BATCH:-3x}" ./runtime/
# fill/uncached: the median over interleaved pairs (target <= 1.3), elapsed
# time and CPU time
"$GO" test -run '^$' -bench 'BatchCacheFill' -benchtime "${BENCHTIME_FILL:-5x}" ./runtime/
# an uncached batch's CPU per job against plain Go doing the same reads and
# writes (target <= 3): batch/plain writes with os.WriteFile, batch/replace as
# write_file does (a synced file renamed over the old); medians over
# interleaved runs
"$GO" test -run '^$' -bench 'BatchCPU' -benchtime "${BENCHTIME_CPU:-5x}" ./runtime/
# file syscalls per job through the binary (target <= 35); skipped without strace
scripts/bench-syscalls.sh
echo

# ---- MCP: agentspec mcp against the official filesystem server ----
echo "== agentspec mcp over stdio against @modelcontextprotocol/server-filesystem"
scripts/bench-mcp.sh

# ---- the NATS JetStream work queue (runtime/queue) --------------------------
echo
echo "== the work queue against local batch, same total concurrency"
scripts/bench-queue.sh
echo "== a pipeline job's coordination, against runtime.Run of the same job (target: under 5 ms)"
"$GO" test -run '^$' -bench 'JobOverhead' -benchtime "${BENCHTIME_PIPELINE:-21x}" ./pipeline/ | grep '^Benchmark'
echo "== a worker asking a job's capabilities what they reach, against the job's run"
"$GO" test -run '^$' -bench 'ConfineVsRun' -benchtime "${BENCHTIME_CONFINE:-7x}" ./runtime/queue/ | grep '^Benchmark'

# ---- providers ---------------------------------------------------------------
echo
echo "== streamed tool-call arguments in 4-byte pieces: MB/s must hold from 64 KiB to 1 MiB (linear)"
"$GO" test -run '^$' -bench 'StreamedArguments' -benchtime "${BENCHTIME_ARGS:-5x}" ./runtime/providers/ | grep '^Benchmark'
echo "== a confined Shell command against /bin/sh -c true exec'd directly"
"$GO" test -run '^$' -bench 'BenchmarkStart' -benchtime "${BENCHTIME_SHELL:-20x}" ./internal/confine/ | grep '^Benchmark'

# ---- start-up: agentspec version against rg --version -----------------------
echo
echo "== start-up"
scripts/bench-startup.sh

echo
echo "== a cold build against a hello world's, and the binary's size (minutes; BENCH_BUILD=0 skips it)"
scripts/bench-build.sh
