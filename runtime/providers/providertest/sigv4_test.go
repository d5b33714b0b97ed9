package providertest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/stretchr/testify/assert"
)

// The verifier accepts what the SDK's signer signs, and refuses any change
// to what the signature covers: the body, the path, a signed header, the
// secret, the region.
func TestVerifySigV4(t *testing.T) {
	t.Parallel()
	creds := AWSCredentials{AccessKeyID: "AKID", SecretAccessKey: "secret", SessionToken: "tok", Region: "us-west-2"}
	body := []byte(`{"messages":[]}`)
	signed := func() *http.Request {
		req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/model/us.anthropic.claude%3A0/converse?b=2&a=1", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Amz-Security-Token", "tok")
		sum := sha256.Sum256(body)
		err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "secret", SessionToken: "tok"},
			req, hex.EncodeToString(sum[:]), "bedrock", "us-west-2", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		req.Host = req.URL.Host
		return req
	}
	assert.Empty(t, VerifySigV4(signed(), body, creds, "bedrock"))

	assert.Contains(t, VerifySigV4(signed(), []byte(`{"messages":[1]}`), creds, "bedrock"), "signature we calculated does not match")
	moved := signed()
	moved.URL.Path, moved.URL.RawPath = "/model/other/converse", ""
	assert.Contains(t, VerifySigV4(moved, body, creds, "bedrock"), "signature we calculated does not match")
	retyped := signed()
	retyped.Header.Set("Content-Type", "text/plain")
	assert.Contains(t, VerifySigV4(retyped, body, creds, "bedrock"), "signature we calculated does not match")
	requeried := signed()
	requeried.URL.RawQuery = "a=1&b=3"
	assert.Contains(t, VerifySigV4(requeried, body, creds, "bedrock"), "signature we calculated does not match")
	wrong := creds
	wrong.SecretAccessKey = "other"
	assert.Contains(t, VerifySigV4(signed(), body, wrong, "bedrock"), "signature we calculated does not match")
	wrong = creds
	wrong.Region = "eu-west-1"
	assert.Contains(t, VerifySigV4(signed(), body, wrong, "bedrock"), "scoped to region eu-west-1")
	wrong = creds
	wrong.SessionToken = "another"
	assert.Contains(t, VerifySigV4(signed(), body, wrong, "bedrock"), "security token")
	unsigned := signed()
	unsigned.Header.Del("Authorization")
	assert.Contains(t, VerifySigV4(unsigned, body, creds, "bedrock"), "missing SigV4")
}
