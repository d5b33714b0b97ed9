package confine

// Available reports whether commands can be confined here: nil, or an
// error naming everything that is missing.
func Available() error {
	return unavailable([]string{"confined mode is not built yet"})
}
