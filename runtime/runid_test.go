package runtime

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
)

// A run started with WithRunID takes that id: every one of its events
// carries it. A run started under that run gets an id of its own.
func TestWithRunIDIsTheNextRunsID(t *testing.T) {
	t.Parallel()
	f := newBatchFixture(t, 1, "")
	id := NewRunID()
	var mu sync.Mutex
	seen := map[string]int{}
	listen := func(ctx context.Context, _ capabilities.Event) error {
		got, _ := RunIDFrom(ctx)
		mu.Lock()
		seen[got]++
		mu.Unlock()
		return nil
	}
	_, err := Run(WithRunID(context.Background(), id), f.spec,
		WithWorkspace(f.workspaces[0]), WithListener(listen), WithoutCache())
	require.NoError(t, err)
	assert.Len(t, seen, 1, "one run, one id: %v", seen)
	assert.Positive(t, seen[id], "the events carry the id given: %v", seen)

	outer := withRunID(WithRunID(context.Background(), id))
	inner := withRunID(outer)
	got, _ := RunIDFrom(outer)
	assert.Equal(t, id, got)
	got, _ = RunIDFrom(inner)
	assert.NotEqual(t, id, got, "a run inside the run gets its own id")
	assert.Len(t, NewRunID(), 16)
}
