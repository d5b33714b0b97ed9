package spec

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/agentspec/agentspec/internal/suggest"
)

// Dialect is how a conversation is replayed to a model: the openai and
// anthropic clients want an assistant turn in different shapes. It is the
// one type of it: the runtime and its providers name it too.
type Dialect string

// The dialects.
const (
	// DialectOpenAI replays an assistant turn as one message holding its text
	// and every tool call (OpenAI's chat completions, and most others).
	DialectOpenAI Dialect = "openai"
	// DialectAnthropic replays an assistant turn as one message per content
	// block, as Anthropic's Messages API wants it.
	DialectAnthropic Dialect = "anthropic"
)

// knownProviders are the model providers a spec's "provider:name" model may
// name, sorted: every provider the runtime serves (its table lists the same
// names, which its tests check), those it cannot run yet included, and
// "script", the scripted model. The list lives here, so what a loaded spec
// may name does not depend on which packages a program links.
var knownProviders = []string{
	"alibaba", "anthropic", "azure", "azure-responses", "bedrock", "bedrock-mantle", "cerebras", "cohere", "crusoe",
	"deepseek", "fireworks", "gateway/anthropic", "gateway/bedrock", "gateway/chat", "gateway/converse", "gateway/google",
	"gateway/google-cloud", "gateway/groq", "gateway/openai", "gateway/openai-chat", "gateway/openai-responses",
	"gateway/responses", "github", "google", "google-cloud", "google-gla", "google-vertex", "groq", "heroku",
	"huggingface", "litellm", "mistral", "moonshotai", "nebius", "ollama", "openai", "openai-chat", "openai-responses",
	"openrouter", "ovhcloud", "sambanova", "script", "snowflake", "together", "vercel", "xai", "zai",
}

// KnownProviders returns the model providers agentspec knows, sorted (see
// Providers for those a loader accepts).
func KnownProviders() []string { return slices.Clone(knownProviders) }

// providers are the model providers a loader accepts: the known ones, and
// any a program adds with RegisterProvider.
var providers = providerSet{names: slices.Clone(knownProviders)}

// RegisterProvider declares a further model provider name, one a program
// serves itself. Registering a name twice is harmless.
func RegisterProvider(name string) { providers.add(name) }

// Providers returns the model provider names a spec may use, sorted: the
// known ones and those registered with RegisterProvider.
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
	provider, name, found := strings.Cut(model, ":")
	if !found || slices.Contains(known, provider) {
		return
	}
	if now, ok := retiredProviders[provider]; ok {
		d.add("/model", d.pos("/model"), prefixed("/model", fmt.Sprintf(
			"unknown model provider %q: it is pydantic-ai V1's name for %s, which V2 refuses too; write %s:%s",
			provider, now, now, name)))
		return
	}
	d.add("/model", d.pos("/model"), prefixed("/model", fmt.Sprintf("unknown model provider %q%s; known providers: %s",
		provider, suggest.DidYouMean(provider, known), strings.Join(known, ", "))))
}

// checkModelSpace refuses a model with white space at either end (a
// ${MODEL} filled from a .env line, a quoted string folded over two
// lines): pydantic-ai sends it as part of the model's name, and the
// provider has no model of that name. The trimmed model is checked on.
func checkModelSpace(d *document, root map[string]any) {
	model, ok := root["model"].(string)
	trimmed := strings.TrimSpace(model)
	if !ok || trimmed == model || trimmed == "" {
		return // an empty model is the schema's to refuse
	}
	where, r := "ends", []rune(model)[len([]rune(model))-1]
	if first := []rune(model)[0]; unicode.IsSpace(first) {
		where, r = "starts", first
	}
	d.add("/model", d.pos("/model"), prefixed("/model", fmt.Sprintf(
		"%s %s with %s, which would be sent as part of the model's name, and the provider has no model of that name; write %s",
		strconv.Quote(model), where, spaceName(r), strconv.Quote(trimmed))))
	root["model"] = trimmed
}

// spaceName names a white space character in words.
func spaceName(r rune) string {
	switch r {
	case ' ':
		return "a space"
	case '\t':
		return "a tab"
	case '\n', '\r':
		return "a line break"
	}
	return fmt.Sprintf("white space (%U)", r)
}

// ModelCheck checks a loaded spec's model and model settings against what
// the runtime can send: a setting the provider cannot honour, a native tool
// it does not run. It returns Errors at the problems' positions, or nil.
// A Loader runs the one its caller gives it (Loader.ModelCheck): the
// runtime's is runtime.CheckModel, which "agentspec validate" passes so that
// it reports what a run would refuse before its first request.
type ModelCheck func(s *Spec) error

// runModelCheck runs check, when there is one, on s, and sorts the errors it
// reports by position.
func runModelCheck(check ModelCheck, s *Spec) error {
	if check == nil {
		return nil
	}
	err := check(s)
	var all Errors
	if err == nil || !errors.As(err, &all) {
		return err
	}
	if len(all) == 0 {
		return nil
	}
	all = slices.Clone(all)
	slices.SortStableFunc(all, func(a, b *Error) int {
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line - b.Pos.Line
		}
		return a.Pos.Col - b.Pos.Col
	})
	return all
}
