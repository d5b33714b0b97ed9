package queue

import (
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/capabilities/filesystem"
	"github.com/agentspec/agentspec/internal/glob"
	"github.com/agentspec/agentspec/spec"
)

// What a spec's FileSystems say about the files of a workspace: which the
// model may never see (secret_patterns), which it may never change
// (protected_patterns), each over its root_dir. The submitter ships no
// secret file and takes back no change to a secret or protected one.
//
// specFileRules is the one place the queue reads a capability type's
// options, here the FileSystem's, nested ones included (PrefixTools); what a
// capability hides and protects belongs on the capability contract, and this
// moves there once capabilities say it. The patterns are matched as the
// FileSystem matches them: fnmatch over root-relative paths, a pattern that
// matches a directory covering what is below it, secret_patterns' "!"
// exceptions.

// fileRules are the rules of a spec's FileSystems.
type fileRules struct {
	roots []fsRules
}

// fsRules are one FileSystem's.
type fsRules struct {
	root      string // relative to the workspace, slash-separated, clean
	secret    []accessPattern
	protected []accessPattern
}

type accessPattern struct {
	text   string
	m      glob.Fnmatch
	except []accessPattern
}

// defaultRules are a FileSystem's over the whole workspace with its default
// options: they judge a file that no FileSystem of the spec holds, which
// another capability could still reach.
var defaultRules = newFSRules(".", filesystem.DefaultSecretPatterns, filesystem.DefaultProtectedPatterns)

// specFileRules reads the rules of s's FileSystems from their options.
func specFileRules(s *spec.Spec) (*fileRules, error) {
	r := &fileRules{}
	for _, c := range s.Capabilities {
		if err := r.add(capabilities.Default(), c.Name, c.Options); err != nil {
			return nil, fmt.Errorf("%s options: %w", c.Name, err)
		}
	}
	return r, nil
}

