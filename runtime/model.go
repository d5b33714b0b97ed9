package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/runtime/providers"
	"github.com/agentspec/agentspec/runtime/script"
	"github.com/agentspec/agentspec/runtime/testmodel"
	"github.com/agentspec/agentspec/spec"
)

// scriptPrefix names a scripted model: "script:FILE", FILE relative to the
// spec file's directory.
const scriptPrefix = "script:"

// testModel names the offline test model (package testmodel).
const testModel = "test"

// modelSource is how each run of a plan gets its model: the one given with
// WithModel, a script read and parsed once, of which each run gets a fresh
// copy (a script.Model holds its place in the conversation), or a provider's model built per run.
type modelSource struct {
	given   llms.Model // WithModel's; nil otherwise
	dialect Dialect    // WithModel's

	ref      string // the spec's model reference
	settings spec.ModelSettings
	script   *scriptFile // nil unless ref is a script
	test     bool        // ref is "test": the offline test model
	output   json.RawMessage
}

// scriptFile is a script model's file, read and checked before any run.
type scriptFile struct {
	// path is absolute (made so once, not by every run that protects it);
	// the messages of readScript name it as written.
	path   string
	data   []byte
	parsed *script.Model // at its first turn; runs get a Fresh copy
}

// newModelSource checks the model the spec names before any run. Problems of
// the spec's own making (a script file that is missing or invalid, a setting
// the provider cannot honour, an unknown provider) are spec errors at the
// spec's position when it was loaded from a file. A provider's key is not
// looked for here: a run answered from the cache needs none.
func newModelSource(s *spec.Spec, cfg config) (*modelSource, error) {
	if cfg.model != nil {
		// The reference still names the model in a cache key WithCache asks for.
		return &modelSource{given: cfg.model, dialect: cfg.dialect, ref: strings.TrimSpace(s.Model)}, nil
	}
	src := &modelSource{ref: strings.TrimSpace(s.Model), settings: s.ModelSettings}
	if src.ref == "" {
		return nil, noModelError(s)
	}
	if src.ref == testModel {
		src.test, src.output = true, s.OutputSchema
		return src, nil
	}
	if name, ok := strings.CutPrefix(src.ref, scriptPrefix); ok {
		if cfg.scriptErr != nil {
			return nil, cfg.scriptErr // as the caller read it, once for all its runs
		}
		if cfg.script != nil {
			// Read by the caller, once for all its runs: the file as it
			// was then, whatever it holds now.
			if want := scriptPath(s, name); cfg.script.file.path != want {
				return nil, fmt.Errorf("runtime: WithScript gives the script %s, and the spec's model names %s", cfg.script.file.path, want)
			}
			src.script = cfg.script.file
			return src, nil
		}
		f, err := readScript(s, name)
		if err != nil {
			return nil, err
		}
		src.script = f
		return src, nil
	}
	if err := CheckModel(s); err != nil {
		return nil, err
	}
	return src, nil
}

