package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/runtime/providers"
)

// retryLog keeps the provider's retries of the request under way: each is a
// ModelRetry event as it happens, and they explain the request's error if
// it fails in the end.
type retryLog struct {
	mu      sync.Mutex
	request int
	retries []providers.RetryInfo
}

// options returns opts with an OnRetry that logs each retry and reports it
// to the listeners, after the OnRetry opts had, if any.
func (l *retryLog) options(ctx context.Context, opts providers.Options, listeners []capabilities.Listener) providers.Options {
	given := opts.OnRetry
	opts.OnRetry = func(info providers.RetryInfo) {
		if given != nil {
			given(info)
		}
		l.mu.Lock()
		l.retries = append(l.retries, info)
		request := l.request
		l.mu.Unlock()
		// A listener's error cannot stop the provider's loop from here; the
		// next event of the run reports it.
		_ = emitTo(ctx, listeners, ModelRetry{
			Request: request, Provider: info.Provider, Status: info.StatusCode,
			Attempt: info.Attempt, MaxAttempts: info.Max + 1, Wait: info.Delay, Reason: info.Reason,
		})
	}
	return opts
}

// begin starts the log of model request n.
func (l *retryLog) begin(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.request, l.retries = n, nil
}

// explain returns err, the request's final error, with the failed attempts
// that came before it when there were any.
func (l *retryLog) explain(err error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.retries) == 0 {
		return err
	}
	return &RetriedError{Err: err, Retries: l.retries}
}

// RetriedError is a model request that failed after the provider's
// retries: Err is the last attempt's error, Retries the failed attempts
// before it, in order.
type RetriedError struct {
	Err     error
	Retries []providers.RetryInfo
}

func (e *RetriedError) Unwrap() error { return e.Err }

// Error counts every attempt, and names the earlier failures that were not
// the last one's: a 401 that followed refused connections says both.
func (e *RetriedError) Error() string {
	msg := providers.Describe(e.Err)
	var last struct {
		status int
		reason string
	}
	var pe *providers.Error
	if errors.As(e.Err, &pe) {
		last.status, last.reason = pe.StatusCode, pe.Message
	}
	var groups []string
	for i := 0; i < len(e.Retries); {
		j := i
		for j+1 < len(e.Retries) && sameFailure(e.Retries[j+1], e.Retries[i]) {
			j++
		}
		r := e.Retries[i]
		if pe == nil || r.StatusCode != last.status || r.Reason != last.reason {
			span := fmt.Sprint(r.Attempt)
			if j > i {
				span = fmt.Sprintf("%d-%d", r.Attempt, e.Retries[j].Attempt)
			}
			groups = append(groups, span+": "+failure(r))
		}
		i = j + 1
	}
	attempts := len(e.Retries) + 1
	if len(groups) == 0 {
		return fmt.Sprintf("%s (%d attempts)", msg, attempts)
	}
	return fmt.Sprintf("%s (%d attempts; earlier ones failed with: attempt %s)", msg, attempts, strings.Join(groups, "; attempt "))
}

func sameFailure(a, b providers.RetryInfo) bool {
	return a.StatusCode == b.StatusCode && a.Reason == b.Reason
}

func failure(r providers.RetryInfo) string {
	if r.StatusCode != 0 {
		return fmt.Sprintf("HTTP %d: %s", r.StatusCode, r.Reason)
	}
	return r.Reason
}
