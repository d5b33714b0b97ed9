// Command linked is the probe linked with the runtime and the whole command
// line, every capability type and model check they hold included.
package main

import (
	_ "github.com/agentspec/agentspec/cmd/agentspec/cli"
	_ "github.com/agentspec/agentspec/pipeline"
	_ "github.com/agentspec/agentspec/runtime"
	"github.com/agentspec/agentspec/spec/testdata/linkprobe/probe"
)

func main() { probe.Main() }
