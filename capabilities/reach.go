package capabilities

// Reach is what a capability's tools can touch beyond the conversation:
// the files and directories, the programs they start, the network
// endpoints they connect to, and the variables of this process's
// environment they read or hand on. Whoever must keep a boundary (the
// queue worker, `agentspec mcp`, a pipeline) asks ReachOf and refuses what
// it does not allow, instead of guessing from a capability's type or
// options.
//
// Paths are absolute and clean. Only what the capability does on this
// machine counts: a provider's native web search reaches nothing here.
type Reach struct {
	// Paths are the directories (and everything below them) or files the
	// tools read, and change when Write is set.
	Paths []PathReach `json:"paths,omitempty"`
	// Processes are the programs the spec or the model has the capability
	// start, as named to exec; Anywhere stands for any the model chooses.
	// A program the capability runs with arguments of its own choosing
	// (FileSystem's rg) is not named.
	Processes []string `json:"processes,omitempty"`
	// Network are the endpoints it connects to, as URLs with no query or
	// credentials; Anywhere stands for any the model chooses.
	Network []string `json:"network,omitempty"`
	// Env are the names of this process's environment variables that the
	// spec has it read or pass on to what it starts (a fixed minimal set
	// the capability itself hands a child, PATH and HOME, is not named).
	Env []string `json:"env,omitempty"`
}

// Anywhere in Reach.Processes or Reach.Network means the model chooses.
const Anywhere = "*"

// PathReach is one path a capability reaches.
type PathReach struct {
	Path  string `json:"path"`
	Write bool   `json:"write,omitempty"`
}

// Reacher is implemented by a capability that says what it reaches. A
// capability that holds others answers for them too; one that merely wraps
// another need not implement it, since ReachOf looks through wrappers.
type Reacher interface {
	Reach() Reach
}

// ReachOf returns what c reaches, through any wrapper (see As). ok is
// false when c does not say: a boundary must then treat it as reaching
// anything.
func ReachOf(c Capability) (r Reach, ok bool) {
	if re, ok := As[Reacher](c); ok {
		return re.Reach(), true
	}
	return Reach{}, false
}

// Add returns r with everything o reaches added.
func (r Reach) Add(o Reach) Reach {
	return Reach{
		Paths:     append(append([]PathReach(nil), r.Paths...), o.Paths...),
		Processes: append(append([]string(nil), r.Processes...), o.Processes...),
		Network:   append(append([]string(nil), r.Network...), o.Network...),
		Env:       append(append([]string(nil), r.Env...), o.Env...),
	}
}

// PathGuard is implemented by a capability that keeps the model from some
// of the files it reaches. Whoever moves files in and out of its reach on
// the model's behalf (a queue submitter shipping a workspace to a worker
// and taking back what the run changed) asks it, rather than reading the
// capability's options.
type PathGuard interface {
	// GuardPath says what the capability lets the model do with the file
	// or directory at path (absolute, clean, symlinks resolved).
	GuardPath(path string) PathAccess
}

// PathAccess is what a PathGuard says of one path.
type PathAccess struct {
	// Covered: the path is within the capability's reach; when false,
	// nothing else is said.
	Covered bool
	// Secret: the model is never shown it (FileSystem's secret_patterns).
	Secret bool
	// Protected: the model may not change it.
	Protected bool
	// Denied: the model may neither see nor change it (FileSystem's
	// denied_patterns; a secret is denied too). A capability that runs the
	// model's programs hides what is Denied from them.
	Denied bool
	// Reason says why, when Secret or Protected: what the tool tells the
	// model.
	Reason string
}

// Peered is implemented by a capability that must see the other
// capabilities built for the same spec: Shell hides from its commands the
// files the first PathGuard among them keeps from the model. Whoever builds
// a spec's capabilities calls Peers once, after building them all, with all
// of them in the spec's order (itself included); an error is the
// capability's, as a factory's would be.
type Peered interface {
	Peers(all []Capability) error
}
