// Package agent serves ACP sessions and runs their turns: it renders the
// prompt for the model, runs the agent loop against the provider through
// package recovery, records everything in the session log (package session)
// before the editor is told, and runs the tools the model asks for.
//
// Words, as the code uses them: a turn is one session/prompt; a logical
// request is one round of the agent loop (what agent.max_steps counts),
// made of one or more attempts (provider requests, retries included; the
// log calls an attempt a step: step/start, step/end). A reply is committed
// once, when its logical request is done.
//
// Where things are:
//
//   - agent.go: Config, the Agent, session state and its log; session/new;
//     acquire, in its jobs (reopen, lockLog, take, repairInterrupted,
//     becomeUser).
//   - logcache.go: the open-log cache (at most 64 open, idle ones closed).
//   - turn.go: session/prompt, the agent loop (run), one logical request
//     recovered to its commit (complete), one attempt (runAttempt, receive).
//   - emit.go: the emitter, the one place reply text is recorded and then
//     sent (live or held), and the resumer that trims a continuation's
//     repeats.
//   - adapt.go: the recovery.Adapter: compaction, fallback, image removal,
//     as the executor's policies decide (package recovery decides; agent
//     carries out).
//   - progress.go, status.go: how a wait is shown (_meta, notices, the
//     status tool call) and recorded.
//   - toolrunner.go: the tool runner a turn builds and calls, and the
//     narrow interfaces it depends on (the editor's permission, fs and
//     terminal calls, the MCP servers).
//   - tooluse.go, shell.go: the runner's methods: tool calls, the
//     permission gate, the plan tool, MCP calls, shell commands (local or in
//     the editor's terminal). approval.go: what a permission request shows.
//   - plan.go, mcpservers.go: the plan panel, the session's MCP servers.
//   - history.go: the model's view of the session log, kept incrementally.
//   - load.go: session/load and the replay of a session to the editor.
//   - lifecycle.go: session/list, resume, close, delete, titles.
//   - slash.go: /retry, /continue, /compact, /init, /status.
//   - usage.go: usage_update (context fill and cost).
//   - modes.go, options.go, catalog.go, instructions.go, auth.go: modes,
//     session config options, the model list, the system prompt, sign-in.
package agent
