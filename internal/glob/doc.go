// Package glob names the four pattern dialects agentspec speaks, so that
// each is chosen on purpose and none is mistaken for another:
//
//   - fnmatch (Fnmatch, MatchFnmatch): Python's fnmatch.fnmatch, the
//     FileSystem's access patterns (allowed_patterns, denied_patterns,
//     protected_patterns, secret_patterns). '*' and '?' cross '/'; a
//     "**/" prefix is also tried without it.
//   - find_files (FindFiles, CompileFindFiles): Python's Path.glob, the
//     pattern of the find_files tool, matched component by component as the
//     walker goes; "**" is a whole component.
//   - ripgrep (RipgrepArgs): ripgrep's own gitignore-style globs, the glob
//     parameter of list_files and grep. rg itself matches them: '*.py'
//     matches at any depth, 'src/*.py' only directly in src. Nothing here
//     reimplements them; the table test runs rg to pin what the tool
//     descriptions promise.
//   - doublestar (ValidDoublestar, SplitDoublestar, MatchDoublestar):
//     github.com/bmatcuk/doublestar/v4, the workspace cache's input_globs and
//     expected_output_files. '*' stays within one directory, "**" spans any
//     number, {a,b} alternation works.
//
// Each dialect has its own table test in this package.
package glob
