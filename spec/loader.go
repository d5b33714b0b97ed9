package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/expansion"
	"github.com/agentspec/agentspec/schema"
)

// Loader loads agent specs. The zero value is ready to use, with the default
// capability registry and the process environment. A Loader is safe for
// concurrent use and must not be copied after first use.
type Loader struct {
	// Registry holds the capability types specs may use; nil means
	// capabilities.Default().
	Registry *capabilities.Registry
	// LookupEnv fills ${VAR} references; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Providers are the model providers a spec may name; nil means
	// Providers(), and an empty list accepts any.
	Providers []string
	// Model, when set, is the model of every spec loaded, in place of the
	// one it names or the one it leaves out, as pydantic-ai takes a model
	// at run time (agentspec run --model). It is checked as a spec's own
	// model is, and is part of what the spec means (its cache key); its
	// problems are reported at the position "--model", and a script: path
	// in it resolves from the spec's directory, as the spec's own would.
	Model string
	// ModelCheck, when set, checks every spec loaded once the schema and
	// the providers' names have passed: runtime.CheckModel refuses what a
	// run would refuse. Nil checks nothing more, whatever the program links.
	ModelCheck ModelCheck

	mu       sync.Mutex
	composed composedSchema // cache for Schema
}

var defaultLoader Loader

// LoadFile loads the spec at path with the default Loader.
func LoadFile(path string) (*Spec, error) { return defaultLoader.LoadFile(path) }

// LoadFile reads and loads the spec at path. A spec with problems gives an
// Errors; a file that cannot be read gives an error of the form
// "PATH: no such file".
func (l *Loader) LoadFile(path string) (*Spec, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return l.Load(path, data)
}

// MaxFileSize is the most a spec file may hold, in bytes: what any spec
// may grow to with its aliases expanded (expansion.Max), so that a larger
// one could never load. It is refused before it is read.
const MaxFileSize = expansion.Max

// ReadFile reads the spec file at path, refusing one larger than
// MaxFileSize without reading it, as Errors placed at the file; a file
// that cannot be read gives an error of the form "PATH: no such file",
// which unwraps to the cause.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &fileError{path: path, err: err}
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > MaxFileSize {
		return nil, Errors{{Pos: Position{File: path}, Msg: fmt.Sprintf("the file is %s (%d bytes), larger than the %s (%d bytes) a spec file may be",
			expansion.ByteSize(int(min(st.Size(), math.MaxInt))), st.Size(), expansion.ByteSize(MaxFileSize), MaxFileSize)}}
	}
	data, err := ReadSpec(path, f)
	if err != nil {
		var errs Errors
		if errors.As(err, &errs) {
			return nil, err
		}
		return nil, &fileError{path: path, err: err}
	}
	return data, nil
}

// ReadSpec reads a spec from r, named file in the error, up to
// MaxFileSize bytes: one that holds more (the standard input, a pipe) is
// refused as Errors once that much is read.
func ReadSpec(file string, r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileSize {
		return nil, Errors{{Pos: Position{File: file}, Msg: fmt.Sprintf("the spec is larger than the %s (%d bytes) a spec file may be",
			expansion.ByteSize(MaxFileSize), MaxFileSize)}}
	}
	return data, nil
}

// Stdin is the file name of a spec read from the standard input: positions
// name it, and its syntax is told from its first character ({ for JSON,
// anything else YAML). Paths in such a spec resolve from the current
// directory.
const Stdin = "<stdin>"

// LoadStdin loads the spec of the standard input, data, with the default Loader;
// see Stdin.
func LoadStdin(data []byte) (*Spec, error) { return defaultLoader.Load(Stdin, data) }

// Load parses, checks and returns the spec in data. file names it in
// positions, and its extension (.yaml, .yml or .json) chooses the syntax;
// for Stdin the content does. Every problem found is returned, as an Errors
// sorted by position.
func (l *Loader) Load(file string, data []byte) (*Spec, error) {
	d, err := parse(file, data, l.lookupEnv())
	if err != nil {
		return nil, err
	}
	return l.check(d)
}

// parse reads data as YAML or JSON, by file's extension; for Stdin the
// content tells. ${VAR} references are filled by lookup.
func parse(file string, data []byte, lookup func(string) (string, bool)) (*document, error) {
	// A byte order mark, which some editors write, is no column of the first
	// line: YAML's positions leave it out, so those found in the source must too.
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if err := checkUTF8(file, data); err != nil {
		return nil, err
	}
	ext := strings.ToLower(filepath.Ext(file))
	if file == Stdin {
		ext = ".yaml"
		if trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff"); len(trimmed) > 0 && trimmed[0] == '{' {
			ext = ".json"
		}
	}
	switch ext {
	case ".yaml", ".yml":
		return parseYAML(file, data, lookup), nil
	case ".json":
		return parseJSON(file, data, lookup), nil
	}
	return nil, Errors{{Pos: Position{File: file}, Msg: fmt.Sprintf(
		"could not infer the format of %q: an agent spec file must end in .yaml, .yml or .json", filepath.Base(file))}}
}

