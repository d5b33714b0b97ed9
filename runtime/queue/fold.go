package queue

import (
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"unicode"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// A shipped workspace comes from a disk that may tell apart names that the
// worker's disk takes for one: A.txt and a.txt on a disk that folds case
// (macOS's and Windows' by default), é written composed (NFC) and
// decomposed (NFD) on one that folds Unicode normalisation (macOS's).
// Unpacked there, the second would overwrite the first, and the run's
// changes would report the first deleted, which the submitter would apply.
// So a worker asks its disk how it matches names before it unpacks a
// workspace, and refuses one whose names collide there; and a submitter
// asks its own before it applies a run's changes, which a worker whose
// disk tells such names apart may have made.
//
// Windows makes some names no file can have: it drops the dots and spaces
// that end a name (a.txt. is a.txt), keeps CON, NUL, COM1 and the like for
// devices, with any extension, and takes a colon for a file's stream. A
// workspace shipped from another system may hold them; unpacked there, a
// file would land on another, a device or a stream. On Windows a worker
// refuses them, naming the path, as it unpacks the workspace, before the
// job runs; a submitter, before it applies any of a run's changes.

// nameFolding is how a directory's file system matches names.
type nameFolding struct {
	cases bool // upper and lower case name one file
	forms bool // so do a name's Unicode normalisation forms (NFC, NFD)
	// dir, when set, is the directory probed, where two names that key
	// takes for one are tried on the disk itself (see same): each disk
	// folds by rules of its own (NTFS's upper cases are not Unicode's
	// folding: k and the Kelvin sign are two names there).
	dir string
	// win32: names go through Windows' rules (see win32Refusal). They are
	// its API's, not its disk's: a disk is not asked.
	win32 bool
}

// probeName starts the name of the file probeFolding makes: letters that
// have an upper case, and é, composed.
const probeName = ".agentspec-probe-\u00e9-"

// probeFolding asks dir's file system how it matches names: it makes a
// file there, looks it up by its name in upper case and decomposed, and
// removes it. Directories made in dir match names as it does (a directory
// inherits Windows' case sensitivity, and ext4's casefold, from its
// parent).
func probeFolding(dir string) (nameFolding, error) {
	f, err := os.CreateTemp(dir, probeName+"*")
	if err != nil {
		return nameFolding{}, fmt.Errorf("asking the disk how it matches names: %w", err)
	}
	made := f.Name()
	defer os.Remove(made)
	st, err := f.Stat()
	f.Close()
	if err != nil {
		return nameFolding{}, fmt.Errorf("asking the disk how it matches names: %w", err)
	}
	name := filepath.Base(made)
	same := func(other string) bool {
		o, err := os.Lstat(filepath.Join(dir, other))
		return err == nil && os.SameFile(st, o)
	}
	got := nameFolding{cases: same(strings.ToUpper(name)), forms: same(norm.NFD.String(name)), win32: goruntime.GOOS == "windows"}
	if got.cases || got.forms {
		got.dir = dir
	}
	return got, nil
}

// same says whether a and b, two paths whose key is one, are one name on
// f's disk: it makes a in a directory of its own in f.dir, looks b up
// there, and removes them. A disk that cannot be asked is taken at key's
// word.
func (f nameFolding) same(a, b string) bool {
	if f.dir == "" {
		return true
	}
	tmp, err := os.MkdirTemp(f.dir, ".agentspec-probe-")
	if err != nil {
		return true
	}
	defer os.RemoveAll(tmp)
	made := filepath.Join(tmp, filepath.FromSlash(a))
	if err := os.MkdirAll(filepath.Dir(made), 0o700); err != nil {
		return true
	}
	if err := os.WriteFile(made, nil, 0o600); err != nil {
		return true
	}
	st, err := os.Lstat(made)
	if err != nil {
		return true
	}
	o, err := os.Lstat(filepath.Join(tmp, filepath.FromSlash(b)))
	return err == nil && os.SameFile(st, o)
}

// key is name as the file system matches it: two names with one key are
// one name there. A disk that folds forms as well as case (APFS, ext4's
// casefold) folds case fully, as Unicode's CaseFolding.txt does (ß is ss,
// ﬁ is fi) over a name decomposed; one that folds case alone (NTFS) folds
// it rune by rune, as strings.EqualFold does; forms are folded to NFD.
func (f nameFolding) key(name string) string {
	if f.forms {
		name = norm.NFD.String(name)
	}
	if f.cases {
		name = f.foldCase(name)
	}
	if f.forms && f.cases {
		name = norm.NFD.String(name)
	}
	return name
}

// foldCase is name with its case folded as f's disk folds it.
func (f nameFolding) foldCase(name string) string {
	if f.forms {
		return cases.Fold().String(name)
	}
	return strings.Map(foldRune, name)
}

// foldRune is the least rune of r's case-folding orbit (K for k, K and the
// Kelvin sign).
func foldRune(r rune) rune {
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
	}
	return least
}

