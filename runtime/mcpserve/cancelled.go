package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpCall is a call under way over HTTP: its session's id and its own.
type httpCall struct {
	session string
	id      jsonrpc.ID
}

// answerStream is the stream of a POST that carries calls, on which the SDK
// writes their answers. Once the client has cancelled every one of them,
// nothing more is written on it: MCP asks the receiver of a cancellation
// not to answer, and the SDK answers whatever its handler returns (the
// jsonrpc2 connection's processResult writes a response for every call,
// and the streamable transport offers no hook on the way), so the answer
// is held back here, under the SDK, as lineConn holds it back over stdio.
// The stream then ends without it, and what the event store keeps of it is
// let go (see eventStore.cancelled).
type answerStream struct {
	http.ResponseWriter
	mu      sync.Mutex
	pending map[jsonrpc.ID]bool // its calls the client has not cancelled
	quiet   bool                // every call cancelled: nothing is written
	stream  string              // the id the SDK gave the stream, once opened
}

// answerKey is the context key of the request's answerStream, by which
// the event store knows the calls of the stream the SDK opens.
type answerKey struct{}

func (a *answerStream) Write(p []byte) (int, error) {
	if a.isQuiet() {
		return len(p), nil
	}
	return a.ResponseWriter.Write(p)
}

// Flush flushes what was written, as the SDK does after every event.
func (a *answerStream) Flush() {
	if !a.isQuiet() {
		_ = http.NewResponseController(a.ResponseWriter).Flush()
	}
}

// Unwrap gives http.ResponseController the ResponseWriter's other methods.
func (a *answerStream) Unwrap() http.ResponseWriter { return a.ResponseWriter }

func (a *answerStream) isQuiet() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.quiet
}

// cancel notes that the client cancelled the call id.
func (a *answerStream) cancel(id jsonrpc.ID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.pending, id)
	a.quiet = len(a.pending) == 0
}

// opened notes the id under which the SDK keeps the stream's events.
func (a *answerStream) opened(streamID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stream = streamID
}

// streamID returns the id under which the SDK keeps the stream's events,
// "" when it keeps none.
func (a *answerStream) streamID() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stream
}

// notCancelled returns its calls the client has not cancelled.
func (a *answerStream) notCancelled() []jsonrpc.ID {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Collect(maps.Keys(a.pending))
}

// withoutCancelledAnswers keeps the streams of the POSTs carrying calls of
// a session (answerStream) while they are served, and has those of the
// calls that a POST's notifications/cancelled names answer nothing more.
// The cancellation is noted before the SDK reads it, and so before the
// call's handler is cancelled and returns its answer. A POST of a batch
// (protocol 2025-03-26) is kept quiet only once all its calls are
// cancelled; what events keeps of a POST kept quiet is let go.
func (s *Server) withoutCancelledAnswers(h http.Handler, events *eventStore) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		session := r.Header.Get("Mcp-Session-Id")
		if r.Method != http.MethodPost || session == "" || r.Body == nil {
			h.ServeHTTP(w, r)
			return
		}
		// The SDK reads the body after this, and refuses it when it is
		// longer than its limit: one so long is not looked at.
		body, err := io.ReadAll(io.LimitReader(r.Body, sdk.DefaultMaxRequestBodyBytes+1))
		r.Body = readCloser{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
		if err != nil || len(body) > sdk.DefaultMaxRequestBodyBytes {
			h.ServeHTTP(w, r)
			return
		}
		calls, cancelled := callsAndCancels(body)
		for _, id := range cancelled {
			s.amu.Lock()
			a := s.answers[httpCall{session, id}]
			s.amu.Unlock()
			if a != nil {
				a.cancel(id)
			}
			// The call's stream may be kept after its POST ended.
			events.cancelled(session, id)
		}
		if len(calls) == 0 {
			h.ServeHTTP(w, r)
			return
		}
		a := &answerStream{ResponseWriter: w, pending: map[jsonrpc.ID]bool{}}
		var kept []httpCall
		s.amu.Lock()
		for _, id := range calls {
			// An id already under way is refused by the SDK: the stream
			// kept is the first call's.
			if k := (httpCall{session, id}); s.answers[k] == nil {
				s.answers[k] = a
				a.pending[id] = true
				kept = append(kept, k)
			}
		}
		s.amu.Unlock()
		defer func() {
			s.amu.Lock()
			for _, k := range kept {
				delete(s.answers, k)
			}
			s.amu.Unlock()
			// The SDK ends a POST whose client is still there once every
			// call of it is answered; one whose client went away may have
			// its calls still under way, and cancelled later.
			if stream := a.streamID(); stream != "" && r.Context().Err() == nil {
				ids := make([]jsonrpc.ID, len(kept))
				for i, k := range kept {
					ids[i] = k.id
				}
				events.answered(session, stream, ids)
			}
		}()
		h.ServeHTTP(a, r.WithContext(context.WithValue(r.Context(), answerKey{}, a)))
	})
}

type readCloser struct {
	io.Reader
	io.Closer
}

// callsAndCancels returns the ids of the calls among the JSON-RPC messages
// of body (one, or a batch), and those that its notifications/cancelled
// name. What does not decode is left to the SDK to refuse.
func callsAndCancels(body []byte) (calls, cancelled []jsonrpc.ID) {
	msgs := []json.RawMessage{body}
	if b := bytes.TrimSpace(body); len(b) > 0 && b[0] == '[' {
		if json.Unmarshal(b, &msgs) != nil {
			return nil, nil
		}
	}
	for _, raw := range msgs {
		msg, err := jsonrpc.DecodeMessage(raw)
		if err != nil {
			continue
		}
		req, ok := msg.(*jsonrpc.Request)
		switch {
		case !ok:
		case req.IsCall():
			calls = append(calls, req.ID)
		case req.Method == "notifications/cancelled":
			var p struct {
				RequestID any `json:"requestId"`
			}
			if json.Unmarshal(req.Params, &p) == nil {
				if id, err := jsonrpc.MakeID(p.RequestID); err == nil && id.IsValid() {
					cancelled = append(cancelled, id)
				}
			}
		}
	}
	return calls, cancelled
}
