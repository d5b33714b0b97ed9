package mcpserve

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// eventStore is the streamable HTTP handler's sdk.EventStore: it keeps
// what the SDK sends on a session's streams, so that what it sent on the
// GET stream before the client opened it is given to the client once it
// does, and a stream whose connection broke can be resumed (Last-Event-ID)
// without losing what was sent meanwhile.
//
// Without one the SDK drops what it sends on a GET stream no client holds
// open: a notifications/tools/list_changed sent between a client's
// initialize and its GET (the SDK's client opens it once initialized;
// others later) was lost, and the client never listed the tools again.
//
// The GET stream carries notifications/tools/list_changed alone (the
// server has no logging, makes no requests of its clients, and sends
// progress on the stream of the call's POST), each saying the same: list
// the tools again. Of those a session's last standaloneKept are kept, and a
// GET is given those after its Last-Event-ID, without an error for those
// dropped before them, which a later one stands for. The SDK then numbers
// the events it sends next from what it was given, below the numbers they
// are kept under, so that a client resuming may be told again what it was
// told already, never less. The POSTs' streams (answers, progress) are
// kept, at most callEventBytes of them in all (see callEvents); one resumed
// after its events were dropped for that bound is given none of them. The
// stream of a POST whose calls its client all cancelled is let go (see
// cancelled): the calls are not answered, so nothing of it is of use.
type eventStore struct {
	calls callEvents

	mu         sync.Mutex
	standalone map[string]*keptEvents // by session id
	// closed are the sessions last closed, oldest first, and what the SDK
	// sends one as it closes is refused (see errSessionClosed).
	closed    map[string]struct{}
	closedIDs []string
}

// closedKept is how many closed sessions are told from those not yet
// opened: the SDK sends one what it does as it closes within moments.
const closedKept = 256

// standaloneKept is how many events of a session's GET stream are kept.
const standaloneKept = 16

// callEventBytes bounds what is kept of all the POSTs' streams.
const callEventBytes = 8 << 20

// keptEvents are the last events of a stream.
type keptEvents struct {
	first  int // the index of events[0]
	events [][]byte
	// calls are those of a POST's stream its client has not cancelled.
	calls map[jsonrpc.ID]bool
}

// callEvents are the events of the POSTs' streams, by session and stream,
// at most max bytes of them in all (one event larger is kept alone): past
// that, the oldest event of every stream is dropped, a round at a time, as
// sdk.MemoryEventStore drops them, until a new one fits.
type callEvents struct {
	max, bytes int
	streams    map[string]map[string]*keptEvents
	// stream is the stream of a call, by session and call, until the
	// call is cancelled, or answered on its POST's stream (see answered).
	stream map[string]map[jsonrpc.ID]string
}

var _ sdk.EventStore = (*eventStore)(nil)

func newEventStore() *eventStore {
	return &eventStore{
		calls:      callEvents{max: callEventBytes, streams: map[string]map[string]*keptEvents{}, stream: map[string]map[jsonrpc.ID]string{}},
		standalone: map[string]*keptEvents{}, closed: map[string]struct{}{},
	}
}

// errSessionClosed refuses what the SDK stores for a session as it closes,
// once its events were let go (it checks that the session is open, and
// then stores the event unlocked): kept, it would never be let go again.
var errSessionClosed = errors.New("the session is closed")

// Open implements sdk.EventStore.
func (s *eventStore) Open(ctx context.Context, sessionID, streamID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, closed := s.closed[sessionID]; closed {
		return errSessionClosed
	}
	if streamID != "" {
		streams := s.calls.streams[sessionID]
		if streams == nil {
			streams = map[string]*keptEvents{}
			s.calls.streams[sessionID] = streams
		}
		// What a POST carrying calls keeps is let go once the client has
		// cancelled them all: at once when it has already.
		var calls []jsonrpc.ID
		if a, ok := ctx.Value(answerKey{}).(*answerStream); ok {
			a.opened(streamID)
			if calls = a.notCancelled(); len(calls) == 0 {
				return nil
			}
		}
		if streams[streamID] == nil {
			k := &keptEvents{}
			for _, id := range calls {
				if k.calls == nil {
					k.calls = map[jsonrpc.ID]bool{}
				}
				k.calls[id] = true
				if s.calls.stream[sessionID] == nil {
					s.calls.stream[sessionID] = map[jsonrpc.ID]string{}
				}
				s.calls.stream[sessionID][id] = streamID
			}
			streams[streamID] = k
		}
		return nil
	}
	if s.standalone[sessionID] == nil {
		s.standalone[sessionID] = &keptEvents{}
	}
	return nil
}

// Append implements sdk.EventStore.
func (s *eventStore) Append(ctx context.Context, sessionID, streamID string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, closed := s.closed[sessionID]; closed {
		return errSessionClosed
	}
	if streamID != "" {
		s.calls.append(sessionID, streamID, data)
		return nil
	}
	k := s.standalone[sessionID]
	if k == nil {
		k = &keptEvents{}
		s.standalone[sessionID] = k
	}
	k.events = append(k.events, data)
	if drop := len(k.events) - standaloneKept; drop > 0 {
		k.events = append([][]byte(nil), k.events[drop:]...)
		k.first += drop
	}
	return nil
}

