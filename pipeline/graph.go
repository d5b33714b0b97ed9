package pipeline

import (
	"slices"
	"strings"
)

// graph fills in every step's Deps from the edges found, reports a cycle,
// and orders the steps.
func (c *checker) graph() {
	index := make(map[string]int, len(c.p.Steps))
	for i, s := range c.p.Steps {
		index[s.Name] = i
	}
	for k := range c.edges {
		from := c.steps[k[0]]
		from.Deps = append(from.Deps, k[1])
	}
	for _, s := range c.p.Steps {
		slices.SortFunc(s.Deps, func(a, b string) int { return index[a] - index[b] })
	}
	if c.cycle() {
		return
	}
	c.p.Order = c.order(index)
}

// cycle reports the first cycle of dependencies, walking the steps in the
// order written, at the reference or need that closes it.
func (c *checker) cycle() bool {
	const (
		unseen = iota
		active
		done
	)
	state := map[string]int{}
	var stack []string
	var visit func(name string) bool
	visit = func(name string) bool {
		state[name] = active
		stack = append(stack, name)
		for _, dep := range c.steps[name].Deps {
			switch state[dep] {
			case active:
				path := append(slices.Clone(stack[slices.Index(stack, dep):]), dep)
				e := c.edges[[2]string{name, dep}]
				c.addAt(e.pos, e.label, "the steps depend on each other in a cycle: "+strings.Join(path, " -> ")+
					" (each needs the one after it); a pipeline's graph must be acyclic")
				return true
			case unseen:
				if visit(dep) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[name] = done
		return false
	}
	for _, s := range c.p.Steps {
		if state[s.Name] == unseen && visit(s.Name) {
			return true
		}
	}
	return false
}

// order returns the steps so that each comes after its dependencies; of
// the steps ready at once, the one written first comes first.
func (c *checker) order(index map[string]int) []*Step {
	waiting := make(map[string]int, len(c.p.Steps))
	dependents := map[string][]*Step{}
	for _, s := range c.p.Steps {
		waiting[s.Name] = len(s.Deps)
		for _, d := range s.Deps {
			dependents[d] = append(dependents[d], s)
		}
	}
	var ready, out []*Step
	for _, s := range c.p.Steps {
		if waiting[s.Name] == 0 {
			ready = append(ready, s)
		}
	}
	for len(ready) > 0 {
		slices.SortFunc(ready, func(a, b *Step) int { return index[a.Name] - index[b.Name] })
		s := ready[0]
		ready = ready[1:]
		out = append(out, s)
		for _, d := range dependents[s.Name] {
			if waiting[d.Name]--; waiting[d.Name] == 0 {
				ready = append(ready, d)
			}
		}
	}
	return out
}
