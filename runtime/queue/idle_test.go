package queue

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An idle worker logs nothing while it waits for jobs, however many pulls
// come back empty, and says when it stops.
func TestIdleWorkerIsQuiet(t *testing.T) {
	// pullWait is package state: this test does not run in parallel.
	saved := pullWait
	pullWait = 50 * time.Millisecond
	t.Cleanup(func() { pullWait = saved })

	var mu sync.Mutex
	var lines []string
	url := startServer(t)
	w := startWorker(t, url, WorkerOptions{Name: "idle", Concurrency: 2, Logf: func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf(format, args...))
	}})
	time.Sleep(20 * pullWait) // some forty empty pulls
	w.stop()
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"stopped: no job is running"}, lines, strings.Join(lines, "\n"))
}

// An idle worker's slots are counted idle all the time, not only between
// the ends of its pulls: queue stats shows them steadily.
func TestIdleSlotsCountedSteadily(t *testing.T) {
	// pullWait is package state: this test does not run in parallel.
	saved := pullWait
	pullWait = 500 * time.Millisecond
	t.Cleanup(func() { pullWait = saved })

	url := startServer(t)
	startWorker(t, url, WorkerOptions{Name: "idle", Concurrency: 3})
	q := connect(t, url, 0)
	ctx := context.Background()
	// Wait for the worker's first pulls, then watch a few of them end.
	require.Eventually(t, func() bool {
		st, err := q.Stats(ctx, "")
		return err == nil && st.Waiting == 3
	}, 10*time.Second, 10*time.Millisecond)
	counts := map[int]int{}
	for end := time.Now().Add(8 * pullWait); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		st, err := q.Stats(ctx, "")
		require.NoError(t, err)
		counts[st.Waiting]++
	}
	// A slot is out of the count for the round trip between two pulls: with
	// pulls this short (60 times shorter than a worker's), that was under 1%
	// of the samples on an idle machine, where a second's pause after each
	// empty pull left it at 0 two times in three. The bound leaves room for
	// a loaded machine's slower round trips.
	total := 0
	for _, n := range counts {
		total += n
	}
	t.Logf("idle slots seen: %v", counts)
	assert.GreaterOrEqual(t, float64(counts[3]), 0.9*float64(total), "nearly always 3: %v", counts)
}
