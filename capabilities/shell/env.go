package shell

import (
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/agentspec/agentspec/internal/glob"
)

// ProviderKeyEnvs are the variables agentspec reads model providers' keys
// from (the providers table's; a test there keeps the two equal). Naming
// one in a Shell's env hands the key to every command, which validate
// warns of.
var ProviderKeyEnvs = []string{
	"ALIBABA_API_KEY", "ANTHROPIC_API_KEY", "AWS_BEARER_TOKEN_BEDROCK", "AZURE_OPENAI_API_KEY",
	"CEREBRAS_API_KEY", "CO_API_KEY", "CRUSOE_API_KEY", "DASHSCOPE_API_KEY", "DEEPSEEK_API_KEY",
	"FIREWORKS_API_KEY", "GEMINI_API_KEY", "GITHUB_API_KEY", "GOOGLE_API_KEY", "GROQ_API_KEY",
	"HEROKU_INFERENCE_KEY", "HF_TOKEN", "LITELLM_API_KEY", "MISTRAL_API_KEY", "MOONSHOTAI_API_KEY",
	"NEBIUS_API_KEY", "OLLAMA_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "OVHCLOUD_API_KEY", "PAIG_API_KEY",
	"PYDANTIC_AI_GATEWAY_API_KEY",
	"SAMBANOVA_API_KEY", "SNOWFLAKE_TOKEN", "TOGETHER_API_KEY", "VERCEL_AI_GATEWAY_API_KEY",
	"VERCEL_OIDC_TOKEN", "XAI_API_KEY", "ZAI_API_KEY",
}

// filterEnv is env less the names matching a denied pattern
// (fnmatchcase), and the names kept, sorted.
func filterEnv(env map[string]string, denied []string) (map[string]string, []string) {
	out := map[string]string{}
	var names []string
	for k, v := range env {
		if slices.ContainsFunc(denied, func(p string) bool { return glob.MatchFnmatch(k, p) }) {
			continue
		}
		out[k] = v
		names = append(names, k)
	}
	sort.Strings(names)
	return out, names
}

// layerEnv is the workspace's variables with the Shell's own over them, and
// the names, sorted.
func layerEnv(workspace, own map[string]string) (map[string]string, []string) {
	out := make(map[string]string, len(workspace)+len(own))
	for k, v := range workspace {
		out[k] = v
	}
	for k, v := range own {
		out[k] = v
	}
	names := make([]string, 0, len(out))
	for k := range out {
		names = append(names, k)
	}
	sort.Strings(names)
	return out, names
}

// envWarnings warn of each name in env that holds a model provider's key.
func envWarnings(env map[string]string) []string {
	return keyWarnings(env, envWarningPrefix, "add it to denied_env_patterns or leave it out.")
}

// envWarningPrefix begins each of envWarnings, which OptionWarnings says
// of the env option (a LocalWorkspace's env is warned of otherwise).
const envWarningPrefix = "env names "

// workspaceEnvWarnings warn of each name in the workspace's env (a
// LocalWorkspace's) that holds a model provider's key and reaches commands
// from there: own, the Shell's env less denied_env_patterns, does not name
// it (its value would be the one given, and warned of). denied_env_patterns
// filters the Shell's env only, so leaving it out is the remedy.
func workspaceEnvWarnings(workspace, own map[string]string) []string {
	reach := map[string]string{}
	for k, v := range workspace {
		if _, ok := own[k]; !ok {
			reach[k] = v
		}
	}
	return keyWarnings(reach, "LocalWorkspace's env names ", "leave it out.")
}

// keyWarnings are the warnings, prefix NAME then advice, of the names in
// env that hold a model provider's key, in the order of the names.
func keyWarnings(env map[string]string, prefix, advice string) []string {
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	sort.Strings(names)
	var out []string
	for _, k := range names {
		if slices.Contains(ProviderKeyEnvs, k) ||
			slices.ContainsFunc(LLMAPIKeyEnvPatterns, func(p string) bool { return glob.MatchFnmatch(k, p) }) {
			out = append(out, prefix+k+", a model provider's credential: every command, and whatever it runs, can read it; "+advice)
		}
	}
	return out
}

// environ is a command's whole environment (D14): PATH and LANG as this
// process has them (LANG C.UTF-8 when unset), LC_ALL and LC_CTYPE when
// set, HOME in the private temp directory, TMPDIR the private temp
// directory, TERM=dumb, PWD the directory it starts in (dir); then the
// Shell's env. Nothing else of this process's environment reaches a
// command. sh sets PWD in any case; given, it keeps a path through a
// symlink, which persist_cwd keeps as pwd reported it, where it would
// otherwise report the directory the link leads to.
func environ(temp, dir string, env map[string]string, names []string) []string {
	vars := map[string]string{
		"PATH":   os.Getenv("PATH"),
		"HOME":   filepath.Join(temp, "home"),
		"TMPDIR": temp,
		"LANG":   "C.UTF-8",
		"TERM":   "dumb",
		"PWD":    dir,
	}
	order := []string{"PATH", "HOME", "TMPDIR", "LANG"}
	if v, ok := os.LookupEnv("LANG"); ok && v != "" {
		vars["LANG"] = v
	}
	for _, k := range []string{"LC_ALL", "LC_CTYPE"} {
		if v, ok := os.LookupEnv(k); ok {
			vars[k] = v
			order = append(order, k)
		}
	}
	order = append(order, "TERM", "PWD")
	for _, k := range names {
		if _, seen := vars[k]; !seen {
			order = append(order, k)
		}
		vars[k] = env[k]
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+vars[k])
	}
	return out
}
