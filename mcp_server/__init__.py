"""Burnbox's MCP server: a face, like web, tasks and mailin, for coding agents that speak the
Model Context Protocol (Claude Code, Cursor, VS Code, Codex, Gemini CLI).

Its tools are protocol adapters over Burnbox's own REST API, called with the caller's team API
key (`gateway`), so the API's scopes, rate limits, usage counters and audit apply to every call
and no rule lives here. `envelope` shapes e-mail for a model: untrusted data, marked and
bounded. `tools` holds the tools, resources and prompts; `server` the SDK server and its two
transports; `http` runs the Streamable HTTP one under uvicorn. The package is named
`mcp_server`, not `mcp`, which is the SDK's. docs/mcp.md is the user's page.
"""
