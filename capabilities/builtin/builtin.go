// Package builtin lists agentspec's own capability types, so that a program
// registers them where it chooses, as the CLI does in capabilities.Default:
// what a program's specs may name is what it registered, never what some
// package it links registered on its own.
package builtin

import (
	"fmt"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/capabilities/filesystem"
	"github.com/agentspec/agentspec/capabilities/localworkspace"
	"github.com/agentspec/agentspec/capabilities/mcp"
	"github.com/agentspec/agentspec/capabilities/native"
	"github.com/agentspec/agentspec/capabilities/prefixtools"
	"github.com/agentspec/agentspec/capabilities/shell"
	"github.com/agentspec/agentspec/capabilities/webfetch"
)

// Types returns the built-in capability types, in the order of their names.
func Types() []capabilities.Type {
	types := []capabilities.Type{filesystem.Type(), localworkspace.Type(), mcp.Type()}
	types = append(types, native.Types()...)
	return append(types, prefixtools.Type(), shell.Type(), webfetch.Type())
}

// Register registers the built-in types in r, their schemas compiled when
// first used (Registry.RegisterLazily: each package's tests compile its
// own). A type r already holds under one of their names is an error
// (capabilities.ErrDuplicate).
func Register(r *capabilities.Registry) error {
	for _, t := range Types() {
		if err := r.RegisterLazily(t); err != nil {
			return fmt.Errorf("registering the built-in capability type %s: %w", t.Name, err)
		}
	}
	return nil
}
