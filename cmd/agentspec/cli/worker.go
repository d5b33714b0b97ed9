package cli

import (
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentspec/agentspec/internal/text"
	"github.com/agentspec/agentspec/runtime/queue"
)

func newWorkerCmd() *cobra.Command {
	var (
		nf   natsFlags
		opts queue.WorkerOptions
		ack  time.Duration
		q    bool
		ship int64
	)
	cmd := &cobra.Command{
		Use:   "worker --nats URL [--workspace-root DIR] [-j N]",
		Short: "Run jobs from a NATS JetStream work queue",
		Annotations: map[string]string{
			signalEndsCleanly: "yes", // SIGTERM is how a worker is stopped
			secondSignalLeaves: "its running jobs are not handed back (another worker gets them after --ack-wait), " +
				"MCP servers they started are left to exit as their input closes, Shell commands run with " +
				"sandbox: off go on, and its scratch directory is left behind",
		},
		Long: `Worker pulls the jobs that "agentspec batch --nats" and "agentspec submit" publish, -j at a
time, and runs each as "agentspec run" would: the job's spec (it travels with the job, with its
script file), input and variables, its workspace's checks and the cache, which the workers share
through a JetStream key-value bucket (--cache-bucket). Each run's events are published on
agentspec.events.<job>, after the worker's job.start (--no-events turns the run's off). The
jobs share, for the worker's life, what the AWS credential chain finds and Vertex AI's token,
renewed as they expire: an AWS profile changed since is seen once the worker restarts.

A job names its workspace relative to --workspace-root (default: the current directory), on
storage the workers share; a job that names anything outside the root (an absolute path, "..",
a symbolic link that leads out) fails without running. A shipped job (--ship) is unpacked into a
fresh directory below the root and the files its run changed are sent back; one whose archive is
more than --ship-max MiB fails without running, whatever its submitter allowed.

Whoever can publish to the queue chooses the job's spec, so a worker runs only what stays in the
job's workspace: before a run, each capability (nested ones too) is asked what it reaches, and
a job is refused, without running, when its spec would start a program (an MCP command, a
Shell: --allow-exec), connect where the spec or the model says (an MCP url, WebFetch's local
tool, a Shell with network: true, a model_settings base_url or extra_headers, ollama: or
litellm: without the worker's OLLAMA_BASE_URL, OLLAMA_HOST or LITELLM_BASE_URL:
--allow-network) or read the worker's environment through ${VAR} (--allow-env); a base_url
needs both, since the worker's credentials for the provider go there. A FileSystem root
outside the workspace is refused whatever the flags; so is a capability that does not say
what it reaches.

A job is acknowledged once its result is published. One that fails in a way that might pass (a
provider outage, a network error) is retried after a delay, up to --max-attempts attempts in
all (its deliveries, but those handed back by stopping workers); one that cannot pass (a spec
error, failed checks, the model's every attempt rejected) fails at once. While a job runs the
worker reports progress, so the server hands it to another worker only when this one stops
answering for --ack-wait; a worker whose reports have not reached the server that long stops
the run itself and settles nothing of it, the job being another worker's by then. --job-timeout
bounds how long one delivery may run (a job past it fails for good).

Ctrl-C or SIGTERM stops the worker: it pulls no more jobs, stops its runs between tool calls
and hands their jobs back to the queue at once, for another worker to run from the start; a
hand-back uses up none of the job's attempts (save on a consumer whose max deliver is bounded,
or for a job that then waits over a day: docs/many-machines.md says when). A second signal
during that stop ends it at once (130 or 143), its jobs handed back only by the server, after
--ack-wait. A job whose submitter is interrupted (Ctrl-C) is stopped the same way and fails as
interrupted.

Progress goes to stderr, one line per job; -q silences it. Exit status: 0 after a clean stop,
1 when the server cannot be reached, the queue opened or the submitters' stops subscribed to
(agentspec.cancel.S.*: a worker that would not hear them does not start, and one the server
refuses them later stops as on Ctrl-C), 2 on usage errors.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Concurrency < 1 {
				return exitWith(exitUsage, fmt.Errorf("-j must be at least 1, not %d", opts.Concurrency))
			}
			if opts.MaxAttempts < 1 {
				return exitWith(exitUsage, fmt.Errorf("--max-attempts must be at least 1, not %d", opts.MaxAttempts))
			}
			if opts.JobTimeout < 0 {
				return exitWith(exitUsage, fmt.Errorf("--job-timeout must not be negative, not %s", opts.JobTimeout))
			}
			if ack <= 0 { // queue.Open would take it as the default, 30s
				return exitWith(exitUsage, fmt.Errorf("--ack-wait must be more than 0, not %s", ack))
			}
			if err := checkShipMax(ship); err != nil {
				return exitWith(exitUsage, err)
			}
			// Said before connecting, as a usage error: NewWorker would
			// refuse it only once the queue is open, as a failure.
			if st, err := os.Stat(opts.WorkspaceRoot); err != nil || !st.IsDir() {
				return exitWith(exitUsage, fmt.Errorf("--workspace-root %s is not a directory", opts.WorkspaceRoot))
			}
			opts.ShipMax = ship << 20
			qu, err := nf.open(cmd.Context(), "agentspec worker", ack)
			if err != nil {
				return err
			}
			defer qu.Conn().Close()
			stderr := cmd.ErrOrStderr()
			if !q {
				var mu sync.Mutex
				opts.Logf = func(format string, args ...any) {
					mu.Lock()
					defer mu.Unlock()
					// A job's label and errors come from whoever queued it.
					fmt.Fprintf(stderr, "%s %s\n", time.Now().Format("15:04:05"), text.Visible(fmt.Sprintf(format, args...)))
				}
			}
			w, err := queue.NewWorker(cmd.Context(), qu, opts)
			if err != nil {
				return exitWith(exitFailure, err)
			}
			if opts.Logf != nil {
				opts.Logf("worker %s: %d at a time, on %s, workspaces under %s", w.Name(), opts.Concurrency, qu.Stream(), opts.WorkspaceRoot)
			}
			if err := w.Run(cmd.Context()); err != nil {
				return exitWith(exitFailure, err)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	nf.add(fl, true)
	fl.IntVarP(&opts.Concurrency, "jobs", "j", 1, "how many jobs run at a time")
	fl.StringVar(&opts.WorkspaceRoot, "workspace-root", ".", "the directory every job's workspace must lie in")
	fl.IntVar(&opts.MaxAttempts, "max-attempts", queue.DefaultMaxAttempts, "attempts of a job (its deliveries, but those handed back by stopping workers) before it fails for good")
	fl.DurationVar(&opts.JobTimeout, "job-timeout", 0, "how long one delivery of a job may run before it fails for good (0: no bound)")
	fl.DurationVar(&ack, "ack-wait", queue.DefaultAckWait, "how long a job may go without a sign of life before another worker gets it (when this worker creates the queue's consumer)")
	fl.StringVar(&opts.CacheBucket, "cache-bucket", queue.DefaultCacheBucket, "the shared result cache's key-value bucket")
	fl.Int64Var(&ship, "ship-max", queue.DefaultShipMax>>20, "the cap, in MiB, on a shipped workspace's archive this worker takes and on the archive of its run's changes")
	fl.BoolVar(&opts.NoCache, "no-cache", false, "run every job uncached")
	fl.BoolVar(&opts.NoEvents, "no-events", false, "publish none of the runs' events, which saves encoding them where nobody watches (job.start and job.retry still go out: submitters count running jobs by them)")
	fl.StringVar(&opts.Name, "name", "", "the worker's name in results and events (default: host-pid)")
	fl.BoolVarP(&q, "quiet", "q", false, "print nothing on stderr")
	fl.BoolVar(&opts.Allow.Exec, "allow-exec", false, "run jobs whose spec starts programs (an MCP server's command, a Shell)")
	fl.BoolVar(&opts.Allow.Network, "allow-network", false, "run jobs whose spec connects where it or the model says (MCP url, local WebFetch, base_url, extra_headers, a Shell with network: true)")
	fl.BoolVar(&opts.Allow.Env, "allow-env", false, "run jobs whose spec reads the worker's environment through ${VAR}, or, with --allow-network, sends the worker's provider credentials to a base_url of its own")
	return cmd
}
