// Package providertest runs fake model servers that speak the OpenAI chat
// completions and Responses, Anthropic Messages, Bedrock Converse (SigV4 or
// a bearer token; ConverseStream in AWS's event-stream framing), Vertex AI
// generateContent and Claude's Messages on Vertex AI (rawPredict and
// streamRawPredict), both with a service account's OAuth token endpoint, wire
// protocols, so tests can drive the real provider clients offline, and a
// RecordedServer that answers with bodies in the exact shapes a provider
// sent them.
//
// A server answers each request with the next scripted Reply, rendered in its
// protocol, streaming (SSE) or not as the request asks. Like the real APIs it
// rejects malformed conversations with a 400 and the APIs' own error texts (a
// tool result without its call, a tool call left unanswered, a tool without an
// input schema, ...), without consuming a reply, which is what catches a loop
// that replays turns in the wrong shape. Every request is kept for inspection.
package providertest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Reply is one scripted answer. The zero Status means 200 with a model turn
// built from Text, ToolCalls and the token counts; a Status of 400 or more
// sends the protocol's error body carrying ErrorMessage instead.
type Reply struct {
	Text      string
	ToolCalls []ToolCall
	// Reasoning, when set, is the summary of a reasoning item the turn
	// opens with (the Responses API only).
	Reasoning string
	// Phase, when set, labels the turn's message item as newer models do
	// ("commentary" or "final_answer"; the Responses API only).
	Phase string
	// Commentary, when set, is the text of a message item labelled
	// commentary that comes before Text's, the preamble newer models write
	// while they work (the Responses API only).
	Commentary string
	// StopReason overrides the stop reason derived from the turn (tool calls
	// give "tool_calls" / "tool_use", text gives "stop" / "end_turn").
	StopReason   string
	InputTokens  int
	OutputTokens int
	// NoUsage sends the turn with no usage at all, as servers that count
	// none answer: generateContent without usageMetadata in any chunk, a
	// Response (whole, or in response.completed) whose usage is null, a
	// Messages turn without usage (whole, or in message_start and
	// message_delta), as some servers speaking the Messages API send it.
	NoUsage bool

	Status       int
	ErrorMessage string
	// Header holds extra response headers, e.g. Retry-After on a 429.
	Header http.Header
}

// ToolCall is a tool call in a scripted turn. Arguments is JSON text; empty
// means {}.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Text is a turn that answers with text only.
func Text(text string) Reply {
	return Reply{Text: text, InputTokens: 10, OutputTokens: 5}
}

// Calls is a turn that asks for the given tool calls.
func Calls(calls ...ToolCall) Reply {
	return Reply{ToolCalls: calls, InputTokens: 10, OutputTokens: 5}
}

// Fail is an error reply with the given HTTP status and message.
func Fail(status int, message string) Reply {
	return Reply{Status: status, ErrorMessage: message}
}

// WithHeader returns a copy of r that also sends the response header key.
func (r Reply) WithHeader(key, value string) Reply {
	h := r.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Set(key, value)
	r.Header = h
	return r
}

// Request is a request the server received.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// JSON decodes the request body; it returns nil when the body is not JSON.
func (r Request) JSON() map[string]any {
	var v map[string]any
	if json.Unmarshal(r.Body, &v) != nil {
		return nil
	}
	return v
}

// Server is a fake provider endpoint backed by httptest.
type Server struct {
	// URL is the server's root, e.g. http://127.0.0.1:PORT. See BaseURL.
	URL string

	t     testing.TB
	proto protocol

	script[Reply]
}

// protocol is what differs between the two wire formats.
type protocol interface {
	// endpoint is the path suffix the protocol serves, e.g. "/chat/completions".
	endpoint() string
	// authorized reports whether the request carries credentials.
	authorized(h http.Header) bool
	// validate returns the API's message for a malformed request, or "".
	validate(req map[string]any) string
	writeTurn(w http.ResponseWriter, req map[string]any, r Reply, seq int)
	errorBody(status int, message string) any
}

// NewOpenAIServer starts a server speaking the OpenAI chat completions
// protocol, answering with replies in order. Point an OpenAI client at
// BaseURL(). The server is closed when the test ends.
func NewOpenAIServer(t testing.TB, replies ...Reply) *Server {
	return newServer(t, openAI{}, replies)
}

// NewAnthropicServer starts a server speaking the Anthropic Messages protocol,
// answering with replies in order. Point ANTHROPIC_BASE_URL at URL (the
// client's base URL is BaseURL()). The server is closed when the test ends.
func NewAnthropicServer(t testing.TB, replies ...Reply) *Server {
	return newServer(t, anthropic{}, replies)
}

// requestProtocol is a protocol that reads the HTTP request itself: a
// route in the path, a signature over the whole request, a stream asked
// for by the path rather than the body.
type requestProtocol interface {
	route(r *http.Request) bool
	// authorize returns the status and message of a refusal, or 0.
	authorize(r *http.Request, body []byte) (int, string)
	streams(r *http.Request) bool
}

