package spec

import "testing"

// typicalSpec is a 30-line spec of the kind a team keeps in git.
const typicalSpec = `# yaml-language-server: $schema=agentspec.schema.json
name: changelog-writer
description: Writes the changelog entry for the current branch.
model: anthropic:claude-sonnet-4-6
instructions:
  - You write concise, accurate changelog entries.
  - "Follow the style of {{style_guide}}."
model_settings:
  max_tokens: 2048
  temperature: 0.2
retries: 2
tool_timeout: 30
capabilities:
  - FileSystem:
      root_dir: .
      allowed_patterns: ["*.md", "*.go", "go.mod"]
      denied_patterns: [vendor/*]
      read_only: false
      max_read_lines: 400
  - Thinking: {effort: medium}
max_tool_rounds: 20
workspace:
  input_globs: ["**/*.go"]
  expected_output_files: [CHANGELOG.md]
  checks:
    - file: CHANGELOG.md
      min_chars: 100
      contains: "## Unreleased"
      matches: '(?m)^- '
cache: true
`

// BenchmarkLoadTypical loads and validates typicalSpec in process, with the
// schemas already compiled.
func BenchmarkLoadTypical(b *testing.B) {
	l := testLoader(b)
	data := []byte(typicalSpec)
	if _, err := l.Load("agent.yaml", data); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Load("agent.yaml", data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadWithOutputSchema adds an output_schema, which is compiled on
// every load.
func BenchmarkLoadWithOutputSchema(b *testing.B) {
	l := testLoader(b)
	data := []byte(typicalSpec + "output_schema:\n  type: object\n  required: [entry]\n  properties:\n    entry: {type: string, minLength: 1}\n")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Load("agent.yaml", data); err != nil {
			b.Fatal(err)
		}
	}
}
