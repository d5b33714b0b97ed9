package providers

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/agentspec/agentspec/capabilities/shell"
)

// Shell warns of a spec handing a provider's key to its commands by name;
// its list must be this table's.
func TestShellKnowsEveryKeyVariable(t *testing.T) {
	t.Parallel()
	var keys []string
	for _, p := range table {
		for _, k := range p.keyEnvs {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	assert.ElementsMatch(t, keys, shell.ProviderKeyEnvs)
}
