package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/agentspec/agentspec/internal/text"
	"github.com/agentspec/agentspec/pipeline"
	"github.com/agentspec/agentspec/runtime"
	"github.com/agentspec/agentspec/schema"
	"github.com/agentspec/agentspec/spec"
)

// stdinArg is the argument that stands for the standard input.
const stdinArg = "-"

// specLoader is the loader of every command: it refuses what a run would
// refuse of the model (runtime.CheckModel), and model, when set (--model),
// replaces the spec's.
func specLoader(model string) *spec.Loader {
	return &spec.Loader{Model: model, ModelCheck: runtime.CheckModel}
}

// loadSpec loads the spec at path, or from stdin when path is "-": it is
// then named <stdin> in messages and its relative paths resolve from the
// current directory. model, when set (--model), replaces the spec's.
// A pipeline on stdin is refused as one: a pipeline is read from its file,
// beside which its steps' spec files lie, and loaded as a spec it was told
// that steps: is a pipeline's key.
func loadSpec(stdin io.Reader, path, model string) (*spec.Spec, error) {
	l := specLoader(model)
	if path != stdinArg {
		return loadSpecFile(l, path)
	}
	data, err := spec.ReadSpec(spec.Stdin, stdin)
	var tooLarge spec.Errors
	if errors.As(err, &tooLarge) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("reading the spec from stdin: %w", err)
	}
	if pipeline.IsPipeline(data) {
		return nil, errors.New("stdin holds a pipeline (steps: at its top level), which is read from a file, not from stdin (-): save the pipeline to a file")
	}
	return l.Load(spec.Stdin, data)
}

// loadSpecFile loads the spec file at path with l. A scripted model's file
// given in its place is said to be one, and how a spec runs on it, rather
// than refused for its turns: key, which no spec has.
func loadSpecFile(l *spec.Loader, path string) (*spec.Spec, error) {
	s, err := l.LoadFile(path)
	if err != nil {
		if _, ok := readScriptFile(path); ok {
			return nil, spec.Errors{{Pos: spec.Position{File: path}, Msg: "is a scripted model's file (turns: at its top level), not a spec: a spec runs on it with model: script:PATH, PATH from the spec's directory"}}
		}
	}
	return s, err
}

// readScriptFile returns what path holds when it is a scripted model's file:
// turns: at its top level, and none of a spec's keys (model:, instructions:,
// ...) nor a pipeline's steps:, for a spec that names no model may hold a
// turns: key it should not. A file that cannot be read, or does not parse,
// is none: loading it as a spec reports why.
func readScriptFile(path string) ([]byte, bool) {
	data, keys, ok := topLevelKeys(path)
	if !ok || !keys["turns"] || keys["steps"] {
		return nil, false
	}
	for key := range keys {
		if specKeys()[key] {
			return nil, false
		}
	}
	return data, true
}

// specKeys are the keys the spec schema gives a spec's top level.
var specKeys = sync.OnceValue(func() map[string]bool {
	var doc struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(schema.Agent(), &doc); err != nil {
		panic("the embedded spec schema: " + err.Error())
	}
	keys := map[string]bool{}
	for key := range doc.Properties {
		keys[key] = true
	}
	return keys
})

// topLevelKeys reads the regular file at path, of at most the size of a
// spec, and returns its bytes and the keys of the mapping it holds; ok is
// false for anything else (a file that cannot be read, YAML that does not
// parse, a list).
func topLevelKeys(path string) (data []byte, keys map[string]bool, ok bool) {
	if path == stdinArg {
		return nil, nil, false
	}
	if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() || st.Size() > spec.MaxFileSize {
		return nil, nil, false
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, false
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 {
		return nil, nil, false
	}
	root := doc.Content[0]
	for root.Kind == yaml.AliasNode {
		root = root.Alias
	}
	if root.Kind != yaml.MappingNode {
		return nil, nil, false
	}
	keys = map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		keys[root.Content[i].Value] = true
	}
	return data, keys, true
}