// apart says what f's disk does not tell apart in a and b, two names with
// one key.
func (f nameFolding) apart(a, b string) string {
	switch {
	case f.forms && norm.NFD.String(a) == norm.NFD.String(b):
		return "a name's Unicode forms (NFC, NFD)"
	case f.cases && f.foldCase(a) == f.foldCase(b):
		return "upper and lower case"
	}
	return "upper and lower case, nor a name's Unicode forms (NFC, NFD),"
}

// foldedNames are the paths of a workspace, and of the directories that
// hold them, by the key each has on a disk that matches names as f.
type foldedNames struct {
	f    nameFolding
	seen map[string][]string // by key: the paths (or directories) met with it, each a name of its own on the disk
	file map[string]string   // by path (or directory): the file that brought it
}

// add takes a file's path (slash-separated, clean), and fails with a
// *nameCollision when it, or a directory of it, is one name on the disk
// with another's; and with an *unmadeName when its disk cannot make it.
func (n *foldedNames) add(rel string) error {
	if err := n.f.unmade(rel); err != nil {
		return err
	}
	if !n.f.cases && !n.f.forms {
		return nil
	}
	if n.seen == nil {
		n.seen, n.file = map[string][]string{}, map[string]string{}
	}
	for i := 0; i <= len(rel); i++ {
		if i < len(rel) && rel[i] != '/' {
			continue
		}
		p := rel[:i]
		k := n.f.key(p)
		met := n.seen[k]
		if slices.Contains(met, p) {
			continue
		}
		j := slices.IndexFunc(met, func(q string) bool { return n.f.same(q, p) })
		if j < 0 {
			n.seen[k], n.file[p] = append(met, p), rel
			continue
		}
		q := met[j]
		other := n.file[q]
		both := other + " and " + rel
		if q != other || p != rel {
			both = fmt.Sprintf("%s and %s: %s and %s", other, rel, q, p)
		}
		return &nameCollision{names: both, apart: n.f.apart(q, p), second: rel}
	}
	return nil
}

// nameCollision is two paths that are one name on a disk, or that lie in
// directories that are (or one in a directory that is one with the other).
type nameCollision struct {
	names  string // "A.txt and a.txt", "Dir/x and dir/y: Dir and dir"
	apart  string // what the disk does not tell apart in them
	second string // the file of the two met second
}

// on says what c is on disk ("this worker's disk").
func (c *nameCollision) on(disk string) string {
	return fmt.Sprintf("%s are one name on %s, which does not tell %s apart", c.names, disk, c.apart)
}

func (c *nameCollision) Error() string { return c.on("the disk") }

// unmade fails with an *unmadeName when rel (slash-separated, clean), or a
// directory of it, is a name f's disk cannot make.
func (f nameFolding) unmade(rel string) error {
	if !f.win32 {
		return nil
	}
	for name := range strings.SplitSeq(rel, "/") {
		if why := win32Refusal(name); why != "" {
			return &unmadeName{path: rel, why: why}
		}
	}
	return nil
}

// win32Refusal says why Windows cannot make a file or directory named name
// ("": it can), as a clause about it: a name with a character it refuses
// (a colon would name a stream of another file), one that ends in a dot
// or a space (which it drops: a.txt. is a.txt), or one it keeps for a
// device, with any extension (NUL, nul.txt, COM1.tar.gz).
func win32Refusal(name string) string {
	for _, r := range name {
		if r < 0x20 || strings.ContainsRune(`<>:"|?*`, r) {
			return fmt.Sprintf("it takes no %q in a name", r)
		}
	}
	if strings.HasSuffix(name, ".") || strings.HasSuffix(name, " ") {
		return "it drops the dots and spaces that end a name"
	}
	base, _, _ := strings.Cut(name, ".")
	// Spaces before the extension are dropped too (NUL .txt is NUL).
	base = strings.ToUpper(strings.TrimRight(base, " "))
	if win32Device(base) {
		return fmt.Sprintf("it keeps %s for a device, with any extension", base)
	}
	return ""
}

// win32Device reports whether name, in upper case, is one Windows keeps for
// a device: CON, PRN, AUX, NUL, CONIN$, CONOUT$, and COM and LPT with a
// digit from 1 to 9 or a superscript one, two or three.
func win32Device(name string) bool {
	switch name {
	case "CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$":
		return true
	}
	port, ok := strings.CutPrefix(name, "COM")
	if !ok {
		port, ok = strings.CutPrefix(name, "LPT")
	}
	if !ok {
		return false
	}
	return len(port) == 1 && port[0] >= '1' && port[0] <= '9' || port == "\u00b9" || port == "\u00b2" || port == "\u00b3"
}

// unmadeName is a path that a disk cannot make under its name.
type unmadeName struct {
	path string // the file's, slash-separated
	why  string // a clause about Windows: "it drops the dots and spaces that end a name"
}

// on says what u is where the disk is ("on this worker").
func (u *unmadeName) on(where string) string {
	return fmt.Sprintf("%q is a name Windows cannot make %s: %s", u.path, where, u.why)
}

func (u *unmadeName) Error() string { return u.on("on the disk") }
