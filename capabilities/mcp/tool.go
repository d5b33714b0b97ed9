package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentspec/agentspec/capabilities"
)

// tool is one of the server's tools, as the model sees it.
type tool struct {
	c           *Capability
	name        string
	description string
	params      map[string]any
	hints       capabilities.Hints
}

func newTool(c *Capability, t *sdk.Tool) *tool {
	params, _ := t.InputSchema.(map[string]any)
	return &tool{c: c, name: t.Name, description: t.Description, params: providerSchema(params), hints: serverHints(t.Annotations)}
}

// providerSchema is a tool's input schema as providers take a function's
// parameters. JSON Schema, and so MCP's servers, allow forms they refuse,
// each failing every request of the run: an object without properties
// (OpenAI's "object schema missing properties"; the Go SDK tells a tool
// without input to list {"type": "object"}), a schema without a type
// (Anthropic's "input_schema.type: Field required"), a $ref at the root
// (a pydantic model's). Those get an empty properties, type object, and
// the definition the $ref names in its place, its $defs kept for the
// references inside; any other schema is left as the server gave it.
func providerSchema(s map[string]any) map[string]any {
	if s == nil {
		return nil
	}
	out := maps.Clone(s) // the server's own map is left as it came
	if ref, ok := out["$ref"].(string); ok && out["type"] == nil {
		if def := localDef(out, ref); def != nil {
			delete(out, "$ref")
			for k, v := range def {
				if _, set := out[k]; !set {
					out[k] = v
				}
			}
		}
	}
	if _, typed := out["type"]; !typed {
		out["type"] = "object"
	}
	if out["type"] == "object" && out["properties"] == nil {
		out["properties"] = map[string]any{}
	}
	return out
}

// localDef is the definition a root $ref names in the schema's own $defs
// (or definitions, draft 7's), or nil for any other reference.
func localDef(s map[string]any, ref string) map[string]any {
	for _, key := range []string{"$defs", "definitions"} {
		name, ok := strings.CutPrefix(ref, "#/"+key+"/")
		if !ok || strings.Contains(name, "/") {
			continue
		}
		defs, _ := s[key].(map[string]any)
		def, _ := defs[name].(map[string]any)
		return def
	}
	return nil
}

func (t *tool) Name() string               { return t.name }
func (t *tool) Description() string        { return t.description }
func (t *tool) Parameters() map[string]any { return t.params }

// Hints are the server's annotations of the tool: what it says, not a
// guarantee. What it leaves out takes MCP's defaults, which assume the worst.
func (t *tool) Hints() capabilities.Hints { return t.hints }

// serverHints reads a tool's annotations with MCP's defaults: not
// read-only, destructive, not idempotent, open-world.
func serverHints(a *sdk.ToolAnnotations) capabilities.Hints {
	h := capabilities.ToolDefaultHints
	if a == nil {
		return h
	}
	h.ReadOnly, h.Idempotent = a.ReadOnlyHint, a.IdempotentHint
	if a.DestructiveHint != nil {
		h.Destructive = *a.DestructiveHint
	}
	if a.OpenWorldHint != nil {
		h.OpenWorld = *a.OpenWorldHint
	}
	return h
}

