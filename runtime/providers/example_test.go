package providers_test

import (
	"fmt"

	"github.com/agentspec/agentspec/runtime/providers"
	"github.com/agentspec/agentspec/spec"
)

// A missing key is reported by New, before any request, by its variable.
func ExampleNew_missingKey() {
	_, err := providers.New("groq:llama-3.3-70b-versatile", spec.ModelSettings{}, providers.Options{
		Getenv: func(string) string { return "" },
	})
	fmt.Println(err)
	// Output: groq: API key not set: set the GROQ_API_KEY environment variable
}
