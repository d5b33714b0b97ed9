package runtime

import (
	"path/filepath"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentspec/agentspec/runtime/providers"
	"github.com/agentspec/agentspec/runtime/script"
	"github.com/agentspec/agentspec/spec"
)

// scriptPrefix names a scripted model: "script:FILE", FILE relative to the
// spec file's directory.
const scriptPrefix = "script:"

// resolveModel builds the model the spec names: a script, or a provider's
// model through package providers.
func resolveModel(s *spec.Spec, opts providers.Options) (llms.Model, Dialect, error) {
	ref := strings.TrimSpace(s.Model)
	if ref == "" {
		return nil, "", errNoModel
	}
	if path, ok := strings.CutPrefix(ref, scriptPrefix); ok {
		if !filepath.IsAbs(path) && s.File != "" {
			path = filepath.Join(filepath.Dir(s.File), path)
		}
		m, err := script.Load(path)
		if err != nil {
			return nil, "", err
		}
		return m, Dialect(m.Dialect()), nil
	}
	m, err := providers.New(ref, s.ModelSettings, opts)
	if err != nil {
		return nil, "", err
	}
	return m, Dialect(m.Dialect), nil
}
