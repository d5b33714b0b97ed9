package spec

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/specs/invalid")

// specsDir holds the example specs shared with the CLI's tests.
const specsDir = "../testdata/specs"

// TestInvalidSpecsGolden loads every file of testdata/specs/invalid and
// compares the errors with the file's .golden twin.
func TestInvalidSpecsGolden(t *testing.T) {
	t.Parallel()
	files := specFiles(t, "invalid")
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			_, err = testLoader(t).Load(filepath.Base(path), data)
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("want spec errors, got %v", err)
			}
			got := err.Error() + "\n"
			golden := strings.TrimSuffix(path, filepath.Ext(path)) + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./spec -run Golden -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("errors differ from %s:\n--- got\n%s--- want\n%s", golden, got, want)
			}
		})
	}
}

// TestValidSpecsLoad loads every file of testdata/specs/valid.
func TestValidSpecsLoad(t *testing.T) {
	t.Parallel()
	for _, path := range specFiles(t, "valid") {
		t.Run(filepath.Base(path), func(t *testing.T) {
			t.Parallel()
			if _, err := testLoader(t).LoadFile(path); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// specFiles lists the spec files of a testdata/specs subdirectory.
func specFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(specsDir, dir))
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		if !e.IsDir() && filepath.Ext(e.Name()) != ".golden" {
			files = append(files, filepath.Join(specsDir, dir, e.Name()))
		}
	}
	if len(files) == 0 {
		t.Fatalf("no specs in %s", dir)
	}
	return files
}
