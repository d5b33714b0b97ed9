package providers

import "github.com/agentspec/agentspec/spec"

// The spec loader learns the providers served here, so a spec naming another
// fails to load with a did-you-mean at its model's position.
func init() {
	for _, name := range Known() {
		spec.RegisterProvider(name)
	}
}
