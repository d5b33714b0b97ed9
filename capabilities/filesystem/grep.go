package filesystem

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"strconv"
	"strings"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/capabilities/filesystem/internal/rg"
	"github.com/agentspec/agentspec/internal/glob"
	"github.com/agentspec/agentspec/internal/sandbox"
	"github.com/agentspec/agentspec/internal/text"
)

// grep searches with rg, each path it prints checked again and each line
// compared with the file read through the descriptor walk (rg.go says why
// and how).

func newGrep(fs *FS) capabilities.Tool {
	return &tool[grepArgs]{
		name: ToolGrep,
		description: "Search file contents with ripgrep. Returns path:line:text for matches and path-line-text " +
			"for context lines, sorted by path. pattern is a ripgrep (Rust) regex unless literal is set. path " +
			"may be a file or a directory. Respects .gitignore inside git repositories and .ignore files; an " +
			"explicit glob overrides them. Hidden files are not searched, nor binary ones (a NUL byte in the first " +
			"8192 bytes), as in search_files.",
		params: sharedSchema(schemaKey{tool: ToolGrep}, grepSchema),
		call:   fs.grep,
	}
}

func grepSchema(schemaKey) map[string]any {
	return object(map[string]any{
		"pattern":     param("string", "The regular expression (or, with literal, the text) to search for."),
		"path":        param("string", "The file or directory to search, relative to the working directory. Default '.'."),
		"glob":        param("string", "Only search files matching this ripgrep glob (gitignore-style: '*.py' matches at any depth, 'src/*.py' only directly in src)."),
		"file_type":   param("string", "Only search files of this ripgrep type, e.g. 'py' or 'go'."),
		"ignore_case": param("boolean", "Match case-insensitively. Default false."),
		"literal":     param("boolean", "Treat pattern as literal text, not a regex. Default false."),
		"context":     param("integer", "Lines of context around each match, 0 to 20. Default 0."),
	}, "pattern")
}

type grepArgs struct {
	Pattern    string  `json:"pattern"`
	Path       *string `json:"path,omitempty"`
	Glob       *string `json:"glob,omitempty"`
	FileType   *string `json:"file_type,omitempty"`
	IgnoreCase *bool   `json:"ignore_case,omitempty"`
	Literal    *bool   `json:"literal,omitempty"`
	Context    *int    `json:"context,omitempty"`
}

// grep implements grep.
func (fs *FS) grep(ctx context.Context, a grepArgs) (string, error) {
	path, around := deref(a.Path, "."), deref(a.Context, 0)
	glb, fileType := deref(a.Glob, ""), deref(a.FileType, "")
	if around < 0 || around > 20 {
		return "", capabilities.Retry("context must be between 0 and 20.")
	}
	for _, arg := range []struct {
		name, value string
		limit       int
	}{{"pattern", a.Pattern, MaxRipgrepPattern}, {"glob", glb, MaxRipgrepGlob}, {"file_type", fileType, MaxRipgrepFileType}} {
		if err := checkRipgrepArg(arg.name, arg.value, arg.limit); err != nil {
			return "", err
		}
	}
	if strings.Contains(a.Pattern, "\n") {
		// rg would refuse it with advice to pass --multiline, which the
		// model cannot.
		return "", capabilities.Retry("Argument 'pattern' contains a line break; grep matches within one line. " +
			"Search for the text of one line at a time.")
	}
	rel, err := fs.resolveGated(path, fs.checkWalkRoot)
	if err != nil {
		return "", err
	}
	// rg runs in the directory searched, or in a file's directory with the
	// file as its target, so that every path it prints is relative to dir.
	dir, target := rel, "."
	notFound := capabilities.Retry("Path %s is not a file or directory.", pyRepr(path))
	switch st, err := fs.dir.Lstat(rel); {
	case err == nil && st.IsDir():
	case err == nil && st.Mode().IsRegular():
		var name string
		dir, name = sandbox.Split(rel)
		target = "./" + name
	default:
		return "", notFound
	}
	args := []string{
		"--null", "--color=never", "--line-number", "--with-filename", "--sort", "path",
		"--max-columns", "4096", "--max-columns-preview", "--context", strconv.Itoa(around),
		"--text", "--encoding", "none",
		"--regex-size-limit", RipgrepSizeLimit, "--dfa-size-limit", RipgrepSizeLimit,
	}
	args = append(args, glob.RipgrepArgs(glb)...)
	if fileType != "" {
		// One argument: rg would read a separate value starting with
		// "--" as a flag of its own (globs and patterns it never does).
		args = append(args, "--type="+fileType)
	}
	if deref(a.IgnoreCase, false) {
		args = append(args, "--ignore-case")
	}
	if deref(a.Literal, false) {
		args = append(args, "--fixed-strings")
	}
	args = append(args, "--regexp", a.Pattern, "--", target)

	found := listing{limit: fs.opts.MaxSearchResults}
	src := rgSource{fs: fs}
	defer src.close()
	in, err := fs.runRipgrep(ctx, path, dir, notFound, rg.SplitMatches, args, a.Pattern, &found, func(rec []byte, paths *rgPaths) (string, bool) {
		l, ok := rg.ParseLine(rec)
		if !ok {
			return "", false
		}
		full, ok := paths.check(string(l.Path[len("./"):]))
		if !ok || !src.has(full, l.Number, l.Text) {
			return "", false
		}
		sep := ":"
		if l.Context {
			sep = "-"
		}
		return fs.relToCwd(full) + sep + string(l.Number) + sep + string(text.Decode(l.Text)), true
	})
	if err != nil {
		return "", err
	}
	return fs.searched(ctx, rel, a.Pattern, SearchGrep, &found, in, "No matches found.", "lines")
}