func (t *tool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	c := t.c
	if c.closed.Load() {
		return "", fmt.Errorf("%s: %w", t.name, ErrClosed)
	}
	if c.proc != nil {
		if stuck, what := c.proc.stdin.stuckWith(); stuck != nil {
			waiting := "one an earlier call gave up on"
			if what == abandonedCancel {
				waiting = "the cancellation of an earlier call"
			}
			return "", capabilities.Retry("%s was not called: MCP server %s has stopped reading its requests, and %s "+
				"is still waiting to be sent to it. Its tools can be called again once it reads that one.", t.name, c.id, waiting)
		}
	}
	info, _ := capabilities.CallFrom(ctx)
	base := EventBase{Server: c.id, Tool: t.name, ToolCallID: info.ID, ToolName: info.Tool}
	if base.ToolName == "" {
		base.ToolName = t.name
	}
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	req := &CallRequestEvent{EventBase: base, Arguments: args}
	if err := capabilities.Emit(ctx, req); err != nil {
		return "", err
	}
	if vetoed, reason := req.Vetoed(); vetoed {
		return fmt.Sprintf("[%s was not called: %s]", t.name, reason), nil
	}
	callCtx, cancel := context.WithTimeout(ctx, c.callTimeout())
	defer cancel() // also ends what the SDK still reads of the answer
	// Close ends the call, which is then cancelled on the server: a
	// streamable HTTP server does not end the session before its calls
	// return, and the call would wait for its answer up to read_timeout.
	callCtx, closing := context.WithCancelCause(callCtx)
	defer closing(nil)
	defer context.AfterFunc(c.lifeCtx(), func() { closing(ErrClosed) })()
	params := &sdk.CallToolParams{Name: t.name, Arguments: args}
	session := c.currentSession()
	res, err := c.callTool(callCtx, session, params)
	if err != nil && c.reconnect != nil && callCtx.Err() == nil && c.sessionGone(err, session) {
		// The server never saw the call, so it is made again, once, in a
		// new session.
		if session, err = c.renew(callCtx, session); err == nil {
			res, err = c.callTool(callCtx, session, params)
		} else if !errors.Is(err, ErrClosed) {
			err = fmt.Errorf("the server no longer knows the session and a new one could not be started: %w", err)
		}
	}
	if err != nil {
		return "", c.callError(ctx, callCtx, t.name, err)
	}
	text, dropped := render(res)
	if err := capabilities.Emit(ctx, &CallResultEvent{EventBase: base, IsError: res.IsError, Dropped: dropped, Chars: utf8.RuneCountInString(text)}); err != nil {
		return "", err
	}
	if len(text) > MaxResultBytes {
		return "", capabilities.Retry("The result of %s is %d bytes of text, more than the %d (%d MiB) a tool result may have. "+
			"Call it so that it returns less.", t.name, len(text), MaxResultBytes, MaxResultBytes>>20)
	}
	if res.IsError {
		if text == "" {
			text = "the tool failed without saying why"
		}
		return "", &capabilities.RetryError{Message: text}
	}
	return text, nil
}

// callTool is the session's CallTool, ended by ctx though the request is
// still being written: the SDK writes it to a local server's stdin whatever
// the context, and that write blocks once a server that stopped reading has
// let the pipe fill. The write goes on until the server reads again or
// Close closes the pipe; until then later calls are refused (see Call), as
// they would wait behind it, and be sent, once it ended, after their
// callers had been told they were cancelled.
//
// A call that ctx ends is cancelled on the server before callTool returns
// (see sentCall), unless its request was not yet written whole to a local
// server.
func (c *Capability) callTool(ctx context.Context, session *sdk.ClientSession, params *sdk.CallToolParams) (*sdk.CallToolResult, error) {
	type answer struct {
		res *sdk.CallToolResult
		err error
	}
	ctx, rc := withSentCall(ctx)
	done := make(chan answer, 1)
	go func() {
		res, err := session.CallTool(ctx, params)
		done <- answer{res, err}
	}()
	var a answer
	select {
	case a = <-done:
	case <-ctx.Done():
		select {
		case a = <-done: // an answer that came as ctx ended stands
		default:
			if c.proc != nil {
				c.proc.stdin.abandon(abandonedRequest)
			}
			a.err = ctx.Err()
		}
	}
	if a.err != nil && ctx.Err() != nil {
		// Best effort: the call is over for the run whether or not the
		// server takes it. One a local server left in its full pipe is
		// said so (callError).
		if err := rc.cancelled(ctx, context.Cause(ctx).Error()); errors.Is(err, errCancelPending) {
			a.err = fmt.Errorf("%w (%w)", a.err, errCancelPending)
		}
	}
	return a.res, a.err
}

