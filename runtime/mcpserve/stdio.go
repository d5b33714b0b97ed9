package mcpserve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// lineTransport is the stdio transport of ServeStdio: newline-delimited
// JSON-RPC, as the SDK's IOTransport speaks it, read by the goroutine that
// asks for the next message. The SDK's own connection reads on a goroutine of
// its own and hands every message over through a channel; under a loaded
// machine that extra wake-up per message was a good part of a call's
// latency. JSON-RPC batches (protocol 2025-03-26) are answered with one
// array once every call in them is answered, as the SDK does. When the
// input ends, the calls read before its end are answered first (see
// drain): a client may write its requests and close its end.
type lineTransport struct {
	in  io.Reader
	out io.Writer
	// closeIn unblocks a Read under way; nil when the input cannot be
	// interrupted (then Read returns when the input ends).
	closeIn func() error
	// hand holds the encoded results the responses' placeholders stand
	// for (see handOff); ServeStdio puts it in the calls' context too.
	hand *handOff
}

// maxLine bounds one message, as the SDK's DefaultMaxLineLength does.
const maxLine = sdk.DefaultMaxLineLength

func (t *lineTransport) Connect(context.Context) (sdk.Connection, error) {
	return &lineConn{
		in: bufio.NewReaderSize(t.in, 64<<10), out: t.out, closeIn: t.closeIn, hand: t.hand,
		closed: make(chan struct{}), answered: make(chan struct{}, 1),
		pending: map[jsonrpc.ID]bool{}, cancelled: map[jsonrpc.ID]bool{}, listens: map[jsonrpc.ID]bool{},
	}, nil
}

type lineConn struct {
	in      *bufio.Reader
	closeIn func() error
	queue   []jsonrpc.Message // the rest of a batch; Read is not called concurrently
	hand    *handOff

	wmu sync.Mutex
	out io.Writer

	bmu     sync.Mutex
	batches map[jsonrpc.ID]*batch

	closeOnce sync.Once
	closed    chan struct{}

	// pending holds the calls read and not yet answered; answered is
	// signalled whenever one is, for drain. cancelled holds those the
	// client cancelled before they were answered: their answers are not
	// sent. listens holds the subscriptions/listen requests read and not
	// yet answered, which drain does not wait for, true once the client
	// cancelled one: its answer is not sent either.
	pmu       sync.Mutex
	pending   map[jsonrpc.ID]bool
	cancelled map[jsonrpc.ID]bool
	listens   map[jsonrpc.ID]bool
	answered  chan struct{}
}

type batch struct {
	pending   map[jsonrpc.ID]int // call id -> index in responses
	responses []*jsonrpc.Response
}

var errClosed = errors.New("connection closed")

func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if len(c.queue) > 0 {
		msg := c.queue[0]
		c.queue = c.queue[1:]
		return msg, nil
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		select {
		case <-c.closed:
			return nil, io.EOF
		default:
		}
		line, err := c.readLine()
		if errors.Is(err, errTooLong) {
			// Skipped whole: the next line is the next message.
			if err := c.writeLine(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":null,"error":{"code":%d,"message":"%s"}}`+"\n",
				jsonrpc.CodeInvalidRequest, errTooLong.Error())); err != nil {
				return nil, err
			}
			continue
		}
		if len(bytes.TrimSpace(line)) == 0 {
			if err != nil {
				if err = c.readErr(err); err == io.EOF {
					c.drain(ctx)
				}
				return nil, err
			}
			continue
		}
		msgs, err := c.decode(bytes.TrimSpace(line))
		if err != nil {
			// JSON-RPC 2.0 answers a message it cannot read with an
			// error whose id is null; the client's other calls go on.
			if err := c.refuse(bytes.TrimSpace(line), err); err != nil {
				return nil, err
			}
			continue
		}
		c.track(msgs)
		c.queue = msgs[1:]
		return msgs[0], nil
	}
}

