package providers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// Record and replay, in the spirit of httprr: a Recorder sits under a real
// conversation and writes every exchange to a file; a Replayer serves them
// back in order with no network, and fails loudly, naming the JSON path that
// changed, when a request no longer matches its recording.
//
// The file is one indented JSON document, so a changed recording reads well
// in a diff: request bodies are canonical JSON (sorted keys), JSON responses
// are stored as JSON, anything else (a server-sent event stream) line by line.
// Headers are never stored, so neither are API keys.
//
// Version 2 also stores the endpoint the conversation was made against (the
// provider, the base URL, and whether max_tokens replaced
// max_completion_tokens), so a replay sends the same requests without the
// key and base URL the recording needed. Version 1 recordings, which lack it,
// still replay, with the endpoint resolved from the environment as before.

// ErrReplay is wrapped by every error of a Replayer.
var ErrReplay = errors.New("replay")

const recordingVersion = 2

// replayToken is the key a replayed model is built with: the clients refuse
// an empty one, and a replay sends nothing anywhere.
const replayToken = "replay"

// volatileKeys are request members that identify a user or a session rather
// than the conversation; they are neither stored nor compared.
var volatileKeys = []string{"metadata", "user"}

type recording struct {
	Version   int               `json:"version"`
	Endpoint  *recordedEndpoint `json:"endpoint,omitempty"`
	Exchanges []exchange        `json:"exchanges"`
}

// recordedEndpoint is what a recording keeps of New's endpoint: everything
// that shapes a request, and never the key.
type recordedEndpoint struct {
	Provider        string `json:"provider"`
	BaseURL         string `json:"base_url"`
	LegacyMaxTokens bool   `json:"legacy_max_tokens,omitempty"`
	// Region and Project are a Vertex AI endpoint's location and project,
	// which its request paths name.
	Region  string `json:"region,omitempty"`
	Project string `json:"project,omitempty"`
}

func recordEndpoint(ep endpoint) recordedEndpoint {
	out := recordedEndpoint{Provider: ep.provider, BaseURL: withoutUserinfo(ep.baseURL), LegacyMaxTokens: ep.legacyMaxTokens}
	if p, _ := lookup(ep.provider); p.api == apiGemini {
		out.Region, out.Project = ep.region, ep.project
	}
	return out
}

// withoutUserinfo is a base URL without the user and password it may
// carry (a proxy's basic auth), which a replay does not need and a
// recording must not keep.
func withoutUserinfo(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	u.User = nil
	return u.String()
}

type exchange struct {
	Request  recordedRequest  `json:"request"`
	Response recordedResponse `json:"response"`
}

type recordedRequest struct {
	Method string `json:"method"`
	Path   string `json:"path"`
	payload
}

type recordedResponse struct {
	Status      int    `json:"status"`
	ContentType string `json:"content_type,omitempty"`
	payload
}

// payload is a body: JSON as JSON, anything else as lines.
type payload struct {
	Body json.RawMessage `json:"body,omitempty"`
	Text []string        `json:"text,omitempty"`
	// Binary is a body that is not text (AWS event-stream frames), in base64.
	Binary []byte `json:"binary,omitempty"`
}

func newPayload(b []byte) payload {
	switch {
	case len(b) == 0:
		return payload{}
	case json.Valid(b):
		return payload{Body: b}
	case !utf8.Valid(b) || bytes.IndexByte(b, 0) >= 0:
		return payload{Binary: b}
	default:
		return payload{Text: strings.Split(string(b), "\n")}
	}
}

func (p payload) bytes() []byte {
	switch {
	case p.Body != nil:
		return p.Body
	case p.Binary != nil:
		return p.Binary
	}
	return []byte(strings.Join(p.Text, "\n"))
}

// canonicalRequest is how a request is stored and compared: method, path
// with query, and the body as canonical JSON without volatile members.
func canonicalRequest(req *http.Request, body []byte) recordedRequest {
	r := recordedRequest{Method: req.Method, Path: req.URL.RequestURI(), payload: newPayload(body)}
	if r.Body == nil {
		return r
	}
	v, err := decodeJSON(r.Body)
	if err != nil {
		return r
	}
	if m, ok := v.(map[string]any); ok {
		for _, k := range volatileKeys {
			delete(m, k)
		}
	}
	r.Body = marshal(v)
	return r
}

// decodeJSON keeps numbers as written, so 0.1 stays 0.1 and big integers
// stay exact.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// marshal encodes without escaping <, > and &, which keeps prompts readable.
func marshal(v any) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic("providers: marshalling a decoded JSON value: " + err.Error())
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// Recorder is an http.RoundTripper that passes requests to a base transport
// and keeps every exchange; Close writes them to its file.
type Recorder struct {
	path string
	base http.RoundTripper

	mu        sync.Mutex
	endpoint  *recordedEndpoint
	exchanges []exchange
}

