package queue

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

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
	if dir := os.Getenv(envChildShip); dir != "" {
		childShip(dir) // until it is killed
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

// envChildShip makes the test binary ship the directory it names into a
// store that takes a chunk and then waits forever (childShip).
const envChildShip = "AGENTSPEC_QUEUE_TEST_CHILD_SHIP"

// stuckStore is an object store whose Put reads a chunk, says so on
// stdout and never returns.
type stuckStore struct{ jetstream.ObjectStore }

func (stuckStore) Put(_ context.Context, _ jetstream.ObjectMeta, r io.Reader) (*jetstream.ObjectInfo, error) {
	_, _ = io.ReadFull(r, make([]byte, 1024))
	fmt.Println("uploading")
	time.Sleep(time.Hour)
	return nil, errors.New("never")
}

// childShip ships dir, in the temporary directory, to a stuckStore.
func childShip(dir string) {
	_, err := shipTo(context.Background(), stuckStore{}, "x", dir, "", DefaultShipMax, nil)
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
