package filesystem

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/agentspec/agentspec/capabilities"
)

func init() { registerTool(ToolReadFile, newReadFile) }

// readNoticeReserve is the part of max_read_chars kept free for the
// continuation hint.
const readNoticeReserve = 200

type readArgs struct {
	Path   string `json:"path"`
	Offset int    `json:"offset,omitempty"`
	Limit  *int   `json:"limit,omitempty"`
}

func newReadFile(fs *FS) capabilities.Tool {
	return &tool{
		name: ToolReadFile,
		description: "Read a text file. Lines are numbered; the header gives the path, the total line count" +
			hashNote(fs, " and a content hash to pass as expected_hash when writing") +
			". Use offset (zero-based first line) and limit to page through long files. Binary files are not shown.",
		params: object(map[string]any{
			"path":   param("string", "Path of the file, relative to the working directory."),
			"offset": param("integer", "Zero-based line to start from. Default 0."),
			"limit":  param("integer", "Maximum number of lines to return. Default "+strconv.Itoa(fs.opts.MaxReadLines)+"."),
		}, "path"),
		call: fs.readFile,
	}
}

// hashNote returns note when the capability reports content hashes.
func hashNote(fs *FS, note string) string {
	if fs.hashes() {
		return note
	}
	return ""
}

func (fs *FS) readFile(ctx context.Context, raw json.RawMessage) (string, error) {
	var args readArgs
	if err := decodeArgs(raw, &args); err != nil {
		return "", err
	}
	if args.Offset < 0 {
		return "", capabilities.Retry("offset must be non-negative.")
	}
	limit := fs.opts.MaxReadLines
	if args.Limit != nil {
		if *args.Limit < 1 {
			return "", capabilities.Retry("limit must be at least 1.")
		}
		limit = *args.Limit
	}
	rel, err := fs.resolve(args.Path)
	if err != nil {
		return "", err
	}
	if err := fs.checkRead(rel); err != nil {
		return "", err
	}
	f, err := fs.openFile(rel, os.O_RDONLY, 0)
	if err != nil {
		return "", openError(args.Path, err, true)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", osError(err)
	}
	out, hash, err := fs.renderRead(f, st.Size(), args.Path, args.Offset, limit)
	if err != nil {
		return "", err
	}
	fs.saw(rel, hash, true)
	if err := fs.emit(ctx, &FileReadEvent{EventBase: fs.base(ctx, rel), ContentHash: hash}); err != nil {
		return "", err
	}
	return out, nil
}

// openError words a failure to open the file the model named as path. A
// directory is its own message for reads (dirMessage) and "not found" for
// edits, like every other target that is not a regular file.
func openError(path string, err error, dirMessage bool) error {
	switch {
	case errors.Is(err, syscall.EISDIR) && dirMessage:
		return capabilities.Retry("%s is a directory, not a file.", pyRepr(path))
	case errors.Is(err, syscall.EISDIR), errors.Is(err, errNotRegular),
		errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.ENOTDIR):
		return capabilities.Retry("File not found: %s", path)
	case errors.Is(err, syscall.ELOOP):
		return changedToSymlink(path)
	}
	return osError(err)
}

func changedToSymlink(path string) error {
	return capabilities.Retry("Path %s encountered a symlink loop or changed to a symlink before opening.", pyRepr(path))
}

// renderRead produces read_file's result from the file's content, streamed
// from r: it keeps only the lines of the window that can be shown, so memory
// stays bounded by the window whatever the file's size. It also returns the
// hash of the whole file.
func (fs *FS) renderRead(r io.Reader, size int64, path string, offset, limit int) (string, string, error) {
	h := sha256.New()
	tee := io.TeeReader(r, h)
	head := make([]byte, binarySniff)
	n, err := io.ReadFull(tee, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return "", "", osError(err)
	}
	head = head[:n]
	if isBinary(head) {
		if _, err := io.Copy(io.Discard, tee); err != nil {
			return "", "", osError(err)
		}
		return fmt.Sprintf("[Binary file: %d bytes. Use a binary-aware tool to inspect.]", size), hashSum(h.Sum(nil)), nil
	}

	maxChars := fs.opts.MaxReadChars
	label := path
	if k := maxChars / 4; maxChars > 0 && runeCount(path) > k {
		label = "..." + lastRunes(path, k)
	}
	header := func(total int, hash string) string {
		if fs.hashes() {
			return fmt.Sprintf("[%s | %d lines | hash:%s]\n", label, total, hash)
		}
		return fmt.Sprintf("[%s | %d lines]\n", label, total)
	}

	// The exact budget depends on the total line count, known only at the
	// end; lines are kept against an upper bound (the header can only be
	// longer than with "0 lines") and trimmed to the exact budget after.
	upper := -1
	if maxChars > 0 {
		upper = max(maxChars-runeCount(header(0, strings.Repeat("0", 12)))-readNoticeReserve, 0)
	}
	var (
		kept      []string // rendered window lines
		keptLen   []int    // their lengths in code points
		used      int
		firstLen  int // length of the window's first line, for the oversized-line notice
		stopped   bool
		total     int
		buf       []byte
		lr        = newLineReader(tee, head)
		lineChars int
		ok        bool
	)
	for {
		idx := total
		inWindow := !stopped && idx >= offset && idx-offset < limit
		keep, prefix := 0, ""
		if inWindow {
			prefix = fmt.Sprintf("%6d\t", idx+1)
			keep = -1
			if upper >= 0 {
				keep = max(upper-used-len(prefix), 0)
			}
		}
		buf, lineChars, ok = lr.next(buf[:0], keep)
		if !ok {
			break
		}
		total++
		if !inWindow {
			continue
		}
		if idx == offset {
			firstLen = lineChars
		}
		if upper >= 0 && used+len(prefix)+lineChars > upper {
			stopped = true
			continue
		}
		kept = append(kept, prefix+string(buf))
		keptLen = append(keptLen, len(prefix)+lineChars)
		used += len(prefix) + lineChars
	}
	if lr.err != nil {
		return "", "", osError(lr.err)
	}
	hash := hashSum(h.Sum(nil))
	if total == 0 {
		return header(0, hash) + "(empty file)\n", hash, nil
	}
	if offset >= total {
		return "", "", capabilities.Retry("Offset %d exceeds file length (%d lines).", offset, total)
	}
	hdr := header(total, hash)
	shown := len(kept)
	if maxChars > 0 {
		budget := max(maxChars-runeCount(hdr)-readNoticeReserve, 0)
		shown, used = 0, 0
		for _, l := range keptLen {
			if used+l > budget {
				break
			}
			used += l
			shown++
		}
	}
	if shown == 0 {
		line := offset + 1
		return hdr + fmt.Sprintf("... (Line %d is %s characters and does not fit the read window. "+
			"Use offset=%d to skip it, or a shell byte range to inspect it.)\n", line, groupThousands(firstLen), line), hash, nil
	}
	var sb strings.Builder
	sb.WriteString(hdr)
	for _, l := range kept[:shown] {
		sb.WriteString(l)
	}
	if !strings.HasSuffix(sb.String(), "\n") {
		sb.WriteByte('\n')
	}
	if next := offset + shown; next < total {
		fmt.Fprintf(&sb, "... (%d more lines. Use offset=%d to continue reading.)\n", total-next, next)
	}
	return sb.String(), hash, nil
}

// lastRunes returns the last n code points of s.
func lastRunes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[len(r)-n:])
}