// After implements sdk.EventStore: for a GET stream, the events kept
// after index, those dropped left out (see eventStore); for a POST's, those
// after index, or none once some of them were dropped, as all of a
// stream let go are. The SDK answers an error (sdk.ErrEventsPurged among
// them) with a 400, on which its client ends the whole session, where with
// none the resumed stream ends without the call's answer, and the call
// alone fails, as a broken call stream did before its events were kept. A
// session not open (closed, or never opened) is an error.
func (s *eventStore) After(ctx context.Context, sessionID, streamID string, index int) iter.Seq2[[]byte, error] {
	s.mu.Lock()
	var events [][]byte
	var err error
	if streamID != "" {
		events, err = s.calls.after(sessionID, streamID, index)
	} else if k := s.standalone[sessionID]; k != nil {
		from := max(index+1-k.first, 0)
		if from < len(k.events) {
			events = append(events, k.events[from:]...)
		}
	}
	s.mu.Unlock()
	return func(yield func([]byte, error) bool) {
		if err != nil {
			yield(nil, err)
			return
		}
		for _, e := range events {
			if !yield(e, nil) {
				return
			}
		}
	}
}

// cancelled notes that the client of a session cancelled its call id, and
// once every call of the call's stream is, lets go of what is kept of the
// stream, and of what the SDK stores on it later (the answers it still
// writes).
func (s *eventStore) cancelled(sessionID string, id jsonrpc.ID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	stream, ok := s.calls.stream[sessionID][id]
	if !ok {
		return
	}
	delete(s.calls.stream[sessionID], id)
	if len(s.calls.stream[sessionID]) == 0 {
		delete(s.calls.stream, sessionID)
	}
	if k := s.calls.streams[sessionID][stream]; k != nil && k.calls[id] {
		delete(k.calls, id)
		if len(k.calls) == 0 {
			s.calls.drop(sessionID, stream)
		}
	}
}

// SessionClosed implements sdk.EventStore.
func (s *eventStore) SessionClosed(ctx context.Context, sessionID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.standalone, sessionID)
	if _, closed := s.closed[sessionID]; !closed {
		if len(s.closedIDs) == closedKept {
			delete(s.closed, s.closedIDs[0])
			s.closedIDs = append(s.closedIDs[:0], s.closedIDs[1:]...)
		}
		s.closed[sessionID] = struct{}{}
		s.closedIDs = append(s.closedIDs, sessionID)
	}
	for id := range s.calls.streams[sessionID] {
		s.calls.drop(sessionID, id)
	}
	delete(s.calls.streams, sessionID)
	delete(s.calls.stream, sessionID)
	return nil
}

// answered notes that the POST of a session whose stream carried the calls
// ids ended with their answers written: a cancellation of them, come late,
// has nothing to let go, so they are no longer looked up. Those the SDK
// refused (an id already under way) are another stream's, which is kept.
func (s *eventStore) answered(sessionID, streamID string, ids []jsonrpc.ID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	calls := s.calls.stream[sessionID]
	for _, id := range ids {
		if stream, ok := calls[id]; ok && stream == streamID {
			delete(calls, id)
		}
	}
	if len(calls) == 0 {
		delete(s.calls.stream, sessionID)
	}
	if k := s.calls.streams[sessionID][streamID]; k != nil {
		k.calls = nil
	}
}

// append keeps data on a stream of a session, dropping the oldest events
// kept when all would pass the bound; what comes for a stream not open, one
// let go, is not kept.
func (c *callEvents) append(sessionID, streamID string, data []byte) {
	k := c.streams[sessionID][streamID]
	if k == nil {
		return
	}
	// The events are dropped before data is added, so that it is kept
	// whatever its size.
	for c.bytes+len(data) > c.max && c.bytes > 0 {
		for _, streams := range c.streams {
			for _, o := range streams {
				if len(o.events) > 0 {
					c.bytes -= len(o.events[0])
					o.events[0] = nil
					o.events = o.events[1:]
					o.first++
				}
			}
		}
	}
	k.events = append(k.events, data)
	c.bytes += len(data)
}

// after returns the events of a stream after index: none when some of
// those were dropped, or when the stream is not open in a session that is.
func (c *callEvents) after(sessionID, streamID string, index int) ([][]byte, error) {
	streams, open := c.streams[sessionID]
	if !open {
		return nil, fmt.Errorf("the session %q is not open", sessionID)
	}
	k := streams[streamID]
	if k == nil || index+1 < k.first {
		return nil, nil
	}
	if from := index + 1 - k.first; from < len(k.events) {
		return slices.Clone(k.events[from:]), nil
	}
	return nil, nil
}

// drop lets go of a stream of a session and its events.
func (c *callEvents) drop(sessionID, streamID string) {
	if k := c.streams[sessionID][streamID]; k != nil {
		for _, e := range k.events {
			c.bytes -= len(e)
		}
		delete(c.streams[sessionID], streamID)
	}
}
