package pipeline

import (
	"strings"

	"github.com/agentspec/agentspec/runtime/providers"
	"github.com/agentspec/agentspec/spec"
)

// CheckCredentials finds every step whose model's provider lacks what it
// needs from the environment (an API key, AWS or Google credentials, a
// region, ...): what runtime.Run refuses of a job before its first request,
// by the same check (providers.New). A run finds it only when the step's
// turn comes, after the steps before it have run and been paid for; this
// finds it before the first, each step at its name's position. Offline
// models (test, script:) need nothing, and a model the spec's own checks
// refuse (an unknown provider, a setting it cannot take) is theirs to
// report. A run whose jobs do not build their models here (Exec on a
// queue's workers, runtime.WithModel, a Replayer) has no use for it.
// What the AWS credential chain finds is kept for Run's jobs, which do not
// ask it again.
func (p *Pipeline) CheckCredentials() error {
	var errs spec.Errors
	tried := map[string]error{} // by model and base URL: one lookup of a credential chain each
	for _, s := range p.Steps {
		ref, settings := strings.TrimSpace(s.Spec.Model), s.Spec.ModelSettings
		if ref == "" || ref == "test" || strings.HasPrefix(ref, "script:") || providers.Validate(ref, settings) != nil {
			continue
		}
		key := ref + "\x00" + settings.BaseURL
		err, done := tried[key]
		if !done {
			_, err = providers.New(ref, settings, providers.Options{Credentials: p.credentials})
			tried[key] = err
		}
		if err != nil {
			errs = append(errs, &spec.Error{Pos: s.Pos, Msg: "steps." + s.Name + ": " + err.Error()})
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}
