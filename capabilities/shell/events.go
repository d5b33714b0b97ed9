package shell

import (
	"encoding/json"
	"strconv"

	"github.com/agentspec/agentspec/capabilities"
)

// EventNamespace prefixes the kind of every event the capability emits.
const EventNamespace = "shell"

// Event kinds.
const (
	KindCommandRequest = EventNamespace + ".command_request"
	KindCommand        = EventNamespace + ".command"
)

// Events lists the kinds of the events a Shell emits, delivered as
// pointers. A command the checks refuse emits nothing. Events carry the
// command's text, never its environment or its output (which is the tool
// result).
var Events = []string{KindCommandRequest, KindCommand}

// DefaultCancelReason is the reason given when Cancel is called with none.
const DefaultCancelReason = capabilities.DefaultCancelReason

// CommandRequestEvent announces a command that passed the checks, before
// any process starts. A listener may veto it with Cancel before it
// returns; the tool then tells the model "[Command was not run: REASON]".
type CommandRequestEvent struct {
	Command    string `json:"command"`
	Cwd        string `json:"cwd"`      // relative to RootDir, "." for it; absolute when outside
	RootDir    string `json:"root_dir"` // the workspace, absolute
	Background bool   `json:"background"`
	Sandboxed  bool   `json:"sandboxed"`

	capabilities.Veto // Cancel stops the command
}

// Describe says what would run, for a person asked to approve it: the
// approver shows "The agent wants to run `COMMAND` in CWD".
func (e *CommandRequestEvent) Describe() capabilities.ChangeDescription {
	return capabilities.ChangeDescription{Summary: "run `" + e.Command + "` in " + e.Cwd}
}

// Kind is KindCommandRequest.
func (*CommandRequestEvent) Kind() string { return KindCommandRequest }

// MarshalJSON writes the kind first, and whether and why it was cancelled.
func (e *CommandRequestEvent) MarshalJSON() ([]byte, error) {
	cancelled, r := e.Cancelled()
	var reason *string
	if cancelled {
		reason = &r
	}
	return json.Marshal(struct {
		Kind         string  `json:"kind"`
		Command      string  `json:"command"`
		Cwd          string  `json:"cwd"`
		RootDir      string  `json:"root_dir"`
		Background   bool    `json:"background"`
		Sandboxed    bool    `json:"sandboxed"`
		Cancelled    bool    `json:"cancelled"`
		CancelReason *string `json:"cancel_reason"`
	}{e.Kind(), e.Command, e.Cwd, e.RootDir, e.Background, e.Sandboxed, cancelled, reason})
}

var _ capabilities.ChangeRequest = (*CommandRequestEvent)(nil)

// CommandEvent reports a command that ended; for start_command, one that
// started (with ID, no exit code), then again when stop_command or the
// run's end stops it.
type CommandEvent struct {
	Command string `json:"command"`
	ID      string `json:"id,omitempty"` // background commands only
	Cwd     string `json:"cwd"`
	RootDir string `json:"root_dir"`
	// ExitCode is nil while running, when timed out or when killed.
	ExitCode    *int  `json:"exit_code"`
	DurationMS  int64 `json:"duration_ms"`
	TimedOut    bool  `json:"timed_out"`
	Truncated   bool  `json:"truncated"` // the result hit max_output_chars
	StdoutBytes int64 `json:"stdout_bytes"`
	StderrBytes int64 `json:"stderr_bytes"`
	Background  bool  `json:"background"`
	Sandboxed   bool  `json:"sandboxed"`
	// Timeout is the deadline in seconds of a command that timed out, for
	// a progress line; not serialized.
	Timeout float64 `json:"-"`

	started bool // the event of a background command that just started
}

// Kind is KindCommand.
func (*CommandEvent) Kind() string { return KindCommand }

// MarshalJSON writes the kind first.
func (e *CommandEvent) MarshalJSON() ([]byte, error) {
	type plain CommandEvent
	return json.Marshal(struct {
		Kind string `json:"kind"`
		*plain
	}{e.Kind(), (*plain)(e)})
}

// Outcome is the event as a progress line ends: "exit 0", "timed out
// after 1.0s", "started <id>", "stopped".
func (e *CommandEvent) Outcome() string {
	switch {
	case e.TimedOut:
		return "timed out after " + pyFloat(e.Timeout) + "s"
	case e.ExitCode != nil:
		return "exit " + strconv.Itoa(*e.ExitCode)
	case e.started:
		return "started " + e.ID
	}
	return "killed"
}
