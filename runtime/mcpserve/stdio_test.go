package mcpserve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
)

// decodeMessage must read every message as the SDK's own decoder does.
func TestDecodeMessageAgreesWithTheSDK(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"a"}}}`,
		`{"jsonrpc":"2.0","id":"abc","method":"ping"}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"roots":[]}}`,
		`{"jsonrpc":"2.0","id":8,"error":{"code":-32601,"message":"no such method","data":{"x":1}}}`,
		`{"jsonrpc":"2.0","id":9,"result":null}`,
		`{"jsonrpc":"2.0","id":null,"method":"x"}`,
		`{"jsonrpc":"2.0","id":1.0,"method":"x"}`,
		`{"jsonrpc":"2.0","id":10,"method":""}`,
		`{"jsonrpc":"1.0","id":1,"method":"x"}`,
		`{"id":1,"method":"x"}`,
		`{"jsonrpc":"2.0","id":true,"method":"x"}`,
		`{"jsonrpc":"2.0","id":{},"method":"x"}`,
		`{"jsonrpc":"2.0","result":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":5}`,
		`{"jsonrpc":"2.0","id":1,"method":"x"`,
		`{"JSONRPC":"2.0","id":1,"method":"x"}`,
		`{"jsonrpc":"2.0","id":1,"Method":"x"}`,
		`{"jsonrpc":"2.0","id":1,"method":"a","method":"b"}`,
		`[]`,
		`"text"`,
	} {
		want, wantErr := jsonrpc.DecodeMessage([]byte(in))
		got, gotErr := decodeMessage([]byte(in))
		if wantErr != nil {
			assert.Error(t, gotErr, in)
			continue
		}
		if assert.NoError(t, gotErr, in) {
			assert.Equal(t, want, got, in)
		}
	}
}

// A line that is not a JSON-RPC message is answered with a JSON-RPC error
// whose id is null, as JSON-RPC 2.0 asks, and the session goes on: one bad
// line from a client does not end the server.
func TestStdioAnswersAMalformedLineAndGoesOn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ line, code string }{
		{`{not json`, `-32700`},
		{`{"jsonrpc":"2.0","id":true,"method":"ping"}`, `-32600`},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, `-32600`},
		{`{"jsonrpc":"1.0","id":7,"method":"ping"}`, `-32600`},
		{`[]`, `-32600`},
		{`[{"jsonrpc":"2.0","id":3,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"ping"}]`, `-32600`},
		{`"a string"`, `-32600`},
	} {
		fs, _ := newFS(t, map[string]string{"a.txt": "alpha\n"})
		srv, err := New(context.Background(), []capabilities.Capability{fs}, Options{})
		require.NoError(t, err)
		in := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
` + tc.line + `
{"jsonrpc":"2.0","id":2,"method":"ping"}
`
		var out strings.Builder
		assert.NoError(t, srv.ServeStdio(context.Background(), strings.NewReader(in), &out), tc.line)
		srv.Close()
		// Each line is answered as it is read, in any order.
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		if assert.Len(t, lines, 3, "%s: %s", tc.line, out.String()) {
			assert.Contains(t, lines, `{"jsonrpc":"2.0","id":2,"result":{}}`, tc.line)
			assert.Contains(t, out.String(), `{"jsonrpc":"2.0","id":null,"error":{"code":`+tc.code, tc.line)
			assert.Contains(t, out.String(), `{"jsonrpc":"2.0","id":1,"result":{`, tc.line)
		}
	}
}

// A message longer than the limit (a write_file of a file of 16 MiB and
// more) is refused with an error whose id is null, and the session goes on
// with the next line, as for a line that is not a message: it ended the
// server, which a client saw as a crash.
func TestStdioRefusesAnOversizedMessageAndGoesOn(t *testing.T) {
	t.Parallel()
	fs, _ := newFS(t, nil)
	srv, err := New(context.Background(), []capabilities.Capability{fs}, Options{})
	require.NoError(t, err)
	defer srv.Close()
	huge := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"big.txt","content":"` +
		strings.Repeat("x", maxLine) + `"}}}`
	in := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
` + huge + `
{"jsonrpc":"2.0","id":2,"method":"ping"}
`
	var out strings.Builder
	assert.NoError(t, srv.ServeStdio(context.Background(), strings.NewReader(in), &out))
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if assert.Len(t, lines, 3, out.String()) {
		assert.Contains(t, lines, `{"jsonrpc":"2.0","id":2,"result":{}}`)
		assert.Contains(t, out.String(), fmt.Sprintf(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"a message is longer than %d bytes"}}`, maxLine))
	}
}

// A cancellation read while the call's answer is being written, after
// Write found it not cancelled, leaves nothing for the end of the input to
// wait for: the answer went out.
func TestDrainIsNotHeldByACancellationOfACallAnswered(t *testing.T) {
	t.Parallel()
	conn, err := (&lineTransport{in: strings.NewReader(""), out: io.Discard}).Connect(context.Background())
	require.NoError(t, err)
	c := conn.(*lineConn)
	id, err := jsonrpc.MakeID(float64(5))
	require.NoError(t, err)
	cancel := &jsonrpc.Request{Method: "notifications/cancelled", Params: json.RawMessage(`{"requestId":5}`)}
	c.track([]jsonrpc.Message{&jsonrpc.Request{ID: id, Method: "tools/call"}})
	require.False(t, c.wasCancelled(id)) // Write, as it sends the answer
	c.track([]jsonrpc.Message{cancel})
	c.answer(id) // Write, once it has
	ctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	c.drain(ctx)
	assert.NoError(t, ctx.Err(), "the end of the input waited for a call answered")
}

// A subscriptions/listen the client cancelled is answered no more than a
// call it cancelled is, though the end of the input does not wait for it.
func TestCancelledSubscriptionIsNotAnswered(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	conn, err := (&lineTransport{in: strings.NewReader(""), out: &out}).Connect(context.Background())
	require.NoError(t, err)
	c := conn.(*lineConn)
	listen, err := jsonrpc.MakeID(float64(3))
	require.NoError(t, err)
	c.track([]jsonrpc.Message{&jsonrpc.Request{ID: listen, Method: "subscriptions/listen"}})
	ctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	c.drain(ctx)
	require.NoError(t, ctx.Err(), "the end of the input waited for the subscription")

	c.track([]jsonrpc.Message{&jsonrpc.Request{Method: "notifications/cancelled", Params: json.RawMessage(`{"requestId":3}`)}})
	require.NoError(t, c.Write(context.Background(), &jsonrpc.Response{ID: listen, Result: json.RawMessage(`{}`)}))
	assert.Empty(t, out.String(), "the answer to the cancelled subscription was sent")
	c.drain(ctx)
	assert.NoError(t, ctx.Err())
}
