package filesystem

import (
	"encoding/json"
	"path/filepath"

	"github.com/agentspec/agentspec/capabilities"
)

// EventNamespace prefixes the kind of every event the capability emits.
const EventNamespace = "file_system"

// Event kinds.
const (
	KindFileChangeRequest = EventNamespace + ".file_change_request"
	KindFileRead          = EventNamespace + ".file_read"
	KindDirectoryListed   = EventNamespace + ".directory_listed"
	KindFileWritten       = EventNamespace + ".file_written"
	KindFileEdited        = EventNamespace + ".file_edited"
	KindDirectoryCreated  = EventNamespace + ".directory_created"
	KindFilesSearched     = EventNamespace + ".files_searched"
	KindExternalChange    = EventNamespace + ".external_change"
)

// Events lists the kinds of the events a FileSystem emits. Only tool calls
// made with a listener in their context (inside a run) emit; a denied or
// failed operation emits nothing, except the external change that made a
// write fail. Events are delivered as pointers (*FileReadEvent, ...).
var Events = []string{
	KindFileChangeRequest, KindFileRead, KindDirectoryListed, KindFileWritten,
	KindFileEdited, KindDirectoryCreated, KindFilesSearched, KindExternalChange,
}

// Diff bounds for change events.
const (
	// MaxEventDiffChars caps an event's diff; a longer diff is cut at a line
	// boundary and marked truncated.
	MaxEventDiffChars = 8192
	// MaxDiffSourceChars is the longest text (either side) that is diffed at
	// all; beyond it the diff is the two file headers, marked truncated.
	MaxDiffSourceChars = 4 * MaxEventDiffChars
)

// EventBase holds what every event carries. Path is the normalized,
// symlink-resolved location relative to RootDir ("." for the root), never an
// absolute host path; RootDir is the emitting capability's resolved root.
type EventBase struct {
	Path         string `json:"path"`
	RootDir      string `json:"root_dir"`
	CapabilityID string `json:"capability_id"`
	ToolCallID   string `json:"tool_call_id"`
	ToolName     string `json:"tool_name"`
}

// FileChangeRequestEvent announces a write_file, edit_file or
// create_directory that passed every check, before it touches the disk. A
// listener may veto it with Cancel; it must do so before it returns. The tool
// then returns the reason to the model as its result.
type FileChangeRequestEvent struct {
	EventBase
	Operation string `json:"operation"` // "write", "edit" or "create_directory"
	Diff      string `json:"diff"`      // unified diff from the current to the proposed content
	Truncated bool   `json:"truncated"` // the diff is cut or left out

	capabilities.Veto // Cancel stops the change
}

// Change operations.
const (
	OpWrite           = "write"
	OpEdit            = "edit"
	OpCreateDirectory = "create_directory"
)

// DefaultCancelReason is the reason given when Cancel is called with none.
const DefaultCancelReason = capabilities.DefaultCancelReason

// Describe says what the change is, for a person asked to approve it
// (capabilities.ChangeRequest).
func (e *FileChangeRequestEvent) Describe() capabilities.ChangeDescription {
	what := map[string]string{OpWrite: "write", OpEdit: "edit", OpCreateDirectory: "create the directory"}[e.Operation]
	if what == "" {
		what = e.Operation
	}
	d := capabilities.ChangeDescription{Summary: what + " " + e.Path, Diff: e.Diff, Truncated: e.Truncated}
	if e.Operation != OpCreateDirectory && e.RootDir != "" {
		d.File = filepath.Join(e.RootDir, filepath.FromSlash(e.Path))
	}
	return d
}

var _ capabilities.ChangeRequest = (*FileChangeRequestEvent)(nil)

// FileReadEvent reports a successful read_file (text or binary).
type FileReadEvent struct {
	EventBase
	ContentHash string `json:"content_hash"` // of the whole file, whatever window was read
}

// DirectoryListedEvent reports a list_directory.
type DirectoryListedEvent struct {
	EventBase
	EntryCount int `json:"entry_count"` // entries shown
}

// WriteEvent is implemented by the events of content that landed on disk:
// *FileWrittenEvent and *FileEditedEvent. A listener for writes matches it to
// receive edits too.
type WriteEvent interface {
	capabilities.Event
	Written() FileWrittenEvent
}

// FileWrittenEvent reports a write_file whose bytes landed.
type FileWrittenEvent struct {
	EventBase
	ContentHash string `json:"content_hash"` // of the content written
}

// Written returns the event itself.
func (e FileWrittenEvent) Written() FileWrittenEvent { return e }