// callError classifies a failed call: the run's own deadline or
// interruption as it is (the runtime reports those), invalid arguments
// refused by the server, or no answer within the read timeout (callCtx's),
// as correctable, a message over MaxMessageBytes, a server that went away
// or any other protocol error as fatal.
func (c *Capability) callError(ctx, callCtx context.Context, name string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", name, context.Cause(ctx))
	}
	if tooLarge := c.guard.tripped(); tooLarge != nil {
		return c.errorf(tooLarge, "MCP server %s (%s): calling %s: %s", c.id, c.where, name, tooLarge)
	}
	if errors.Is(context.Cause(callCtx), ErrClosed) {
		return c.errorf(ErrClosed, "MCP server %s (%s): calling %s: %s", c.id, c.where, name, ErrClosed)
	}
	if errors.Is(callCtx.Err(), context.DeadlineExceeded) {
		if errors.Is(err, errCancelPending) {
			return capabilities.Retry("Timed out after %s waiting for MCP server %s to answer; it has stopped reading its requests, "+
				"so it could not yet be told that the call was cancelled.", seconds(c.callTimeout()), c.id)
		}
		return capabilities.Retry("Timed out after %s waiting for MCP server %s to answer; the call was cancelled.", seconds(c.callTimeout()), c.id)
	}
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) && rpcErr.Code == jsonrpc.CodeInvalidParams {
		return capabilities.Retry("%s", rpcErr.Message)
	}
	if c.proc != nil {
		if exited, status := c.proc.exitStatus(); exited {
			return fmt.Errorf("%w: MCP server %s (%s) exited during a call to %s (%s)%s",
				ErrServerExited, c.id, c.where, name, status, c.scrub(c.proc.stderrTail()))
		}
	}
	return c.errorf(err, "MCP server %s (%s): calling %s: %s", c.id, c.where, name, c.scrub(err.Error()))
}

// seconds says d as the options give it: "300 seconds", "0.5 seconds".
func seconds(d time.Duration) string {
	if d == time.Second {
		return "1 second"
	}
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " seconds"
}

// render turns a result's content into the text the model gets. What text
// cannot carry is replaced by a bracketed note and described in dropped.
func render(res *sdk.CallToolResult) (text string, dropped []string) {
	var parts []string
	note := func(what string) {
		dropped = append(dropped, what)
		parts = append(parts, "["+what+" not shown: only text reaches the model]")
	}
	for _, item := range res.Content {
		switch v := item.(type) {
		case *sdk.TextContent:
			parts = append(parts, v.Text)
		case *sdk.ImageContent:
			note(fmt.Sprintf("%s image, %d bytes", orUnknown(v.MIMEType), len(v.Data)))
		case *sdk.AudioContent:
			note(fmt.Sprintf("%s audio, %d bytes", orUnknown(v.MIMEType), len(v.Data)))
		case *sdk.ResourceLink:
			link := "[resource link: " + v.URI
			if v.Name != "" && v.Name != v.URI {
				link += " (" + v.Name + ")"
			}
			if v.Description != "" {
				link += ": " + v.Description
			}
			parts = append(parts, link+"]")
		case *sdk.EmbeddedResource:
			r := v.Resource
			switch {
			case r == nil:
			case r.Blob != nil:
				note(fmt.Sprintf("resource %s (%s), %d bytes", r.URI, orUnknown(r.MIMEType), len(r.Blob)))
			default:
				parts = append(parts, "[resource "+r.URI+"]\n"+r.Text)
			}
		default:
			b, _ := item.MarshalJSON()
			var kind struct {
				Type string `json:"type"`
			}
			_ = json.Unmarshal(b, &kind)
			note(orUnknown(kind.Type) + " content")
		}
	}
	if len(res.Content) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	return strings.Join(parts, "\n"), dropped
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown type"
	}
	return s
}

// sessionGone reports whether a call in session failed because the server
// no longer knows the session (streamable HTTP's 404): its own request was
// answered so; or, made as another call's was, it found the connection
// closed for that reason, which the SDK gives only in the error's text (it
// wraps ErrConnectionClosed, the cause formatted with %v); or another call
// has already replaced the session, closing it under this one. The
// restarted server never saw such a call; one the old server was running
// as it went away may be made again.
func (c *Capability) sessionGone(err error, session *sdk.ClientSession) bool {
	if errors.Is(err, sdk.ErrSessionMissing) {
		return true
	}
	return errors.Is(err, sdk.ErrConnectionClosed) &&
		(strings.Contains(err.Error(), sdk.ErrSessionMissing.Error()) || c.currentSession() != session)
}
