package providers

import (
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A CredentialCache asks once per key, however many ask at once; a failed
// lookup is not kept; a nil cache, or a transport that cannot be a key,
// asks every time.
func TestCredentialCache(t *testing.T) {
	t.Parallel()
	static := credentials.NewStaticCredentialsProvider("AKID", "secret", "")
	var asked atomic.Int32
	load := func() (aws.CredentialsProvider, string, error) {
		asked.Add(1)
		return static, "eu-west-1", nil
	}
	c := NewCredentialCache()
	key := credentialKey{what: "chain", provider: "bedrock", region: "eu-west-1"}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			creds, region, err := c.lookup(key, load)
			assert.NoError(t, err)
			assert.Equal(t, static, creds)
			assert.Equal(t, "eu-west-1", region)
		})
	}
	wg.Wait()
	assert.Equal(t, int32(1), asked.Load(), "one lookup for one key")

	_, _, err := c.lookup(credentialKey{what: "chain", provider: "bedrock", region: "us-east-1"}, load)
	require.NoError(t, err)
	_, _, err = c.lookup(credentialKey{what: "chain", provider: "bedrock", region: "eu-west-1", transport: http.DefaultTransport}, load)
	require.NoError(t, err)
	assert.Equal(t, int32(3), asked.Load(), "another region, another transport: other keys")

	failed := errors.New("no credentials")
	fails := func() (aws.CredentialsProvider, string, error) { asked.Add(1); return nil, "", failed }
	other := credentialKey{what: "chain", provider: "bedrock-mantle"}
	_, _, err = c.lookup(other, fails)
	require.ErrorIs(t, err, failed)
	_, _, err = c.lookup(other, load)
	require.NoError(t, err, "a failure is not kept")
	assert.Equal(t, int32(5), asked.Load())

	funcs := credentialKey{what: "chain", transport: roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, failed })}
	for range 2 {
		_, _, err = c.lookup(funcs, load)
		require.NoError(t, err)
		_, _, err = (*CredentialCache)(nil).lookup(key, load)
		require.NoError(t, err)
	}
	assert.Equal(t, int32(9), asked.Load(), "nil, or a transport of a type that cannot be compared, keeps nothing")
}
