package spec

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/capabilities/prefixtools"
)

func TestInstantiate(t *testing.T) {
	t.Parallel()
	reg, closed := testRegistry(t)
	l := &Loader{Registry: reg, LookupEnv: testEnv}
	s, err := l.Load("agent.yaml", []byte("capabilities:\n  - FileSystem: ./work\n  - Memory\n  - Thinking: {effort: low}\n"))
	require.NoError(t, err)
	caps, err := Instantiate(context.Background(), s, reg, capabilities.Setup{Dir: "/jobs/1"})
	require.NoError(t, err)
	require.Len(t, caps, 3)
	fs := caps[0].(*stub)
	assert.Equal(t, "FileSystem", fs.name)
	assert.JSONEq(t, `{"root_dir": "./work"}`, string(fs.opts))
	assert.JSONEq(t, `{}`, string(caps[1].(*stub).opts))
	assert.Zero(t, closed.Load())
}

func TestInstantiateErrors(t *testing.T) {
	t.Parallel()
	reg, closed := testRegistry(t)
	l := &Loader{Registry: reg, LookupEnv: testEnv}
	src := "capabilities:\n" +
		"  - Memory\n" +
		"  - FileSystem:\n" +
		"      root_dir: .\n" +
		"      cwd: ../outside\n" +
		"  - FileSystem: unreadable\n" +
		"  - {name: FileSystem, arguments: {root_dir: ., cwd: ../outside}}\n"
	s, err := l.Load("agent.yaml", []byte(src))
	require.NoError(t, err)
	caps, err := Instantiate(context.Background(), s, reg, capabilities.Setup{Dir: "."})
	assert.Nil(t, caps)
	var errs Errors
	require.ErrorAs(t, err, &errs)
	assert.Equal(t, ""+
		`agent.yaml:5:12: capabilities[1].FileSystem.cwd: cwd "../outside" is outside root_dir "."`+"\n"+
		`agent.yaml:6:5: capabilities[2]: could not set up FileSystem: root_dir: permission denied`+"\n"+
		`agent.yaml:7:54: capabilities[3].arguments.cwd: cwd "../outside" is outside root_dir "."`,
		err.Error())
	assert.Equal(t, int32(1), closed.Load(), "the Memory built before the failures is closed")
}

func TestInstantiateUnknownType(t *testing.T) {
	t.Parallel()
	reg, _ := testRegistry(t)
	s, err := (&Loader{Registry: reg}).Load("agent.yaml", []byte("capabilities: [Memory]\n"))
	require.NoError(t, err)
	_, err = Instantiate(context.Background(), s, capabilities.NewRegistry(), capabilities.Setup{Dir: "."})
	assert.EqualError(t, err, `agent.yaml:1:16: capabilities[0]: unknown capability type "Memory": no capability types are registered`)
}

func TestInstantiateCanceled(t *testing.T) {
	t.Parallel()
	reg, _ := testRegistry(t)
	s, err := (&Loader{Registry: reg}).Load("agent.yaml", []byte("capabilities: [Memory]\n"))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Instantiate(ctx, s, reg, capabilities.Setup{Dir: "."})
	assert.ErrorIs(t, err, context.Canceled)
	var errs Errors
	assert.False(t, errors.As(err, &errs), "a canceled context is not a spec problem")
}

// A nested entry's option error (PrefixTools' capability) is placed at the
// option inside it, in whichever form the entry is written.
func TestInstantiateNestedOptionError(t *testing.T) {
	t.Parallel()
	reg, _ := testRegistry(t)
	require.NoError(t, reg.Register(prefixtools.Type()))
	l := &Loader{Registry: reg, LookupEnv: testEnv}
	src := "capabilities:\n" +
		"  - PrefixTools:\n" +
		"      prefix: a\n" +
		"      capability: {FileSystem: {root_dir: ., cwd: ../outside}}\n" +
		"  - PrefixTools: {prefix: b, capability: {name: FileSystem, arguments: {root_dir: ., cwd: ../outside}}}\n" +
		"  - PrefixTools: {prefix: c, capability: {PrefixTools: {prefix: d, capability: {FileSystem: {cwd: ../outside}}}}}\n" +
		"  - PrefixTools: {prefix: e, capability: {FileSystem: unreadable}}\n"
	s, err := l.Load("agent.yaml", []byte(src))
	require.NoError(t, err)
	_, err = Instantiate(context.Background(), s, reg, capabilities.Setup{Dir: "."})
	assert.EqualError(t, err, ""+
		`agent.yaml:4:51: capabilities[0].PrefixTools.capability.FileSystem.cwd: cwd "../outside" is outside root_dir "."`+"\n"+
		`agent.yaml:5:91: capabilities[1].PrefixTools.capability.arguments.cwd: cwd "../outside" is outside root_dir "."`+"\n"+
		`agent.yaml:6:99: capabilities[2].PrefixTools.capability.PrefixTools.capability.FileSystem.cwd: cwd "../outside" is outside root_dir ""`+"\n"+
		`agent.yaml:7:5: capabilities[3]: could not set up PrefixTools: FileSystem: root_dir: permission denied`)
}

