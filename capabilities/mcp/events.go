package mcp

import (
	"encoding/json"
)

// EventNamespace prefixes the kind of every event the capability emits.
const EventNamespace = "mcp"

// Event kinds.
const (
	KindCallRequest = EventNamespace + ".call_request"
	KindCallResult  = EventNamespace + ".call_result"
)

// Events lists the kinds of the events an MCP capability emits, as pointers
// (*CallRequestEvent, *CallResultEvent). Only calls made with a listener in
// their context (inside a run, `agentspec tool`, `agentspec mcp`) emit.
var Events = []string{KindCallRequest, KindCallResult}

// EventBase holds what every event carries.
type EventBase struct {
	Server     string `json:"server"`       // the server's id
	Tool       string `json:"tool"`         // the tool's name on the server
	ToolCallID string `json:"tool_call_id"` // the run's id of the call
	ToolName   string `json:"tool_name"`    // the name the model called (a prefix may have been added)
}

// CallRequestEvent announces a call before it is sent to the server. A
// listener may veto it with Veto before it returns; the model then gets a
// bracketed note with the reason as the call's result, and the server never
// sees the call.
type CallRequestEvent struct {
	EventBase
	Arguments json.RawMessage `json:"arguments"`

	vetoed bool
	reason string
}

// DefaultVetoReason is the reason given when Veto is called with none.
const DefaultVetoReason = "vetoed by a listener"

// Veto stops the call. An empty reason keeps one given earlier.
func (e *CallRequestEvent) Veto(reason string) {
	e.vetoed = true
	if reason != "" {
		e.reason = reason
	}
}

// Vetoed reports whether a listener vetoed the call, and why.
func (e *CallRequestEvent) Vetoed() (bool, string) {
	switch {
	case !e.vetoed:
		return false, ""
	case e.reason == "":
		return true, DefaultVetoReason
	}
	return true, e.reason
}

// CallResultEvent reports a call the server answered, isError included.
type CallResultEvent struct {
	EventBase
	IsError bool `json:"is_error"`
	// Dropped describes each content item that could not be passed to the
	// model ("image/png image, 1024 bytes"); the model got a note in its
	// place.
	Dropped []string `json:"dropped"`
	Chars   int      `json:"chars"` // length of the text the model got, in Unicode code points
}

func (CallRequestEvent) Kind() string { return KindCallRequest }
func (CallResultEvent) Kind() string  { return KindCallResult }

func (e CallRequestEvent) MarshalJSON() ([]byte, error) {
	args := e.Arguments
	if !json.Valid(args) {
		args, _ = json.Marshal(string(e.Arguments))
	}
	var reason *string
	if e.reason != "" {
		reason = &e.reason
	}
	return json.Marshal(struct {
		Kind string `json:"kind"`
		EventBase
		Arguments  json.RawMessage `json:"arguments"`
		Vetoed     bool            `json:"vetoed"`
		VetoReason *string         `json:"veto_reason"`
	}{e.Kind(), e.EventBase, args, e.vetoed, reason})
}

func (e CallResultEvent) MarshalJSON() ([]byte, error) {
	dropped := e.Dropped
	if dropped == nil {
		dropped = []string{}
	}
	return json.Marshal(struct {
		Kind string `json:"kind"`
		EventBase
		IsError bool     `json:"is_error"`
		Dropped []string `json:"dropped"`
		Chars   int      `json:"chars"`
	}{e.Kind(), e.EventBase, e.IsError, dropped, e.Chars})
}
