package mcpserve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
)

// resultCases are tool results of every shape a server may give, the plain
// text ones (which preencode encodes) with text that exercises JSON's
// escaping: HTML characters, invalid UTF-8, control characters, the line
// separators JavaScript reads as line ends.
var resultCases = []struct {
	name    string
	res     func() *sdk.CallToolResult
	encoded bool // preencode encodes it, rather than the SDK
}{
	{"listing", func() *sdk.CallToolResult { return textResult(listing(40), false) }, true},
	{"html", func() *sdk.CallToolResult { return textResult(`<a href="x">&amp;</a>`, false) }, true},
	{"escapes", func() *sdk.CallToolResult {
		return textResult("q\"b\\s/t\tn\nr\r\x00\x1f\x7f \u2028\u2029 \xff\xfe é 😀", false)
	}, true},
	{"empty text", func() *sdk.CallToolResult { return textResult("", false) }, true},
	{"error", func() *sdk.CallToolResult { return textResult("Error: file not found: a.txt", true) }, true},
	{"no content", func() *sdk.CallToolResult { return &sdk.CallToolResult{} }, true},
	{"two texts", func() *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "one"}, &sdk.TextContent{Text: "<two>"}}}
	}, true},
	{"structured", func() *sdk.CallToolResult {
		r := textResult(`{"n":1}`, false)
		r.StructuredContent = map[string]any{"n": 1, "html": "<&>"}
		return r
	}, true},
	{"meta", func() *sdk.CallToolResult {
		r := textResult("with meta", false)
		r.Meta = sdk.Meta{"k": `"content":[]`}
		return r
	}, false},
	{"annotated", func() *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "a", Annotations: &sdk.Annotations{Priority: 0.5}}}}
	}, false},
	{"text meta", func() *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "a", Meta: sdk.Meta{"k": 1}}}}
	}, false},
	{"nil", func() *sdk.CallToolResult { return nil }, false},
	{"image", func() *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "a"}, &sdk.ImageContent{Data: []byte{1, 2}, MIMEType: "image/png"}}}
	}, false},
}

func textResult(text string, isError bool) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}, IsError: isError}
}

// listing is a text of n lines, each like an entry of a directory listing.
func listing(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "[FILE] src/module_%03d.go (%d bytes, hash %08x)\n", i, 1000+i*37, i*2654435761)
	}
	return b.String()
}

// serveRaw serves the tool "pick", which answers resultCases[args.i], over
// newline-delimited JSON-RPC, with preencode or without, and returns a
// function that sends a line and reads the answer. Outside preencode, a
// middleware as an embedder might add gives the result of a call with
// "late": true a _meta of its own.
func serveRaw(t *testing.T, withPreencode bool, protocol string) func(string) string {
	t.Helper()
	return serveRawOver(t, withPreencode, false, protocol)
}