// refuse answers data, a line that is not a message decode accepts: a
// parse error when it is not JSON, else an invalid request.
func (c *lineConn) refuse(data []byte, why error) error {
	code := int64(jsonrpc.CodeInvalidRequest)
	if !json.Valid(data) {
		code = jsonrpc.CodeParseError
	}
	msg, err := json.Marshal(why.Error())
	if err != nil {
		return err
	}
	return c.writeLine(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":null,"error":{"code":%d,"message":%s}}`+"\n", code, msg))
}

// writeLine writes one whole line, unless the connection is closed.
func (c *lineConn) writeLine(line []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	select {
	case <-c.closed:
		return errClosed
	default:
	}
	_, err := c.out.Write(line)
	return err
}

// errTooLong is a line longer than maxLine.
var errTooLong = fmt.Errorf("a message is longer than %d bytes", maxLine)

// readLine reads one line. One longer than maxLine is read to its end and
// dropped, and errTooLong returned, so that the next message can be read.
func (c *lineConn) readLine() ([]byte, error) {
	var line []byte
	tooLong := false
	for {
		chunk, err := c.in.ReadSlice('\n')
		if !tooLong {
			line = append(line, chunk...)
			if len(line) > maxLine {
				tooLong, line = true, nil
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if tooLong && (err == nil || err == io.EOF) {
			return nil, errTooLong
		}
		return line, err
	}
}

func (c *lineConn) readErr(err error) error {
	select {
	case <-c.closed:
		return io.EOF
	default:
	}
	if errors.Is(err, os.ErrClosed) || errors.Is(err, io.ErrClosedPipe) {
		return io.EOF
	}
	return err
}

// track records the calls among msgs as pending; a cancelled call is no
// longer waited for, and its answer is not sent: MCP asks the receiver of
// a cancellation not to answer, and a client that has forgotten the id may
// report an answer to it as an error. A subscriptions/listen (protocol
// 2026-07-28) is not waited for: it is answered only when it ends, and
// once the input has, no one is left to hear what it was for; its answer
// is left out once the client cancelled it, as a call's is.
func (c *lineConn) track(msgs []jsonrpc.Message) {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	for _, msg := range msgs {
		req, ok := msg.(*jsonrpc.Request)
		switch {
		case !ok:
		case req.IsCall() && req.Method == "subscriptions/listen":
			c.listens[req.ID] = false
		case req.IsCall():
			c.pending[req.ID] = true
		case req.Method == "notifications/cancelled":
			var p struct {
				RequestID any `json:"requestId"`
			}
			if json.Unmarshal(req.Params, &p) == nil {
				id, err := jsonrpc.MakeID(p.RequestID)
				if _, listen := c.listens[id]; err == nil && listen {
					c.listens[id] = true
				} else if err == nil && c.pending[id] {
					delete(c.pending, id)
					c.cancelled[id] = true
				}
			}
		}
	}
}

// answer marks the call id answered, or its answer dropped. A
// cancellation read while its answer was written, too late to drop it, is
// forgotten with it.
func (c *lineConn) answer(id jsonrpc.ID) {
	c.pmu.Lock()
	delete(c.pending, id)
	delete(c.cancelled, id)
	delete(c.listens, id)
	c.pmu.Unlock()
	select {
	case c.answered <- struct{}{}:
	default:
	}
}

// drain waits, once the input has ended, until every call read before its
// end is answered, the connection is closed or ctx is done. The SDK cancels
// the calls in flight as soon as Read reports the end, so without it a
// client that writes its requests and closes its end (`printf ... |
// agentspec mcp`) would get no answers. A call the client cancelled is
// waited for too, until its answer is dropped: the SDK cancels it from a
// goroutine of its own, and the end, cancelling it first with io.EOF as
// cause, would have it taken for the server's failure.
func (c *lineConn) drain(ctx context.Context) {
	for {
		c.pmu.Lock()
		n := len(c.pending) + len(c.cancelled)
		c.pmu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-c.answered:
		case <-c.closed:
			return
		case <-ctx.Done():
			return
		}
	}
}

func (c *lineConn) decode(data []byte) ([]jsonrpc.Message, error) {
	if data[0] != '[' {
		msg, err := decodeMessage(data)
		if err != nil {
			return nil, err
		}
		return []jsonrpc.Message{msg}, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return nil, fmt.Errorf("a batch that is not a JSON array of messages: %w", err)
	}
	if len(raws) == 0 {
		return nil, errors.New("empty batch")
	}
	msgs := make([]jsonrpc.Message, 0, len(raws))
	b := &batch{pending: map[jsonrpc.ID]int{}}
	for _, raw := range raws {
		msg, err := decodeMessage(raw)
		if err != nil {
			return nil, err
		}
		if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
			if _, dup := b.pending[req.ID]; dup {
				return nil, fmt.Errorf("duplicate message ID %v in a batch", req.ID.Raw())
			}
			b.pending[req.ID] = len(b.responses)
			b.responses = append(b.responses, nil)
		}
		msgs = append(msgs, msg)
	}
	if len(b.pending) > 0 {
		c.bmu.Lock()
		if c.batches == nil {
			c.batches = map[jsonrpc.ID]*batch{}
		}
		for id := range b.pending {
			c.batches[id] = b
		}
		c.bmu.Unlock()
	}
	return msgs, nil
}

// decodeMessage reads one JSON-RPC message as jsonrpc.DecodeMessage does,
// keys matched exactly, with the standard library: the SDK's decoder
// allocates and clears a large buffer for every value it decodes, which for
// the envelope of a small request was a tenth of a call's cost.
func decodeMessage(data []byte) (jsonrpc.Message, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
	}
	var version string
	if err := json.Unmarshal(fields["jsonrpc"], &version); err != nil || version != "2.0" {
		return nil, fmt.Errorf("invalid message version tag %s; expected \"2.0\"", fields["jsonrpc"])
	}
	var rawID any
	if b, ok := fields["id"]; ok {
		if err := json.Unmarshal(b, &rawID); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
	}
	id, err := jsonrpc.MakeID(rawID)
	if err != nil {
		return nil, err
	}
	if m, ok := fields["method"]; ok {
		var method string
		if err := json.Unmarshal(m, &method); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
		return &jsonrpc.Request{ID: id, Method: method, Params: fields["params"]}, nil
	}
	if !id.IsValid() {
		return nil, errors.New("invalid request: a response without an id")
	}
	resp := &jsonrpc.Response{ID: id, Result: fields["result"]}
	if e, ok := fields["error"]; ok && !bytes.Equal(bytes.TrimSpace(e), []byte("null")) {
		var wire jsonrpc.Error
		if err := json.Unmarshal(e, &wire); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
		resp.Error = &wire
	}
	return resp, nil
}