// NewRecorder records the exchanges made through base (nil means the default
// transport New would use) into the file at path, written by Close.
func NewRecorder(path string, base http.RoundTripper) (*Recorder, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("recorder: %w", err)
	}
	if base == nil {
		base = newTransport()
	}
	return &Recorder{path: path, base: base}, nil
}

// credentialTransport is the transport credential providers use: a
// Recorder's base, so token requests stay out of the recording (its replay
// needs no credentials).
func credentialTransport(t http.RoundTripper) http.RoundTripper {
	if rec, ok := t.(*Recorder); ok {
		return rec.base
	}
	return t
}

// setProject completes the recorded endpoint with the project found in the
// credentials, which a Vertex AI request path names.
func (r *Recorder) setProject(project string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.endpoint != nil && r.endpoint.Project == "" {
		r.endpoint.Project = project
	}
}

// RoundTrip sends req through the base transport and records the exchange
// once the response body has been read whole. A request that gets no
// response is not recorded: its retry is the same request.
func (r *Recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := readBody(req)
	if err != nil {
		return nil, fmt.Errorf("recorder: reading the request body: %w", err)
	}
	out := req.Clone(req.Context())
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	out.ContentLength = int64(len(body))
	resp, err := r.base.RoundTrip(out)
	if err != nil {
		return nil, err
	}
	respBody, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(respBody))
	resp.ContentLength = int64(len(respBody))

	r.mu.Lock()
	defer r.mu.Unlock()
	r.exchanges = append(r.exchanges, exchange{
		Request: canonicalRequest(req, body),
		Response: recordedResponse{
			Status:      resp.StatusCode,
			ContentType: resp.Header.Get("Content-Type"),
			payload:     newPayload(respBody),
		},
	})
	return resp, nil
}

// setEndpoint notes the endpoint of the model recording through r. A
// recording replays one endpoint, so a model with another is refused.
func (r *Recorder) setEndpoint(ep endpoint) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	got := recordEndpoint(ep)
	switch {
	case r.endpoint == nil:
		r.endpoint = &got
	case *r.endpoint != got:
		return fmt.Errorf("recorder: %s already records %s at %s; record %s at %s in another file",
			r.path, r.endpoint.Provider, r.endpoint.BaseURL, got.Provider, got.BaseURL)
	}
	return nil
}

// Close writes the recording, replacing the file atomically.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(recording{Version: recordingVersion, Endpoint: r.endpoint, Exchanges: r.exchanges}); err != nil {
		return fmt.Errorf("recorder: %w", err)
	}
	if err := writeFileAtomic(r.path, buf.Bytes()); err != nil {
		return fmt.Errorf("recorder: %w", err)
	}
	return nil
}

func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	// A recording holds the prompts and what the model was shown, the
	// contents of files among them: its owner's alone.
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Replayer is an http.RoundTripper that serves a recording in order.
type Replayer struct {
	path     string
	recorded *recordedEndpoint // nil in a version 1 recording

	mu        sync.Mutex
	exchanges []exchange
	next      int
}

// NewReplayer loads the recording at path.
func NewReplayer(path string) (*Replayer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrReplay, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var rec recording
	if err := dec.Decode(&rec); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrReplay, path, err)
	}
	if rec.Version < 1 || rec.Version > recordingVersion {
		return nil, fmt.Errorf("%w: %s: version %d, but this agentspec reads versions 1 to %d; record it again",
			ErrReplay, path, rec.Version, recordingVersion)
	}
	return &Replayer{path: path, recorded: rec.Endpoint, exchanges: rec.Exchanges}, nil
}

// endpoint is the recorded endpoint of provider for model, and whether the
// recording has one. A recording of another provider is an error: its
// requests could not match.
func (r *Replayer) endpoint(provider, model string) (endpoint, bool, error) {
	rec := r.recorded
	if rec == nil {
		return endpoint{}, false, nil
	}
	if rec.Provider != provider {
		return endpoint{}, true, fmt.Errorf("%w: %s records a conversation with %s, not %s",
			ErrReplay, r.path, rec.Provider, provider)
	}
	if _, err := parseBaseURL(rec.BaseURL); err != nil {
		return endpoint{}, true, fmt.Errorf("%w: %s: %w", ErrReplay, r.path, err)
	}
	p, _ := providerFor(provider, model)
	return endpoint{
		provider:        provider,
		dialect:         dialectOf(p),
		baseURL:         rec.BaseURL,
		token:           replayToken,
		legacyMaxTokens: rec.LegacyMaxTokens,
		region:          rec.Region,
		project:         rec.Project,
	}, true, nil
}