// check validates the parsed document d and returns its Spec.
func (l *Loader) check(d *document) (*Spec, error) {
	root, ok := d.root.(map[string]any)
	if !ok {
		return nil, d.errors()
	}
	d.parsed = len(d.errs)
	if l.Model != "" {
		// The model is the caller's, not the file's: what is wrong with it
		// is said of --model, not at the line the file wrote its own.
		root["model"] = l.Model
		d.values["/model"] = Position{File: "--model"}
		d.keys["/model"] = Position{File: "--model"}
	}
	checkNotPipeline(d, root)
	checkModelSpace(d, root)
	reg := l.registry()
	docs := schemaDocsOf(reg)
	dropNulls(root)
	coerceLax(d, root)
	base := baseSchema()
	err := base.compiled.Validate(root)
	if err != nil && retypeRefs(d, root, "", err) {
		err = base.compiled.Validate(root)
	}
	if err != nil {
		newReporter(d, docs, root, "", "key").report(err)
	}
	checkIntegers(d, base.doc, root, "")
	dropExtensions(root)
	warnings := compatWarnings(d, root)
	var caps []Capability
	if list, ok := root["capabilities"].([]any); ok {
		caps = readCapabilities(d, reg, docs, list)
	}
	checkEmbedded(d, root)
	checkOutputSchema(d, root)
	checkWorkspacePaths(d, root)
	checkProvider(d, root, l.providers())
	if errs := d.errors(); errs != nil {
		return nil, errs
	}
	s, err := decode(d, root)
	if err != nil {
		return nil, err
	}
	s.Capabilities = caps
	s.Warnings = sortErrors(append(warnings, d.warnings...))
	if err := runModelCheck(l.ModelCheck, s); err != nil {
		return nil, err
	}
	return s, nil
}

func (l *Loader) registry() *capabilities.Registry {
	if l.Registry != nil {
		return l.Registry
	}
	return capabilities.Default()
}

func (l *Loader) providers() []string {
	if l.Providers != nil {
		return l.Providers
	}
	return Providers()
}

func (l *Loader) lookupEnv() func(string) (string, bool) {
	if l.LookupEnv != nil {
		return l.LookupEnv
	}
	return os.LookupEnv
}

// compiledSchema is the embedded agent schema, compiled.
type compiledSchema struct {
	compiled *jsonschema.Schema
	doc      any // decoded, for describing what it expects in messages
}

// baseSchema compiles the embedded schema once. It is part of the program, so
// failing to compile it is a bug, caught by the package's tests.
var baseSchema = sync.OnceValue(func() compiledSchema {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema.Agent()))
	if err != nil {
		panic("spec: embedded agent schema: " + err.Error())
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(schema.ID, doc); err != nil {
		panic("spec: embedded agent schema: " + err.Error())
	}
	sch, err := c.Compile(schema.ID)
	if err != nil {
		panic("spec: embedded agent schema: " + err.Error())
	}
	return compiledSchema{compiled: sch, doc: doc}
})

// capabilitySchemaURL is the prefix of the URLs the registry compiles
// capability schemas under, which validation errors refer to.
const capabilitySchemaURL = "agentspec://capabilities/"

// schemaDocsOf finds the schema documents validation errors refer to: the
// agent schema and the capability types' schemas.
func schemaDocsOf(reg *capabilities.Registry) schemaDocs {
	return func(resource string) any {
		if resource == schema.ID {
			return baseSchema().doc
		}
		if name, ok := strings.CutPrefix(resource, capabilitySchemaURL); ok {
			doc, _ := reg.SchemaDoc(strings.TrimSuffix(name, ".json"))
			return doc
		}
		return nil
	}
}

// checkUTF8 refuses a spec that is not UTF-8, at its first bad byte: YAML
// and JSON are both UTF-8, and a Latin-1 "é" read as text would be
// replaced silently, or reported as a syntax error far from the cause.
func checkUTF8(file string, data []byte) error {
	if utf8.Valid(data) {
		return nil
	}
	line, col := 1, 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size <= 1 {
			return Errors{{Pos: Position{File: file, Line: line, Col: col},
				Msg: fmt.Sprintf("the file is not UTF-8; save it as UTF-8 (byte 0x%02X here is not valid UTF-8)", data[i])}}
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i += size
	}
	return nil
}
