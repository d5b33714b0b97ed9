package mcp

// optionsSchema is the JSON Schema of the MCP options object. A remote server
// is named by url (pydantic-ai's form); a local one by command, agentspec's
// extension, run over stdio. Exactly one of the two is given, and the options
// of the other transport are refused, so validate catches a mixed entry
// without starting anything.
const optionsSchema = `{
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "url": {
      "type": "string",
      "pattern": "^[Hh][Tt][Tt][Pp][Ss]?://[^/?#\\s]+",
      "x-expected": "an http:// or https:// URL",
      "description": "URL of a remote MCP server, spoken to over streamable HTTP; a server that only speaks the older HTTP+SSE transport (a URL ending in /sse, or one that refuses streamable HTTP) is spoken to over SSE."
    },
    "local": {
      "type": ["boolean", "string", "null"],
      "description": "pydantic-ai's local client switch: null or true connects to url, a URL string connects there instead. false (a provider-native server only) is not supported."
    },
    "native": {
      "type": "boolean",
      "description": "pydantic-ai: also offer the server to the provider as a native MCP tool. Accepted with a warning: agentspec connects to the server itself and offers its tools as its own."
    },
    "headers": {
      "type": "object",
      "additionalProperties": {"type": "string"},
      "description": "HTTP headers sent with every request to url. Use ${VAR} to keep secrets out of the spec."
    },
    "authorization_token": {
      "type": "string",
      "description": "Sent verbatim as the Authorization header (include 'Bearer ' yourself). Use ${VAR} to keep it out of git; an empty value sends no header."
    },
    "command": {
      "type": "array",
      "items": {"type": "string"},
      "minItems": 1,
      "description": "A local MCP server to start and speak to over stdio: the program and its arguments, e.g. [npx, -y, '@modelcontextprotocol/server-everything']."
    },
    "env": {
      "type": "object",
      "additionalProperties": {"type": "string"},
      "description": "Environment variables for command, added to a minimal inherited set (HOME, PATH, USER, LOGNAME, SHELL, TERM, LANG, TMPDIR and the like); nothing else of agentspec's environment, API keys included, reaches the server."
    },
    "cwd": {
      "type": "string",
      "description": "Working directory of command, relative to the run's workspace. Default: the workspace."
    },
    "allowed_tools": {
      "type": "array",
      "items": {"type": "string"},
      "description": "Only these of the server's tools are offered to the model. A name the server does not offer is an error when the server starts."
    },
    "timeout": {
      "type": "number",
      "exclusiveMinimum": 0,
      "description": "Seconds to wait for the server to start (or be reached), answer initialize and list its tools. Default 30, enough for npx to fetch a package on first use.",
      "default": 30
    },
    "read_timeout": {
      "type": "number",
      "exclusiveMinimum": 0,
      "description": "Seconds to wait for the answer to one tool call (pydantic-ai's MCPServer read_timeout). A call that gets none is cancelled and the model is told it timed out, as an error it may retry. Default 300.",
      "default": 300
    },
    "id": {
      "type": "string",
      "description": "Name of the server in events and errors. Default: <host>-<last path segment> of url (the last one messages show, when a later one may be a token), or the program name of command."
    },
    "description": {
      "type": "string",
      "description": "What the server is for, for people reading the spec."
    }
  },
  "if": {"required": ["command"]},
  "then": {"properties": {"url": false, "headers": false, "authorization_token": false, "local": false, "native": false}},
  "else": {"required": ["url"], "properties": {"env": false, "cwd": false}}
}`