// serveRawOver is serveRaw over the SDK's IOTransport, or with lines set
// over ServeStdio's own transport, whose results pass MarshalJSON's bytes
// by handOff.
func serveRawOver(t *testing.T, withPreencode, lines bool, protocol string) func(string) string {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "raw", Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "pick", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var args struct{ I int }
			if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
				return nil, err
			}
			return resultCases[args.I].res(), nil
		})
	if withPreencode {
		srv.AddReceivingMiddleware(preencode)
	}
	srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			res, err := next(ctx, method, req)
			if p, ok := req.GetParams().(*sdk.CallToolParamsRaw); ok && res != nil && strings.Contains(string(p.Arguments), `"late"`) {
				res.SetMeta(map[string]any{"added": "later"})
			}
			return res, err
		}
	})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if lines {
			hand := &handOff{}
			srv.Run(context.WithValue(ctx, handOffKey{}, hand), &lineTransport{in: inR, out: outW, closeIn: inR.Close, hand: hand})
			return
		}
		srv.Run(ctx, &sdk.IOTransport{Reader: inR, Writer: outW})
	}()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		outR.Close()
		<-done
	})
	out := bufio.NewReader(outR)
	send := func(line string) string {
		_, err := io.WriteString(inW, line+"\n")
		require.NoError(t, err)
		if !strings.Contains(line, `"id"`) {
			return ""
		}
		answer, err := out.ReadString('\n')
		require.NoError(t, err)
		return answer
	}
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + protocol +
		`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return send
}

// TestEncodedResultIsTheSDKs: every result reaches the client as the very
// bytes the SDK alone would send, under the protocol versions that do and
// do not carry a resultType, also when a middleware added after preencode
// changes the result, and the plain text ones take preencode's way.
func TestEncodedResultIsTheSDKs(t *testing.T) {
	t.Parallel()
	for _, protocol := range []string{"2025-06-18", "2026-07-28"} {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			sdkOnly, ours := serveRaw(t, false, protocol), serveRaw(t, true, protocol)
			overLines := serveRawOver(t, true, true, protocol)
			for i, c := range resultCases {
				call := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"pick","arguments":{"i":%d}}}`, i+1, i)
				want, got := sdkOnly(call), ours(call)
				assert.Equal(t, want, got, c.name)
				assert.Equal(t, want, overLines(call), "%s, over ServeStdio's transport", c.name)
				r := c.res()
				if r == nil {
					continue
				}
				assert.Contains(t, got, `"result":{`, c.name)
				_, ok := encodeText(r)
				assert.Equal(t, c.encoded, ok, "%s: encoded by preencode", c.name)
				late := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"pick","arguments":{"i":%d,"late":true}}}`, 100+i, i)
				want, got = sdkOnly(late), ours(late)
				assert.Equal(t, want, got, "%s, changed later", c.name)
				assert.Equal(t, want, overLines(late), "%s, changed later, over ServeStdio's transport", c.name)
				assert.Contains(t, got, `"_meta":{"added":"later"}`, c.name)
			}
		})
	}
}

// BenchmarkEncodeResult encodes a 132-entry list_directory result as the
// SDK's JSON-RPC layer does (an Encoder without HTML escaping), from the
// SDK's result and from preencode's.
func BenchmarkEncodeResult(b *testing.B) {
	text := listing(132)
	b.Run("sdk", func(b *testing.B) {
		benchEncode(b, text, func() any { return textResult(text, false) })
	})
	b.Run("preencode", func(b *testing.B) {
		benchEncode(b, text, func() any {
			return &encodedResult{CallToolResult: textResult(text, false)}
		})
	})
	b.Run("handoff", func(b *testing.B) {
		hand := &handOff{}
		benchEncode(b, text, func() any {
			return &encodedResult{CallToolResult: textResult(text, false), hand: hand}
		})
	})
}

func benchEncode(b *testing.B, text string, result func() any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := enc.Encode(result()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStdioListDirectory: list_directory of 120 files and 12
// directories through ServeStdio over pipes, 8 calls in flight, as
// scripts/bench-mcp.sh asks the binary; one op is one call answered.
func BenchmarkStdioListDirectory(b *testing.B) {
	files := map[string]string{}
	for i := range 120 {
		files[fmt.Sprintf("listing/f%03d.txt", i)] = strings.Repeat("x", i*37)
	}
	for i := range 12 {
		files[fmt.Sprintf("listing/d%02d/x", i)] = "x"
	}
	fs, _ := newFS(b, files)
	srv, err := New(context.Background(), []capabilities.Capability{fs}, Options{})
	require.NoError(b, err)
	b.Cleanup(func() { srv.Close() })
	inR, inW, err := os.Pipe()
	require.NoError(b, err)
	outR, outW, err := os.Pipe()
	require.NoError(b, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.ServeStdio(ctx, inR, outW) }()
	b.Cleanup(func() {
		cancel()
		inW.Close()
		<-done
		inR.Close()
		outR.Close()
		outW.Close()
	})
	out := bufio.NewReaderSize(outR, 1<<20)
	write := func(s string) {
		_, err := inW.WriteString(s + "\n")
		require.NoError(b, err)
	}
	write(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	_, err = out.ReadString('\n')
	require.NoError(b, err)
	write(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	call := func(id int) {
		write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"list_directory","arguments":{"path":"listing"}}}`, id))
	}
	sent := 0
	for ; sent < 8 && sent < b.N; sent++ {
		call(sent + 1)
	}
	for got := 0; got < b.N; got++ {
		line, err := out.ReadString('\n')
		require.NoError(b, err)
		if got == 0 {
			require.Contains(b, line, `f119.txt`, "the listing came back")
		}
		if sent < b.N {
			sent++
			call(sent)
		}
	}
}
