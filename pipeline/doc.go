// Package pipeline loads pipeline files: several agent specs joined in a
// graph, one step's validated output feeding the next, with fan-out over
// lists. This package is the first layer: it loads a pipeline and checks it
// statically, before any model is called. It does not run anything.
//
// # The file
//
// A pipeline is a YAML or JSON mapping with steps: at its top level
// (IsPipeline tells the two kinds of file apart; spec refuses a spec with
// steps). It is parsed with spec.ParseDocument, so every problem is a
// spec.Error at FILE:LINE:COL, ${VAR} references are filled as in specs, and
// unknown keys are reported with a did-you-mean, as specs report them.
// Top-level keys: version, name, description, inputs (a JSON Schema of the
// inputs, compiled), cache, steps, outputs, $schema, x-.... Step keys: spec,
// input, vars, needs, for_each, as, max_parallel, on_item_error, when,
// description, x-.... Steps, vars and outputs keep the order the file writes
// them in.
//
// A step's spec is a path, relative to the pipeline file's directory, loaded
// with the spec.Loader given (its errors keep their own FILE:LINE:COL), or an
// inline mapping loaded with spec.Loader.LoadValue (its errors at their place
// in the pipeline file). A step naming the pipeline itself, or another
// pipeline, is an error: pipelines do not nest.
//
// # Templates and types
//
// input, vars values, for_each, when and outputs are Templates: text with
// {{references}} in it. A reference is {{inputs.NAME}}, {{steps.S.output}},
// {{steps.S.outputs}} (a fan-out step's answers, in item order) or the step's
// for_each item ({{item}}, or the name as: gives), each followed by any
// .member and [index] path. Every reference is resolved statically: the step
// exists; output on a step that does not fan out, outputs on one that does;
// the path exists in the producing step's output_schema (through $ref, anyOf,
// oneOf and allOf; a step without output_schema answers a string, which has
// no members); NAME is a property of the inputs schema, when there is one
// (without one every input is a string). Each Ref carries its static Type (the
// JSON Schema the value conforms to, walked with Property and Items), for the
// layers above: a Template that is one whole reference (Template.Whole) keeps
// its JSON type when filled, and a when expression can be type-checked
// against the types of its references.
//
// A for_each is one whole reference whose type is an array (its items type
// the step's item), or {glob: PATTERN}: a doublestar pattern (the dialect of
// a spec's input_globs) that must stay inside the workspace; its items are
// workspace-relative paths, strings.
//
// vars fill the step spec's {{placeholders}}, exactly as --var does: every
// vars key must be a placeholder of the spec's instructions, description or
// the string values of its capability options (pydantic-ai templates
// capability arguments, so a fan-out step can say allowed_patterns:
// ['{{path}}']), and every placeholder of the instructions and capability
// options must be filled by vars. References are not allowed directly inside
// a step spec: vars is the one way data reaches it, so a spec file means the
// same whether run alone or in a pipeline.
//
// # The graph
//
// A reference to a step, in any of a step's templates including when, makes
// the step depend on it; needs adds dependencies where no data flows. The
// graph must be acyclic: a cycle is reported once, naming its steps in order
// ("a -> c -> b -> a", each needing the next), at the reference or need that
// closes it. Step.Deps lists each step's dependencies and Pipeline.Order is a
// topological order (of the steps ready together, the one written first comes
// first), for the runner and for `agentspec graph`. WriteGraph draws the
// graph as Mermaid, Graphviz or JSON: a node per step with its spec, fan-out
// steps and when conditions marked, an edge written in needs: alone dashed.
//
// # Conditions
//
// A step's when is a CEL expression (cel.dev/cel-go, a real expression
// language with static types) whose {{references}} stand for the values
// they name: each becomes a typed CEL variable (a list for an array, an int
// for an integer, dyn where the schema says nothing), and the expression is
// type-checked when the pipeline loads; one that is not boolean, or applies
// an operator to the wrong types, is an error at the when. Step.Condition
// evaluates it over the references' values.
//
// # Not built yet
//
//   - Running: the runner walks Order, starts each step when its Deps are
//     done (independent steps and fan-out items concurrently, up to -j and
//     MaxParallel), evaluates its Condition (false skips it and what needs
//     it), fills each Template from the answers (strings as they are, other
//     values as compact JSON; a Whole template keeps its JSON type),
//     validates the run's inputs against Inputs.Compiled, expands a glob
//     for_each in the workspace, applies OnItemError, and runs each job
//     exactly as `agentspec run` runs the step's spec with its vars
//     (runtime.WithVars fills the instructions and the capability
//     arguments), with the pipeline's Cache for a spec without a cache: key
//     of its own.
//   - The queue (--nats), events, progress, the -o json envelope, resume by
//     cache, `agentspec graph` output, the CLI and the composed JSON Schema of
//     pipeline files.
package pipeline
