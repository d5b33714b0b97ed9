// Package schema holds the JSON Schema of agent specs.
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

// Agent returns the agent spec schema (JSON, draft 2020-12) with capability
// entries left open. The slice is a copy the caller may keep or change.
func Agent() []byte { return slices.Clone(agent) }
