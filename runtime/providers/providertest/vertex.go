package providertest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// VertexServer is a Vertex AI stand-in: generateContent and its SSE stream
// (streamGenerateContent?alt=sse) for one project and location, and the
// OAuth token endpoint of a service account, which checks the signed JWT of
// the grant and issues the access token the model endpoint accepts.
type VertexServer struct {
	*Server
	Project, Location string
	// AccessToken is what the token endpoint issues.
	AccessToken string

	key   *rsa.PrivateKey
	email string

	mu     sync.Mutex
	grants int
}

// NewVertexServer starts a Vertex AI stand-in answering with replies in
// order. Write its service-account key with KeyFile and point
// model_settings.base_url (or the client's endpoint) at URL.
func NewVertexServer(t testing.TB, project, location string, replies ...Reply) *VertexServer {
	t.Helper()
	return newVertexServer(t, project, location, func(v *VertexServer) protocol { return vertex{v} }, replies)
}

// NewVertexClaudeServer starts a stand-in for Claude on Vertex AI, the
// Messages API of Anthropic's publisher models (rawPredict, and
// streamRawPredict's SSE stream) for one project and location, with the
// same token endpoint as NewVertexServer's. It refuses a body that names
// its model or lacks anthropic_version vertex-2023-10-16, as Vertex AI does.
func NewVertexClaudeServer(t testing.TB, project, location string, replies ...Reply) *VertexServer {
	t.Helper()
	return newVertexServer(t, project, location, func(v *VertexServer) protocol { return vertexClaude{v} }, replies)
}

func newVertexServer(t testing.TB, project, location string, proto func(*VertexServer) protocol, replies []Reply) *VertexServer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatalf("providertest: generating a key: %v", err)
	}
	v := &VertexServer{Project: project, Location: location, AccessToken: "ya29.providertest", key: key,
		email: "agent@" + project + ".iam.gserviceaccount.com"}
	v.Server = newServerWith(t, proto(v), replies, map[string]http.HandlerFunc{"/token": v.token})
	return v
}

// KeyFile writes the service account's key file, whose token_uri is this
// server's token endpoint, into dir and returns its path.
func (v *VertexServer) KeyFile(t testing.TB, dir string) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(v.key)
	if err != nil {
		t.Fatalf("providertest: %v", err)
	}
	body, _ := json.MarshalIndent(map[string]string{
		"type": "service_account", "project_id": v.Project, "private_key_id": "key-1",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": v.email, "client_id": "1", "token_uri": v.URL + "/token",
	}, "", "  ")
	path := filepath.Join(dir, "service-account.json")
	if err := os.WriteFile(path, body, 0o600); err != nil {
		t.Fatalf("providertest: %v", err)
	}
	return path
}

// Grants is the number of access tokens issued.
func (v *VertexServer) Grants() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.grants
}

// token serves the JWT bearer grant (RFC 7523) a service account makes.
func (v *VertexServer) token(w http.ResponseWriter, r *http.Request) {
	refuse := func(msg string) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": msg})
	}
	if err := r.ParseForm(); err != nil || r.Method != http.MethodPost {
		refuse("expected a POSTed form")
		return
	}
	if g := r.PostForm.Get("grant_type"); g != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		refuse("unsupported grant_type " + g)
		return
	}
	parts := strings.Split(r.PostForm.Get("assertion"), ".")
	if len(parts) != 3 {
		refuse("the assertion is not a JWT")
		return
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err != nil || rsa.VerifyPKCS1v15(&v.key.PublicKey, crypto.SHA256, sum[:], sig) != nil {
		refuse("Invalid JWT Signature.")
		return
	}
	var claims struct {
		Iss   string `json:"iss"`
		Aud   string `json:"aud"`
		Scope string `json:"scope"`
		Exp   int64  `json:"exp"`
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || json.Unmarshal(payload, &claims) != nil {
		refuse("the JWT claims are not JSON")
		return
	}
	switch {
	case claims.Iss != v.email:
		refuse("Invalid JWT: unknown issuer " + claims.Iss)
	case claims.Aud != v.URL+"/token":
		refuse("Invalid JWT: audience " + claims.Aud + " is not the token URI")
	case !strings.Contains(claims.Scope, "https://www.googleapis.com/auth/cloud-platform"):
		refuse("Invalid JWT: scope " + claims.Scope + " lacks cloud-platform")
	case claims.Exp < time.Now().Unix():
		refuse("Invalid JWT: Token must be a short-lived token and in a reasonable timeframe")
	default:
		v.mu.Lock()
		v.grants++
		v.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"access_token": v.AccessToken, "token_type": "Bearer", "expires_in": 3600})
	}
}

// vertex speaks generateContent for the server's project and location.
type vertex struct{ v *VertexServer }

func (vertex) endpoint() string { return "" }

func (vertex) authorized(http.Header) bool { return false } // authorize decides

func (p vertex) route(r *http.Request) bool {
	prefix := "/v1/projects/" + p.v.Project + "/locations/" + p.v.Location + "/publishers/google/models/"
	return r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, prefix) &&
		(strings.HasSuffix(r.URL.Path, ":generateContent") || strings.HasSuffix(r.URL.Path, ":streamGenerateContent"))
}

func (p vertex) authorize(r *http.Request, _ []byte) (int, string) {
	if r.Header.Get("Authorization") != "Bearer "+p.v.AccessToken {
		return http.StatusUnauthorized, "Request had invalid authentication credentials. Expected OAuth 2 access token."
	}
	return 0, ""
}

func (vertex) streams(r *http.Request) bool {
	return strings.HasSuffix(r.URL.Path, ":streamGenerateContent") && r.URL.Query().Get("alt") == "sse"
}

