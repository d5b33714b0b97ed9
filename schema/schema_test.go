package schema

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

func TestAgentSchemaCompiles(t *testing.T) {
	t.Parallel()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Agent()))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(ID, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(map[string]any{"model": "openai:gpt-5", "capabilities": []any{"Anything"}}); err != nil {
		t.Errorf("capability entries are left open, yet: %v", err)
	}
	if err := sch.Validate(map[string]any{"modle": "openai:gpt-5"}); err == nil {
		t.Error("an unknown key was accepted")
	}
}

func TestAgentSchemaIdentity(t *testing.T) {
	t.Parallel()
	var doc struct {
		Schema string         `json:"$schema"`
		ID     string         `json:"$id"`
		Title  string         `json:"title"`
		Defs   map[string]any `json:"$defs"`
	}
	if err := json.Unmarshal(Agent(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.ID != ID {
		t.Errorf("$id = %q, want %q", doc.ID, ID)
	}
	if doc.Schema != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("$schema = %q, want draft 2020-12", doc.Schema)
	}
	if doc.Title == "" {
		t.Error("no title")
	}
	if _, ok := doc.Defs["capability"]; !ok {
		t.Error("no $defs/capability for the composed schema to fill")
	}
}

func TestAgentReturnsACopy(t *testing.T) {
	t.Parallel()
	a := Agent()
	a[0] = 'x'
	if Agent()[0] != '{' {
		t.Error("changing the returned slice changed the schema")
	}
}

// The pipeline schemas are JSON the composed schema can embed.
func TestPipelineSchemasAreJSON(t *testing.T) {
	file, step := Pipeline()
	for _, b := range [][]byte{file, step} {
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		if v["type"] != "object" {
			t.Fatalf("not an object schema: %v", v["type"])
		}
	}
}
