package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// cancelWait bounds how long a call given up on waits for the server to
// take its notifications/cancelled: an interrupted run must end promptly
// even when the server is slow to answer.
const cancelWait = 2 * time.Second

// A call to a remote server that is given up on (the run is interrupted,
// or its read_timeout passes) is sent notifications/cancelled, as MCP's
// cancellation asks, before the call returns. Ending the call's HTTP
// request is not enough: the streamable HTTP transport says a server must
// not take a dropped connection for a cancellation.
//
// The SDK sends one too, but from a goroutine of its own after the call has
// returned, and only while the session is open: the run closes its
// capabilities as soon as the call returns, the session's Close wins the
// race, and the server, never told, works on (its session's DELETE even
// waits for that work). agentspec therefore sends it itself, over HTTP,
// where it sees the call's request go out: remoteCall, put in the call's
// context, is where cancelTransport notes the request's JSON-RPC id and the
// URL and headers it went with (those describing the call itself replaced,
// see cancelHeader). The SDK's own notification, when it comes,
// waits for agentspec's and is not sent once the server has taken that
// one, so that the server is told once.
//
// A local server needs none of this: a call cancelled while the run goes on
// is cancelled by the SDK's notification, which the session is still open
// to send, and when the run ends the server is stopped (see process.stop).

// remoteCallKey is the context key of a call's *remoteCall.
type remoteCallKey struct{}

// remoteCall is what a cancellation of one call needs: set by
// cancelTransport when the call's request is sent.
type remoteCall struct {
	mu     sync.Mutex
	id     jsonrpc.ID
	url    *url.URL
	header http.Header
	via    http.RoundTripper // below cancelTransport: the spec's headers, the bound

	once      sync.Once
	told      chan struct{} // closed once agentspec's cancellation was tried
	delivered bool          // the server took it (under mu)
}

// withRemoteCall is ctx with a new remoteCall, which it returns too.
func withRemoteCall(ctx context.Context) (context.Context, *remoteCall) {
	rc := &remoteCall{told: make(chan struct{})}
	return context.WithValue(ctx, remoteCallKey{}, rc), rc
}

// cancelTransport notes, in the remoteCall of its context, the id of a
// tools/call request and where and how it was sent, and answers the SDK's
// notifications/cancelled of that request itself once the server has taken
// agentspec's. What it sends goes on unchanged.
type cancelTransport struct {
	base http.RoundTripper
}

func (t *cancelTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	rc, _ := req.Context().Value(remoteCallKey{}).(*remoteCall)
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
		rc.mu.Lock()
		rc.id, rc.url, rc.header, rc.via = r.ID, req.URL, req.Header.Clone(), t.base
		rc.mu.Unlock()
	case !r.IsCall() && r.Method == "notifications/cancelled" && rc.cancels(r):
		select {
		case <-rc.told:
		case <-time.After(cancelWait):
		}
		rc.mu.Lock()
		delivered := rc.delivered
		rc.mu.Unlock()
		if delivered {
			if req.Body != nil {
				req.Body.Close()
			}
			return &http.Response{Status: "202 Accepted", StatusCode: http.StatusAccepted, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
				Header: http.Header{}, Body: http.NoBody, Request: req}, nil
		}
	}
	return t.base.RoundTrip(req)
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
func (rc *remoteCall) cancels(n *jsonrpc.Request) bool {
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
// call whose request was never sent is not.
func (rc *remoteCall) cancelled(ctx context.Context, reason string) error {
	defer rc.once.Do(func() { close(rc.told) })
	rc.mu.Lock()
	id, u, header, via := rc.id, rc.url, rc.header, rc.via
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
	body, err := jsonrpc.EncodeMessage(&jsonrpc.Request{Method: "notifications/cancelled", Params: params})
	if err != nil {
		return err
	}
	ctx, stop := context.WithTimeout(context.WithoutCancel(ctx), cancelWait)
	defer stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header = cancelHeader(header)
	resp, err := via.RoundTrip(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096)) // a 202 has none
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("notifications/cancelled: %s", resp.Status)
	}
	rc.mu.Lock()
	rc.delivered = true
	rc.mu.Unlock()
	return nil
}
