// Package pipeline loads pipeline files: several agent specs joined in a
// graph, one step's validated output feeding the next, with fan-out over
// lists. It loads a pipeline and checks it statically, before any model is
// called (Load), and runs it (Run), each job an ordinary runtime.Run.
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
// against the types of its references. A Ref says too whether its value may
// be absent (Ref.Optional): a property on its path that its schema does not
// require (nor, on an input's path, give a default), or an input the inputs
// schema neither requires nor gives a default. An input not given takes its
// schema's default, and so does a member of an input, at any depth (of an
// object input, of the objects in an array input). An absent value is
// null, in text as in a whole reference, and a for_each over an array left
// out, or null where its schema allows null, has no items.
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
// type-checked when the pipeline loads; one that is not boolean is an error
// at the when, and one that does not parse, or applies an operator to the
// wrong types, where CEL finds it in the file (through YAML's quotes,
// escapes and blocks; at the when when the file does not read back as its
// text, a ${VAR} filled in it). A member taken from an object, which CEL
// types as a map of dyn, is typed by its property's schema, and what the
// expression does with it checked as CEL checks a reference's value:
// {{steps.a.output}}.score + 1 is refused when score is a number, a double
// that CEL never adds to an int. A value that may
// be absent or null is nullable (int or null): it may be compared and asked
// has() of, and any other use must be where the expression has tested it
// ({{steps.a.output.count}} != null && {{steps.a.output.count}} > 0), or
// the when is an error at that reference. A member taken from an object
// that its schema does not require ({{steps.a.output}}.count, f.path of an
// item f) is no key of the map when absent, so every use of it, a
// comparison too, must be where has() or an in has tested it, or the when
// is an error at the member. So is a reference written inside a string
// literal ('{{steps.a.output.name}}' is that text, never filled).
// Step.Condition evaluates it over the references' values.
//
// # Running
//
// Run runs a loaded pipeline over one workspace. A step whose provider has
// no key fails only when its turn comes; CheckCredentials finds every such
// step before the first runs. Each step starts when every
// step in its Deps has ended: when one failed (or did not run), the step is
// not run; when one was skipped, the step is skipped too. Otherwise its
// Condition, if any, is evaluated over its references' values, and false
// skips it; an error of the evaluation fails it, told at the node of the
// expression or the reference that failed, FILE:LINE:COL as the loader's. A step runs one job, or one per for_each item (the array its
// template yields, or the sorted workspace files its glob matches, as slash
// paths), at most MaxParallel at once, and never more than
// RunOptions.Concurrency jobs in the whole run. When more jobs are ready
// than there are slots, the step written first in the file gets one first,
// and a step's items go in item order; a job that ends makes what it lets
// go ready (its dependents, its step's next item) before its slot is given
// again, so with Concurrency 1 the jobs run in the same order on every
// run. Each job is exactly runtime.Run of the step's spec with
// runtime.WithWorkspace,
// runtime.WithInput and runtime.WithVars filled from the templates (strings
// as they are, other values as compact JSON with <, > and & as they are),
// the pipeline's cache for a
// spec without a cache: key of its own (the key is the one run computes, so
// a job whose spec, input, vars and input files are unchanged replays), then
// RunOptions.Options. A job's answer is its output_schema's JSON value, or
// its text; a fan-out step's outputs are its items' answers in item order.
// on_item_error: skip leaves a failed item out (not one stopped by the
// run's interruption, which fails the step); fail (the default) fails the
// step once the items already running have finished, and starts no more:
// the items take their job slots in item order, and an item waiting for one
// when another fails does not start (StepResult.NotRunItems lists them).
// The items that finished keep their answers all the same: they are the
// failed step's Outputs, and in the cache when it is on.
//
// The Result says how every step ended (StepResult) and marshals as the
// -o json envelope {"outputs", "steps", "usage"}. RunOptions.Listeners get
// PipelineStart, a StepStart and StepEnd per job, a fan-out step's own
// StepStart (Item -1) before its items' and StepEnd after them, a StepEnd
// alone for a step that never starts (skipped, not run, its when failed),
// every job's own events as a
// JobEvent naming the step and item, and PipelineEnd; runtime.JSONLines
// writes them all with one run_id, the run's (runtime.WithOuterRunID), and
// a job's events with the job's own id as job_id.
//
// RunOptions.Exec runs each job elsewhere (runtime/queue's Executor: on a
// NATS work queue's workers). It gets a Job: the step (its spec, and where
// an inline spec lies in the pipeline file), the item, the filled input and
// vars, whether the pipeline's cache applies, Emit for the job's own events,
// and Claim, which keeps two items of one fan-out off one file. Locally the
// same rule holds through the change requests of the jobs' capabilities
// (capabilities.ChangeDescription.File): the first item to change a file
// keeps it, and another item's change is refused as a conflict.
package pipeline