// RoundTrip answers req with the next recorded response if req matches the
// recorded request; otherwise it fails, naming the first difference.
func (r *Replayer) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := readBody(req)
	if err != nil {
		return nil, fmt.Errorf("%w: reading the request body: %w", ErrReplay, err)
	}
	got := canonicalRequest(req, body)

	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.next + 1 // requests are numbered from 1 in messages
	if r.next >= len(r.exchanges) {
		return nil, fmt.Errorf("%w: request %d (%s %s) has no recorded exchange: %s holds %d",
			ErrReplay, n, got.Method, got.Path, r.path, len(r.exchanges))
	}
	want := r.exchanges[r.next]
	if want.Request.Method != got.Method || want.Request.Path != got.Path {
		return nil, fmt.Errorf("%w: request %d differs from the recording: recorded %s %s, got %s %s",
			ErrReplay, n, want.Request.Method, want.Request.Path, got.Method, got.Path)
	}
	if where, differs := diffPayload(want.Request.payload, got.payload); differs {
		return nil, fmt.Errorf("%w: request %d differs from the recording %s", ErrReplay, n, where)
	}
	r.next++

	res := want.Response
	b := res.bytes()
	resp := &http.Response{
		Status:        fmt.Sprintf("%d %s", res.Status, http.StatusText(res.Status)),
		StatusCode:    res.Status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{},
		Body:          io.NopCloser(bytes.NewReader(b)),
		ContentLength: int64(len(b)),
		Request:       req,
	}
	if res.ContentType != "" {
		resp.Header.Set("Content-Type", res.ContentType)
	}
	return resp, nil
}

// Close reports recorded exchanges that were never requested: a conversation
// that now ends early is a difference too.
func (r *Replayer) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if left := len(r.exchanges) - r.next; left > 0 {
		next := r.exchanges[r.next].Request
		return fmt.Errorf("%w: %d of %d recorded exchanges were never requested, from request %d (%s %s)",
			ErrReplay, left, len(r.exchanges), r.next+1, next.Method, next.Path)
	}
	return nil
}

// diffPayload describes the first difference between two request bodies as
// `at $.path: recorded X, got Y`.
func diffPayload(want, got payload) (string, bool) {
	if want.Body != nil && got.Body != nil {
		w, werr := decodeJSON(want.Body)
		g, gerr := decodeJSON(got.Body)
		if werr == nil && gerr == nil {
			at, wv, gv, differs := firstDiff("$", w, g)
			return fmt.Sprintf("at %s: recorded %s, got %s", at, show(wv), show(gv)), differs
		}
	}
	wl, gl := lines(want), lines(got)
	for i := range max(len(wl), len(gl)) {
		var wv, gv any = absent{}, absent{}
		if i < len(wl) {
			wv = wl[i]
		}
		if i < len(gl) {
			gv = gl[i]
		}
		if wv != gv {
			return fmt.Sprintf("at body line %d: recorded %s, got %s", i+1, show(wv), show(gv)), true
		}
	}
	return "", false
}

func lines(p payload) []string {
	if b := p.bytes(); len(b) > 0 {
		return strings.Split(string(b), "\n")
	}
	return nil
}

// absent stands for a member or element one side lacks.
type absent struct{}

// firstDiff walks two decoded JSON values in order (object members sorted)
// and returns the path of the first difference with the values there.
func firstDiff(path string, want, got any) (string, any, any, bool) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return path, want, got, true
		}
		keys := make([]string, 0, len(w)+len(g))
		for k := range w {
			keys = append(keys, k)
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			wv, inW := w[k]
			gv, inG := g[k]
			at := path + member(k)
			switch {
			case !inW:
				return at, absent{}, gv, true
			case !inG:
				return at, wv, absent{}, true
			}
			if at, a, b, differs := firstDiff(at, wv, gv); differs {
				return at, a, b, true
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok {
			return path, want, got, true
		}
		for i := range max(len(w), len(g)) {
			at := path + "[" + strconv.Itoa(i) + "]"
			switch {
			case i >= len(w):
				return at, absent{}, g[i], true
			case i >= len(g):
				return at, w[i], absent{}, true
			}
			if at, a, b, differs := firstDiff(at, w[i], g[i]); differs {
				return at, a, b, true
			}
		}
	default:
		// Scalars: string, json.Number, bool or nil. Different dynamic types
		// compare unequal without panicking, even when got is a map.
		if want != got {
			return path, want, got, true
		}
	}
	return "", nil, nil, false
}

var identifier = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

func member(key string) string {
	if identifier().MatchString(key) {
		return "." + key
	}
	return "[" + strconv.Quote(key) + "]"
}

// show renders a value of a difference as short JSON.
func show(v any) string {
	const limit = 80
	if _, ok := v.(absent); ok {
		return "nothing"
	}
	s := string(marshal(v))
	if utf8.RuneCountInString(s) > limit {
		s = string([]rune(s)[:limit]) + "…"
	}
	return s
}
