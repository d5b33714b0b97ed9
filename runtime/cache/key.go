package cache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync/atomic"
)

// ProtocolVersion is the version of the key and of the entry format. Bumping
// it makes every existing entry unreachable.
const ProtocolVersion = 1

// KeyInput is what a run's answer depends on. Lookup and Store compute the key
// from it; Store does so again after the run, over the files as they are then.
type KeyInput struct {
	// Spec is the spec document as JSON, for instance CanonicalJSON of the
	// decoded YAML. It is canonicalised again here, so any JSON encoding of
	// the same document gives the same key; comments and formatting must not
	// reach it. Required.
	Spec []byte
	// Model names the model the run uses: the spec's reference
	// ("provider:name"), and for a script model the digest of its file too
	// ("script:turns.yaml sha256:..."), whose turns are the answers.
	Model string
	// Input is the user message.
	Input string
	// Vars are the values of the instructions' {{var}} placeholders.
	Vars map[string]string
	// Workspace is the directory the run works in; "" for a run without one.
	// The key holds its real path, so two workspaces never share an entry.
	Workspace string
	// WorkspaceName, when set, stands for the workspace in the key instead of
	// its real path: for a workspace that is one and the same wherever it is
	// found, such as a queue job's directory, which each worker mounts or
	// unpacks at a path of its own. Its files are still those of Workspace.
	WorkspaceName string
	// InputGlobs (workspace.input_globs) select the files whose content the
	// key covers; see HashFiles. Lookup and Store leave out the files of
	// their own cache when the workspace holds its directory.
	InputGlobs []string
	// Exclude are paths the InputGlobs never match, nor anything below
	// them: the files a host writes for the run as it goes, such as its
	// events log, which would otherwise make every later run a miss.
	Exclude []string
	// ExpectedOutputFiles (workspace.expected_output_files) are the
	// workspace-relative paths a run must leave behind; a stored entry is
	// replayed only while they all exist. They are not part of the key.
	ExpectedOutputFiles []string
}

// Ingredients summarise what went into a key, for inspection. Values that
// may be long or private (the spec, the input, the variables' values) appear
// as digests or names only.
type Ingredients struct {
	Protocol    int      `json:"protocol"`
	SpecSHA256  string   `json:"spec_sha256"`
	Model       string   `json:"model"`
	InputSHA256 string   `json:"input_sha256"`
	Vars        []string `json:"vars,omitempty"` // names, sorted
	Workspace   string   `json:"workspace,omitempty"`
	// WorkspaceName is KeyInput.WorkspaceName, when the key holds it in
	// place of Workspace.
	WorkspaceName string   `json:"workspace_name,omitempty"`
	InputGlobs    []string `json:"input_globs,omitempty"` // cleaned, sorted, de-duplicated
	Files         int      `json:"files"`                 // how many files the globs matched
	FilesSHA256   string   `json:"files_sha256,omitempty"`
}

// Key computes the key of k over the workspace's files as they are now, and
// summarises what went into it.
func Key(ctx context.Context, k KeyInput) (string, Ingredients, error) {
	return keyIn(ctx, k, "")
}