// CheckModel checks what a run refuses before any request, from the spec
// alone: the settings the provider cannot honour (with the Thinking
// capabilities' setting), and the native tools of the WebSearch and
// NativeTool entries it does not run. Script models and specs without a
// model pass; the test model takes every setting and native tool.
//
// It is a spec.ModelCheck: a loader given it (spec.Loader.ModelCheck)
// refuses a spec as a run would, so that "agentspec validate" reports the
// settings and native tools a run would refuse. Run checks it either way.
func CheckModel(s *spec.Spec) error {
	ref := strings.TrimSpace(s.Model)
	if ref == "" || strings.HasPrefix(ref, scriptPrefix) {
		return nil
	}
	settings := s.ModelSettings
	var native spec.Errors
	var thinking *spec.Capability // the Thinking entry that set thinking
	for i, c := range s.Capabilities {
		name, built := describeCapability(c.Name, c.Options)
		if built == nil {
			continue
		}
		if ts, ok := capabilities.As[thinkingSetter](built); ok {
			thinking = &s.Capabilities[i]
			settings.Thinking = nil
			if enabled, effort, set := ts.ThinkingSetting(); set {
				settings.Thinking = &spec.Thinking{Enabled: enabled, Effort: effort}
			}
		}
		nt, ok := capabilities.As[capabilities.NativeTooler](built)
		if !ok {
			continue
		}
		for _, t := range nt.NativeTools() {
			if ref != testModel && providers.HasNative(ref, t.Kind) {
				// Sent to the provider: its options are checked as the
				// model's construction checks them.
				for _, err := range joined(providers.CheckNative(ref, []providers.NativeTool{t})) {
					at := c.Pos
					var option *providers.NativeOptionError
					if errors.As(err, &option) {
						at = nativeAt(s, c, true, option.Option)
					}
					native = append(native, &spec.Error{Pos: at, Msg: name + ": " + err.Error()})
				}
				continue
			}
			if t.LocalFallback || ref == testModel {
				continue
			}
			provider, _, _ := strings.Cut(ref, ":")
			msg := fmt.Sprintf("%s: %s does not run the native tool %s", name, provider, t.Kind)
			if t.Fallback != "" {
				msg += fmt.Sprintf(", and agentspec does not run the local fallback the spec names (%s)", t.Fallback)
			}
			if have := providers.NativeProviders(t.Kind); len(have) > 0 {
				msg += "; the providers that do: " + strings.Join(have, ", ")
			}
			native = append(native, &spec.Error{Pos: nativeAt(s, c, false, "kind"), Msg: msg})
		}
	}
	var err error
	if ref != testModel { // the test model reads no settings and runs no native tool
		err = providers.Validate(ref, settings)
	}
	if err == nil && len(native) == 0 {
		return nil
	}
	if s.File == "" {
		if len(native) > 0 {
			return errors.Join(err, native)
		}
		return err
	}
	var out spec.Errors
	if err != nil {
		errs, _ := settingErrors(s, err).(spec.Errors)
		for _, e := range errs {
			if thinking != nil && strings.Contains(e.Msg, "support model_settings.thinking") {
				// The capability set it, not model_settings.
				e.Pos, e.Msg = thinking.Pos, "Thinking: "+e.Msg
			}
			out = append(out, e)
		}
	}
	return append(out, native...)
}

// nativeAt is where a problem with the option of a native tool that c,
// or an entry nested in it, asks for is placed: at the option's key, with
// key set, or at its value, written among the entry's options or under
// tool (NativeTool's {tool: {kind: ...}}, and the long form's
// arguments: [{kind: ...}]); at the entry when the spec writes no such
// option (WebSearch's kind).
func nativeAt(s *spec.Spec, c spec.Capability, key bool, option string) spec.Position {
	for _, path := range [][]string{{option}, {"tool", option}} {
		if pos, ok := s.OptionPosition(c, key, path...); ok {
			return pos
		}
	}
	return c.Pos
}

// joined returns the errors errors.Join made err of, err alone otherwise,
// and none for nil.
func joined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err != nil {
		return []error{err}
	}
	return nil
}

// maxScriptSize bounds a script file: a script of a thousand long turns
// is far below it, and /dev/zero or a huge file is refused before it is
// read into memory.
const maxScriptSize = 16 << 20

// errNotRegular and errTooLarge are why a script file is not read.
var (
	errNotRegular = errors.New("not a regular file")
	errTooLarge   = fmt.Errorf("larger than %d MiB", maxScriptSize>>20)
)

// readRegular reads the regular file at path, of at most limit bytes.
// Anything else (a directory, a device, a named pipe, which would block) is
// refused without being read.
func readRegular(path string, limit int64) ([]byte, error) {
	if st, err := os.Stat(path); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, errNotRegular
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, errNotRegular // swapped since the first look
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, errTooLarge
	}
	return data, nil
}

// Script is a scripted model's file, read and checked once (LoadScript),
// for runs given it with WithScript.
type Script struct{ file *scriptFile }

// Data is the file's content as it was read. It must not be changed.
func (sc *Script) Data() []byte { return sc.file.data }

// LoadScript reads and checks the script file s's model names
// (script:NAME), as a run of s would, for WithScript; nil, nil when s's
// model is no script. Its errors are those the run would return.
func LoadScript(s *spec.Spec) (*Script, error) {
	name, ok := strings.CutPrefix(strings.TrimSpace(s.Model), scriptPrefix)
	if !ok {
		return nil, nil
	}
	f, err := readScript(s, name)
	if err != nil {
		return nil, err
	}
	return &Script{file: f}, nil
}