// FileEditedEvent reports an edit_file whose bytes landed: a FileWrittenEvent
// plus the diff that was announced.
type FileEditedEvent struct {
	FileWrittenEvent
	Diff      string `json:"diff"`
	Truncated bool   `json:"truncated"`
}

// DirectoryCreatedEvent reports a create_directory that created something.
type DirectoryCreatedEvent struct {
	EventBase
}

// FilesSearchedEvent reports search_files and grep (Search "grep") and
// find_files and list_files (Search "find").
type FilesSearchedEvent struct {
	EventBase
	Pattern    string `json:"pattern"`
	Search     string `json:"search"`
	MatchCount int    `json:"match_count"` // lines or paths returned, markers excluded
	Truncated  bool   `json:"truncated"`   // the search stopped at its cap
}

// ExternalChangeEvent reports that a file the agent read or wrote was changed
// on disk by someone else: its content no longer hashes to what the agent
// last saw. It is delivered through the listener of the next tool call on the
// FileSystem (whose call it names), or with the write_file or edit_file the
// change makes fail, whichever comes first; see watch.go.
type ExternalChangeEvent struct {
	EventBase
	PreviousHash string `json:"previous_hash"` // what the agent last saw
	CurrentHash  string `json:"current_hash"`  // what the file holds now; "" when deleted
	Deleted      bool   `json:"deleted"`       // no regular file is left at the path
}

// Search kinds of FilesSearchedEvent.
const (
	SearchGrep = "grep"
	SearchFind = "find"
)

func (FileChangeRequestEvent) Kind() string { return KindFileChangeRequest }
func (FileReadEvent) Kind() string          { return KindFileRead }
func (DirectoryListedEvent) Kind() string   { return KindDirectoryListed }
func (FileWrittenEvent) Kind() string       { return KindFileWritten }
func (FileEditedEvent) Kind() string        { return KindFileEdited }
func (DirectoryCreatedEvent) Kind() string  { return KindDirectoryCreated }
func (FilesSearchedEvent) Kind() string     { return KindFilesSearched }
func (ExternalChangeEvent) Kind() string    { return KindExternalChange }

// The events serialize with their kind first, so a stored or forwarded event
// says what it is.

func (e FileChangeRequestEvent) MarshalJSON() ([]byte, error) {
	cancelled, _ := e.Cancelled()
	var reason *string
	if given := e.Given(); given != "" {
		reason = &given
	}
	return withKind(e.Kind(), struct {
		EventBase
		Operation    string  `json:"operation"`
		Diff         string  `json:"diff"`
		Truncated    bool    `json:"truncated"`
		Cancelled    bool    `json:"cancelled"`
		CancelReason *string `json:"cancel_reason"`
	}{e.EventBase, e.Operation, e.Diff, e.Truncated, cancelled, reason})
}

func (e FileReadEvent) MarshalJSON() ([]byte, error) {
	type plain FileReadEvent
	return withKind(e.Kind(), plain(e))
}

func (e DirectoryListedEvent) MarshalJSON() ([]byte, error) {
	type plain DirectoryListedEvent
	return withKind(e.Kind(), plain(e))
}

func (e FileWrittenEvent) MarshalJSON() ([]byte, error) {
	type plain FileWrittenEvent
	return withKind(e.Kind(), plain(e))
}

func (e FileEditedEvent) MarshalJSON() ([]byte, error) {
	// The embedded FileWrittenEvent's MarshalJSON would be promoted; list
	// the fields instead.
	return withKind(e.Kind(), struct {
		EventBase
		ContentHash string `json:"content_hash"`
		Diff        string `json:"diff"`
		Truncated   bool   `json:"truncated"`
	}{e.EventBase, e.ContentHash, e.Diff, e.Truncated})
}

func (e DirectoryCreatedEvent) MarshalJSON() ([]byte, error) {
	type plain DirectoryCreatedEvent
	return withKind(e.Kind(), plain(e))
}

func (e FilesSearchedEvent) MarshalJSON() ([]byte, error) {
	type plain FilesSearchedEvent
	return withKind(e.Kind(), plain(e))
}

func (e ExternalChangeEvent) MarshalJSON() ([]byte, error) {
	type plain ExternalChangeEvent
	return withKind(e.Kind(), plain(e))
}

// withKind marshals v, a struct, with a leading "kind" field.
func withKind(kind string, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	k, _ := json.Marshal(kind)
	out := make([]byte, 0, len(b)+len(k)+9)
	out = append(out, `{"kind":`...)
	out = append(out, k...)
	if len(b) > 2 {
		out = append(out, ',')
	}
	return append(out, b[1:]...), nil
}
