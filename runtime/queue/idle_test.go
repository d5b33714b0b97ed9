package queue

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
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
