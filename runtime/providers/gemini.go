package providers

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"cloud.google.com/go/auth"
	"cloud.google.com/go/auth/credentials"
	"cloud.google.com/go/compute/metadata"
	"github.com/tmc/langchaingo/llms"
)

// geminiModel is Gemini's generateContent on Vertex AI, spoken as REST
// through the doer, authorized by Application Default Credentials
// (cloud.google.com/go/auth), by an API key (Vertex AI express mode), or by
// the gateway's key. It keeps thought parts and the thought signatures of
// calls and text, and sends them back in place.
type geminiModel struct {
	common
	creds *auth.Credentials // nil with an API key
}

// cloudPlatformScope is the OAuth scope Vertex AI requests need.
const cloudPlatformScope = "https://www.googleapis.com/auth/cloud-platform"

// adcHelp says where Application Default Credentials come from.
const adcHelp = "set GOOGLE_APPLICATION_CREDENTIALS to a service-account key file, run `gcloud auth application-default login`, " +
	"run on Google Cloud (the metadata server), or set GOOGLE_API_KEY for Vertex AI express mode"

// newGemini finds the credentials before any request: an API key from the
// endpoint; else the file GOOGLE_APPLICATION_CREDENTIALS names; else gcloud's
// application default credentials file; else the metadata server on Google
// Cloud. Tokens are fetched (service accounts at their key's token_uri)
// through the caller's transport (Options.Transport, nil for the default),
// at the first request. The credentials, and the token they cache, are
// shared by the models built with the same cache (nil keeps nothing).
func newGemini(c common, getenv func(string) string, transport http.RoundTripper, cache *CredentialCache) (*geminiModel, error) {
	m := &geminiModel{common: c}
	if c.ep.token != "" {
		return m, nil
	}
	creds, err := googleCredentials(&m.common, getenv, transport, cache, adcHelp)
	if err != nil {
		return nil, err
	}
	m.creds = creds
	m.doer.sign = googleAuthorization(creds)
	return m, nil
}

// googleAuthorization authorizes each attempt of a request with creds'
// OAuth token, which creds renew as it expires, and names their quota
// project, so that a retry made after the token expired (an attempt that
// ran out its timeout, a wait for Retry-After) carries a valid one, as
// Bedrock's retries are signed again. It runs after extra_headers are set,
// and does as Google's own transport (cloud.google.com/go/auth/httptransport)
// does with them: the token replaces an Authorization they give, which
// could not authorize beside it, while an X-Goog-User-Project they give is
// the project billed, over the credentials' quota project.
func googleAuthorization(creds *auth.Credentials) func(*http.Request, []byte) error {
	return func(r *http.Request, _ []byte) error {
		tok, err := creds.Token(r.Context())
		if err != nil {
			return fmt.Errorf("getting an access token from Application Default Credentials: %w", err)
		}
		r.Header.Set("Authorization", "Bearer "+tok.Value)
		if r.Header.Get("X-Goog-User-Project") != "" {
			return nil
		}
		if qp, err := creds.QuotaProjectID(r.Context()); err == nil && qp != "" {
			r.Header.Set("X-Goog-User-Project", qp)
		}
		return nil
	}
}

// googleCredentials finds the Application Default Credentials for c's
// endpoint, and its project when the endpoint names none, which it sets;
// help says where credentials come from when none are found.
func googleCredentials(c *common, getenv func(string) string, transport http.RoundTripper, cache *CredentialCache, help string) (*auth.Credentials, error) {
	given := transport
	if transport == nil {
		transport = newTransport()
	}
	opts := &credentials.DetectOptions{Scopes: []string{cloudPlatformScope}, Client: &http.Client{Transport: credentialTransport(transport)}}
	key := credentialKey{what: "google", transport: given}
	where := ""
	var data []byte
	var creds *auth.Credentials
	if path := strings.TrimSpace(getenv("GOOGLE_APPLICATION_CREDENTIALS")); path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, missingCredentials{fmt.Errorf("%s: cannot read the credentials file GOOGLE_APPLICATION_CREDENTIALS names: %w", c.ep.provider, err)}
		}
		data, where = b, "GOOGLE_APPLICATION_CREDENTIALS ("+path+")"
	} else if path := gcloudADCFile(getenv); path != "" {
		if b, err := os.ReadFile(path); err == nil {
			data, where = b, "the gcloud application default credentials ("+path+")"
		}
	}
	switch {
	case data != nil:
		var head struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(data, &head); err != nil || head.Type == "" {
			return nil, fmt.Errorf("%s: %s is not a Google credentials file (JSON with a type)", c.ep.provider, where)
		}
		sum := sha256.Sum256(data)
		key.source = "file " + hex.EncodeToString(sum[:])
		found, err := remember(cache, key, func() (*auth.Credentials, error) {
			return credentials.NewCredentialsFromJSON(credentials.CredType(head.Type), data, opts)
		})
		if err != nil {
			return nil, fmt.Errorf("%s: reading %s: %w", c.ep.provider, where, err)
		}
		creds = found
	case metadata.OnGCE():
		key.source = "metadata"
		found, err := remember(cache, key, func() (*auth.Credentials, error) { return credentials.DetectDefault(opts) })
		if err != nil {
			return nil, fmt.Errorf("%s: Application Default Credentials from the metadata server: %w", c.ep.provider, err)
		}
		creds = found
	default:
		return nil, missingCredentials{fmt.Errorf("%s: no Application Default Credentials found: %s", c.ep.provider, help)}
	}
	if c.ep.project == "" && !strings.HasPrefix(c.ep.provider, "gateway/") {
		project, err := creds.ProjectID(context.Background())
		if err != nil || project == "" {
			return nil, fmt.Errorf("%s: no Google Cloud project: set GOOGLE_CLOUD_PROJECT", c.ep.provider)
		}
		c.ep.project = project
		if rec, ok := transport.(*Recorder); ok {
			rec.setProject(project)
		}
	}
	return creds, nil
}