// A factory's error about an option the entry does not write (one it
// needs) is said of the entry's options, where they are written, or of the
// entry when it has none: no label names an option that is not there.
func TestInstantiateErrorOfAnOptionNotWritten(t *testing.T) {
	t.Parallel()
	reg := capabilities.NewRegistry()
	require.NoError(t, reg.Register(capabilities.Type{
		Name:   "Needy",
		Schema: json.RawMessage(`{"type": "object", "properties": {"kind": {"type": "string"}, "other": {"type": "string"}}}`),
		New: func(_ context.Context, args capabilities.Args) (capabilities.Capability, error) {
			var opts struct{ Kind, Other string }
			if err := args.Decode(&opts); err != nil {
				return nil, err
			}
			if opts.Kind == "" {
				return nil, capabilities.ArgErrorf("kind", "Needy needs a kind")
			}
			return &stub{}, nil
		},
	}))
	l := &Loader{Registry: reg, LookupEnv: testEnv}
	src := "capabilities:\n" +
		"  - Needy\n" +
		"  - Needy: {other: x}\n" +
		"  - {name: Needy, arguments: {other: x}}\n" +
		"  - name: Needy\n" +
		"  - Needy: {kind: ''}\n"
	s, err := l.Load("agent.yaml", []byte(src))
	require.NoError(t, err)
	_, err = Instantiate(context.Background(), s, reg, capabilities.Setup{Dir: "."})
	assert.EqualError(t, err, ""+
		"agent.yaml:2:5: capabilities[0]: Needy needs a kind\n"+
		"agent.yaml:3:12: capabilities[1].Needy: Needy needs a kind\n"+
		"agent.yaml:4:30: capabilities[2].arguments: Needy needs a kind\n"+
		"agent.yaml:5:5: capabilities[3]: Needy needs a kind\n"+
		"agent.yaml:6:19: capabilities[4].Needy.kind: Needy needs a kind")
}

// optionWarned is a capability whose warning is about its cwd option.
type optionWarned struct{ stub }

func (*optionWarned) Warnings() []string { return []string{"cwd is deprecated"} }
func (*optionWarned) OptionWarnings() []capabilities.Warning {
	return []capabilities.Warning{{Option: "cwd", Msg: "cwd is deprecated"}}
}

// warningWrapper is a wrapper of another capability's with Warnings of its
// own, as one an embedder writes to add to what it wraps.
type warningWrapper struct {
	stub
	inner capabilities.Capability
}

func (w *warningWrapper) Unwrap() capabilities.Capability { return w.inner }
func (*warningWrapper) Warnings() []string {
	return []string{"the wrapper's own warning", "cwd is deprecated"}
}

// A wrapper that says Warnings of its own, and not which option each is
// about, is heard as before OptionWarner came: its warnings, at the entry,
// and not those of the OptionWarner it wraps in place of its own.
func TestCapabilityWarningsOfAWrapperAreItsOwn(t *testing.T) {
	t.Parallel()
	reg, _ := testRegistry(t)
	s, err := (&Loader{Registry: reg}).Load("agent.yaml", []byte("capabilities:\n  - FileSystem: {root_dir: ., cwd: sub}\n"))
	require.NoError(t, err)

	warnings := CapabilityWarnings(s, []capabilities.Capability{&warningWrapper{inner: &optionWarned{}}})
	assert.Equal(t, "agent.yaml:2:5: warning: capabilities[0]: the wrapper's own warning\n"+
		"agent.yaml:2:5: warning: capabilities[0]: cwd is deprecated", warnings.Error())

	warnings = CapabilityWarnings(s, []capabilities.Capability{&optionWarned{}})
	assert.Equal(t, "agent.yaml:2:36: warning: capabilities[0].FileSystem.cwd: cwd is deprecated", warnings.Error())
}
