package spec

import "fmt"

// pydantic-ai names capability types a spec file cannot use outside Python,
// and built-in types agentspec does not implement. A spec naming one gets an
// error saying which it is and why, rather than a bare "unknown type" (unless
// a Go program registered a type of that name, which then wins).

// pythonOnly are pydantic-ai capability types whose arguments are Python
// callables or objects, by what they take.
var pythonOnly = map[string]string{
	"PrepareTools":            "a Python function that rewrites the tool definitions",
	"PrepareOutputTools":      "a Python function that rewrites the output tool definitions",
	"ProcessHistory":          "a Python function that rewrites the message history",
	"ProcessEventStream":      "a Python function that consumes the event stream",
	"Hooks":                   "Python callbacks for the agent's lifecycle",
	"Toolset":                 "a Python toolset object",
	"Capability":              "a Python capability object",
	"HandleDeferredToolCalls": "a Python function that resolves deferred tool calls",
	"ResolveModelId":          "a Python function that maps model ids",
	"SelectModel":             "a Python function that picks the model per request",
	"UseThreadExecutor":       "a Python thread-pool executor",
}

// notImplemented are pydantic-ai built-in capability types agentspec has no
// counterpart of, with what they do.
var notImplemented = map[string]string{
	"ImageGeneration":          "provider-native image generation",
	"XSearch":                  "xAI's native X search",
	"ToolSearch":               "discovery of deferred tools",
	"Instrumentation":          "OpenTelemetry spans (agentspec records a run with --events FILE)",
	"IncludeToolReturnSchemas": "tool return schemas for the model",
	"SetToolMetadata":          "tool metadata for other capabilities' selectors",
	"ReinjectSystemPrompt":     "re-sending the system prompt",
	"RaiseContentFilterError":  "content-filter errors",
	"OpenAICompaction":         "OpenAI history compaction",
	"AnthropicCompaction":      "Anthropic history compaction",
}

// harnessOnly are the capabilities pydantic-ai-harness exports that agentspec
// does not provide (it provides FileSystem and Shell).
var harnessOnly = map[string]bool{
	"Advisor": true, "AskUser": true, "BackgroundTools": true, "BrowserUse": true, "CapabilityCreation": true,
	"ClampOversizedMessages": true, "ClearToolResults": true, "CodeMode": true, "Coder": true,
	"ConversationSearch": true, "DayAI": true, "DeduplicateFileReads": true, "DynamicWorkflow": true,
	"ExaAgent": true, "ExaSearch": true, "FallbackCompaction": true, "Grain": true, "LocalStack": true,
	"Macroscope": true, "ManagedPrompt": true, "Memory": true, "ModalSandbox": true, "ModelRouter": true,
	"Ordinal": true, "Planning": true, "PostHog": true, "PromptInjectionDefender": true, "PydanticAIDocs": true,
	"Pylon": true, "ReportContextUsage": true, "RepoContext": true, "Researcher": true, "Skills": true,
	"SlidingWindowCompaction": true, "SpendLimits": true, "StackOne": true, "StepPersistence": true,
	"SubAgents": true, "SummarizingCompaction": true, "SystemReminders": true, "TieredCompaction": true,
	"ToolGuardrail": true, "ToolOutputLimits": true, "TrajectoryJudge": true, "WarnNearLimits": true,
	"WarnOnCacheBusts": true, "YouResearch": true, "YouSearch": true,
}

// foreignTypeMsg explains a type name that is pydantic-ai's, or "" when the
// name is not one of those.
func foreignTypeMsg(name string) string {
	if what, ok := pythonOnly[name]; ok {
		return fmt.Sprintf("capability type %q cannot be used outside Python: pydantic-ai's %s takes %s, "+
			"which a spec file cannot express; a Go program can register a type of that name (see capabilities.Register)", name, name, what)
	}
	if harnessOnly[name] {
		return fmt.Sprintf("`%s` is a pydantic-ai-harness capability agentspec does not provide; "+
			"remove it, or register a Go type of that name (see capabilities.Register)", name)
	}
	if what, ok := notImplemented[name]; ok {
		return fmt.Sprintf("capability type %q is a pydantic-ai built-in (%s) that agentspec does not implement; "+
			"remove it, or register a Go type of that name (see capabilities.Register)", name, what)
	}
	return ""
}
