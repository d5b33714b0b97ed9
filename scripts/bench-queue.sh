#!/usr/bin/env bash
# The NATS JetStream work queue against local batch: the same 200 jobs run
# with 1, 2 and 4 in-process workers (one slot each) on an embedded server,
# and with runtime.Batch at the same -j, as interleaved pairs. Reported:
# the median jobs/s of each side, the median of the pairs' ratios
# (queue/local), and the queue's median overhead per job: its extra wall time
# times the concurrency, over the jobs, and its extra CPU time (the embedded
# server's included), over the jobs. "tools" jobs make three FileSystem
# tool rounds; "answer" jobs answer at once, so the queue's own cost shows.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}

"$GO" test -run '^$' -bench 'QueueVsLocal' -benchtime "${BENCHTIME_QUEUE:-5x}" ./runtime/queue/ |
	awk '/^Benchmark/ {
		name = $1; sub(/^BenchmarkQueueVsLocal\//, "", name); sub(/-[0-9]+$/, "", name)
		for (i = 2; i < NF; i++) m[$(i+1)] = $i
		printf "  %-22s local %6.0f jobs/s  queue %6.0f jobs/s  queue/local %5.2f  overhead %6.0f µs/job wall, %6.0f µs/job CPU\n",
			name, m["local-jobs/s"], m["queue-jobs/s"], m["queue/local"], m["overhead-µs/job"], m["cpu-overhead-µs/job"]
		next
	}
	/^(ok|PASS|FAIL)/ || /^(goos|goarch|pkg|cpu):/ { next }
	{ print }'
