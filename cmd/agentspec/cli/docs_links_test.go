package cli

import (
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	// mdLink is an inline link or image: [text](target) or [text](target "title").
	mdLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// mdRefLink is a reference definition: [name]: target.
	mdRefLink = regexp.MustCompile(`(?m)^\s{0,3}\[[^\]]+\]:\s+(\S+)`)
	// codeSpan is inline code, whose text is not a link.
	codeSpan = regexp.MustCompile("`+[^`]*`+")
	// mdHeading is an ATX heading.
	mdHeading = regexp.MustCompile(`^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$`)
	// urlScheme starts a link that leaves the repository.
	urlScheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// linkedPages are the markdown files whose relative links must resolve.
func linkedPages(t *testing.T) []string {
	t.Helper()
	pages := docPages(t)
	pages = append(pages, filepath.Join(repoRoot, "CONTRIBUTING.md"))
	err := filepath.WalkDir(filepath.Join(repoRoot, "examples"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "README.md" {
			pages = append(pages, path)
		}
		return err
	})
	require.NoError(t, err)
	return pages
}

// prose returns the lines of a markdown file with fenced code blocks blanked
// and inline code removed: what is left is where links are, each on its
// line.
func prose(text string) []string {
	var out []string
	fence := ""
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case fence != "":
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			line = ""
		case strings.HasPrefix(trimmed, "```"), strings.HasPrefix(trimmed, "~~~"):
			fence = trimmed[:3]
			line = ""
		}
		out = append(out, codeSpan.ReplaceAllString(line, ""))
	}
	return out
}

// githubAnchor is the anchor GitHub gives a heading: its text lowercased,
// every character but letters, digits, '-', '_' and spaces dropped, spaces
// turned into '-'.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-', r == '_', unicode.IsLetter(r), unicode.IsDigit(r), unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the anchors of a markdown file's headings; a repeated one
// gets -1, -2, ... as on GitHub.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fence := ""
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case fence != "":
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		case strings.HasPrefix(trimmed, "```"), strings.HasPrefix(trimmed, "~~~"):
			fence = trimmed[:3]
			continue
		}
		m := mdHeading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		a := githubAnchor(m[1])
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

func TestGithubAnchor(t *testing.T) {
	t.Parallel()
	for heading, want := range map[string]string{
		"Many machines":                     "many-machines",
		"pydantic-ai specs":                 "pydantic-ai-specs",
		"Serving tools: `agentspec mcp`":    "serving-tools-agentspec-mcp",
		"What the FileSystem never does":    "what-the-filesystem-never-does",
		"Time, walks and ripgrep":           "time-walks-and-ripgrep",
		"snake_case and `--flags`":          "snake_case-and---flags",
		"Embedding and custom capabilities": "embedding-and-custom-capabilities",
	} {
		assert.Equal(t, want, githubAnchor(heading), heading)
	}
	got := anchors("# A\n\n```sh\n# not a heading\n```\n## A\n### B ###\n")
	assert.Equal(t, map[string]bool{"a": true, "a-1": true, "b": true}, got)
}

// Every relative link of the README, the docs pages, CONTRIBUTING.md and the
// examples' READMEs leads to a file or directory of the repository, and a
// link with #anchor to a heading of its markdown target.
func TestRelativeLinksResolve(t *testing.T) {
	root, err := filepath.Abs(repoRoot)
	require.NoError(t, err)
	pages := linkedPages(t)
	require.GreaterOrEqual(t, len(pages), 4)
	checked := 0
	for _, page := range pages {
		data, err := os.ReadFile(page)
		require.NoError(t, err)
		rel, _ := filepath.Rel(root, mustAbs(t, page))
		for n, line := range prose(string(data)) {
			var targets []string
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				targets = append(targets, m[1])
			}
			for _, m := range mdRefLink.FindAllStringSubmatch(line, -1) {
				targets = append(targets, m[1])
			}
			for _, target := range targets {
				if urlScheme.MatchString(target) {
					continue
				}
				checked++
				if problem := checkLink(root, mustAbs(t, page), target); problem != "" {
					t.Errorf("%s:%d: link %q: %s", rel, n+1, target, problem)
				}
			}
		}
	}
	assert.Greater(t, checked, 20, "the pages link each other")
}

// checkLink says what is wrong with a relative link from page, or "".
func checkLink(root, page, target string) string {
	path, anchor, _ := strings.Cut(target, "#")
	path, err := url.PathUnescape(path)
	if err != nil {
		return "not a valid URL path"
	}
	file := page
	if path != "" {
		if strings.HasPrefix(path, "/") {
			return "an absolute path: write it relative to the page"
		}
		file = filepath.Join(filepath.Dir(page), filepath.FromSlash(path))
	}
	if r, err := filepath.Rel(root, file); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "leads out of the repository"
	}
	st, err := os.Stat(file)
	if err != nil {
		return "no such file or directory"
	}
	if anchor == "" {
		return ""
	}
	if st.IsDir() || !strings.HasSuffix(file, ".md") {
		return "an anchor into something that is not a markdown file"
	}
	text, err := os.ReadFile(file)
	if err != nil {
		return err.Error()
	}
	if !anchors(string(text))[anchor] {
		return "no heading of " + filepath.Base(file) + " has the anchor #" + anchor
	}
	return ""
}

func mustAbs(t *testing.T, path string) string {
	t.Helper()
	abs, err := filepath.Abs(path)
	require.NoError(t, err)
	return abs
}
