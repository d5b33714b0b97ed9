package shell

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// labelled renders a command's output as the reference does: a
// "[stdout]\n" section when stdout is not empty, a "[stderr]\n" section
// when stderr is not empty, else empty (when given); then trailer (when
// given); joined with "\n". The streams keep their own final newline,
// hence the blank line between sections.
func labelled(stdout, stderr, empty, trailer string) string {
	var parts []string
	if stdout != "" {
		parts = append(parts, "[stdout]\n"+stdout)
	}
	if stderr != "" {
		parts = append(parts, "[stderr]\n"+stderr)
	}
	if len(parts) == 0 && empty != "" {
		parts = append(parts, empty)
	}
	if trailer != "" {
		parts = append(parts, trailer)
	}
	return strings.Join(parts, "\n")
}

// exitLine is "[exit code: N]".
func exitLine(code int) string { return "[exit code: " + strconv.Itoa(code) + "]" }

// exitLines is the exit line and, after a failure under a max_file_bytes
// (0: none), the note about the limit: run_command, check_command and
// stop_command all end an exit so, as the reference does.
func exitLines(code int, maxFileBytes int64) string {
	if code == 0 || maxFileBytes <= 0 {
		return exitLine(code)
	}
	return exitLine(code) + "\n" + fileLimitNote(code, maxFileBytes)
}

// timeoutTrailer is the reference's line for a command killed at its
// deadline: "[Command timed out after 1.0s]".
func timeoutTrailer(seconds float64) string {
	return "[Command timed out after " + pyFloat(seconds) + "s]"
}

// fileLimitNote is what follows the exit line of a failed command run with
// max_file_bytes: the limit was hit (the shell died of SIGXFSZ, seen as
// -25, 153 or 281) or may have been.
func fileLimitNote(code int, maxFileBytes int64) string {
	switch code {
	case -25, 128 + 25, 256 + 25:
		return fmt.Sprintf("[File-size limit exceeded: max_file_bytes=%d. Reduce file output before retrying.]", maxFileBytes)
	}
	return fmt.Sprintf("[Command failed with max_file_bytes=%d; file writes may have reached the per-file limit.]", maxFileBytes)
}

// truncMarker is the line that starts a truncated result.
func truncMarker(n int) string {
	return "[... output truncated, showing last " + strconv.Itoa(n) + " chars]\n"
}

// truncateTail keeps the end of text within max characters (code points),
// as the reference's truncate_tail does: unchanged when it fits; else a
// marker naming how many characters follow, then that many from the end,
// exactly max characters in all; when max is too small for any marker, the
// bare tail. Keeping the end keeps the exit and status lines.
func truncateTail(text string, max int) string {
	total := utf8.RuneCountInString(text)
	if total <= max {
		return text
	}
	n := max - utf8.RuneCountInString(truncMarker(max))
	if n+1+utf8.RuneCountInString(truncMarker(n+1)) <= max {
		n++
	}
	if n <= 0 {
		return tailRunes(text, total, max)
	}
	return truncMarker(n) + tailRunes(text, total, n)
}

// tailRunes is the last n code points of text, which holds total of them.
func tailRunes(text string, total, n int) string {
	if n <= 0 {
		return ""
	}
	skip := total - n
	i := 0
	for skip > 0 {
		_, size := utf8.DecodeRuneInString(text[i:])
		i += size
		skip--
	}
	return text[i:]
}