func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if resp, ok := msg.(*jsonrpc.Response); ok {
		defer c.answer(resp.ID)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var data []byte
	var err error
	if resp, ok := msg.(*jsonrpc.Response); ok {
		if resp, err = c.unhand(resp); err != nil {
			return err
		}
		id := resp.ID
		if c.wasCancelled(id) {
			// Left out, of its batch too.
			resp = nil
		}
		if all, inBatch := c.complete(id, resp); inBatch {
			if !slices.ContainsFunc(all, func(r *jsonrpc.Response) bool { return r != nil }) {
				return nil // not all in, or none to send
			}
			data, err = encodeBatch(all)
		} else if resp == nil {
			return nil
		} else {
			data, err = encodeResponse(resp)
		}
	} else {
		data, err = jsonrpc.EncodeMessage(msg)
	}
	if err != nil {
		return fmt.Errorf("encoding a message: %w", err)
	}
	return c.writeLine(append(data, '\n'))
}

// unhand returns resp with the encoded result its placeholder stands for,
// if its result is one (see handOff).
func (c *lineConn) unhand(resp *jsonrpc.Response) (*jsonrpc.Response, error) {
	if c.hand == nil || resp.Error != nil {
		return resp, nil
	}
	wire, ok, err := c.hand.take(resp.Result)
	if !ok || err != nil {
		return resp, err
	}
	r := *resp
	r.Result = wire
	return &r, nil
}

// wasCancelled reports whether the client cancelled the call id before
// it was answered, forgetting it.
func (c *lineConn) wasCancelled(id jsonrpc.ID) bool {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	if c.listens[id] {
		delete(c.listens, id)
		return true
	}
	if !c.cancelled[id] {
		return false
	}
	delete(c.cancelled, id)
	return true
}

// complete records resp, the response to call id (nil: none is sent), when
// the call is one of a batch. It reports whether it is, and returns the
// batch's responses once all are in.
func (c *lineConn) complete(id jsonrpc.ID, resp *jsonrpc.Response) ([]*jsonrpc.Response, bool) {
	c.bmu.Lock()
	defer c.bmu.Unlock()
	b, ok := c.batches[id]
	if !ok {
		return nil, false
	}
	b.responses[b.pending[id]] = resp
	delete(b.pending, id)
	delete(c.batches, id)
	if len(b.pending) > 0 {
		return nil, true
	}
	return b.responses, true
}

func (c *lineConn) Close() error {
	var err error
	c.closeOnce.Do(func() {
		close(c.closed)
		if c.closeIn != nil {
			err = c.closeIn()
		}
	})
	return err
}

func (c *lineConn) SessionID() string { return "" }

// encodeResponse writes a successful response's envelope around its result,
// which the SDK has already encoded: EncodeMessage would scan the whole
// result once more to compact it. Errors and unusual ids go through
// EncodeMessage.
func encodeResponse(resp *jsonrpc.Response) ([]byte, error) {
	id, idOK := resp.ID.Raw().(int64)
	if resp.Error != nil || len(resp.Result) == 0 || !idOK {
		return jsonrpc.EncodeMessage(resp)
	}
	data := make([]byte, 0, len(resp.Result)+48)
	data = append(data, `{"jsonrpc":"2.0","id":`...)
	data = strconv.AppendInt(data, id, 10)
	data = append(data, `,"result":`...)
	data = append(data, resp.Result...)
	return append(data, '}'), nil
}

func encodeBatch(responses []*jsonrpc.Response) ([]byte, error) {
	raws := make([]json.RawMessage, 0, len(responses))
	for _, r := range responses {
		if r == nil {
			continue
		}
		b, err := jsonrpc.EncodeMessage(r)
		if err != nil {
			return nil, err
		}
		raws = append(raws, b)
	}
	return json.Marshal(raws)
}
