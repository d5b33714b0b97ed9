package providers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"cloud.google.com/go/auth"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// vertexClaudeVersion is the API version Claude on Vertex AI takes, in the
// body as anthropic_version rather than as the anthropic-version header.
const vertexClaudeVersion = "vertex-2023-10-16"

// vertexClaudeHelp says where the credentials of Claude on Vertex AI come
// from: Application Default Credentials only, since express mode's API
// keys reach Google's own models only.
const vertexClaudeHelp = "set GOOGLE_APPLICATION_CREDENTIALS to a service-account key file, run `gcloud auth application-default login`, " +
	"or run on Google Cloud (the metadata server); an API key (Vertex AI express mode) does not reach Claude"

// vertexCredentials finds the Application Default Credentials of Claude on
// Vertex AI, and the project c's endpoint names when it names none, as
// newGemini does; a replay needs none.
func vertexCredentials(c *common, getenv func(string) string, transport http.RoundTripper, cache *CredentialCache) (*auth.Credentials, error) {
	if c.ep.token == replayToken {
		return nil, nil
	}
	return googleCredentials(c, getenv, transport, cache, vertexClaudeHelp)
}

// vertexMiddleware turns the SDK's Messages requests into Claude's on Vertex
// AI, so that everything the Messages model sends and reads (thinking, cache
// control, tool results, streams, errors, the doer's retries) is the same
// there: POST /v1/messages becomes the rawPredict (streamRawPredict for a
// stream) of model as an Anthropic publisher model of the endpoint's project
// and location, under the root the SDK was given; the body loses model and
// gains anthropic_version (unless extra_body set one); each attempt is
// authorized by the doer, with the credentials' OAuth token
// (googleAuthorization), which a replay leaves out.
func vertexMiddleware(model string, ep endpoint) option.Middleware {
	id, _ := vertexClaude(model)
	return func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		root, ok := strings.CutSuffix(r.URL.Path, "/v1/messages")
		if !ok || r.Method != http.MethodPost {
			return nil, fmt.Errorf("the Messages API on Vertex AI has no %s %s", r.Method, r.URL.Path)
		}
		if ep.project == "" {
			return nil, errors.New("no Google Cloud project: set GOOGLE_CLOUD_PROJECT")
		}
		body, err := readBody(r)
		if err != nil {
			return nil, fmt.Errorf("reading the request body: %w", err)
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
			return nil, fmt.Errorf("the request body is not a JSON object: %v", err)
		}
		var stream bool
		_ = json.Unmarshal(fields["stream"], &stream)
		delete(fields, "model") // the path names it
		if _, set := fields["anthropic_version"]; !set {
			fields["anthropic_version"] = json.RawMessage(`"` + vertexClaudeVersion + `"`)
		}
		var out bytes.Buffer
		enc := json.NewEncoder(&out)
		enc.SetEscapeHTML(false) // the text as the model wrote it
		if err := enc.Encode(fields); err != nil {
			return nil, fmt.Errorf("writing the request body: %w", err)
		}
		body = bytes.TrimSuffix(out.Bytes(), []byte("\n"))

		method := "rawPredict"
		if stream {
			method = "streamRawPredict"
		}
		r.URL.Path = root + "/v1/projects/" + ep.project + "/locations/" + ep.region + "/publishers/anthropic/models/" + id + ":" + method
		r.URL.RawPath = ""
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		r.ContentLength = int64(len(body))

		r.Header.Del("anthropic-version")
		r.Header.Del("x-api-key")
		r.Header.Del("authorization") // each attempt is authorized by the doer (googleAuthorization)
		return next(r)
	}
}
