package runtime

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/agentspec/agentspec/runtime/providers"
)

// A request's final error counts every attempt and names the earlier
// failures that were not the last one's.
func TestRetriedErrorCountsAttemptsHonestly(t *testing.T) {
	t.Parallel()
	refused := providers.RetryInfo{Provider: "openai", Max: 4, Delay: time.Second, Reason: "dial tcp 127.0.0.1:9: connect: connection refused"}
	busy := providers.RetryInfo{Provider: "openai", Max: 4, Delay: time.Second, StatusCode: 503, Reason: "overloaded"}
	at := func(r providers.RetryInfo, n int) providers.RetryInfo { r.Attempt = n; return r }
	unauthorized := &providers.Error{Provider: "openai", StatusCode: 401, Message: "Incorrect API key provided", Retries: 3}
	for _, tc := range []struct {
		name    string
		err     error
		retries []providers.RetryInfo
		want    string
	}{
		{
			name:    "a 401 after refused connections and a 503 says all of them",
			err:     unauthorized,
			retries: []providers.RetryInfo{at(refused, 1), at(refused, 2), at(busy, 3)},
			want: "openai: authentication failed (401) after 3 retries: Incorrect API key provided " +
				"(4 attempts; earlier ones failed with: attempt 1-2: dial tcp 127.0.0.1:9: connect: connection refused; attempt 3: HTTP 503: overloaded)",
		},
		{
			name:    "the same failure every time is counted, not repeated",
			err:     &providers.Error{Provider: "openai", StatusCode: 503, Message: "overloaded", Retries: 2},
			retries: []providers.RetryInfo{at(busy, 1), at(busy, 2)},
			want:    "openai: provider unavailable (503) after 2 retries: overloaded (3 attempts)",
		},
		{
			name:    "an error that is not the provider's keeps every earlier failure",
			err:     fmt.Errorf("decoding the response: %w", errors.New("unexpected EOF")),
			retries: []providers.RetryInfo{at(busy, 1)},
			want:    "decoding the response: unexpected EOF (2 attempts; earlier ones failed with: attempt 1: HTTP 503: overloaded)",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := &RetriedError{Err: tc.err, Retries: tc.retries}
			assert.Equal(t, tc.want, err.Error())
			assert.ErrorIs(t, err, tc.err)
		})
	}
}
