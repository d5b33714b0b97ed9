package capabilities

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
)

// Event is something a capability reports while a run uses its tools. Events
// marshal to JSON objects; Kind is the serialized "kind" field, namespaced by
// the capability ("file_system.file_read").
type Event interface {
	Kind() string
}

// Listener receives the events of a run, synchronously, in order. A listener
// that returns an error aborts the run: the tool call fails fatally and the
// change that raised the event is not applied.
type Listener func(ctx context.Context, ev Event) error

// CallInfo identifies the tool call an event belongs to.
type CallInfo struct {
	ID   string // the provider's tool call id
	Tool string // the tool's name
}

type listenerKey struct{}
type callKey struct{}

// WithListener returns a context whose tool calls emit events to l. Tools called
// with a context that carries no listener (direct API calls) emit nothing.
func WithListener(ctx context.Context, l Listener) context.Context {
	return context.WithValue(ctx, listenerKey{}, l)
}

// WithCall returns a context that names the tool call being made.
func WithCall(ctx context.Context, c CallInfo) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

// CallFrom returns the tool call named by ctx, if any.
func CallFrom(ctx context.Context) (CallInfo, bool) {
	c, ok := ctx.Value(callKey{}).(CallInfo)
	return c, ok
}

// Emitting reports whether ctx carries a listener, i.e. whether the call is
// made inside a run. Tools use it to skip work (such as computing a diff) that
// only events need.
func Emitting(ctx context.Context) bool {
	_, ok := ctx.Value(listenerKey{}).(Listener)
	return ok
}

// Emit sends ev to the listener carried by ctx. Without a listener it does
// nothing and returns nil.
func Emit(ctx context.Context, ev Event) error {
	l, ok := ctx.Value(listenerKey{}).(Listener)
	if !ok || l == nil {
		return nil
	}
	return l(ctx, ev)
}

// MarshalEvent encodes ev as a JSON object whose first field is "kind",
// followed by the event's own fields. Events must marshal to JSON objects; an
// event whose own encoding already starts with its "kind" is kept as it is.
func MarshalEvent(ev Event) ([]byte, error) {
	body, err := json.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("encoding %s event: %w", ev.Kind(), err)
	}
	body = bytes.TrimSpace(body)
	if len(body) < 2 || body[0] != '{' {
		return nil, fmt.Errorf("encoding %s event: not a JSON object", ev.Kind())
	}
	kind, _ := json.Marshal(ev.Kind())
	if bytes.HasPrefix(body, []byte(`{"kind":`)) {
		return body, nil
	}
	out := make([]byte, 0, len(body)+len(kind)+10)
	out = append(out, `{"kind":`...)
	out = append(out, kind...)
	if rest := bytes.TrimSpace(body[1:]); len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, body[1:]...), nil
}

// ChangeRequest is an event announcing a change a capability is about to
// make, which a listener may still stop: the capability applies it only if no
// listener cancelled it before returning, and otherwise tells the model why.
// A listener that asks a person first (the CLI's --approve) needs nothing but
// this interface, whichever capability emits the event.
type ChangeRequest interface {
	Event
	// Cancel stops the change; reason is what the model is told. An empty
	// reason keeps one given earlier by another listener.
	Cancel(reason string)
	// Cancelled reports whether a listener cancelled the change, and why.
	Cancelled() (bool, string)
	// Describe says what the change is, for a person asked to approve it.
	Describe() ChangeDescription
}

// DefaultCancelReason is the reason a ChangeRequest gives when a listener
// cancelled it without one.
const DefaultCancelReason = "cancelled by a listener"

// Veto is the cancellable part of a ChangeRequest, for an event to embed:
// it holds whether a listener cancelled the change and why.
type Veto struct {
	cancelled bool
	reason    string // "" until a listener gives one
}

// Cancel stops the change. An empty reason keeps one given earlier by
// another listener.
func (v *Veto) Cancel(reason string) {
	v.cancelled = true
	if reason != "" {
		v.reason = reason
	}
}

// Cancelled reports whether a listener cancelled the change, and why
// (DefaultCancelReason when none said).
func (v *Veto) Cancelled() (bool, string) {
	switch {
	case !v.cancelled:
		return false, ""
	case v.reason == "":
		return true, DefaultCancelReason
	}
	return true, v.reason
}

// Given is the reason a listener gave, "" when none did (or none
// cancelled).
func (v *Veto) Given() string { return v.reason }

// ChangeDescription is a ChangeRequest as a person reads it.
type ChangeDescription struct {
	// Summary says what would change, as a phrase that follows "wants to":
	// "write notes/a.md".
	Summary string
	// Diff is the change as a unified diff; "" when there is none to show.
	Diff string
	// Truncated reports that Diff was cut or left out.
	Truncated bool
	// File is the absolute path of the file the change writes, as the
	// capability resolved it; "" when it writes no file (a directory, a
	// command). Whoever runs several agents over one workspace (a
	// pipeline's fan-out) uses it to keep two of them off one file.
	File string
}
