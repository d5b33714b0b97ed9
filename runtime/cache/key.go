package cache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
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
	// key covers; see HashFiles.
	InputGlobs []string
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
	if len(k.Spec) == 0 {
		return "", Ingredients{}, errors.New("cache key: no spec")
	}
	spec, err := CanonicalJSON(json.RawMessage(k.Spec))
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
		if workspace, err = realPath(k.Workspace); err != nil {
			return "", Ingredients{}, fmt.Errorf("cache key: workspace: %w", err)
		}
		// workspace is real already: hashFiles does not resolve it again.
		if digest, files, err = hashFiles(ctx, workspace, globs); err != nil {
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
	// The material is a JSON object with fixed fields: every value is
	// delimited, so no two different inputs can run together into the same
	// bytes. encoding/json writes map keys sorted.
	material, err := json.Marshal(struct {
		Protocol  int               `json:"protocol"`
		Spec      json.RawMessage   `json:"spec"`
		Model     string            `json:"model"`
		Input     string            `json:"input"`
		Vars      map[string]string `json:"vars"`
		Workspace string            `json:"workspace"`
		Globs     []string          `json:"input_globs"`
		Files     string            `json:"files"`
	}{ProtocolVersion, spec, k.Model, k.Input, vars, named, globs, digest})
	if err != nil {
		return "", Ingredients{}, fmt.Errorf("cache key: %w", err)
	}
	sum := sha256.Sum256(material)
	return hex.EncodeToString(sum[:]), Ingredients{
		Protocol:      ProtocolVersion,
		SpecSHA256:    sha256Hex(spec),
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

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
