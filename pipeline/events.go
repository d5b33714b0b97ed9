package pipeline

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/runtime"
)

// Kinds of the pipeline's events, as serialized in their "kind" field.
const (
	KindStart     = "pipeline.start"
	KindStepStart = "pipeline.step.start"
	KindStepEnd   = "pipeline.step.end"
	KindEnd       = "pipeline.end"
)

// PipelineStart is the run's first event.
type PipelineStart struct {
	Name  string `json:"name,omitempty"`
	Steps int    `json:"steps"`
}

// StepStart is emitted as a job of a step starts (Item the fan-out item's
// index, -1 for a step that does not fan out), and as a fan-out step starts,
// before its items (Item -1).
type StepStart struct {
	Step string
	Item int
}

// StepEnd is emitted as a job of a fan-out step ends (Item its index), and
// as a step ends (Item -1): run, skipped or not run.
type StepEnd struct {
	Step     string
	Item     int
	OK       bool
	Cached   bool
	Skipped  bool
	NotRun   bool
	Duration time.Duration
	Error    string
}

// PipelineEnd is the run's last event.
type PipelineEnd struct {
	OK    bool          `json:"ok"`
	Usage runtime.Usage `json:"usage"`
}

// JobEvent is an event of one job, with the step and the item (-1 for a
// step that does not fan out) it came from. It marshals as the job's own
// event with "step" and "item" after its "kind".
type JobEvent struct {
	Step  string
	Item  int
	Event capabilities.Event
}

func (PipelineStart) Kind() string { return KindStart }
func (StepStart) Kind() string     { return KindStepStart }
func (StepEnd) Kind() string       { return KindStepEnd }
func (PipelineEnd) Kind() string   { return KindEnd }

// Kind is the job's event's kind.
func (e JobEvent) Kind() string { return e.Event.Kind() }

// Unwrap returns the job's own event.
func (e JobEvent) Unwrap() capabilities.Event { return e.Event }

func itemField(i int) *int {
	if i < 0 {
		return nil
	}
	return &i
}

func (e PipelineStart) MarshalJSON() ([]byte, error) {
	type plain PipelineStart
	return json.Marshal(struct {
		Kind string `json:"kind"`
		plain
	}{e.Kind(), plain(e)})
}

func (e StepStart) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Kind string `json:"kind"`
		Step string `json:"step"`
		Item *int   `json:"item,omitempty"`
	}{e.Kind(), e.Step, itemField(e.Item)})
}

func (e StepEnd) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Kind       string  `json:"kind"`
		Step       string  `json:"step"`
		Item       *int    `json:"item,omitempty"`
		OK         bool    `json:"ok"`
		Cached     bool    `json:"cached"`
		Skipped    bool    `json:"skipped"`
		NotRun     bool    `json:"not_run,omitempty"`
		DurationMS float64 `json:"duration_ms"`
		Error      string  `json:"error,omitempty"`
	}{e.Kind(), e.Step, itemField(e.Item), e.OK, e.Cached, e.Skipped, e.NotRun, float64(e.Duration.Microseconds()) / 1000, e.Error})
}

func (e PipelineEnd) MarshalJSON() ([]byte, error) {
	type plain PipelineEnd
	return json.Marshal(struct {
		Kind string `json:"kind"`
		plain
	}{e.Kind(), plain(e)})
}

// MarshalJSON writes the job's event with "kind", "step" and "item" first.
func (e JobEvent) MarshalJSON() ([]byte, error) {
	inner, err := json.Marshal(e.Event)
	if err != nil {
		return nil, err
	}
	head, err := json.Marshal(struct {
		Kind string `json:"kind"`
		Step string `json:"step"`
		Item *int   `json:"item,omitempty"`
	}{e.Kind(), e.Step, itemField(e.Item)})
	if err != nil {
		return nil, err
	}
	rest := fieldsAfterKind(inner)
	if rest == nil {
		return head, nil
	}
	out := append(head[:len(head)-1:len(head)-1], ',')
	return append(out, rest...), nil
}

// fieldsAfterKind is a JSON object's members after its "kind" (all of them
// when it has none first), ending with its "}"; nil when there are none or
// it is not an object.
func fieldsAfterKind(obj []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	from := dec.InputOffset()
	if !dec.More() {
		return nil
	}
	if key, err := dec.Token(); err == nil && key == "kind" {
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return nil
		}
		from = dec.InputOffset()
	}
	rest := bytes.TrimLeft(obj[from:], " \t\r\n")
	rest = bytes.TrimPrefix(rest, []byte(","))
	if len(bytes.TrimSpace(rest)) <= 1 { // "}"
		return nil
	}
	return rest
}
