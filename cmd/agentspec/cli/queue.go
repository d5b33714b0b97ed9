package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentspec/agentspec/runtime/queue"
)

// envNATS is the environment variable --nats defaults to.
const envNATS = "AGENTSPEC_NATS_URL"

// natsFlags are how the queue commands reach the NATS server.
type natsFlags struct {
	url    string
	stream string
	conn   queue.ConnectOptions
}

// add registers the flags; envDefault says whether --nats falls back to
// $AGENTSPEC_NATS_URL (not for batch, where --nats chooses the queue).
func (f *natsFlags) add(fl *pflag.FlagSet, envDefault bool) {
	usage := "the NATS server URL, or a comma-separated list for a cluster"
	if envDefault {
		usage += " (default $" + envNATS + ")"
	} else {
		usage = "run the jobs on the work queue of this NATS server (a comma-separated list for a cluster)"
	}
	fl.StringVar(&f.url, "nats", "", usage)
	fl.StringVar(&f.stream, "stream", queue.DefaultStream, "the queue's JetStream stream")
	fl.StringVar(&f.conn.Creds, "creds", "", "a NATS credentials file (user JWT and NKey seed)")
	fl.StringVar(&f.conn.NKey, "nkey", "", "a file holding an NKey seed, for NKey authentication")
	fl.StringVar(&f.conn.TLSCert, "tls-cert", "", "a TLS client certificate (with --tls-key)")
	fl.StringVar(&f.conn.TLSKey, "tls-key", "", "the TLS client certificate's key")
	fl.StringVar(&f.conn.TLSCA, "tls-ca", "", "the CA certificate the server's certificate is checked against")
}

// open connects and opens the queue; the caller closes the connection.
func (f *natsFlags) open(ctx context.Context, name string, ackWait time.Duration) (*queue.Queue, error) {
	url := f.url
	if url == "" {
		url = os.Getenv(envNATS)
	}
	if url == "" {
		return nil, exitWith(exitUsage, fmt.Errorf("no NATS server: give --nats URL or set %s", envNATS))
	}
	// Usage errors, not failures to connect.
	if (f.conn.TLSCert == "") != (f.conn.TLSKey == "") {
		return nil, exitWith(exitUsage, errors.New("a TLS client certificate needs its key, and a key its certificate (--tls-cert and --tls-key)"))
	}
	if f.conn.Creds != "" && f.conn.NKey != "" {
		return nil, exitWith(exitUsage, errors.New("give one of --creds and --nkey, not both"))
	}
	// A file named that cannot be read is the user's mistake, said before
	// connecting, not a server that could not be reached.
	for _, file := range []struct{ flag, path string }{
		{"creds", f.conn.Creds}, {"nkey", f.conn.NKey},
		{"tls-cert", f.conn.TLSCert}, {"tls-key", f.conn.TLSKey}, {"tls-ca", f.conn.TLSCA},
	} {
		if file.path == "" {
			continue
		}
		fh, err := os.Open(file.path)
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return nil, exitWith(exitUsage, fmt.Errorf("--%s %s: %w", file.flag, file.path, err))
		}
		fh.Close()
	}
	// So is one that holds something else: a malformed seed, a key that is
	// not the certificate's.
	var fe *queue.FileError
	if err := f.conn.CheckFiles(); errors.As(err, &fe) {
		flag := map[string]string{"Creds": "creds", "NKey": "nkey", "TLSCert": "tls-cert", "TLSKey": "tls-key", "TLSCA": "tls-ca"}[fe.Field]
		return nil, exitWith(exitUsage, fmt.Errorf("--%s %s: %w", flag, fe.Path, fe.Err))
	}
	f.conn.Name = name
	nc, err := queue.Connect(url, f.conn)
	if err != nil {
		return nil, exitWith(exitFailure, err)
	}
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	q, err := queue.Open(octx, nc, queue.Options{Stream: f.stream, AckWait: ackWait})
	if err != nil {
		nc.Close()
		switch {
		case errors.Is(err, nats.ErrNoResponders), errors.Is(err, jetstream.ErrJetStreamNotEnabled),
			errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount):
			err = fmt.Errorf("the NATS server at %s has no JetStream for this account (start it with nats-server -js): %w", url, err)
		case errors.Is(err, context.DeadlineExceeded):
			err = fmt.Errorf("%w (is JetStream enabled on the server? start it with nats-server -js)", err)
		}
		return nil, exitWith(exitFailure, err)
	}
	return q, nil
}

func newQueueCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "queue",
		Short: "Inspect the NATS JetStream work queue",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newQueueStatsCmd())
	return cmd
}

func newQueueStatsCmd() *cobra.Command {
	var (
		nf          natsFlags
		cacheBucket string
		format      string
	)
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Show the queue's jobs, idle worker slots, last day's results and shared cache",
		Long: `Stats shows the queue as the NATS server sees it: jobs pending (waiting for a worker), running
(held by a worker, those waiting out a retry delay included, and how many of them were handed out
more than once), the idle worker slots (open pull requests), the results kept from the last 24
hours (succeeded and failed), and the entries of the shared result cache. Exit status: 0
success, 1 when the server cannot be reached or the queue read, 2 on usage errors.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(format); err != nil {
				return exitWith(exitUsage, err)
			}
			q, err := nf.open(cmd.Context(), "agentspec queue stats", 0)
			if err != nil {
				return err
			}
			defer q.Conn().Close()
			st, err := q.Stats(cmd.Context(), cacheBucket)
			if err != nil {
				return exitWith(exitFailure, err)
			}
			out := cmd.OutOrStdout()
			if format == formatJSON {
				b, _ := json.MarshalIndent(st, "", "  ")
				_, err = fmt.Fprintf(out, "%s\n", b)
				return err
			}
			bucket := cacheBucket
			if bucket == "" {
				bucket = queue.DefaultCacheBucket
			}
			cacheLine := fmt.Sprintf("cache %s: %d entries", bucket, st.CacheEntries)
			if st.CacheEntries == 1 {
				cacheLine = fmt.Sprintf("cache %s: 1 entry", bucket)
			}
			if st.CacheEntries < 0 {
				cacheLine = fmt.Sprintf("cache %s: no bucket yet", bucket)
			}
			_, err = fmt.Fprintf(out, "queue %s: %d pending, %d running (%d redelivered), %s\nresults (24h): %d succeeded, %d failed\n%s\n",
				st.Stream, st.Pending, st.Running, st.Redelivered, plural(st.Waiting, "idle worker slot"),
				st.Succeeded, st.Failed, cacheLine)
			return err
		},
	}
	fl := cmd.Flags()
	nf.add(fl, true)
	fl.StringVar(&cacheBucket, "cache-bucket", queue.DefaultCacheBucket, "the shared cache's key-value bucket")
	addOutputFlag(fl, &format, formatText, "output format: text, or json for a report")
	return cmd
}
