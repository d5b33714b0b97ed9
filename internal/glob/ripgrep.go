package glob

// RipgrepArgs returns the rg arguments that restrict a listing or search to
// the ripgrep glob g ("" for none). The glob is always passed as the value of
// --glob, never as an argument of its own, so it is never read as a flag.
func RipgrepArgs(g string) []string {
	if g == "" {
		return nil
	}
	return []string{"--glob", g}
}