// modelValidator is a protocol whose rules depend on the model the
// request names in its path (Converse's fields only some models take).
type modelValidator interface {
	validateModel(r *http.Request, req map[string]any) string
}

func newServer(t testing.TB, p protocol, replies []Reply) *Server {
	return newServerWith(t, p, replies, nil)
}

// newServerWith is newServer with more handlers, by path (a token endpoint).
func newServerWith(t testing.TB, p protocol, replies []Reply, extra map[string]http.HandlerFunc) *Server {
	t.Helper()
	s := &Server{t: t, proto: p, script: script[Reply]{answers: replies}}
	mux := http.NewServeMux()
	mux.HandleFunc("/", s.serve)
	for path, h := range extra {
		mux.HandleFunc(path, h)
	}
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	s.URL = hs.URL
	return s
}

// BaseURL is the API base a client is configured with: URL + "/v1".
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// Push appends replies to the script.
func (s *Server) Push(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answers = append(s.answers, replies...)
}

// script is what a server answers with, in order, and the requests it
// received.
type script[T any] struct {
	mu       sync.Mutex
	answers  []T
	requests []Request
}

// Requests returns the requests received so far, in order.
func (s *script[T]) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Remaining is the number of answers not yet sent.
func (s *script[T]) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.answers)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		s.fail(w, http.StatusBadRequest, "reading the request body: "+err.Error())
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	seq := len(s.requests)
	s.mu.Unlock()

	rp, custom := s.proto.(requestProtocol)
	if custom && !rp.route(r) || !custom && (r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, s.proto.endpoint())) {
		s.fail(w, http.StatusNotFound, fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path))
		return
	}
	if custom {
		if status, msg := rp.authorize(r, body); status != 0 {
			s.fail(w, status, msg)
			return
		}
	} else if !s.proto.authorized(r.Header) {
		s.fail(w, http.StatusUnauthorized, "missing API key")
		return
	}
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		s.fail(w, http.StatusBadRequest, "the request body is not valid JSON: "+err.Error())
		return
	}
	if custom && rp.streams(r) {
		req["stream"] = true
	}
	if msg := s.proto.validate(req); msg != "" {
		s.fail(w, http.StatusBadRequest, msg)
		return
	}
	if mv, ok := s.proto.(modelValidator); ok {
		if msg := mv.validateModel(r, req); msg != "" {
			s.fail(w, http.StatusBadRequest, msg)
			return
		}
	}

	s.mu.Lock()
	if len(s.answers) == 0 {
		s.mu.Unlock()
		s.t.Errorf("providertest: request %d has no scripted reply left", seq)
		s.fail(w, http.StatusInternalServerError, "providertest: no scripted reply left")
		return
	}
	reply := s.answers[0]
	s.answers = s.answers[1:]
	s.mu.Unlock()

	for k, vs := range reply.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if reply.Status >= 400 {
		s.fail(w, reply.Status, reply.ErrorMessage)
		return
	}
	for _, c := range reply.ToolCalls {
		if !json.Valid([]byte(arguments(c))) {
			s.t.Errorf("providertest: scripted arguments of tool call %q are not JSON: %s", c.Name, c.Arguments)
			s.fail(w, http.StatusInternalServerError, "providertest: invalid scripted arguments")
			return
		}
	}
	s.proto.writeTurn(w, req, reply, seq)
}

func (s *Server) fail(w http.ResponseWriter, status int, message string) {
	writeJSON(w, status, s.proto.errorBody(status, message))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// sse writes server-sent events and flushes each one, so clients see a real
// stream rather than one buffered body.
type sse struct {
	w http.ResponseWriter
}

func startSSE(w http.ResponseWriter) sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return sse{w}
}

// event writes one event; name may be empty (OpenAI sends data lines only).
func (s sse) event(name string, data any) {
	if name != "" {
		fmt.Fprintf(s.w, "event: %s\n", name)
	}
	switch d := data.(type) {
	case string:
		fmt.Fprintf(s.w, "data: %s\n\n", d)
	default:
		b, _ := json.Marshal(d)
		fmt.Fprintf(s.w, "data: %s\n\n", b)
	}
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

// halves splits s in two, so streamed text and arguments arrive in more than
// one delta and the client's accumulation is exercised.
func halves(s string) []string {
	if len(s) < 2 {
		return []string{s}
	}
	mid := len(s) / 2
	return []string{s[:mid], s[mid:]}
}

func arguments(c ToolCall) string {
	if c.Arguments == "" {
		return "{}"
	}
	return c.Arguments
}

func callID(c ToolCall, prefix string, seq, i int) string {
	if c.ID != "" {
		return c.ID
	}
	return fmt.Sprintf("%s%d_%d", prefix, seq, i)
}

// Small accessors over decoded JSON, so the validators read as rules.

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

func object(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
