package mcpserve

import (
	"context"
	"errors"
	"iter"
	"sync"

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
// kept in an sdk.MemoryEventStore of at most callEventBytes in all; one
// resumed after its events were dropped for that bound is given none of
// them (see keptOrNone).
type eventStore struct {
	calls *sdk.MemoryEventStore

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

// keptEvents are the last events of a GET stream.
type keptEvents struct {
	first  int // the index of events[0]
	events [][]byte
}

var _ sdk.EventStore = (*eventStore)(nil)

func newEventStore() *eventStore {
	calls := sdk.NewMemoryEventStore(nil)
	calls.SetMaxBytes(callEventBytes)
	return &eventStore{calls: calls, standalone: map[string]*keptEvents{}, closed: map[string]struct{}{}}
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
		return s.calls.Open(ctx, sessionID, streamID)
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
		return s.calls.Append(ctx, sessionID, streamID, data)
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
// after index, those dropped left out (see eventStore).
func (s *eventStore) After(ctx context.Context, sessionID, streamID string, index int) iter.Seq2[[]byte, error] {
	if streamID != "" {
		return keptOrNone(s.calls.After(ctx, sessionID, streamID, index))
	}
	s.mu.Lock()
	var events [][]byte
	if k := s.standalone[sessionID]; k != nil {
		from := max(index+1-k.first, 0)
		if from < len(k.events) {
			events = append(events, k.events[from:]...)
		}
	}
	s.mu.Unlock()
	return func(yield func([]byte, error) bool) {
		for _, e := range events {
			if !yield(e, nil) {
				return
			}
		}
	}
}

// keptOrNone is a call stream's events, or none once some of those
// asked for were dropped (sdk.ErrEventsPurged): the SDK answers an error
// 400, on which its client ends the whole session, where with none the
// resumed stream ends without the call's answer, and the call alone fails,
// as a broken call stream did before its events were kept.
func keptOrNone(events iter.Seq2[[]byte, error]) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		for data, err := range events {
			if errors.Is(err, sdk.ErrEventsPurged) {
				return
			}
			if !yield(data, err) {
				return
			}
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
	return s.calls.SessionClosed(ctx, sessionID)
}
