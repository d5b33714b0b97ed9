package spec

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/agentspec/agentspec/internal/suggest"
)

// Model providers are the "provider" of a spec's "provider:name" model. The
// spec package does not know them: the runtime registers the ones it serves,
// so that a spec naming an unknown provider fails to load, at the model's
// position, rather than when a run reaches it. With none registered (a
// program that only reads specs), any provider is accepted.
var providers providerSet

// RegisterProvider declares a model provider name, e.g. "openai".
// Registering a name twice is harmless.
func RegisterProvider(name string) { providers.add(name) }

// Providers returns the registered model provider names, sorted.
func Providers() []string { return providers.list() }

// providerSet is a sorted set of names, safe for concurrent use.
type providerSet struct {
	mu    sync.RWMutex
	names []string
}

func (p *providerSet) add(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if i, found := slices.BinarySearch(p.names, name); !found {
		p.names = slices.Insert(p.names, i, name)
	}
}

func (p *providerSet) list() []string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return slices.Clone(p.names)
}

// checkProvider reports a model whose provider is not one of known.
func checkProvider(d *document, root map[string]any, known []string) {
	model, ok := root["model"].(string)
	if !ok || len(known) == 0 || d.reported("/model") {
		return
	}
	provider, _, found := strings.Cut(model, ":")
	if !found || slices.Contains(known, provider) {
		return
	}
	d.add("/model", d.pos("/model"), prefixed("/model", fmt.Sprintf("unknown model provider %q%s; known providers: %s",
		provider, suggest.DidYouMean(provider, known), strings.Join(known, ", "))))
}
