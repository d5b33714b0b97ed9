package capabilities_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/agentspec/agentspec/"

// TestNoConsumerAssertsACapabilityType keeps the contract: whoever uses a
// capability (the runtime, the CLI, the queue, the MCP server) asks it
// through the interfaces of this package, found with As, and never type
// asserts or switches on the concrete type of a capability or tool of some
// package under capabilities/. Only that package itself, and tests, may.
func TestNoConsumerAssertsACapabilityType(t *testing.T) {
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	var found []string
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		owned := capabilityImports(file, filepath.ToSlash(dir))
		if len(owned) == 0 {
			return nil
		}
		check := func(typ ast.Expr) {
			if star, ok := typ.(*ast.StarExpr); ok {
				typ = star.X
			}
			sel, ok := typ.(*ast.SelectorExpr)
			if !ok {
				return
			}
			if id, ok := sel.X.(*ast.Ident); ok && owned[id.Name] {
				found = append(found, fset.Position(typ.Pos()).String()+": "+id.Name+"."+sel.Sel.Name)
			}
		}
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.TypeAssertExpr:
				if n.Type != nil {
					check(n.Type)
				}
			case *ast.TypeSwitchStmt:
				for _, clause := range n.Body.List {
					for _, typ := range clause.(*ast.CaseClause).List {
						check(typ)
					}
				}
			case *ast.IndexExpr: // As[filesystem.X](c)
				if sel, ok := n.X.(*ast.SelectorExpr); ok && sel.Sel.Name == "As" {
					check(n.Index)
				}
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
	assert.Empty(t, found, "ask the capability contract (As, ReachOf, HintsOf) instead of asserting a concrete type")
}

// family is a path's first two elements: capabilities/filesystem for
// capabilities/filesystem/internal/search.
func family(rel string) string {
	parts := strings.SplitN(rel, "/", 3)
	return strings.Join(parts[:min(2, len(parts))], "/")
}

// capabilityImports are the names under which file imports a package below
// capabilities/ that belongs to another capability than dir.
func capabilityImports(file *ast.File, dir string) map[string]bool {
	names := map[string]bool{}
	for _, imp := range file.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		rel, ok := strings.CutPrefix(path, module)
		if !ok || !strings.HasPrefix(rel, "capabilities/") || family(rel) == family(dir) {
			continue
		}
		name := rel[strings.LastIndex(rel, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		names[name] = true
	}
	return names
}