// rgSource confirms the lines grep shows: each must be the line of its
// number in the file at the path checked, read through the descriptor walk
// every other tool opens files with, and the file must be text by the rule
// read_file and search_files apply (text.IsBinary on its first
// text.BinaryProbe bytes). rg opens a file by path, so a directory
// swapped for a symlink at the right moment hands it another file, whose
// lines then differ from the checked file's and are dropped. rg prints a
// file's lines in order and files one after another, so each file is read
// once, up to its last line shown.
type rgSource struct {
	fs    *FS
	rel   string              // the file being read, "" before the first
	f     *sandbox.FileReader // rel, or nil when it could not be opened or is binary
	lines *bufio.Reader       // reads f; kept from file to file
	n     int                 // lines of rel read so far
	buf   []byte              // the start of the line compared
}

// has reports whether rg's text (rg.Line.Text) is what rg prints for line
// number (decimal digits) of rel.
func (s *rgSource) has(rel string, number, text []byte) bool {
	if rel != s.rel {
		s.open(rel)
	}
	n, err := strconv.Atoi(string(number))
	if s.f == nil || err != nil || n <= s.n {
		return false
	}
	for s.n < n-1 {
		// Skip a line: it must end in a newline, or there is no further
		// line to show.
		if _, ended := s.readLine(0); !ended {
			return false
		}
		s.n++
	}
	limit := len(text) + len("\r\n")
	size, _ := s.readLine(limit)
	if size == 0 {
		return false
	}
	s.n++
	return printedAs(s.buf, size <= limit, text)
}

func (s *rgSource) open(rel string) {
	s.close()
	s.rel, s.n = rel, 0
	f, err := s.fs.dir.OpenReader(rel)
	if err != nil {
		return
	}
	s.f = f
	if s.lines == nil {
		s.lines = bufio.NewReaderSize(f, 64<<10)
	} else {
		s.lines.Reset(f)
	}
	// rg searches raw bytes (--text --encoding none); a binary file is
	// skipped here, whole, as search_files skips it. A read error leaves
	// head short, and the lines then fail to match as they fail to read.
	if head, _ := s.lines.Peek(text.BinaryProbe); text.IsBinary(head) {
		s.close()
	}
}

func (s *rgSource) close() {
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
}

// readLine reads the next line, keeping only its first keep bytes (in
// s.buf), as much as a comparison needs. It returns the line's length,
// terminator included, 0 at the end of the file or when reading fails, and
// whether the line ended in a newline.
func (s *rgSource) readLine(keep int) (size int, ended bool) {
	s.buf = s.buf[:0]
	for {
		chunk, err := s.lines.ReadSlice('\n')
		size += len(chunk)
		if room := keep - len(s.buf); room > 0 {
			s.buf = append(s.buf, chunk[:min(room, len(chunk))]...)
		}
		switch err {
		case bufio.ErrBufferFull:
		case nil:
			return size, true
		case io.EOF:
			return size, false
		default:
			return 0, false
		}
	}
}

// printedAs reports whether rg, with --max-columns-preview, prints a line
// as text (rg.Line.Text: without its terminator or one "\r" before it).
// line is the line with its terminator when whole, or a prefix of it at
// least len(text)+2 bytes long otherwise.
func printedAs(line []byte, whole bool, text []byte) bool {
	if whole {
		l := bytes.TrimSuffix(line, []byte{'\n'})
		if bytes.Equal(bytes.TrimSuffix(l, []byte{'\r'}), text) {
			return true
		}
	}
	preview, ok := bytes.CutSuffix(text, []byte(rg.Previewed))
	return ok && bytes.HasPrefix(line, preview)
}
