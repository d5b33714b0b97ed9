package providers

import (
	"net/http"
	"reflect"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// CredentialCache keeps what New finds of a provider's credentials, so
// that the models built with it look them up once and share them:
//
//   - the AWS credential chain's (the credentials SigV4 signs with and the
//     profile's region): each New otherwise loads the shared config again
//     and asks the chain's providers (a credential process, SSO, STS, the
//     instance metadata service). What is kept is the SDK's credentials
//     cache, which renews expiring credentials itself.
//   - Google's Application Default Credentials for Vertex AI, with the
//     token source in them: each New otherwise makes its own, and each
//     model fetches its own OAuth token (from a service account's
//     token_uri, gcloud's refresh token, the metadata server). What is kept
//     caches the token and fetches a new one as it expires.
//
// A pipeline's credentials check and then each of its jobs, or each job of
// a runtime.Batch, would otherwise each look them up. A lookup that failed
// is not kept, and is made again the next time.
//
// What is kept is looked up by provider, region and Options.Transport (a
// transport of a type that cannot be compared is never shared), and a
// Google credentials file by its content, which New reads each time. The
// AWS chain reads the process's environment: a cache is meant for models
// built while it holds still, such as one pipeline's. It is safe for
// concurrent use; the zero value is ready to use.
type CredentialCache struct {
	mu    sync.Mutex
	found map[credentialKey]*credentialEntry
}

// NewCredentialCache returns an empty CredentialCache.
func NewCredentialCache() *CredentialCache { return &CredentialCache{} }

type credentialKey struct {
	what, provider, region string
	// source is where Google credentials come from: a digest of the
	// credentials file's content, or the metadata server.
	source    string
	transport http.RoundTripper
}

// credentialEntry is one lookup, made by one caller while the others
// with the same key wait for it.
type credentialEntry struct {
	mu    sync.Mutex
	done  bool
	value any // what load returned, of the type remember's caller gives
}

// remember returns what load finds for the key, loading it only when no
// earlier lookup with the same key succeeded. A nil cache always loads.
// One key is always remembered with one type T.
func remember[T any](c *CredentialCache, key credentialKey, load func() (T, error)) (T, error) {
	if c == nil || key.transport != nil && !reflect.ValueOf(key.transport).Comparable() {
		return load()
	}
	c.mu.Lock()
	e := c.found[key]
	if e == nil {
		if c.found == nil {
			c.found = map[credentialKey]*credentialEntry{}
		}
		e = &credentialEntry{}
		c.found[key] = e
	}
	c.mu.Unlock()

	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done {
		return e.value.(T), nil
	}
	v, err := load()
	if err != nil {
		var zero T
		return zero, err
	}
	e.done, e.value = true, v
	return v, nil
}

// lookup is remember for what the AWS chain finds: the credentials and
// the region.
func (c *CredentialCache) lookup(key credentialKey, load func() (aws.CredentialsProvider, string, error)) (aws.CredentialsProvider, string, error) {
	type found struct {
		creds  aws.CredentialsProvider
		region string
	}
	f, err := remember(c, key, func() (found, error) {
		creds, region, err := load()
		return found{creds, region}, err
	})
	return f.creds, f.region, err
}
