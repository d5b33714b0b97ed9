package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// cancelWait bounds how long a call given up on waits for the server to
// take its notifications/cancelled: an interrupted run must end promptly
// even when the server is slow to answer.
const cancelWait = 2 * time.Second

// A call that is given up on (the run is interrupted, or its read_timeout
// passes) is sent notifications/cancelled, as MCP's cancellation asks,
// before the call returns. The SDK sends one too, but from a goroutine of
// its own after the call has returned, and only while the session is open:
// the run (or agentspec tool) closes its capabilities as soon as the call
// returns, the session's Close wins the race, and the server, never told,
// works on. A remote server's session DELETE even waits for that work; a
// local server's stdin is closed, which a server that answers the calls it
// read before its input ended (agentspec mcp) does not take for a
// cancellation, and what the call started outside the server's process
// group (a Shell command run with sandbox: off) outlives the group's kill.
// For a remote server, ending the call's HTTP request is not enough either:
// the streamable HTTP transport says a server must not take a dropped
// connection for a cancellation.
//
// agentspec therefore sends it itself, where it sees the call's request
// go out: sentCall, put in the call's context, is where cancelTransport
// notes the request's JSON-RPC id and the URL and headers it went with
// (those describing the call itself replaced, see cancelHeader), and
// cancelConn, over a local server's stdin, the id. The SDK's own
// notification, when it comes, waits for agentspec's and is not sent once
// the server has taken that one, so that the server is told once.

// sentCallKey is the context key of a call's *sentCall.
type sentCallKey struct{}

// sentCall is what a cancellation of one call needs: set by cancelTransport
// or cancelConn when the call's request is sent.
type sentCall struct {
	mu   sync.Mutex
	id   jsonrpc.ID
	tell func(ctx context.Context, n *jsonrpc.Request) error // sends n to the server the call went to

	once      sync.Once
	told      chan struct{} // closed once agentspec's cancellation was tried
	delivered bool          // the server took it (under mu)
	// pending: a local server that stopped reading has not taken it yet,
	// and it is left to be written, which it will be once the server reads
	// again (under mu).
	pending bool
}

// errCancelPending is the error of a cancellation a local server that
// stopped reading did not take within cancelWait: its write goes on, and
// later writes wait behind it.
var errCancelPending = errors.New("the server has not taken the cancellation")

// withSentCall is ctx with a new sentCall, which it returns too.
func withSentCall(ctx context.Context) (context.Context, *sentCall) {
	rc := &sentCall{told: make(chan struct{})}
	return context.WithValue(ctx, sentCallKey{}, rc), rc
}

// sent notes that the call's request, id, went out, and how to tell its
// server that the call is cancelled.
func (rc *sentCall) sent(id jsonrpc.ID, tell func(context.Context, *jsonrpc.Request) error) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.id, rc.tell = id, tell
}

// toldAlready waits, up to cancelWait, for agentspec's cancellation of the
// call, and reports whether the server took it, or will once it reads
// again: the SDK's own is then not sent.
func (rc *sentCall) toldAlready() bool {
	select {
	case <-rc.told:
	case <-time.After(cancelWait):
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.delivered || rc.pending
}

// cancelTransport notes, in the sentCall of its context, the id of a
// tools/call request and where and how it was sent, and answers the SDK's
// notifications/cancelled of that request itself once the server has taken
// agentspec's. What it sends goes on unchanged.
type cancelTransport struct {
	base http.RoundTripper
}

func (t *cancelTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	rc, _ := req.Context().Value(sentCallKey{}).(*sentCall)
	if rc == nil || req.Method != http.MethodPost || req.GetBody == nil {
		return t.base.RoundTrip(req)
	}
	// GetBody is a copy of what is sent; req.Body is left for the base.
	body, err := req.GetBody()
	if err != nil {
		return t.base.RoundTrip(req)
	}
	b, _ := io.ReadAll(body)
	body.Close()
	r, ok := decodeRequest(b)
	switch {
	case !ok:
	case r.IsCall() && r.Method == "tools/call":
		u, header, via := req.URL, req.Header.Clone(), t.base
		rc.sent(r.ID, func(ctx context.Context, n *jsonrpc.Request) error { return postNotification(ctx, via, u, header, n) })
	case !r.IsCall() && r.Method == "notifications/cancelled" && rc.cancels(r):
		if rc.toldAlready() {
			if req.Body != nil {
				req.Body.Close()
			}
			return &http.Response{Status: "202 Accepted", StatusCode: http.StatusAccepted, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
				Header: http.Header{}, Body: http.NoBody, Request: req}, nil
		}
	}
	return t.base.RoundTrip(req)
}

// postNotification posts n to u with the header of the call it cancels,
// through via (below cancelTransport: the spec's headers, the bound).
func postNotification(ctx context.Context, via http.RoundTripper, u *url.URL, call http.Header, n *jsonrpc.Request) error {
	body, err := jsonrpc.EncodeMessage(n)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header = cancelHeader(call)
	resp, err := via.RoundTrip(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096)) // a 202 has none
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("notifications/cancelled: %s", resp.Status)
	}
	return nil
}

