// Package getdents reads the records a Linux getdents64 call fills, for the
// listings of internal/sandbox (ReadDir, ListRegular) and of its tree
// walker, internal/sandbox/walk: one reader of the raw format for all three.
// It has nothing on other systems, where the listings go through the os
// package.
package getdents
