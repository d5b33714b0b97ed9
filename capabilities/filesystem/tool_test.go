package filesystem

import (
	"reflect"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// paramsOf are the parameter schemas of c's tools, by name.
func paramsOf(t *testing.T, c *Capability) map[string]map[string]any {
	t.Helper()
	ps := map[string]map[string]any{}
	for _, tl := range c.tools {
		ps[tl.Name()] = tl.Parameters()
	}
	require.NotEmpty(t, ps)
	return ps
}

// sameMap reports whether x and y are one map, not two equal ones.
func sameMap(x, y map[string]any) bool {
	return reflect.ValueOf(x).UnsafePointer() == reflect.ValueOf(y).UnsafePointer()
}

// FileSystems whose schema inputs are equal share their tools' parameter
// maps; an option a schema states (content_hashes for write_file and
// edit_file, max_read_lines for read_file) gives those tools other maps,
// and leaves the others shared. Not parallel: TestToolSchemasBounded swaps
// the store out.
func TestToolSchemasShared(t *testing.T) {
	no := false
	base := Options{Tools: AllToolNames}
	a := paramsOf(t, newOver(t, base))
	b := paramsOf(t, newOver(t, base))
	require.Len(t, a, len(AllToolNames))
	for name, p := range a {
		assert.True(t, sameMap(p, b[name]), "%s built twice for equal options", name)
	}

	for _, tt := range []struct {
		name    string
		opts    Options
		changed []string // the tools whose schema the option changes
	}{
		{"content_hashes", Options{Tools: AllToolNames, ContentHashes: &no}, []string{ToolWriteFile, ToolEditFile}},
		{"max_read_lines", Options{Tools: AllToolNames, MaxReadLines: 50}, []string{ToolReadFile}},
		{"read_only", Options{Tools: AllToolNames, ReadOnly: true}, nil},
		{"other limits", Options{Tools: AllToolNames, MaxReadChars: 10, MaxListResults: 5, MaxSearchResults: 5, MaxFindResults: 5}, nil},
		{"patterns", Options{Tools: AllToolNames, DeniedPatterns: []string{"x"}, SecretPatterns: []string{}}, nil},
	} {
		c := paramsOf(t, newOver(t, tt.opts))
		for name, p := range c {
			if slices.Contains(tt.changed, name) {
				assert.False(t, sameMap(a[name], p), "%s: %s shares the default schema", tt.name, name)
				assert.NotEqual(t, a[name], p, "%s: %s", tt.name, name)
			} else {
				assert.True(t, sameMap(a[name], p), "%s: %s not shared", tt.name, name)
			}
		}
		again := paramsOf(t, newOver(t, tt.opts))
		for name, p := range c {
			assert.True(t, sameMap(p, again[name]), "%s: %s built twice", tt.name, name)
		}
	}

	fifty := paramsOf(t, newOver(t, Options{MaxReadLines: 50}))[ToolReadFile]
	limit := fifty["properties"].(map[string]any)["limit"].(map[string]any)
	assert.Equal(t, "Maximum number of lines to return. Default 50.", limit["description"])
}

// A shared schema is the one each FileSystem built for itself before
// schemas were shared.
func TestToolSchemasAsBuilt(t *testing.T) {
	t.Parallel()
	no := false
	for _, opts := range []Options{{}, {ContentHashes: &no, MaxReadLines: 7}} {
		c := newOver(t, Options{Tools: AllToolNames, ContentHashes: opts.ContentHashes, MaxReadLines: opts.MaxReadLines})
		hashes, lines := c.fs.hashes(), c.fs.opts.MaxReadLines
		want := map[string]map[string]any{
			ToolReadFile:        readFileSchema(schemaKey{tool: ToolReadFile, maxReadLines: lines}),
			ToolWriteFile:       writeFileSchema(schemaKey{tool: ToolWriteFile, hashes: hashes}),
			ToolEditFile:        editFileSchema(schemaKey{tool: ToolEditFile, hashes: hashes}),
			ToolListDirectory:   listDirectorySchema(schemaKey{}),
			ToolSearchFiles:     searchFilesSchema(schemaKey{}),
			ToolFindFiles:       findFilesSchema(schemaKey{}),
			ToolCreateDirectory: createDirectorySchema(schemaKey{}),
			ToolFileInfo:        fileInfoSchema(schemaKey{}),
			ToolListFiles:       listFilesSchema(schemaKey{}),
			ToolGrep:            grepSchema(schemaKey{}),
		}
		assert.Equal(t, want, paramsOf(t, c))
		_, has := want[ToolWriteFile]["properties"].(map[string]any)["expected_hash"]
		assert.Equal(t, opts.ContentHashes == nil, has)
	}
}

// The store keeps at most maxSchemas schemas; past it a schema is built
// for each FileSystem, as it was before. Not parallel: it swaps the store
// out for an empty one, and back.
func TestToolSchemasBounded(t *testing.T) {
	schemas.Lock()
	saved := schemas.m
	schemas.m = nil
	schemas.Unlock()
	t.Cleanup(func() {
		schemas.Lock()
		schemas.m = saved
		schemas.Unlock()
	})
	key := func(i int) schemaKey { return schemaKey{tool: ToolReadFile, maxReadLines: i + 1} }
	for i := range maxSchemas + 10 {
		first := sharedSchema(key(i), readFileSchema)
		second := sharedSchema(key(i), readFileSchema)
		assert.Equal(t, i < maxSchemas, sameMap(first, second), "key %d", i)
		assert.Equal(t, readFileSchema(key(i)), second)
	}
	schemas.Lock()
	defer schemas.Unlock()
	assert.Len(t, schemas.m, maxSchemas)
}

// newOver is New over a fresh directory, closed when the test ends.
func newOver(t *testing.T, opts Options) *Capability {
	t.Helper()
	c, err := New(opts, t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}