func (vertex) errorBody(status int, message string) any {
	name := map[int]string{400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
		429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}[status]
	return map[string]any{"error": map[string]any{"code": status, "message": message, "status": name}}
}

// validate applies generateContent's rules on function calling: contents
// start with the user, every model turn's function calls are answered by as
// many function responses, by name, in the next turn, and every function
// call goes back with the thought signature it was given.
func (vertex) validate(req map[string]any) string {
	contents := list(req["contents"])
	if len(contents) == 0 {
		return "Unable to submit request because it must include at least one parts field"
	}
	var calls []string
	for i, c := range contents {
		content := object(c)
		role := str(content["role"])
		if i == 0 && role != "user" {
			return "Please ensure that multiturn requests alternate between user and model, starting with the user."
		}
		var responses, made []string
		for _, p := range list(content["parts"]) {
			part := object(p)
			if fc := object(part["functionCall"]); fc != nil {
				if role != "model" {
					return "function calls are allowed in model turns only"
				}
				if !strings.HasPrefix(str(part["thoughtSignature"]), "sig-") {
					return fmt.Sprintf("Function call is missing a thought_signature in functionCall parts. contents[%d] function %s", i, str(fc["name"]))
				}
				made = append(made, str(fc["name"]))
			}
			if fr := object(part["functionResponse"]); fr != nil {
				responses = append(responses, str(fr["name"]))
			}
		}
		if len(calls) > 0 || len(responses) > 0 {
			if len(calls) != len(responses) {
				return fmt.Sprintf("Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn (contents[%d]).", i)
			}
			for _, name := range responses {
				at := indexOf(calls, name)
				if at < 0 {
					return fmt.Sprintf("contents[%d]: a function response names %q, which the function call turn did not call", i, name)
				}
				calls = append(calls[:at], calls[at+1:]...)
			}
		}
		calls = made
	}
	return ""
}

func (vertex) writeTurn(w http.ResponseWriter, req map[string]any, r Reply, seq int) {
	finish := r.StopReason
	if finish == "" {
		finish = "STOP"
	}
	usage := map[string]any{"promptTokenCount": r.InputTokens, "candidatesTokenCount": r.OutputTokens,
		"totalTokenCount": r.InputTokens + r.OutputTokens}
	var calls []any
	for i, c := range r.ToolCalls {
		calls = append(calls, map[string]any{"functionCall": map[string]any{"name": c.Name, "args": json.RawMessage(arguments(c))},
			"thoughtSignature": fmt.Sprintf("sig-%d-%d", seq, i)})
	}
	candidate := func(parts []any, final bool) map[string]any {
		c := map[string]any{"content": map[string]any{"role": "model", "parts": parts}}
		if final {
			c["finishReason"] = finish
		}
		return c
	}
	if stream, _ := req["stream"].(bool); !stream {
		var parts []any
		if r.Text != "" {
			parts = append(parts, map[string]any{"text": r.Text})
		}
		parts = append(parts, calls...)
		answer := map[string]any{"candidates": []any{candidate(parts, true)}, "usageMetadata": usage, "modelVersion": "providertest"}
		if r.NoUsage {
			delete(answer, "usageMetadata")
		}
		writeJSON(w, http.StatusOK, answer)
		return
	}
	out := startSSE(w)
	if r.Text != "" {
		for _, part := range halves(r.Text) {
			out.event("", map[string]any{"candidates": []any{candidate([]any{map[string]any{"text": part}}, false)}})
		}
	}
	if len(calls) > 0 {
		out.event("", map[string]any{"candidates": []any{candidate(calls, false)}})
	}
	last := map[string]any{"candidates": []any{candidate([]any{map[string]any{"text": ""}}, true)}, "usageMetadata": usage}
	if r.NoUsage {
		delete(last, "usageMetadata")
	}
	out.event("", last)
}

// vertexClaude speaks the Messages API of Anthropic's publisher models for
// the server's project and location.
type vertexClaude struct{ v *VertexServer }

func (vertexClaude) endpoint() string { return "" }

func (vertexClaude) authorized(http.Header) bool { return false } // authorize decides

func (p vertexClaude) route(r *http.Request) bool {
	prefix := "/v1/projects/" + p.v.Project + "/locations/" + p.v.Location + "/publishers/anthropic/models/"
	model, ok := strings.CutPrefix(r.URL.Path, prefix)
	return ok && r.Method == http.MethodPost && !strings.Contains(model, "/") &&
		(strings.HasSuffix(model, ":rawPredict") || strings.HasSuffix(model, ":streamRawPredict"))
}

func (p vertexClaude) authorize(r *http.Request, body []byte) (int, string) {
	return vertex(p).authorize(r, body)
}

func (vertexClaude) streams(r *http.Request) bool {
	return strings.HasSuffix(r.URL.Path, ":streamRawPredict")
}

// errorBody is Google's for what Vertex AI refuses itself (credentials,
// permission, a model it does not know), Anthropic's for what reaches the
// model.
func (p vertexClaude) errorBody(status int, message string) any {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound:
		return vertex(p).errorBody(status, message)
	}
	return anthropic{}.errorBody(status, message)
}

func (vertexClaude) validate(req map[string]any) string {
	if _, ok := req["model"]; ok {
		return "model: Extra inputs are not permitted"
	}
	if v := str(req["anthropic_version"]); v != "vertex-2023-10-16" {
		return fmt.Sprintf("anthropic_version: Input should be 'vertex-2023-10-16', got %q", v)
	}
	return anthropic{}.validate(req)
}

func (vertexClaude) writeTurn(w http.ResponseWriter, req map[string]any, r Reply, seq int) {
	anthropic{}.writeTurn(w, req, r, seq)
}
