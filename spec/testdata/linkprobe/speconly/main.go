// Command speconly is the probe linked with package spec alone.
package main

import "github.com/agentspec/agentspec/spec/testdata/linkprobe/probe"

func main() { probe.Main() }
