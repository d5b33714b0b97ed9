package providers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentspec/agentspec/runtime/providers/providertest"
	"github.com/agentspec/agentspec/spec"
)

// A retry on Vertex AI is authorized by a token valid when it is sent,
// Gemini's and Claude's alike: one that expired while the first attempt
// was refused and the retry waited is renewed, as Bedrock's retries are
// signed again, since the retry carried the expired token and failed with
// a 401 that is not retried.
func TestVertexRetryRenewsAnExpiredToken(t *testing.T) {
	t.Parallel()
	const life = 2 * time.Second
	for _, tc := range []struct{ ref, answer string }{
		{"google-cloud:gemini-2.5-pro", `{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP"}]}`},
		{"google-cloud:claude-sonnet-4-5@20250929", anthropicText("ok", "end_turn")},
	} {
		t.Run(tc.ref, func(t *testing.T) {
			t.Parallel()
			var (
				mu      sync.Mutex
				issued  = map[string]time.Time{}
				answers int
				sent    []string
			)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				defer mu.Unlock()
				if r.URL.Path == "/token" {
					tok := fmt.Sprintf("ya29.tok-%d", len(issued)+1)
					issued[tok] = time.Now()
					w.Header().Set("Content-Type", "application/json")
					fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":%d}`, tok, int(life/time.Second))
					return
				}
				tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
				sent = append(sent, tok)
				at, ok := issued[tok]
				switch {
				case !ok || time.Since(at) > life:
					w.WriteHeader(http.StatusUnauthorized)
					fmt.Fprint(w, `{"error":{"code":401,"message":"Request had invalid authentication credentials.","status":"UNAUTHENTICATED"}}`)
				case answers == 0:
					answers++
					w.WriteHeader(http.StatusServiceUnavailable)
					fmt.Fprint(w, `{"error":{"code":503,"message":"The service is currently unavailable.","status":"UNAVAILABLE"}}`)
				default:
					answers++
					w.Header().Set("Content-Type", "application/json")
					fmt.Fprint(w, tc.answer)
				}
			}))
			t.Cleanup(srv.Close)
			keys := providertest.NewVertexServer(t, "proj-test", "us-east5")
			keyFile := keys.KeyFile(t, t.TempDir())
			b, err := os.ReadFile(keyFile)
			require.NoError(t, err)
			var key map[string]any
			require.NoError(t, json.Unmarshal(b, &key))
			key["token_uri"] = srv.URL + "/token"
			b, err = json.Marshal(key)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(keyFile, b, 0o600))

			policy := defaultRetry
			policy.sleep = func(ctx context.Context, _ time.Duration) error {
				time.Sleep(life + 200*time.Millisecond) // the token expires meanwhile
				return ctx.Err()
			}
			m, err := New(tc.ref, spec.ModelSettings{BaseURL: srv.URL}, Options{
				Getenv: env("GOOGLE_APPLICATION_CREDENTIALS", keyFile, "GOOGLE_CLOUD_PROJECT", "proj-test", "GOOGLE_CLOUD_LOCATION", "us-east5"),
				retry:  &policy,
			})
			require.NoError(t, err)
			resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
			require.NoError(t, err)
			assert.Equal(t, "ok", text(resp))
			mu.Lock()
			defer mu.Unlock()
			require.Len(t, sent, 2)
			assert.NotEqual(t, sent[0], sent[1], "the retry carries a renewed token")
		})
	}
}
