package providers

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"
)

// wire is one wire family (Messages, Chat Completions, Responses,
// generateContent, Converse): how a call becomes a request R, and how R is
// sent, whole or streamed, and read into one response.
type wire[R any] interface {
	request(messages []llms.MessageContent, opts llms.CallOptions) (R, error)
	send(ctx context.Context, req R) (*llms.ContentResponse, error)
	// stream passes the text to fn as it comes; an error event fails it with
	// a Stream *Error counting retries.
	stream(ctx context.Context, req R, fn func(context.Context, []byte) error, retries int) (*llms.ContentResponse, error)
}

// generator is the llms.Model over a wire family: what every family does
// the same around a call is done here, once.
type generator[R any] struct {
	common
	wire wire[R]
}

func generatorOf[R any](c common, w wire[R]) *generator[R] {
	return &generator[R]{common: c, wire: w}
}

func (g *generator[R]) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, g, prompt, options...)
}

// GenerateContent builds the request once, then sends it (the doer retries
// failed statuses and network failures), again while a stream fails with an
// error event that means "try again".
func (g *generator[R]) GenerateContent(ctx context.Context, messages []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	opts := readOptions(options)
	req, err := g.wire.request(messages, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", g.ep.provider, err)
	}
	var resp *llms.ContentResponse
	err = g.doer.withStreamRetries(ctx, func(retries int) error {
		var err error
		if opts.StreamingFunc != nil {
			resp, err = g.wire.stream(ctx, req, opts.StreamingFunc, retries)
		} else {
			resp, err = g.wire.send(ctx, req)
		}
		return err
	})
	if err != nil {
		return nil, g.wrap(ctx, err)
	}
	return resp, nil
}

// cutAfterFinish reports whether err, which ended a stream whose finish had
// come, is its connection being cut rather than the caller giving up: the
// answer is then whole, and only what follows its finish (the usage, the
// end marker) was lost, as when the stream ends there cleanly.
func cutAfterFinish(ctx context.Context, err error) bool {
	return ctx.Err() == nil && transient(err)
}

// read is the response v read by fn, unless err.
func read[T any](v T, err error, fn func(T) (*llms.ContentResponse, error)) (*llms.ContentResponse, error) {
	if err != nil {
		return nil, err
	}
	return fn(v)
}

// extraBody is the spec's extra_body as request options of an SDK, each
// member set with set (the SDK's option.WithJSONSet): the one untyped path
// into a request, for what the SDK has no field for.
func extraBody[O any](body map[string]any, set func(string, any) O) []O {
	var opts []O
	for k, v := range body {
		opts = append(opts, set(literalPath(k), plain(v)))
	}
	return opts
}

// literalPath is a member's name as the sjson path WithJSONSet takes that
// names it, and nothing else: every ASCII mark escaped, since a dot would
// nest the value, and a wildcard, a leading ':' or '@', or a '#' would make
// the path mean something else or be refused. The empty name, which sjson
// takes for no path at all, is ":" (a key forced, and that key empty).
func literalPath(name string) string {
	if name == "" {
		return ":"
	}
	var b strings.Builder
	for i := range len(name) {
		c := name[i]
		if c < utf8.RuneSelf && c != '_' && c != '-' && !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}
