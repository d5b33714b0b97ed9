package capabilities

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
)

type stubTransport struct{ http.RoundTripper }

func TestSetupHTTPTransport(t *testing.T) {
	assert.Same(t, http.DefaultTransport, Setup{}.HTTPTransport(), "without a transport: Go's default")
	rt := &stubTransport{}
	assert.Same(t, rt, Setup{Transport: rt}.HTTPTransport())
}