func (r *fileRules) add(reg *capabilities.Registry, name string, options json.RawMessage) error {
	if name == filesystem.TypeName {
		var o struct {
			RootDir           string   `json:"root_dir"`
			SecretPatterns    []string `json:"secret_patterns"`
			ProtectedPatterns []string `json:"protected_patterns"`
			ReadOnlyPatterns  []string `json:"read_only_patterns"`
		}
		if len(options) > 0 {
			if err := json.Unmarshal(options, &o); err != nil {
				return err
			}
		}
		if o.ProtectedPatterns == nil {
			o.ProtectedPatterns = o.ReadOnlyPatterns
		}
		if o.ProtectedPatterns == nil {
			o.ProtectedPatterns = filesystem.DefaultProtectedPatterns
		}
		if o.SecretPatterns == nil {
			o.SecretPatterns = filesystem.DefaultSecretPatterns
		}
		root := o.RootDir
		if root == "" {
			root = "."
		}
		if filepath.IsAbs(root) || strings.HasPrefix(root, "/") || strings.HasPrefix(root, `\`) {
			return nil // not in a workspace (a worker refuses such a spec)
		}
		root = path.Clean(strings.ReplaceAll(root, `\`, "/"))
		if root == ".." || strings.HasPrefix(root, "../") {
			return nil
		}
		r.roots = append(r.roots, newFSRules(root, o.SecretPatterns, o.ProtectedPatterns))
		return nil
	}
	t, ok := reg.Lookup(name)
	if !ok || len(t.Nested) == 0 {
		return nil
	}
	var opts map[string]json.RawMessage
	if err := json.Unmarshal(options, &opts); err != nil {
		return err
	}
	for _, key := range t.Nested {
		var n capabilities.Nested
		if raw, ok := opts[key]; !ok || json.Unmarshal(raw, &n) != nil || n.Name == "" {
			continue
		}
		if err := r.add(reg, n.Name, n.Options); err != nil {
			return err
		}
	}
	return nil
}

func newFSRules(root string, secret, protected []string) fsRules {
	var plain, except []string
	for _, t := range secret {
		if rest, ok := strings.CutPrefix(t, "!"); ok {
			except = append(except, rest)
		} else {
			plain = append(plain, t)
		}
	}
	ex := compileAccess(except, nil)
	return fsRules{root: root, secret: compileAccess(plain, ex), protected: compileAccess(protected, nil)}
}

func compileAccess(texts []string, except []accessPattern) []accessPattern {
	ps := make([]accessPattern, len(texts))
	for i, t := range texts {
		ps[i] = accessPattern{text: t, m: glob.NewFnmatch(t), except: except}
	}
	return ps
}

func (p *accessPattern) match(name string) bool {
	if !p.m.Match(name) {
		return false
	}
	for i := range p.except {
		if p.except[i].match(name) {
			return false
		}
	}
	return true
}

// matchAccess returns the first pattern that matches rel or a directory
// above it.
func matchAccess(ps []accessPattern, rel string) (string, bool) {
	for i := range ps {
		p := &ps[i]
		if p.match(rel) {
			return p.text, true
		}
		for j := 0; j < len(rel); j++ {
			if rel[j] == '/' && p.match(rel[:j]) {
				return p.text, true
			}
		}
	}
	return "", false
}

// holders calls fn with each FileSystem whose root holds rel (a clean,
// slash-separated workspace path) and rel relative to that root; with the
// default rules when none does.
func (r *fileRules) holders(rel string, fn func(fs *fsRules, inner string) bool) {
	held := false
	for i := range r.roots {
		fs := &r.roots[i]
		inner, ok := rel, fs.root == "."
		if !ok {
			inner, ok = strings.CutPrefix(rel, fs.root+"/")
		}
		if ok {
			held = true
			if !fn(fs, inner) {
				return
			}
		}
	}
	if !held {
		fn(&defaultRules, rel)
	}
}

// secret returns the secret pattern that hides rel, if one does.
func (r *fileRules) secret(rel string) (pattern string, ok bool) {
	r.holders(rel, func(fs *fsRules, inner string) bool {
		pattern, ok = matchAccess(fs.secret, inner)
		return !ok
	})
	return pattern, ok
}

// refusal says why no change to rel may be taken back, or "" when one may:
// it is in a .git directory (or what a file system takes for one), secret or
// protected.
func (r *fileRules) refusal(rel string) string {
	for c := range strings.SplitSeq(rel, "/") {
		if gitLike(c) {
			return fmt.Sprintf("%s: inside a .git directory (%q)", rel, c)
		}
	}
	if p, ok := r.secret(rel); ok {
		return fmt.Sprintf("%s: matches the secret pattern %q", rel, p)
	}
	why := ""
	r.holders(rel, func(fs *fsRules, inner string) bool {
		if p, ok := matchAccess(fs.protected, inner); ok {
			why = fmt.Sprintf("%s: matches the protected pattern %q", rel, p)
		}
		return why == ""
	})
	return why
}

// gitLike reports whether a file system may take name for ".git": any case,
// trailing dots and spaces and an NTFS stream suffix dropped (Windows),
// code points HFS+ ignores dropped (macOS), or the 8.3 short name GIT~N.
func gitLike(name string) bool {
	n := strings.Map(func(r rune) rune {
		if hfsIgnorable(r) {
			return -1
		}
		return r
	}, name)
	if i := strings.IndexByte(n, ':'); i >= 0 {
		n = n[:i]
	}
	n = strings.ToLower(strings.TrimRight(n, ". "))
	if n == ".git" {
		return true
	}
	digits, ok := strings.CutPrefix(n, "git~")
	return ok && digits != "" && strings.Trim(digits, "0123456789") == ""
}

// hfsIgnorable are the code points HFS+ leaves out of a name when it
// compares names (as git's is_hfs_dotgit lists them).
func hfsIgnorable(r rune) bool {
	switch {
	case r >= 0x200c && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x206a && r <= 0x206f, r == 0xfeff:
		return true
	}
	return false
}
