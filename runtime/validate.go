package runtime

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentspec/agentspec/capabilities"
)

// Validator checks a final answer after it has parsed (and matched the output
// schema, when there is one). A *ValidationFeedback (or a capabilities
// RetryError) is sent back to the model, which tries again within the answer
// attempts; any other error is fatal and ends the run.
//
// The result holds the answer being checked: Output, JSON and the transcript
// so far. An answer the cache would replay is checked too, before it is
// (Cached set, no transcript): one a validator objects to is not replayed,
// and the run asks the model afresh. Validators run in the order they were
// given, and the first one to object decides.
type Validator func(ctx context.Context, r *Result) error

// ValidationFeedback is a validator's objection, phrased for the model.
type ValidationFeedback struct {
	Message string
}

func (f *ValidationFeedback) Error() string { return f.Message }

// Feedback returns a *ValidationFeedback with the formatted message.
func Feedback(format string, args ...any) error {
	if len(args) == 0 {
		return &ValidationFeedback{Message: format}
	}
	return &ValidationFeedback{Message: fmt.Sprintf(format, args...)}
}

// asFeedback reports whether err is feedback for the model and returns its
// message.
func asFeedback(err error) (string, bool) {
	var f *ValidationFeedback
	if errors.As(err, &f) {
		return f.Message, true
	}
	return capabilities.AsRetry(err)
}
