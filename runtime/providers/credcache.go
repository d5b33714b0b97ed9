package providers

import (
	"net/http"
	"reflect"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// CredentialCache keeps what New finds in the AWS credential chain (the
// credentials SigV4 signs with and the profile's region), so that the
// models built with it ask the chain once: each New otherwise loads the
// shared config again and asks the chain's providers (a credential
// process, SSO, STS, the instance metadata service), as a pipeline's
// credentials check and then each of its jobs would, or each job of a
// runtime.Batch. What is kept is the
// SDK's credentials cache, which renews expiring credentials itself. A
// lookup that failed is not kept, and is made again the next time.
//
// What is kept is looked up by provider, region and Options.Transport (a
// transport of a type that cannot be compared is never shared). The chain
// reads the process's environment: a cache is meant for models built
// while it holds still, such as one pipeline's. It is safe for concurrent
// use; the zero value is ready to use.
type CredentialCache struct {
	mu    sync.Mutex
	found map[credentialKey]*credentialEntry
}

// NewCredentialCache returns an empty CredentialCache.
func NewCredentialCache() *CredentialCache { return &CredentialCache{} }

type credentialKey struct {
	what, provider, region string
	transport              http.RoundTripper
}

// credentialEntry is one lookup, made by one caller while the others
// with the same key wait for it.
type credentialEntry struct {
	mu     sync.Mutex
	done   bool
	creds  aws.CredentialsProvider
	region string
}

// lookup returns what load finds for the key, loading it only when no
// earlier lookup with the same key succeeded. A nil cache always loads.
func (c *CredentialCache) lookup(key credentialKey, load func() (aws.CredentialsProvider, string, error)) (aws.CredentialsProvider, string, error) {
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
		return e.creds, e.region, nil
	}
	creds, region, err := load()
	if err != nil {
		return nil, "", err
	}
	e.done, e.creds, e.region = true, creds, region
	return creds, region, nil
}