// missingCredentials is ErrMissingKey for credentials that are not a key.
type missingCredentials struct{ error }

func (missingCredentials) Is(target error) bool { return target == ErrMissingKey }

// gcloudADCFile is where gcloud writes the user's application default
// credentials.
func gcloudADCFile(getenv func(string) string) string {
	const name = "application_default_credentials.json"
	if dir := strings.TrimSpace(getenv("CLOUDSDK_CONFIG")); dir != "" {
		return filepath.Join(dir, name)
	}
	if runtime.GOOS == "windows" {
		if dir := getenv("APPDATA"); dir != "" {
			return filepath.Join(dir, "gcloud", name)
		}
		return ""
	}
	if home := getenv("HOME"); home != "" {
		return filepath.Join(home, ".config", "gcloud", name)
	}
	return ""
}

// url is the method's URL: the regional (or global) Vertex AI endpoint of
// the project and location, or the publisher path of express mode and the
// gateway. A model given as a resource name (projects/..., publishers/...)
// is used as it is.
func (m *geminiModel) url(method string) string {
	base := strings.TrimRight(m.ep.baseURL, "/")
	model := m.model
	// Requests with credentials name the project; a replay names it when
	// its recording did.
	project := m.creds != nil || m.ep.token == replayToken && m.ep.project != ""
	switch {
	case strings.HasPrefix(model, "projects/"):
	case strings.HasPrefix(model, "publishers/"):
		if project {
			model = "projects/" + m.ep.project + "/locations/" + m.ep.region + "/" + model
		}
	case project:
		model = "projects/" + m.ep.project + "/locations/" + m.ep.region + "/publishers/google/models/" + model
	default:
		model = "publishers/google/models/" + model
	}
	version := "v1"
	if strings.HasPrefix(m.ep.provider, "gateway/") {
		version = "v1beta1" // the version Google's SDKs call Vertex AI with, which the gateway forwards
	}
	u := base + "/" + version + "/" + model + ":" + method
	if method == "streamGenerateContent" {
		u += "?alt=sse"
	}
	return u
}

// post posts body to the method, authorized, through the doer.
func (m *geminiModel) post(ctx context.Context, method string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.url(method), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	switch {
	case m.creds != nil:
		// Each attempt is authorized by the doer (googleAuthorization).
	case strings.HasPrefix(m.ep.provider, "gateway/"):
		req.Header.Set("Authorization", "Bearer "+m.ep.token)
		req.Header.Set("X-Goog-Api-Key", m.ep.token)
	default:
		req.Header.Set("X-Goog-Api-Key", m.ep.token)
	}
	return m.doer.Do(req)
}

func (m *geminiModel) request(messages []llms.MessageContent, opts llms.CallOptions) ([]byte, error) {
	return m.body(messages, opts)
}

func (m *geminiModel) send(ctx context.Context, body []byte) (*llms.ContentResponse, error) {
	r, err := m.post(ctx, "generateContent", body)
	if err != nil {
		return nil, err
	}
	defer r.Body.Close()
	var g geminiResponse
	if err := json.NewDecoder(r.Body).Decode(&g); err != nil {
		return nil, fmt.Errorf("reading the response: %w", err)
	}
	var a geminiTurn
	a.add(g)
	if e := a.failedCall(m.ep); e != nil {
		e.StatusCode = http.StatusOK
		return nil, e
	}
	return a.response(), nil
}
