package filesystem

// optionsSchema is the JSON Schema of the FileSystem options object. The loader
// validates a spec against it before New runs, so it is where a misspelt key, a
// boolean given for a limit or an unknown tool name is reported with its
// position in the file. TestSchemaMatchesOptions keeps it in step with Options.
const optionsSchema = `{
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "root_dir": {
      "type": "string",
      "description": "Sandbox root. Relative paths resolve against the workspace; symlinks are resolved. Every tool path must stay inside it.",
      "default": "."
    },
    "cwd": {
      "type": ["string", "null"],
      "description": "Directory the model's relative paths resolve from, resolved like root_dir; must lie inside root_dir. Defaults to root_dir."
    },
    "allowed_patterns": {
      "type": "array",
      "items": {"type": "string"},
      "description": "If not empty, only root-relative paths matching one of these fnmatch patterns are accessible ('*' also matches '/').",
      "default": []
    },
    "denied_patterns": {
      "type": "array",
      "items": {"type": "string"},
      "description": "Paths matching one of these fnmatch patterns, or lying below a matching directory, are always rejected.",
      "default": []
    },
    "protected_patterns": {
      "type": "array",
      "items": {"type": "string"},
      "description": "Deprecated: the older name of read_only_patterns, which the pydantic-ai harness has renamed. Read the same, with a warning; give one or the other, not both."
    },
    "max_retries": {
      "type": ["integer", "null"],
      "minimum": 0,
      "description": "How many rounds in a row one of these tools may answer with a correctable error before the run ends; null (the default) uses the spec's retries."
    },
    "read_only_patterns": {
      "type": "array",
      "items": {"type": "string"},
      "description": "Paths matching one of these fnmatch patterns, or lying below a matching directory, can be read but not written. The default covers repository internals, env files and keys, and the files that run code when a folder is opened in an editor or coding agent, at the next git command, in CI or on entering a directory (.vscode, .idea, .cursor, .claude, .mcp.json, hook managers, .gitattributes, .gitmodules, CI workflows, .envrc), at any depth. An empty list disables protection.",
      "default": [".git/*", ".env", ".env.*", "*.pem", "*.key", "**/secrets*", "*/.git/*", "*/.env", "*/.env.*", "**/.vscode/*", "**/*.code-workspace", "**/.idea/*", "**/.mcp.json", "**/.cursor/*", "**/.claude/*", "**/.husky/*", "**/lefthook.*", "**/.lefthook.*", "**/lefthook-local.*", "**/.lefthook-local.*", "**/.pre-commit-config.yaml", "**/.pre-commit-config.yml", "**/.gitattributes", "**/.gitmodules", "**/.github/workflows/*", "**/.github/actions/*", "**/.gitlab-ci.yml", "**/.circleci/*", "**/.envrc"]
    },
    "secret_patterns": {
      "type": "array",
      "items": {"type": "string"},
      "description": "Paths matching one of these fnmatch patterns, or lying below a matching directory, are never shown to the model: they behave exactly like denied_patterns. A pattern starting with '!' exempts what it matches ('!*.example'). The default covers dotenv files, keys and keystores, SSH directories and the credential files of git, npm, Docker, Kubernetes, Terraform, Google Cloud, PostgreSQL and Vault, and secrets*, at any depth. An empty list turns them off.",
      "default": ["**/.env", "**/.env.*", "*.pem", "*.key", "*.p12", "*.pfx", "**/id_rsa", "**/id_dsa", "**/id_ecdsa", "**/id_ed25519", "**/.ssh/*", "**/.netrc", "**/.pypirc", "**/.aws/credentials", "**/.git-credentials", "**/.npmrc", "**/.docker/config.json", "**/.kube/config", "*.tfstate", "*.tfstate.backup", "*.tfvars", "*.tfvars.json", "**/credentials.json", "**/service-account*.json", "*service_account*.json", "**/application_default_credentials.json", "**/.config/gcloud/*", "**/.pgpass", "**/.vault-token", "**/secrets*", "!**/.env*.example", "!**/.env*.sample", "!**/.env*.template", "!**/.env*.dist"]
    },
    "max_read_lines": {
      "type": "integer",
      "minimum": 1,
      "description": "Lines read_file returns when the model gives no limit.",
      "default": 2000
    },
    "max_read_chars": {
      "type": ["integer", "null"],
      "minimum": 1,
      "description": "Cap on a whole read_file result in characters; the window ends on the last complete line that fits. Null: no cap.",
      "default": null
    },
    "max_list_results": {
      "type": "integer",
      "minimum": 1,
      "description": "Maximum entries list_directory returns.",
      "default": 1000
    },
    "max_search_results": {
      "type": "integer",
      "minimum": 1,
      "description": "Maximum matching lines search_files and grep return.",
      "default": 1000
    },
    "max_find_results": {
      "type": "integer",
      "minimum": 1,
      "description": "Maximum paths find_files and list_files return.",
      "default": 1000
    },
    "read_only": {
      "type": "boolean",
      "description": "Keep only the tools that cannot change the tree (read_file, list_directory, search_files, find_files, file_info, list_files, grep).",
      "default": false
    },
    "content_hashes": {
      "type": "boolean",
      "description": "Report content hashes in read and write results and accept expected_hash for optimistic concurrency.",
      "default": true
    },
    "watch_changes": {
      "type": "boolean",
      "description": "Refuse a write_file or edit_file without expected_hash when the file was changed on disk by someone else since the agent last read or wrote it, and watch the directories the agent reads (fsnotify) to report such changes as file_system.external_change events. false turns both off.",
      "default": true
    },
    "require_read_before_write": {
      "type": "boolean",
      "description": "Refuse to overwrite or edit an existing file the agent has neither read with read_file nor written before, unless the call passes its expected_hash. New files can always be created.",
      "default": false
    },
    "tools": {
      "type": "array",
      "items": {
        "enum": ["read_file", "write_file", "edit_file", "list_directory", "search_files", "find_files", "create_directory", "file_info", "list_files", "grep"]
      },
      "description": "Tools to register. list_files and grep need ripgrep (rg) on PATH.",
      "default": ["read_file", "write_file", "edit_file", "list_directory", "search_files", "find_files", "create_directory", "file_info"]
    }
  }
}`
