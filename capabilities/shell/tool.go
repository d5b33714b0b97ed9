package shell

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/agentspec/agentspec/capabilities"
)

// tool adapts one of the capability's functions to capabilities.Tool. Every
// result goes through truncateTail, so the lines at its end survive.
type tool struct {
	name, description string
	params            map[string]any
	hints             capabilities.Hints
	call              func(ctx context.Context, args json.RawMessage) (string, error)
	max               int
}

func (t *tool) Name() string               { return t.name }
func (t *tool) Description() string        { return t.description }
func (t *tool) Parameters() map[string]any { return t.params }

// Hints: run_command and start_command run anything the model writes, so
// they are destructive, and open-world when commands may reach the
// network; stop_command ends a command. check_command changes nothing, but
// does not say read-only: it belongs with the tools that start commands,
// and a read-only server (`agentspec mcp --read-only`) offers none of them.
func (t *tool) Hints() capabilities.Hints { return t.hints }

// Call runs the tool; its result is cut to max_output_chars from the end.
func (t *tool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	out, err := t.call(ctx, args)
	if err != nil {
		return "", err
	}
	return truncateTail(out, t.max), nil
}

func (c *Capability) newTool(name string) *tool {
	t := &tool{name: name, max: c.cfg.maxOutputChars}
	openWorld := c.cfg.network || !c.cfg.sandbox
	command := func(d string) map[string]any {
		return map[string]any{"type": "string", "description": d}
	}
	id := map[string]any{"type": "string", "description": "The ID returned by start_command."}
	switch name {
	case ToolRunCommand:
		t.description = "Execute a shell command in the workspace and return its output.\n\n" +
			"Returns labeled stdout/stderr output, with the exit code when it is not zero."
		t.params = object(map[string]any{
			"command": command("The shell command to run."),
			"timeout_seconds": map[string]any{
				"anyOf":       []any{map[string]any{"type": "number"}, map[string]any{"type": "null"}},
				"default":     nil,
				"description": "Maximum seconds to wait (default: " + strconv.FormatFloat(c.cfg.defaultTimeout, 'g', -1, 64) + ").",
			},
		}, "command")
		t.hints = capabilities.Hints{Destructive: true, OpenWorld: openWorld}
		t.call = c.runCommand
	case ToolStartCommand:
		t.description = "Start a long-running command in the background (e.g. a server or watcher).\n\n" +
			"The command runs until it exits, `stop_command(command_id)` stops it, or this run ends.\n\n" +
			"Returns a message with the command's ID, for check_command and stop_command."
		t.params = object(map[string]any{"command": command("The shell command to run in the background.")}, "command")
		t.hints = capabilities.Hints{Destructive: true, OpenWorld: openWorld}
		t.call = c.startCommand
	case ToolCheckCommand:
		t.description = "Check the status and recent output of a background command."
		t.params = object(map[string]any{"command_id": id}, "command_id")
		t.hints = capabilities.Hints{}
		t.call = c.checkCommand
	case ToolStopCommand:
		t.description = "Stop a background command and return its final output and exit status."
		t.params = object(map[string]any{"command_id": id}, "command_id")
		t.hints = capabilities.Hints{Destructive: true}
		t.call = c.stopCommand
	}
	return t
}

// object returns the JSON Schema of a tool's arguments.
func object(props map[string]any, required ...string) map[string]any {
	return map[string]any{
		"type":                 "object",
		"properties":           props,
		"required":             required,
		"additionalProperties": false,
	}
}

// args are the arguments of any of the tools.
type args struct {
	Command        *string  `json:"command"`
	TimeoutSeconds *float64 `json:"timeout_seconds"`
	CommandID      *string  `json:"command_id"`

	badEncoding bool // command holds a lone surrogate (\ud800-\udfff)
}

// decodeArgs reads a call's arguments; names are the ones the tool takes,
// the first required. Every failure is a retry naming the argument.
func decodeArgs(raw json.RawMessage, names ...string) (args, error) {
	var a args
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte("{}")
	}
	var given map[string]json.RawMessage
	if err := json.Unmarshal(raw, &given); err != nil {
		return a, capabilities.Retry("Invalid arguments: expected a JSON object of named arguments.")
	}
	for k := range given {
		if !slices.Contains(names, k) {
			return a, capabilities.Retry("Unknown argument %s. Expected: %s.", pyRepr(k), strings.Join(names, ", "))
		}
	}
	if v, ok := given[names[0]]; !ok || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		return a, capabilities.Retry("Missing required argument %s.", pyRepr(names[0]))
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return a, capabilities.Retry("Argument %s must be %s, got %s.", pyRepr(te.Field), kindOf(te.Field), te.Value)
		}
		return a, capabilities.Retry("Invalid arguments: %v.", err)
	}
	if v, ok := given["command"]; ok {
		a.badEncoding = loneSurrogate(v)
	}
	return a, nil
}

func kindOf(field string) string {
	if field == "timeout_seconds" {
		return "a number or null"
	}
	return "a string"
}

// loneSurrogate reports whether a JSON string holds a \u escape of a UTF-16
// surrogate that is not half of a pair: Python reads it as a lone
// surrogate, which the operating system cannot be given; Go's decoder
// would have made it U+FFFD silently.
func loneSurrogate(raw json.RawMessage) bool {
	s := string(raw)
	for i := 0; i+1 < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		if s[i+1] != 'u' {
			i++ // an escaped character, possibly a backslash
			continue
		}
		hi, ok := hex4(s, i+2)
		if !ok {
			continue
		}
		switch {
		case hi >= 0xdc00 && hi <= 0xdfff:
			return true
		case hi >= 0xd800 && hi <= 0xdbff:
			if i+7 < len(s) && s[i+6] == '\\' && s[i+7] == 'u' {
				if lo, ok := hex4(s, i+8); ok && lo >= 0xdc00 && lo <= 0xdfff {
					i += 11
					continue
				}
			}
			return true
		}
		i += 5
	}
	return false
}

func hex4(s string, at int) (int, bool) {
	if at+4 > len(s) {
		return 0, false
	}
	n, err := strconv.ParseUint(s[at:at+4], 16, 32)
	return int(n), err == nil
}

// notRun is the result of a command a listener cancelled.
func notRun(reason string) string { return fmt.Sprintf("[Command was not run: %s]", reason) }
