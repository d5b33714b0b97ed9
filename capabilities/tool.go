// Package capabilities defines what a capability is: a named, schema-described
// factory of tools for the model. The spec loader instantiates capabilities from a
// Registry, to which built-in and user-written types are added alike.
//
// A capability never imports the runtime. It talks to whoever runs it through
// three small things: the Tool interface, the RetryError a tool returns when the
// model can correct its call, and the event Listener carried in the call's
// context.
package capabilities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Tool is one function the model can call.
type Tool interface {
	// Name is the function name the model sees, e.g. "read_file".
	Name() string
	// Description tells the model what the tool does and when to use it.
	Description() string
	// Parameters is the JSON Schema (an object schema) of the call's arguments.
	// It must marshal to JSON; a map[string]any is what every provider accepts.
	// The map may be shared with other tools (FileSystem's are, across the
	// FileSystems of a batch): callers read it and must not change it.
	Parameters() map[string]any
	// Call runs the tool with the model's arguments (a JSON object). It returns
	// the text the model sees. An error wrapping a *RetryError is a message the
	// model can act on; any other error is fatal and ends the run.
	Call(ctx context.Context, args json.RawMessage) (string, error)
}

// Capability gives the model a set of tools. Optional behaviour is discovered
// by type assertion: Instructable adds to the system prompt, io.Closer releases
// resources when the run ends.
type Capability interface {
	Tools(ctx context.Context) ([]Tool, error)
}

// ToolsChanger is implemented by a capability whose tools may change while
// it is in use, as an MCP server's do when it announces a new list.
// ToolsVersion changes whenever they may have; whoever offers them lists
// them again (Tools) when it has, as the agent loop does before each
// request to the model. A capability without it lists the same tools for
// as long as it lives.
type ToolsChanger interface {
	ToolsVersion() uint64
}

// ToolsWatcher is a ToolsChanger that also says when its ToolsVersion
// changes, for whoever passes the change on without being asked for the
// tools: `agentspec mcp` tells its own clients their list changed. Whoever
// finds none asks ToolsVersion when it next needs the tools.
type ToolsWatcher interface {
	ToolsChanger
	// ToolsChanged returns a channel closed at the first change of
	// ToolsVersion after the call.
	ToolsChanged() <-chan struct{}
}

// Instructable is implemented by capabilities that add text to the model's
// instructions.
type Instructable interface {
	Instructions() string
}

// RetryError is a tool failure the model can correct: a missing file, a denied
// path, a stale edit. Its message goes back to the model as the tool result and
// the run goes on.
type RetryError struct {
	Message string
	// Refusal says what kind of refusal the message is, for whoever shows
	// it (the CLI's progress lines); "" for any other failure.
	Refusal Refusal
}

// Refusal is a kind of tool failure a consumer may tell apart without
// reading the message's words.
type Refusal string

// The refusals FileSystem's and Shell's tools return.
const (
	// RefusedConflict: a change was refused because the file changed since
	// the model read it.
	RefusedConflict Refusal = "conflict"
	// RefusedProtected: a change was refused because its path is protected.
	RefusedProtected Refusal = "protected"
	// RefusedCommand: a command was refused by the checks on its text (an
	// interactive program, a denied operator or command, one outside the
	// allowlist) before it ran.
	RefusedCommand Refusal = "command"
)

// Refuse returns a *RetryError of the kind given, with the formatted
// message.
func Refuse(kind Refusal, format string, args ...any) error {
	return &RetryError{Message: fmt.Sprintf(format, args...), Refusal: kind}
}

func (e *RetryError) Error() string { return e.Message }

// Retry returns a *RetryError with the formatted message.
func Retry(format string, args ...any) error {
	if len(args) == 0 {
		return &RetryError{Message: format}
	}
	return &RetryError{Message: fmt.Sprintf(format, args...)}
}

// RefusalOf is the Refusal of the *RetryError err is or wraps; "" when it
// has none.
func RefusalOf(err error) Refusal {
	var r *RetryError
	if errors.As(err, &r) {
		return r.Refusal
	}
	return ""
}

// AsRetry reports whether err is (or wraps) a *RetryError and returns its message.
func AsRetry(err error) (string, bool) {
	var r *RetryError
	if errors.As(err, &r) {
		return r.Message, true
	}
	return "", false
}

// Warner is implemented by a capability whose options are allowed but
// probably not what the spec's author meant (a FileSystem rooted at / or
// at the home directory). Each warning is a sentence; whoever builds the
// capability shows it at the capability's place in the spec.
type Warner interface {
	Warnings() []string
}

// Warning is one of an OptionWarner's warnings.
type Warning struct {
	// Option is the key of the option the warning is about, as the
	// capability's options name it ("cwd"); "" when it is about the
	// capability as a whole, or about no option the spec writes.
	Option string
	Msg    string
}

// OptionWarner is a Warner that says which option each of its warnings
// is about, so that whoever shows them places each at that option's value
// in the spec, where it would be changed, rather than at the capability's
// entry. OptionWarnings are its Warnings, in the same order.
type OptionWarner interface {
	Warner
	OptionWarnings() []Warning
}