// specsInDirectory adds to err, which loading path as a spec returned, the
// spec or the specs and pipelines the directory path holds, when it is
// one: its .yaml, .yml and .json files with a spec's model:, instructions:
// or capabilities:, or a pipeline's steps:, at their top level.
func specsInDirectory(path string, err error) error {
	return filesInDirectory(path, err, false)
}

// pipelinesInDirectory adds to err, which loading path as a pipeline
// returned, the pipelines the directory path holds, when it is one.
func pipelinesInDirectory(path string, err error) error {
	return filesInDirectory(path, err, true)
}

func filesInDirectory(path string, err error, pipelines bool) error {
	if err == nil || path == stdinArg {
		return err
	}
	if st, serr := os.Stat(path); serr != nil || !st.IsDir() {
		return err
	}
	entries, rerr := os.ReadDir(path)
	if rerr != nil {
		return err
	}
	var found []string
	for _, e := range entries {
		switch filepath.Ext(e.Name()) {
		case ".yaml", ".yml", ".json":
		default:
			continue
		}
		file := filepath.Join(path, e.Name())
		_, keys, ok := topLevelKeys(file)
		if ok && (keys["steps"] || !pipelines && (keys["model"] || keys["instructions"] || keys["capabilities"])) {
			// The names are the directory's, and the message is printed
			// keeping its newlines.
			found = append(found, text.Visible(file))
		}
	}
	switch {
	case len(found) == 0:
		return err
	case len(found) == 1:
		return fmt.Errorf("%w (did you mean %s?)", err, found[0])
	case pipelines:
		return fmt.Errorf("%w; the pipelines in it: %s", err, strings.Join(found, ", "))
	}
	return fmt.Errorf("%w; the specs and pipelines in it: %s", err, strings.Join(found, ", "))
}

// specFromFile refuses SPEC - for a command that reads its spec from the
// file (batch and submit: a queued job carries the spec's file and the
// script beside it).
func specFromFile(command, path string) error {
	return notStdin(command, "SPEC", path, "save the spec to a file, or run it once with agentspec run -")
}

// notStdin refuses - as the file arg names for command, which reads it from
// a file only, saying so rather than looking for a file named "-": tools,
// tool --spec and mcp load the spec as a file, graph a pipeline, whose step
// specs lie beside it. hint says what to do instead.
func notStdin(command, arg, path, hint string) error {
	if path == stdinArg {
		return exitWith(exitUsage, fmt.Errorf("%s reads %s from a file, not from stdin (-): %s", command, arg, hint))
	}
	return nil
}

// loadSpecToRun loads the spec a command is to run (loadSpec, f.model
// replacing its model), prints its warnings on warn, and checks the vars and
// the flags of f given for it (runFlags.unused), as run, batch and submit
// all do before they start.
func loadSpecToRun(stdin io.Reader, path string, f runFlags, vars map[string]string, warn io.Writer) (*spec.Spec, error) {
	s, err := loadSpec(stdin, path, f.model)
	if err != nil {
		return nil, specError(specsInDirectory(path, err))
	}
	for _, w := range s.Warnings {
		fmt.Fprintln(warn, text.VisibleLines(w.Error()))
	}
	if err := checkVars(s, vars); err != nil {
		return nil, exitWith(exitUsage, err)
	}
	if err := f.unused(s); err != nil {
		return nil, exitWith(exitUsage, err)
	}
	return s, nil
}

// modelFlagUsage is --model's help, the same for every command.
const modelFlagUsage = "the model, as provider:name (or test, or script:FILE, FILE from the spec's directory), in place of the spec's: pydantic-ai specs may leave it for run time"

// loadPipeline loads the pipeline at path, model (--model), when set,
// replacing every step's.
func loadPipeline(path, model string) (*pipeline.Pipeline, error) {
	return (&pipeline.Loader{Specs: specLoader(model)}).LoadFile(path)
}
