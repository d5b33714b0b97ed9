package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// encodedResult is a tool's result whose text is encoded once. The SDK
// encodes a *sdk.CallToolResult through two nested MarshalJSON methods,
// and encoding/json scans what each returns again to compact it: three
// passes over a result's text, which for a listing or a file is nearly all
// of the response. Through encodedResult the text is escaped once and
// compacted once (encoding/json compacts what MarshalJSON returns).
// BenchmarkEncodeResult (a 7 KB listing): 84-101 us and 16.8 KB allocated
// a result through the SDK, 51-57 us and 8.8 KB through encodedResult.
// scripts/bench-mcp.sh, list_directory with 8 calls in flight, binaries
// with and without it alternating, 11 runs each on a 2-core VM: 1.28-1.50
// times the official server's calls/s without, 1.65-2.02 times with (this
// and not computing events nobody listens to).
//
// The result is encoded when the JSON-RPC layer marshals it, so whatever a
// middleware added later did to it (through sdk.Result's SetMeta, say) is
// in what is sent. It gives the bytes the SDK would
// (TestEncodedResultIsTheSDKs); a result that is not plain text is encoded
// by the SDK. The embedded result makes it an sdk.Result, whose methods
// include unexported ones.
type encodedResult struct {
	*sdk.CallToolResult
	hand *handOff // the stdio connection's, when the call came over one
}

func (r *encodedResult) MarshalJSON() ([]byte, error) {
	if wire, ok := encodeText(r.CallToolResult); ok {
		if r.hand != nil {
			return r.hand.put(wire), nil
		}
		return wire, nil
	}
	return r.CallToolResult.MarshalJSON()
}

// handOff passes encoded results from MarshalJSON to the stdio
// connection's Write past the SDK's JSON-RPC layer, which marshals a
// result with encoding/json, and encoding/json scans what a MarshalJSON
// returns again to compact it: for a listing or a file, a pass over nearly
// the whole response. MarshalJSON keeps the bytes here and gives the SDK a
// placeholder of a few bytes instead, which lineConn.Write replaces with
// them. BenchmarkEncodeResult (a 7 KB listing): 60 us through
// encodedResult with the pass, 19 us without. BenchmarkStdioListDirectory
// (132 entries, 8 calls in flight, 3 runs each): 76-80 us a call with the
// pass, 62-69 us without. scripts/bench-mcp.sh, list_directory with 8
// calls in flight, 30 block pairs, on a 2-core VM: 1.63-1.72 times the
// official server's calls/s with the pass, 2.25-2.39 without.
type handOff struct {
	mu   sync.Mutex
	next uint64
	held map[uint64][]byte
}

type handOffKey struct{}

// placeholderPrefix begins every placeholder: no result of a tool call
// begins so (a key holding NUL), and encoding/json keeps it as it is.
const placeholderPrefix = `{"\u0000":`

// put keeps wire and returns the placeholder that stands for it.
func (h *handOff) put(wire []byte) []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.next++
	if h.held == nil {
		h.held = map[uint64][]byte{}
	}
	h.held[h.next] = wire
	return append(strconv.AppendUint([]byte(placeholderPrefix), h.next, 10), '}')
}

// take returns the bytes a placeholder stands for, removing them; ok is
// false for a result that is not a placeholder.
func (h *handOff) take(result []byte) (wire []byte, ok bool, err error) {
	rest, isPlaceholder := bytes.CutPrefix(result, []byte(placeholderPrefix))
	if !isPlaceholder {
		return nil, false, nil
	}
	n, err := strconv.ParseUint(string(bytes.TrimSuffix(rest, []byte("}"))), 10, 64)
	if err != nil {
		return nil, true, fmt.Errorf("a result placeholder %q is malformed", result)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	wire, found := h.held[n]
	if !found {
		return nil, true, fmt.Errorf("no result is held for placeholder %d", n)
	}
	delete(h.held, n)
	return wire, true, nil
}

// contentPrefix is how the SDK's encoding of a result without _meta begins
// when its content is empty.
const contentPrefix = `{"content":[]`

// preencode wraps the result of every tools/call in an encodedResult. It
// is added last in New, so that of the middleware New adds it is the
// outermost.
func preencode(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		res, err := next(ctx, method, req)
		if r, ok := res.(*sdk.CallToolResult); ok && r != nil && err == nil && method == "tools/call" {
			hand, _ := ctx.Value(handOffKey{}).(*handOff)
			return &encodedResult{r, hand}, nil
		}
		return res, err
	}
}

// encodeText gives r's wire form when its content is plain text, without
// _meta or annotations, as every agentspec tool's is. The other fields
// (isError, structuredContent, resultType, whichever the result and the
// SDK version carry) are the SDK's own encoding of r with its content
// emptied, into which the text items are put.
func encodeText(r *sdk.CallToolResult) ([]byte, bool) {
	if r.Meta != nil {
		return nil, false
	}
	size := len(contentPrefix)
	for _, c := range r.Content {
		t, ok := c.(*sdk.TextContent)
		if !ok || t == nil || t.Meta != nil || t.Annotations != nil {
			return nil, false
		}
		size += len(t.Text) + len(t.Text)/8 + 32 // room for escapes: \n is two bytes
	}
	rest := *r
	rest.Content = []sdk.Content{}
	tail, err := json.Marshal(&rest)
	if err != nil || !bytes.HasPrefix(tail, []byte(contentPrefix)) {
		return nil, false
	}
	tail = tail[len(contentPrefix):]
	wire := bytes.NewBuffer(make([]byte, 0, size+len(tail)))
	wire.WriteString(contentPrefix[:len(contentPrefix)-1])
	// The Encoder escapes the text as the SDK's TextContent does, HTML
	// characters included, straight into wire.
	enc := json.NewEncoder(wire)
	for i, c := range r.Content {
		if i > 0 {
			wire.WriteByte(',')
		}
		wire.WriteString(`{"type":"text","text":`)
		if err := enc.Encode(c.(*sdk.TextContent).Text); err != nil {
			return nil, false
		}
		wire.Truncate(wire.Len() - 1) // Encode's newline
		wire.WriteByte('}')
	}
	wire.WriteByte(']')
	wire.Write(tail)
	return wire.Bytes(), true
}
