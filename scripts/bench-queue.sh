#!/usr/bin/env bash
# The NATS JetStream work queue against local batch: the same 200 jobs run
# with 1, 2 and 4 in-process workers (one slot each) on an embedded server,
# and with runtime.Batch at the same -j, as interleaved pairs. Reported:
# the median jobs/s of each side, the median of the pairs' ratios
# (queue/local), and the queue's median overhead per job: its extra wall time
# times the concurrency, over the jobs, its extra CPU time in agentspec's
# process (workers and submitter), over the jobs, and the CPU time of the
# nats-server process (built from the module) per job. "tools" jobs make three FileSystem
# tool rounds; "answer" jobs answer at once, so the queue's own cost shows.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}

"$GO" test -run '^$' -bench 'QueueVsLocal' -benchtime "${BENCHTIME_QUEUE:-5x}" ./runtime/queue/ |
	awk '/^Benchmark/ {
		name = $1; sub(/^BenchmarkQueueVsLocal\//, "", name); sub(/-[0-9]+$/, "", name)
		for (i = 2; i < NF; i++) m[$(i+1)] = $i
		printf "  %-29s local %6.0f jobs/s  queue %6.0f jobs/s  queue/local %5.2f  overhead %5.0f µs/job wall, %4.0f µs/job CPU (+%4.0f server)\n",
			name, m["local-jobs/s"], m["queue-jobs/s"], m["queue/local"], m["overhead-µs/job"], m["cpu-overhead-µs/job"], m["server-cpu-µs/job"]
		next
	}
	/^(ok|PASS|FAIL)/ || /^(goos|goarch|pkg|cpu):/ { next }
	{ print }'
