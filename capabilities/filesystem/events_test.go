package filesystem

import (
	"encoding/json"
	"testing"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEventJSON(t *testing.T) {
	t.Parallel()
	base := EventBase{Path: "a.txt", RootDir: "/r", CapabilityID: CapabilityID, ToolCallID: "c1", ToolName: "write_file"}
	const common = `"path":"a.txt","root_dir":"/r","capability_id":"file_system","tool_call_id":"c1","tool_name":"write_file"`
	req := &FileChangeRequestEvent{EventBase: base, Operation: OpWrite, Diff: "d", Truncated: true}
	cancelled := &FileChangeRequestEvent{EventBase: base, Operation: OpEdit}
	cancelled.Cancel("not today")
	tests := []struct {
		ev   capabilities.Event
		want string
	}{
		{req, `{"kind":"file_system.file_change_request",` + common + `,"operation":"write","diff":"d","truncated":true,"cancelled":false,"cancel_reason":null}`},
		{cancelled, `{"kind":"file_system.file_change_request",` + common + `,"operation":"edit","diff":"","truncated":false,"cancelled":true,"cancel_reason":"not today"}`},
		{&FileReadEvent{base, "abc"}, `{"kind":"file_system.file_read",` + common + `,"content_hash":"abc"}`},
		{&DirectoryListedEvent{base, 3}, `{"kind":"file_system.directory_listed",` + common + `,"entry_count":3}`},
		{&FileWrittenEvent{base, "abc"}, `{"kind":"file_system.file_written",` + common + `,"content_hash":"abc"}`},
		{&FileEditedEvent{FileWrittenEvent{base, "abc"}, "d", false}, `{"kind":"file_system.file_edited",` + common + `,"content_hash":"abc","diff":"d","truncated":false}`},
		{&DirectoryCreatedEvent{base}, `{"kind":"file_system.directory_created",` + common + `}`},
		{&FilesSearchedEvent{base, "x", SearchGrep, 2, true}, `{"kind":"file_system.files_searched",` + common + `,"pattern":"x","search":"grep","match_count":2,"truncated":true}`},
		{&ExternalChangeEvent{base, "abc", "def", false}, `{"kind":"file_system.external_change",` + common + `,"previous_hash":"abc","current_hash":"def","deleted":false}`},
		{&ExternalChangeEvent{base, "abc", "", true}, `{"kind":"file_system.external_change",` + common + `,"previous_hash":"abc","current_hash":"","deleted":true}`},
	}
	var kinds []string
	for _, tt := range tests {
		b, err := json.Marshal(tt.ev)
		require.NoError(t, err)
		assert.JSONEq(t, tt.want, string(b))
		assert.Regexp(t, `^\{"kind":`, string(b), "kind comes first")
		if len(kinds) == 0 || kinds[len(kinds)-1] != tt.ev.Kind() {
			kinds = append(kinds, tt.ev.Kind())
		}
	}
	assert.Equal(t, Events, kinds)
}

func TestCancelSemantics(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cancels []string
		want    string
	}{
		{"not cancelled", nil, ""},
		{"bare cancel", []string{""}, DefaultCancelReason},
		{"reason", []string{"not today"}, "not today"},
		{"later bare cancel keeps the reason", []string{"first", ""}, "first"},
		{"later reason wins", []string{"first", "second"}, "second"},
	}
	for _, tt := range tests {
		ev := &FileChangeRequestEvent{}
		for _, r := range tt.cancels {
			ev.Cancel(r)
		}
		c, reason := ev.Cancelled()
		assert.Equal(t, tt.cancels != nil, c, tt.name)
		assert.Equal(t, tt.want, reason, tt.name)
	}
}

// A listener for writes matches WriteEvent and receives edits too.
func TestWriteEventCoversEdits(t *testing.T) {
	t.Parallel()
	written := &FileWrittenEvent{EventBase{Path: "w"}, "h1"}
	edited := &FileEditedEvent{FileWrittenEvent{EventBase{Path: "e"}, "h2"}, "diff", false}
	var got []string
	for _, ev := range []capabilities.Event{written, edited, &FileReadEvent{}} {
		if w, ok := ev.(WriteEvent); ok {
			got = append(got, w.Written().Path+":"+w.Written().ContentHash)
		}
	}
	assert.Equal(t, []string{"w:h1", "e:h2"}, got)
	assert.Equal(t, KindFileEdited, edited.Kind())
}
