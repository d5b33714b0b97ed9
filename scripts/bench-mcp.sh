#!/usr/bin/env bash
# agentspec mcp over stdio against the official MCP filesystem server
# (@modelcontextprotocol/server-filesystem, installed from npm into the user's
# cache directory, or $AGENTSPEC_NPM_CACHE) in the same run: read_file of a
# 2 KB file (p50, calls/s, medians of interleaved block pairs), through a
# minimal line-in/line-out client and through the Go SDK client,
# list_directory with 8 calls in flight (calls/s, median of the per-pair
# ratios), and session start-up (spawn to answered initialize).
# MCP_BENCH_ONLY=read|list|start runs one part. Without node or npm it says
# so and skips.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
"$GO" build -o bin/agentspec ./cmd/agentspec
"$GO" run ./internal/mcpbench -agentspec bin/agentspec \
	-blocks "${MCP_BENCH_BLOCKS:-20}" -calls "${MCP_BENCH_CALLS:-200}" -starts "${MCP_BENCH_STARTS:-10}" \
	${MCP_BENCH_ONLY:+-only "$MCP_BENCH_ONLY"}