// keyIn is Key for a cache in the directory own (a real path; "" for none):
// when the workspace holds it, its marker and entries are not among the
// files the globs match. They are the cache's, not the run's inputs, and
// each entry stored would otherwise change the key of the next run.
func keyIn(ctx context.Context, k KeyInput, own string) (string, Ingredients, error) {
	if len(k.Spec) == 0 {
		return "", Ingredients{}, errors.New("cache key: no spec")
	}
	spec, err := canonicalSpec(k.Spec)
	if err != nil {
		return "", Ingredients{}, fmt.Errorf("cache key: spec: %w", err)
	}
	globs, err := cleanGlobs(k.InputGlobs)
	if err != nil {
		return "", Ingredients{}, fmt.Errorf("cache key: %w", err)
	}
	var workspace, digest string
	var files []string
	switch {
	case k.Workspace != "":
		var t *tree
		if workspace, t, err = openWorkspace(k.Workspace); err != nil {
			return "", Ingredients{}, fmt.Errorf("cache key: workspace: %w", err)
		}
		if t != nil {
			t.own = ownedWithin(workspace, own)
			for _, x := range k.Exclude {
				if real, err := realPath(x); err == nil {
					// The workspace itself is never left out: its files
					// are the run's inputs.
					if rel := ownedWithin(workspace, real); rel != "" && rel != "." {
						t.excluded = append(t.excluded, rel)
					}
				}
			}
		}
		digest, files, err = hashFiles(ctx, t, globs)
		t.close()
		if err != nil {
			return "", Ingredients{}, fmt.Errorf("cache key: %w", err)
		}
	case len(globs) > 0 || len(k.ExpectedOutputFiles) > 0:
		return "", Ingredients{}, errors.New("cache key: input globs and expected output files need a workspace")
	}

	named := workspace
	if k.WorkspaceName != "" {
		named = k.WorkspaceName
	}
	vars := k.Vars
	if len(vars) == 0 {
		vars = nil // no variables, however spelled
	}
	material, err := keyMaterial(spec.material, k.Model, k.Input, vars, named, globs, digest)
	if err != nil {
		return "", Ingredients{}, fmt.Errorf("cache key: %w", err)
	}
	sum := sha256.Sum256(material)
	return hex.EncodeToString(sum[:]), Ingredients{
		Protocol:      ProtocolVersion,
		SpecSHA256:    spec.sha256,
		Model:         k.Model,
		InputSHA256:   sha256Hex([]byte(k.Input)),
		Vars:          slices.Sorted(maps.Keys(k.Vars)),
		Workspace:     workspace,
		WorkspaceName: k.WorkspaceName,
		InputGlobs:    globs,
		Files:         len(files),
		FilesSHA256:   digest,
	}, nil
}

// keyMaterial is what a key is the SHA-256 of: a JSON object with fixed
// fields, so that every value is delimited and no two different inputs can
// run together into the same bytes. It is written as encoding/json writes
// the struct below (map keys sorted, HTML characters escaped), byte for
// byte, except that spec is copied in as it is: it is the spec's form in the
// material already (specForm), which encoding/json would make again for
// every key.
//
//	struct {
//		Protocol  int               `json:"protocol"`
//		Spec      json.RawMessage   `json:"spec"`
//		Model     string            `json:"model"`
//		Input     string            `json:"input"`
//		Vars      map[string]string `json:"vars"`
//		Workspace string            `json:"workspace"`
//		Globs     []string          `json:"input_globs"`
//		Files     string            `json:"files"`
//	}
func keyMaterial(spec []byte, model, input string, vars map[string]string, workspace string, globs []string, files string) ([]byte, error) {
	// The fields after spec, in one encoding: "{" and the fields, to go
	// after spec's ",".
	rest, err := json.Marshal(struct {
		Model     string            `json:"model"`
		Input     string            `json:"input"`
		Vars      map[string]string `json:"vars"`
		Workspace string            `json:"workspace"`
		Globs     []string          `json:"input_globs"`
		Files     string            `json:"files"`
	}{model, input, vars, workspace, globs, files})
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(spec)+len(rest)+32)
	b = append(b, `{"protocol":`...)
	b = strconv.AppendInt(b, ProtocolVersion, 10)
	b = append(b, `,"spec":`...)
	b = append(b, spec...)
	b = append(b, ',')
	return append(b, rest[1:]...), nil
}

// A specForm is a spec document in canonical JSON, its digest and its form in
// a key's material.
type specForm struct {
	raw       []byte // the document as given
	canonical []byte
	sha256    string
	// material is canonical as encoding/json writes a json.RawMessage:
	// compacted (a no-op) with <, >, &, U+2028 and U+2029 escaped in strings.
	material []byte
}

// lastSpec is the forms of the spec canonicalSpec last saw. A batch computes
// two keys per job, every one of them over the same spec, and canonicalising
// it again each time was a third of a key's cost.
var lastSpec atomic.Pointer[specForm]

// canonicalSpec returns the forms of the spec document raw. Their bytes are
// shared: they must not be modified.
func canonicalSpec(raw []byte) (*specForm, error) {
	if f := lastSpec.Load(); f != nil && bytes.Equal(f.raw, raw) {
		return f, nil
	}
	canonical, err := CanonicalJSON(json.RawMessage(raw))
	if err != nil {
		return nil, err
	}
	material, err := json.Marshal(json.RawMessage(canonical))
	if err != nil {
		return nil, err
	}
	f := &specForm{raw: bytes.Clone(raw), canonical: canonical, sha256: sha256Hex(canonical), material: material}
	lastSpec.Store(f)
	return f, nil
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
