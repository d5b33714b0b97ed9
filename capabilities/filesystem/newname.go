package filesystem

import (
	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/sandbox"
)

// checkNewName refuses to create a file or directory named name (one
// component; path is the path as the model gave it): a name with anything a
// listing would have to escape, a name that reads as such a name's escaped
// form (it would be ambiguous), and the names of agentspec's own temporary
// files, which the next write in that directory removes.
func checkNewName(path, name string) error {
	if sandbox.IsTempName(name) {
		return capabilities.Retry("Path %s: names starting with %s are reserved for agentspec's temporary files; choose another name.",
			pyRepr(path), pyRepr(sandbox.TempPrefix))
	}
	if sandbox.NeedsEscape(name) {
		return capabilities.Retry("Path %s: a new file or directory name may not contain control characters (newlines included), "+
			"bidirectional controls, U+FFFD or bytes that are not UTF-8; choose another name.", pyRepr(path))
	}
	if _, ok := sandbox.UnescapeName(name); ok {
		return capabilities.Retry("Path %s: the name reads as the escaped form of another name (listings show names with "+
			"control characters that way); choose a name without backslash escapes.", pyRepr(path))
	}
	return nil
}