// cancelConn is a local server's connection, which notes, in the sentCall
// of its context, the id of a tools/call request once it is written whole
// to the server's stdin, and drops the SDK's notifications/cancelled of
// that request once the server has been sent agentspec's.
type cancelConn struct {
	sdk.Connection
	stdin *pipeWriter
}

// cancelStdio is the transport of cancelConn.
type cancelStdio struct {
	sdk.Transport
	stdin *pipeWriter
}

func (t cancelStdio) Connect(ctx context.Context) (sdk.Connection, error) {
	conn, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return cancelConn{conn, t.stdin}, nil
}

func (c cancelConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	rc, _ := ctx.Value(sentCallKey{}).(*sentCall)
	r, ok := msg.(*jsonrpc.Request)
	switch {
	case rc == nil || !ok:
	case r.IsCall() && r.Method == "tools/call":
		if err := c.Connection.Write(ctx, msg); err != nil {
			return err
		}
		rc.sent(r.ID, c.notify)
		return nil
	case !r.IsCall() && r.Method == "notifications/cancelled" && rc.cancels(r) && rc.toldAlready():
		return nil
	}
	return c.Connection.Write(ctx, msg)
}

// notify writes n to the server's stdin, giving up when ctx ends: a
// server that stopped reading blocks the write, which then goes on until
// it reads again or its stdin is closed. Given up on, the write is noted
// as abandoned, as a call's request is (see Call): a later call would wait
// behind it.
func (c cancelConn) notify(ctx context.Context, n *jsonrpc.Request) error {
	done := make(chan error, 1)
	go func() { done <- c.Connection.Write(context.WithoutCancel(ctx), n) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		select {
		case err := <-done: // written as ctx ended
			return err
		default:
		}
		if c.stdin != nil {
			c.stdin.abandon(abandonedCancel)
		}
		return fmt.Errorf("%w: %w", errCancelPending, ctx.Err())
	}
}

// cancelHeader is the header a notifications/cancelled goes with: that of
// the call it cancels (the session's id, the protocol version, an
// authorization the SDK added), but for the headers that describe that
// message itself (Mcp-Method, Mcp-Name, Mcp-Param-*, sent from protocol
// version 2026-07-28), which a server checks against the message and,
// left as the call's, would refuse it for.
func cancelHeader(call http.Header) http.Header {
	h := call.Clone()
	for k := range h {
		if strings.HasPrefix(k, "Mcp-Param-") {
			delete(h, k)
		}
	}
	h.Del("Mcp-Name")
	if h.Get("Mcp-Method") != "" {
		h.Set("Mcp-Method", "notifications/cancelled")
	}
	return h
}

// decodeRequest reads a JSON-RPC request (a call or a notification).
func decodeRequest(b []byte) (*jsonrpc.Request, bool) {
	msg, err := jsonrpc.DecodeMessage(b)
	if err != nil {
		return nil, false
	}
	r, ok := msg.(*jsonrpc.Request)
	return r, ok
}

// cancels reports whether a notifications/cancelled is of rc's request.
func (rc *sentCall) cancels(n *jsonrpc.Request) bool {
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(n.Params, &p) != nil {
		return false
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return err == nil && rc.id.IsValid() && id == rc.id
}

// cancelled tells the server that the call rc notes was given up on, for
// reason, and waits for it to take the notification, up to cancelWait. A
// call whose request was never sent whole is not.
func (rc *sentCall) cancelled(ctx context.Context, reason string) error {
	defer rc.once.Do(func() { close(rc.told) })
	rc.mu.Lock()
	id, tell := rc.id, rc.tell
	rc.mu.Unlock()
	if !id.IsValid() {
		return nil
	}
	params, err := json.Marshal(struct {
		RequestID any    `json:"requestId"`
		Reason    string `json:"reason,omitempty"`
	}{id.Raw(), reason})
	if err != nil {
		return err
	}
	ctx, stop := context.WithTimeout(context.WithoutCancel(ctx), cancelWait)
	defer stop()
	if err := tell(ctx, &jsonrpc.Request{Method: "notifications/cancelled", Params: params}); err != nil {
		if errors.Is(err, errCancelPending) {
			rc.mu.Lock()
			rc.pending = true
			rc.mu.Unlock()
		}
		return err
	}
	rc.mu.Lock()
	rc.delivered = true
	rc.mu.Unlock()
	return nil
}
