package sandbox

import "strings"

// Trail is a Cursor that visits, one after another, directories named
// relative to the directory it starts at, as a listing sorted by path (rg
// --sort path, say) names them: going from one to the next it climbs only to
// their common ancestor and enters the rest one component at a time, never
// following a symlink, so each directory shared by consecutive paths is
// entered once and none is reached again from the start. S is the caller's
// state for each directory held (a listing of it, say): zero when the
// directory is entered, dropped when the trail climbs out of it.
type Trail[S any] struct {
	c     Cursor
	names []string // the components below the start the cursor has entered
	state []S      // the start's, then one per entry of names
	at    string   // names joined, "." at the start
}

// NewTrail starts a trail at c's directory and takes c over.
func NewTrail[S any](c Cursor) *Trail[S] {
	return &Trail[S]{c: c, state: make([]S, 1), at: "."}
}

// Enter moves the trail to dir, relative to its start ("." for the start
// itself), and reports whether every component on the way is a directory.
// dir is a canonical relative path: a name that is empty, "." or ".." is
// refused, since ".." would leave the directory. On false the trail stays at
// the deepest directory it could enter, and At names it.
func (t *Trail[S]) Enter(dir string) bool {
	if dir == t.at {
		return true
	}
	var want []string
	if dir != "." {
		want = strings.Split(dir, "/")
	}
	keep := 0
	for keep < len(t.names) && keep < len(want) && t.names[keep] == want[keep] {
		keep++
	}
	for len(t.names) > keep {
		t.c.Up()
		t.names = t.names[:len(t.names)-1]
		t.state = t.state[:len(t.state)-1]
	}
	ok := true
	for _, name := range want[keep:] {
		if name == "" || name == "." || name == ".." || t.c.Down(name) != nil {
			ok = false
			break
		}
		t.names = append(t.names, name)
		var zero S
		t.state = append(t.state, zero)
	}
	t.at = joinRel(t.names)
	return ok
}

// At is the directory the trail is at, relative to its start.
func (t *Trail[S]) At() string { return t.at }

// Cursor is the cursor at the trail's directory, for lookups in it; moving it
// is the trail's business.
func (t *Trail[S]) Cursor() *Cursor { return &t.c }

// State is the caller's state for the trail's directory.
func (t *Trail[S]) State() *S { return &t.state[len(t.state)-1] }

// Close releases the descriptors the trail holds, its start's included.
func (t *Trail[S]) Close() { t.c.Close() }
