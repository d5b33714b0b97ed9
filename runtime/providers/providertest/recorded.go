package providertest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Recorded is a response body as a provider sent it: JSON, or a server-sent
// event stream written out line by line.
type Recorded struct {
	Status int // 0 means 200
	// Body is sent as is. A body that starts with "event:" or "data:" is
	// sent as text/event-stream, anything else as application/json.
	Body string
}

// SSE joins events written as "event: name\ndata: {...}" blocks (or bare
// "data: {...}" lines) into a stream body.
func SSE(events ...string) string {
	return strings.Join(events, "\n\n") + "\n\n"
}

// RecordedServer answers every request with the next recorded body, on any
// path, and keeps the requests. It checks nothing: the tests that use it
// assert on the requests themselves.
type RecordedServer struct {
	URL string

	t testing.TB
	script[Recorded]
}

// NewRecordedServer starts a server answering with bodies in order. The test
// fails if a request comes when none is left. It is closed when the test ends.
func NewRecordedServer(t testing.TB, bodies ...Recorded) *RecordedServer {
	s := &RecordedServer{t: t, script: script[Recorded]{answers: bodies}}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

func (s *RecordedServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.RequestURI(), Header: r.Header.Clone(), Body: body})
	if len(s.answers) == 0 {
		s.mu.Unlock()
		s.t.Errorf("providertest: request %d to %s has no recorded body left", len(s.requests), r.URL.Path)
		http.Error(w, `{"error":{"message":"no recorded body left"}}`, http.StatusInternalServerError)
		return
	}
	next := s.answers[0]
	s.answers = s.answers[1:]
	s.mu.Unlock()

	status := next.Status
	if status == 0 {
		status = http.StatusOK
	}
	if strings.HasPrefix(next.Body, "event:") || strings.HasPrefix(next.Body, "data:") {
		w.Header().Set("Content-Type", "text/event-stream")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, next.Body)
}
