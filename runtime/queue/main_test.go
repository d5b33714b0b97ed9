package queue

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/capabilities/builtin"
)

// TestMain registers the built-in capability types the tests' specs name,
// as the CLI does. Started with envChildWorker set, the test binary is a
// worker instead, for a test to kill.
func TestMain(m *testing.M) {
	if err := builtin.Register(capabilities.Default()); err != nil {
		panic(err)
	}
	if url := os.Getenv(envChildWorker); url != "" {
		if err := childWorker(url, os.Getenv(envChildRoot)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The environment that makes the test binary a worker: the NATS server's
// URL and the workspace root.
const (
	envChildWorker = "AGENTSPEC_QUEUE_TEST_CHILD_WORKER"
	envChildRoot   = "AGENTSPEC_QUEUE_TEST_CHILD_ROOT"
)

// childWorker runs a worker named "child" until it is killed.
func childWorker(url, root string) error {
	nc, err := nats.Connect(url)
	if err != nil {
		return err
	}
	ctx := context.Background()
	q, err := Open(ctx, nc, Options{})
	if err != nil {
		return err
	}
	w, err := NewWorker(ctx, q, WorkerOptions{Name: "child", WorkspaceRoot: root})
	if err != nil {
		return err
	}
	return w.Run(ctx)
}
