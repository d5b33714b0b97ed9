package ordered

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func counter(n int) func() (int, bool) {
	i := 0
	return func() (int, bool) {
		if i == n {
			return 0, false
		}
		i++
		return i - 1, true
	}
}

// jitter makes workers finish out of order.
func jitter(_ int, in int) int {
	if rand.IntN(4) == 0 {
		time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
	}
	return in * 10
}

func TestRunDeliversInOrder(t *testing.T) {
	t.Parallel()
	for _, workers := range []int{0, 1, 2, 5} {
		var got []int
		Run(workers, counter(500), jitter, func(out int) bool { got = append(got, out); return true })
		want := make([]int, 500)
		for i := range want {
			want[i] = i * 10
		}
		assert.Equal(t, want, got, "workers=%d", workers)
	}
}

func TestRunStops(t *testing.T) {
	t.Parallel()
	var worked atomic.Int32
	var got []int
	Run(2, counter(10000), func(w, in int) int { worked.Add(1); return jitter(w, in) }, func(out int) bool {
		got = append(got, out)
		return len(got) < 7
	})
	assert.Equal(t, []int{0, 10, 20, 30, 40, 50, 60}, got)
	assert.Less(t, int(worked.Load()), 7+2*window, "work went on far past the stop")
}

func TestRunNothing(t *testing.T) {
	t.Parallel()
	Run(2, counter(0), jitter, func(int) bool { t.Fatal("emit called"); return true })
}

func TestRunWorkerIndex(t *testing.T) {
	t.Parallel()
	var busy [3]atomic.Int32
	Run(3, counter(300), func(w, in int) int {
		if busy[w].Add(1) != 1 {
			t.Errorf("worker %d used concurrently", w)
		}
		defer busy[w].Add(-1)
		return jitter(w, in)
	}, func(int) bool { return true })
}
