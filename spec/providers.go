package spec

import (
	"errors"
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

// ModelCheck checks a loaded spec's model and model settings against what
// the runtime can send: a setting the provider cannot honour, a native tool
// it does not run. It returns Errors at the problems' positions, or nil.
type ModelCheck func(s *Spec) error

var (
	modelChecksMu sync.RWMutex
	modelChecks   []ModelCheck
)

// RegisterModelCheck adds a check every Loader runs on the specs it loads,
// after the schema and the providers' names have passed. The runtime
// registers one, so that "agentspec validate" reports what a run would
// refuse before its first request.
func RegisterModelCheck(c ModelCheck) {
	modelChecksMu.Lock()
	defer modelChecksMu.Unlock()
	modelChecks = append(modelChecks, c)
}

func runModelChecks(s *Spec) error {
	modelChecksMu.RLock()
	checks := slices.Clone(modelChecks)
	modelChecksMu.RUnlock()
	var all Errors
	for _, c := range checks {
		err := c(s)
		if err == nil {
			continue
		}
		var errs Errors
		if !errors.As(err, &errs) {
			return err
		}
		all = append(all, errs...)
	}
	if len(all) == 0 {
		return nil
	}
	slices.SortStableFunc(all, func(a, b *Error) int {
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line - b.Pos.Line
		}
		return a.Pos.Col - b.Pos.Col
	})
	return all
}
