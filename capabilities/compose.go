package capabilities

import (
	"errors"
	"io"
)

// Wrapper is implemented by a capability that wraps another (PrefixTools,
// or any a Go user writes): Unwrap returns the wrapped one. As walks it, so
// the optional interfaces of the wrapped capability survive wrapping.
type Wrapper interface {
	Unwrap() Capability
}

// ToolWrapper is implemented by a tool that wraps another (a renamed tool):
// Unwrap returns the wrapped one, so that what the tool says of itself
// (HintsOf) survives wrapping.
type ToolWrapper interface {
	Unwrap() Tool
}

// As finds the first value in v's chain of wrappers that is a T: v itself,
// then what its Unwrap returns (a Capability's or a Tool's), and so on, as
// errors.As walks errors. It is how a consumer asks a capability or a tool
// for an optional interface (Instructable, NativeTooler, io.Closer, Reacher,
// Hinted, ...): a type assertion on the outermost value would miss whatever
// a wrapper does not forward.
func As[T any](v any) (T, bool) {
	for depth := 0; v != nil && depth < maxUnwrap; depth++ {
		if t, ok := v.(T); ok {
			return t, true
		}
		switch w := v.(type) {
		case Wrapper:
			v = nil
			if inner := w.Unwrap(); inner != nil {
				v = inner
			}
		case ToolWrapper:
			v = nil
			if inner := w.Unwrap(); inner != nil {
				v = inner
			}
		default:
			v = nil
		}
	}
	var zero T
	return zero, false
}

// maxUnwrap bounds the walk, so that a wrapper that wraps itself ends it.
const maxUnwrap = 64

// CloseAll closes each of caps that is an io.Closer (As: through any
// wrapper), in order, and returns their errors joined; nil when none
// failed. A host that built capabilities closes them so when it is done.
func CloseAll(caps []Capability) error {
	var errs []error
	for _, c := range caps {
		if cl, ok := As[io.Closer](c); ok {
			if err := cl.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
