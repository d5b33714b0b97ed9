// Package queue runs workspace jobs on a NATS JetStream work queue, so one
// batch can spread over many machines: a submitter publishes one job per
// workspace, workers on any number of machines pull them, run each exactly
// as runtime.Run would, and publish the results back.
//
// # What lives where
//
// For a queue named by its stream, S (DefaultStream unless told otherwise):
//
//   - stream S, a work queue on agentspec.jobs.S.<batch>.<index>: the jobs,
//     each removed once a worker acknowledges it; its durable pull consumer
//     "workers" hands each job to one worker at a time;
//   - stream S_RESULTS on agentspec.results.S.<ok|failed>.<batch>.<index>:
//     one result per job, kept a day, published with the job's id as its
//     message id so a second copy is dropped (a submitter away longer, its
//     connection lost, reports the jobs whose results expired as failed);
//   - object store S_SHIP: the workspaces sent with --ship and the files
//     their runs changed, each delivery's in an object of its own, which
//     its result names;
//   - key-value bucket S_HANDBACKS: how often each job was handed back by
//     a worker told to stop, by job id, so that those deliveries count no
//     attempt; kept a day after the last (a job that waits longer in the
//     queue has its hand-backs counted as attempts);
//   - key-value bucket AGENTSPEC_CACHE (WorkerOptions.CacheBucket): the result
//     cache, shared by every worker (cache.NewKV); a shipped job's entry is
//     stored by its submitter, once it has applied the run's changes (see
//     CacheEntry);
//   - subject agentspec.cancel.S.<batch> (not stored): a submitter stopped
//     (Ctrl-C) tells the workers to stop the batch's runs;
//   - subject agentspec.events.<batch>.<index>: each job's events, one
//     JSON object per message, as they happen (not stored): the worker's
//     job.start and job.retry, and the run's in between.
//
// Streams, buckets and the consumer are created with one replica when
// missing, and left as they are when present: to replicate them over a
// cluster, create them first with the settings wanted.
//
// # Guarantees
//
// Delivery is at least once. A worker acknowledges a job only after its
// result is published; a worker that dies, or loses its connection, leaves
// its job unacknowledged, and the server hands it to another worker once the
// acknowledgement wait runs out (a running job keeps it from running out by
// reporting progress; a worker whose reports have not reached the server
// that long, cut off from it or stalled, stops the run, which would
// otherwise share its workspace with the next, and neither settles nor
// releases the job, which is the next's). A job can therefore run twice, which is safe: the run
// starts over in the same workspace (or from the same shipped copy), a
// result already stored in the shared cache is replayed without calling the
// model as long as the workspace still holds the expected output files and
// the stored answer passes the spec's output_schema and checks (an entry
// anyone could have rewritten is judged as a fresh answer), and
// the results stream and the submitter both keep only the first result of a
// job. Every job ends exactly once in a batch's results, unless its
// submitter withdraws the batch (then a job no worker had taken has none,
// and a running one ends interrupted): ok, failed for good
// (a spec error, failed checks, an error the model made every attempt), or
// failed after MaxAttempts attempts (an error that might have passed, such
// as a provider outage, or a job whose worker died each time). A job handed
// back by a worker told to stop stays one message, released after its
// hand-back is recorded: it is never lost nor held by two workers at once,
// and the hand-back is no attempt, even when the worker dies in between.
package queue
