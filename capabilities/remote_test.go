package capabilities

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
)

type stubTransport struct{ http.RoundTripper }

func TestHTTPTransport(t *testing.T) {
	ctx := context.Background()
	assert.Same(t, http.DefaultTransport, HTTPTransport(ctx), "without WithHTTPTransport: Go's default")
	rt := &stubTransport{}
	assert.Same(t, rt, HTTPTransport(WithHTTPTransport(ctx, rt)))
	assert.Same(t, http.DefaultTransport, HTTPTransport(WithHTTPTransport(ctx, nil)), "nil leaves the default")
}
