package capabilities

// RetryBudget is implemented by a capability whose tools have a budget of
// correctable errors of their own, instead of the spec's retries (the
// pydantic-ai harness's FileSystem max_retries). ok false means the spec's
// budget applies. It is optional, discovered by type assertion.
type RetryBudget interface {
	MaxRetries() (n int, ok bool)
}
