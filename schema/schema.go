// Package schema holds the JSON Schema of agent specs and pipeline files.
//
// The embedded schema describes every key of agent.yaml except the options of
// capability types, which depend on what is registered: the spec package fills
// $defs/capability from a capabilities.Registry to compose the schema that
// `agentspec schema` prints and editors use.
//
// Besides standard keywords, a schema here (or a capability type's) may carry
// "x-expected": a phrase saying what a value must be, which the loader's
// error messages use where words derived from the keywords would read badly
// (`model: expected "provider:name" ..., found "gpt-5"`).
package schema

import (
	_ "embed"
	"slices"
)

// ID is the $id of the agent spec schema.
const ID = "https://github.com/agentspec/agentspec/schema/agent.schema.json"

//go:embed agent.schema.json
var agent []byte

//go:embed pipeline.schema.json
var pipelineSchema []byte

//go:embed pipeline-step.schema.json
var pipelineStep []byte

// Agent returns the agent spec schema (JSON, draft 2020-12) with capability
// entries left open. The slice is a copy the caller may keep or change.
func Agent() []byte { return slices.Clone(agent) }

// Pipeline returns the schema of a pipeline file and of one of its steps,
// which the composed schema puts under $defs/pipeline and
// $defs/pipeline.step; a step's inline spec refers to $defs/agent.
func Pipeline() (file, step []byte) { return slices.Clone(pipelineSchema), slices.Clone(pipelineStep) }