// scriptPath is the absolute path of the script file NAME of s's model.
func scriptPath(s *spec.Spec, name string) string {
	path := scriptName(s, name)
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

// scriptName is the script file NAME of s's model as messages name it: a
// relative NAME is beside the spec's file.
func scriptName(s *spec.Spec, name string) string {
	if !filepath.IsAbs(name) && s.File != "" {
		return filepath.Join(filepath.Dir(s.File), name)
	}
	return name
}

// readScript reads and checks the script file of "script:NAME".
func readScript(s *spec.Spec, name string) (*scriptFile, error) {
	path := scriptName(s, name)
	data, err := readRegular(path, maxScriptSize)
	if err != nil {
		reason := err.Error()
		var pe *fs.PathError
		switch {
		case errors.Is(err, fs.ErrNotExist):
			reason = "no such file"
		case errors.As(err, &pe):
			reason = pe.Err.Error()
		}
		return nil, specError(s, "/model", fmt.Sprintf("cannot read the script file %s: %s", path, reason))
	}
	parsed, err := script.Parse(path, data)
	if err != nil {
		var problems script.Errors
		if !errors.As(err, &problems) || s.File == "" {
			return nil, fmt.Errorf("invalid script file %s:\n%w", path, err)
		}
		more := make([]*spec.Error, len(problems))
		for i, p := range problems {
			more[i] = &spec.Error{Pos: spec.Position{File: p.File, Line: p.Line, Col: p.Col}, Msg: p.Msg}
		}
		return nil, specError(s, "/model", "invalid script file "+path+":", more...)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	return &scriptFile{path: abs, data: data, parsed: parsed}, nil
}

// settingErrors reports what providers.Validate found: each setting the
// provider cannot honour at its own key, anything else at the model's.
func settingErrors(s *spec.Spec, err error) error {
	if s.File == "" {
		return err
	}
	errs := []error{err}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		errs = joined.Unwrap()
	}
	var out spec.Errors
	for _, e := range errs {
		ptr := "/model"
		var unsupported *providers.UnsupportedSettingError
		if errors.As(e, &unsupported) {
			ptr = "/model_settings/" + unsupported.Setting
		}
		out = append(out, &spec.Error{Pos: s.Position(ptr), Msg: e.Error()})
	}
	return out
}

// specError reports msg at the value of the spec at ptr, followed by more,
// as the loader reports a spec's problems. A spec built in Go has no
// positions: msg and more are returned as plain lines.
func specError(s *spec.Spec, ptr, msg string, more ...*spec.Error) error {
	if s.File == "" {
		lines := []string{msg}
		for _, e := range more {
			lines = append(lines, e.Error())
		}
		return errors.New(strings.Join(lines, "\n"))
	}
	return append(spec.Errors{{Pos: s.Position(ptr), Msg: msg}}, more...)
}

// cacheRef is the model as the cache key names it: the spec's reference,
// with a script's content, whose turns are the answers.
func (m *modelSource) cacheRef() string {
	if m.script == nil {
		return m.ref
	}
	sum := sha256.Sum256(m.script.data)
	return m.ref + " sha256:" + hex.EncodeToString(sum[:])
}

// build returns the model of one run.
func (m *modelSource) build(opts providers.Options) (llms.Model, Dialect, error) {
	switch {
	case m.given != nil:
		return m.given, m.dialect, nil
	case m.script != nil:
		sm := m.script.parsed.Fresh()
		return sm, Dialect(sm.Dialect()), nil
	case m.test:
		tm, err := testmodel.New(m.output)
		return tm, DialectOpenAI, err
	}
	pm, err := providers.New(m.ref, m.settings, opts)
	if err != nil {
		return nil, "", err
	}
	return pm, pm.Dialect, nil
}

// selectNative decides, before any request, where each native tool the
// capabilities ask for (capabilities.NativeTooler) runs: on the provider
// when it has the kind, in which case a capability's local fallback tools
// are not offered; otherwise through the capability's local tools when it
// has a fallback; otherwise the run is refused, naming the providers that
// have the kind. It returns the capabilities whose tools are offered and the
// native tools to send.
func (m *modelSource) selectNative(caps []capabilities.Capability) ([]capabilities.Capability, []providers.NativeTool, error) {
	var (
		natives []providers.NativeTool
		errs    []error
		out     = make([]capabilities.Capability, 0, len(caps))
	)
	served := m.given == nil && m.script == nil // a provider's model, or the test model
	for _, c := range caps {
		nt, ok := capabilities.As[capabilities.NativeTooler](c)
		if !ok {
			out = append(out, c)
			continue
		}
		tools := nt.NativeTools()
		allNative, anyFallback := true, false
		var mine []providers.NativeTool
		for _, t := range tools {
			anyFallback = anyFallback || t.LocalFallback
			switch {
			case m.test && t.LocalFallback:
				allNative = false // the test model calls the local stand-in, to exercise it
			case m.test || served && providers.HasNative(m.ref, t.Kind):
				// The test model takes a native tool without a stand-in and calls none.
				mine = append(mine, t)
			case t.LocalFallback:
				allNative = false
			case t.Fallback != "":
				allNative = false
				errs = append(errs, fmt.Errorf("the model %s has no native %s tool, and agentspec does not run the local fallback the spec names (%s); the providers that have it: %s",
					m.ref, t.Kind, t.Fallback, strings.Join(providers.NativeProviders(t.Kind), ", ")))
			default:
				allNative = false
				errs = append(errs, fmt.Errorf("the model %s has no native %s tool and the capability asking for it has no local fallback; the providers that have it: %s",
					m.ref, t.Kind, strings.Join(providers.NativeProviders(t.Kind), ", ")))
			}
		}
		if allNative {
			natives = append(natives, mine...)
			if anyFallback {
				out = append(out, nativeOnly{})
			} else {
				out = append(out, c)
			}
			continue
		}
		// Some native tool runs locally: the capability's tools are offered,
		// and only the kinds without a fallback go to the provider.
		for _, t := range mine {
			if !t.LocalFallback {
				natives = append(natives, t)
			}
		}
		out = append(out, c)
	}
	return out, natives, errors.Join(errs...)
}

// nativeOnly stands for a capability whose native tools the provider runs:
// its local fallback tools are not offered.
type nativeOnly struct{}

func (nativeOnly) Tools(context.Context) ([]capabilities.Tool, error) { return nil, nil }

// describeCapability builds the capability of an entry (its type's name
// and options) to ask it what it asks of the model (native tools, the
// thinking setting), when its type says it may be built from its options
// alone (capabilities.Type.Pure): nothing is opened, started or reached. A
// wrapper (PrefixTools) is described by the capability it holds, which the
// run finds through capabilities.As; name is the type described. It is
// nil for other types, and for options the factory refuses, which building
// the run's capabilities reports.
func describeCapability(name string, options json.RawMessage) (string, capabilities.Capability) {
	return describeNested(name, options, 0)
}

func describeNested(name string, options json.RawMessage, depth int) (string, capabilities.Capability) {
	reg := capabilities.Default()
	typ, ok := reg.Lookup(name)
	if !ok || depth > maxNesting {
		return name, nil
	}
	if !typ.Pure {
		var opts map[string]json.RawMessage
		if len(typ.Nested) == 0 || json.Unmarshal(options, &opts) != nil {
			return name, nil
		}
		for _, opt := range typ.Nested {
			var n capabilities.Nested
			if raw, ok := opts[opt]; ok && json.Unmarshal(raw, &n) == nil {
				if inner, built := describeNested(n.Name, n.Options, depth+1); built != nil {
					return inner, built
				}
			}
		}
		return name, nil
	}
	built, err := reg.New(context.Background(), name, capabilities.Args{Options: options, Setup: capabilities.Setup{CheckOnly: true}})
	if err != nil {
		return name, nil
	}
	return name, built
}

// maxNesting bounds how deep describeCapability follows wrappers.
const maxNesting = 64

// thinkingSetter is a capability that sets the unified thinking setting
// (native.Thinking): it wins over model_settings.thinking, and provider keys
// still win over it.
type thinkingSetter interface {
	ThinkingSetting() (enabled bool, effort string, set bool)
}

// withCapabilities is the source with the settings the capabilities
// contribute.
func (m *modelSource) withCapabilities(caps []capabilities.Capability) *modelSource {
	out := m
	for _, c := range caps {
		ts, ok := capabilities.As[thinkingSetter](c)
		if !ok {
			continue
		}
		if out == m {
			cp := *m
			out = &cp
		}
		enabled, effort, set := ts.ThinkingSetting()
		if !set {
			out.settings.Thinking = nil
			continue
		}
		out.settings.Thinking = &spec.Thinking{Enabled: enabled, Effort: effort}
	}
	return out
}
