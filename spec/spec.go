// Package spec loads agent specs (agent.yaml): it parses YAML or JSON, fills
// ${VAR} references from the environment, validates the document against the
// JSON Schema composed from the capability registry, and returns a typed Spec.
// Every problem is reported as FILE:LINE:COL: message.
package spec

import (
	"encoding/json"
	"fmt"
	"time"
)

// Defaults for keys a spec may leave out.
const (
	DefaultMaxToolRounds = 40
	DefaultRetries       = 3
	// DefaultOutputRetries is how many rejected final answers the model may
	// replace: three answers in all.
	DefaultOutputRetries = 2
)

// Spec is a loaded, validated agent spec.
type Spec struct {
	// File is the path the spec was loaded from (as given to the loader).
	File string

	Version      int      // 1
	Model        string   // "provider:name"; optional at load time, required to run
	Name         string   // optional
	Description  string   // optional
	Instructions []string // a single string becomes one element; may hold {{var}} placeholders

	ModelSettings ModelSettings
	Retries       int             // per-tool budget of model-correctable errors; default 3
	OutputRetries *int            // rejected final answers the model may replace; nil means DefaultOutputRetries
	ToolTimeout   time.Duration   // 0 means no limit
	Metadata      map[string]any  // numbers are json.Number
	OutputSchema  json.RawMessage // a JSON Schema; nil when the spec has none
	EndStrategy   string          // "early", "graceful" or "exhaustive"; "" when not given
	DepsSchema    json.RawMessage // a JSON Schema of template variables, as given; nil when none

	Capabilities []Capability

	// Warnings are keys the spec gives that agentspec accepts but does not
	// act on (instrument, end_strategy, defer_loading, ...), one line each.
	Warnings []*Error

	MaxToolRounds int // default 40
	Workspace     Workspace
	Cache         *Cache // nil when caching is off

	// Document is the spec as a decoded JSON value (${VAR} references filled,
	// comments and formatting gone): what the spec means, for cache keys.
	Document map[string]any

	// positions maps JSON pointers ("/capabilities/0/FileSystem/cwd") to where
	// the value sits in the file.
	positions map[string]Position
	// keys maps the JSON pointers of mapping members to where their keys
	// sit in the file.
	keys map[string]Position
	// src is the file's text, to place what is said of part of a string
	// (a placeholder in it) where the source writes that part.
	src []byte
	// nested maps the pointers of nested entries to those of their options
	// (document.nested), to place a nested factory's error.
	nested map[string]string

	// absFile is absOf, the File the last Instantiate saw, made absolute;
	// both under absFileMu. A batch looks the working directory up once, not
	// once per job.
	absFile, absOf string
}

// ModelSettings are the provider-independent request settings. Keys follow
// pydantic-ai's ModelSettings so specs port unchanged.
type ModelSettings struct {
	Temperature       *float64
	MaxTokens         int
	TopP              *float64
	Seed              *int
	PresencePenalty   *float64
	FrequencyPenalty  *float64
	StopSequences     []string
	ParallelToolCalls *bool
	Timeout           time.Duration // "timeout" or "timeout_seconds"
	BaseURL           string
	ExtraHeaders      map[string]string
	LogitBias         map[string]int // token id -> bias
	ExtraBody         map[string]any // merged into request bodies; numbers are json.Number
	TopK              *int
	Thinking          *Thinking   // nil when unset
	ToolChoice        *ToolChoice // nil when unset
	ServiceTier       string      // auto, default, flex or priority; "" when unset
	// Provider holds the provider-prefixed keys (anthropic_thinking,
	// openai_reasoning_effort, ...; ProviderSettingKeys lists them) as
	// decoded JSON, numbers as json.Number. The runtime sends each to the
	// provider it names and refuses it for any other.
	Provider map[string]any
}

// Thinking is pydantic-ai's unified thinking setting: on or off, an effort
// (minimal, low, medium, high, xhigh), or, beyond pydantic-ai, a token budget.
type Thinking struct {
	Enabled bool
	Effort  string // "" means the provider's default effort
	Budget  int    // tokens; 0 unless the spec gave a number
}

// ToolChoice is whether the model must, may or may not call tools: Mode is
// "auto", "none" or "required"; Tools, when set, are the only tools it may
// call (Mode is then "required").
type ToolChoice struct {
	Mode  string
	Tools []string
}

// Capability is one entry of the spec's capabilities list.
type Capability struct {
	Name string
	// Options is the options object as JSON ({} when none were given), valid
	// against the type's registered schema.
	Options json.RawMessage
	// Pos is where the entry starts in the file.
	Pos Position
	// Pointer is the JSON pointer of the options object, e.g. "/capabilities/0/FileSystem".
	Pointer string
}

// Workspace holds the keys for workspace jobs.
type Workspace struct {
	InputGlobs          []string
	ExpectedOutputFiles []string
	Checks              []Check
}

// Check is a declarative test of a file the agent must produce.
type Check struct {
	File       string
	MinChars   *int
	MaxChars   *int
	Contains   string
	Matches    string          // a regular expression (Go RE2 syntax)
	JSONSchema json.RawMessage // a JSON Schema the file's JSON content must satisfy
	Pos        Position
}

// Cache configures the result cache. Dir is empty for the default location.
type Cache struct {
	Dir string
}

// Position is a place in a spec file. Line and Col are 1-based; zero means unknown.
type Position struct {
	File string
	Line int
	Col  int
}

func (p Position) String() string {
	switch {
	case p.Line == 0:
		return p.File
	case p.Col == 0:
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	default:
		return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
	}
}

// Position returns where the value at the JSON pointer ptr sits in the file,
// falling back to the nearest enclosing value that has a position, and to the
// file itself.
func (s *Spec) Position(ptr string) Position {
	if s == nil {
		return Position{}
	}
	for {
		if p, ok := s.positions[ptr]; ok {
			return p
		}
		if ptr == "" {
			return Position{File: s.File}
		}
		i := len(ptr) - 1
		for i >= 0 && ptr[i] != '/' {
			i--
		}
		if i < 0 {
			ptr = ""
		} else {
			ptr = ptr[:i]
		}
	}
}
