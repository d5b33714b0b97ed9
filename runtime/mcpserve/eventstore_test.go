package mcpserve

import (
	"context"
	"strconv"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func storedAfter(t *testing.T, s *eventStore, session, stream string, index int) ([]string, error) {
	t.Helper()
	var got []string
	for data, err := range s.After(context.Background(), session, stream, index) {
		if err != nil {
			return got, err
		}
		got = append(got, string(data))
	}
	return got, nil
}

// A session's GET stream keeps its last events, and is given those after
// an index without an error for those dropped; a POST's stream is kept
// whole, and its events are gone with the session.
func TestEventStoreKeepsTheLastEventsOfAGETStream(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newEventStore()
	require.NoError(t, s.Open(ctx, "a", ""))
	require.NoError(t, s.Open(ctx, "a", "call"))
	for i := range standaloneKept + 4 {
		require.NoError(t, s.Append(ctx, "a", "", []byte(strconv.Itoa(i))))
	}
	require.NoError(t, s.Append(ctx, "a", "call", []byte("answer")))

	got, err := storedAfter(t, s, "a", "", -1)
	require.NoError(t, err)
	require.Len(t, got, standaloneKept)
	assert.Equal(t, "4", got[0], "the oldest are dropped")
	assert.Equal(t, strconv.Itoa(standaloneKept+3), got[len(got)-1])
	got, err = storedAfter(t, s, "a", "", standaloneKept+1)
	require.NoError(t, err)
	assert.Equal(t, []string{strconv.Itoa(standaloneKept + 2), strconv.Itoa(standaloneKept + 3)}, got)
	got, err = storedAfter(t, s, "a", "", standaloneKept+3)
	require.NoError(t, err)
	assert.Empty(t, got)
	got, err = storedAfter(t, s, "b", "", -1)
	require.NoError(t, err)
	assert.Empty(t, got, "a session not opened has nothing")

	got, err = storedAfter(t, s, "a", "call", -1)
	require.NoError(t, err)
	assert.Equal(t, []string{"answer"}, got)

	require.NoError(t, s.SessionClosed(ctx, "a"))
	got, err = storedAfter(t, s, "a", "", -1)
	require.NoError(t, err)
	assert.Empty(t, got)
	_, err = storedAfter(t, s, "a", "call", -1)
	assert.Error(t, err, "a stream of a closed session cannot be resumed")
}

// A call's stream whose events were dropped for the bound on what the
// calls' streams keep is resumed with none of them, not refused: the SDK
// answers a refused resumption 400, on which its client ends the whole
// session, where the call alone then fails (request terminated without
// response), as it did before events were kept.
func TestEventStoreCallStreamDroppedIsResumedEmpty(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newEventStore()
	require.NoError(t, s.Open(ctx, "a", "call"))
	require.NoError(t, s.Append(ctx, "a", "call", nil)) // the priming event
	require.NoError(t, s.Append(ctx, "a", "call", []byte("answer")))
	require.NoError(t, s.Open(ctx, "b", "big"))
	for range 2 {
		require.NoError(t, s.Append(ctx, "b", "big", make([]byte, callEventBytes)))
	}
	require.NoError(t, s.Append(ctx, "b", "big", []byte("more"))) // past the bound: a's events are dropped

	got, err := storedAfter(t, s, "a", "call", 0)
	require.NoError(t, err, "a resumption the SDK would refuse with a 400")
	assert.Empty(t, got)
	got, err = storedAfter(t, s, "b", "big", 1)
	require.NoError(t, err)
	assert.Equal(t, []string{"more"}, got, "what is still kept is given")
}

// What the SDK stores for a session as it closes, once its events were
// let go (it checks that the session is open, and then stores the event
// unlocked), is not kept: nothing would let it go again, for as long as
// the server runs.
func TestEventStoreKeepsNothingOfAClosedSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newEventStore()
	require.NoError(t, s.Open(ctx, "a", ""))
	require.NoError(t, s.Open(ctx, "a", "call"))
	require.NoError(t, s.SessionClosed(ctx, "a"))
	assert.Error(t, s.Open(ctx, "a", "late"))
	assert.Error(t, s.Append(ctx, "a", "", []byte("changed")))
	assert.Error(t, s.Append(ctx, "a", "call", []byte("answer")))

	got, err := storedAfter(t, s, "a", "", -1)
	require.NoError(t, err)
	assert.Empty(t, got)
	_, err = storedAfter(t, s, "a", "call", -1)
	assert.Error(t, err, "kept as the session closed")
	s.mu.Lock()
	assert.Empty(t, s.standalone)
	s.mu.Unlock()

	// The closed sessions told apart are bounded.
	for i := range closedKept + 1 {
		require.NoError(t, s.SessionClosed(ctx, "s"+strconv.Itoa(i)))
	}
	s.mu.Lock()
	assert.Len(t, s.closed, closedKept)
	assert.Len(t, s.closedIDs, closedKept)
	s.mu.Unlock()
	assert.NoError(t, s.Open(ctx, "a", ""), "a session closed long ago")
}

// The stream of a POST whose calls were all cancelled is let go, with
// what the SDK stores on it afterwards (the answer it still writes),
// whether the cancellation came after the SDK opened the stream or
// before; resumed, it is given nothing, without the error on which the
// SDK's client ends the session.
func TestEventStoreLetsGoOfACancelledCallStream(t *testing.T) {
	t.Parallel()
	for _, before := range []bool{false, true} {
		s := newEventStore()
		require.NoError(t, s.Open(context.Background(), "a", ""))
		a := &answerStream{pending: map[jsonrpc.ID]bool{}}
		id, err := jsonrpc.MakeID(float64(2))
		require.NoError(t, err)
		a.pending[id] = true
		ctx := context.WithValue(context.Background(), answerKey{}, a)
		cancel := func() {
			a.cancel(id)
			s.cancelled("a", id)
		}
		if before {
			cancel()
		}
		require.NoError(t, s.Open(ctx, "a", "call"))
		require.NoError(t, s.Append(ctx, "a", "call", []byte("progress")))
		if !before {
			cancel()
		}
		require.NoError(t, s.Append(ctx, "a", "call", []byte("answer")))

		got, err := storedAfter(t, s, "a", "call", -1)
		require.NoError(t, err, "cancelled before the stream opened: %v", before)
		assert.Empty(t, got, "cancelled before the stream opened: %v", before)
		s.mu.Lock()
		assert.Empty(t, s.calls.streams["a"], "cancelled before the stream opened: %v", before)
		assert.Zero(t, s.calls.bytes, "cancelled before the stream opened: %v", before)
		assert.Empty(t, s.calls.stream, "cancelled before the stream opened: %v", before)
		s.mu.Unlock()
	}
}
