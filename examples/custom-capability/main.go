// Command agentspec-clock is agentspec with one more capability type, Clock,
// registered from Go. It shows how a program adds its own types and keeps the
// whole agentspec CLI: `agentspec-clock validate`, `schema`, `tools`, `tool` and
// `run` all know Clock exactly as they know the built-in FileSystem.
//
//	go run ./examples/custom-capability tools examples/custom-capability/agent.yaml
//	go run ./examples/custom-capability tool --spec examples/custom-capability/agent.yaml now
package main

import (
	"context"
	"encoding/json"
	"os"
	"time"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/capabilities/shell"
	"github.com/agentspec/agentspec/cmd/agentspec/cli"
)

// clockSchema is the JSON Schema of Clock's options. The loader composes it
// into the spec schema, so a misspelt option is reported at its FILE:LINE:COL
// and editors complete it.
const clockSchema = `{
  "type": "object",
  "properties": {
    "timezone": {"type": "string", "description": "IANA time zone the clock reports, e.g. Europe/Paris", "default": "UTC"},
    "layout":   {"type": "string", "description": "Go time layout of the answer", "default": "2006-01-02T15:04:05Z07:00"}
  },
  "additionalProperties": false
}`

// clockType is the Clock capability type. main registers it, before the CLI
// loads a spec; nothing is registered by importing a package.
func clockType() capabilities.Type {
	return capabilities.Type{
		Name:        "Clock",
		Description: "Tells the model the current time in a configured time zone.",
		Schema:      json.RawMessage(clockSchema),
		Positional:  "timezone", // `- Clock: Europe/Paris`
		New:         newClock,
	}
}

// clock is the capability: one tool, "now".
type clock struct {
	loc    *time.Location
	layout string
	now    func() time.Time
}

func newClock(_ context.Context, args capabilities.Args) (capabilities.Capability, error) {
	opts := struct {
		Timezone string `json:"timezone"`
		Layout   string `json:"layout"`
	}{Timezone: "UTC", Layout: time.RFC3339}
	if err := args.Decode(&opts); err != nil {
		return nil, err
	}
	loc, err := time.LoadLocation(opts.Timezone)
	if err != nil {
		// An ArgError points the user at the option, FILE:LINE:COL.
		return nil, capabilities.ArgErrorf("timezone", "unknown time zone %q", opts.Timezone)
	}
	return &clock{loc: loc, layout: opts.Layout, now: time.Now}, nil
}

func (c *clock) Tools(context.Context) ([]capabilities.Tool, error) {
	return []capabilities.Tool{nowTool{c}}, nil
}

// Instructions implements capabilities.Instructable.
// Reach is nothing beyond this process: a queue worker runs a Clock, as it
// refuses a capability that does not say what it reaches.
func (c *clock) Reach() capabilities.Reach { return capabilities.Reach{} }

func (c *clock) Instructions() string {
	return "Use the now tool whenever the answer depends on the current date or time."
}

type nowTool struct{ c *clock }

func (nowTool) Name() string { return "now" }

// Hints: reading the clock changes nothing, so `mcp --read-only` offers it.
func (nowTool) Hints() capabilities.Hints { return capabilities.Hints{ReadOnly: true} }
func (nowTool) Description() string       { return "Returns the current date and time." }
func (nowTool) Parameters() map[string]any {
	return map[string]any{"type": "object", "properties": map[string]any{}, "additionalProperties": false}
}

func (t nowTool) Call(_ context.Context, args json.RawMessage) (string, error) {
	var none map[string]any
	if err := json.Unmarshal(args, &none); err != nil || len(none) > 0 {
		// The model can fix this: it goes back to it as the tool result.
		return "", capabilities.Retry("now takes no arguments")
	}
	return t.c.now().In(t.c.loc).Format(t.c.layout), nil
}

func main() {
	shell.Main() // this agentspec offers Shell too: its commands start as this program
	// The CLI adds the built-in types to capabilities.Default; Clock joins them.
	capabilities.MustRegister(clockType())
	os.Exit(cli.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
