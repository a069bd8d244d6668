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
//   - handlers.go: the Agent's methods, the ACP handlers, each handing
//     the request to the type that serves it. agent.go: Config, the Agent
//     and its wiring (New), session state and its log.
//   - store.go: the sessions this process holds and their uses
//     (sessionStore), in parts, and the session index. holder.go: which
//     sessions are held and their open logs (sessionHolder: use, release,
//     close); logcache.go: its open-log cache (at most 64 open, idle ones
//     closed). acquire.go: a use from acquire to done (acquirer), in its
//     jobs (dropBroken, reopen, lockLog, repairInterrupted, becomeUser);
//     catchup.go: what a read of the log brings into memory (catchUp).
//     logerrors.go: where the logs are and what the editor is told when
//     one can't be created, opened or written (stateDir).
//   - turn.go: session/prompt (prompt), the agent loop (run), one logical request
//     recovered to its commit (complete), one attempt (runAttempt, receive),
//     the end of the turn (settle); newTurn and newToolRunner wire what
//     the turn delegates to. The turn delegates: request.go holds
//     the current request's attempts and settings (request) and the
//     messages the model is sent (turnMessages), which every attempt makes
//     sendable: tool calls paired with their results, roles alternating.
//   - emit.go: the emitter, the one place reply text is recorded and then
//     sent (live or held); its state in two parts: what was shown live
//     and the resumer that trims a continuation's repeats (emitlive.go),
//     what is held back until the commit (emitheld.go).
//   - turn.adapt (turn.go): compaction, fallback, image removal, as the
//     executor's policies decide (package recovery decides; agent carries
//     out); adapt.go: their errors. compact.go, autocompact.go: compaction (compactor), on
//     an overflow, /compact, or before a request once the context is
//     nearly full.
//   - observer.go: the editor's half of the recovery observer (observer,
//     the executor's recovery.Observer and Adapter): each retry and wait
//     recorded, then shown (_meta, notices, the status tool calls of
//     statuscards.go), with a recorder and a sender only. progress.go,
//     status.go: the _meta keys, wait_status, the replay of statuses.
//   - toolrunner.go: the tool runner a turn builds and calls, and the
//     narrow interfaces it depends on (the editor's permission, fs and
//     terminal calls, the MCP servers).
//   - tooluse.go, shell.go: the runner's methods: tool calls, the
//     permission gate, the plan tool, MCP calls, shell commands (local or in
//     the editor's terminal). approval.go: what a permission request shows.
//   - plan.go, mcpservers.go: the plan panel, the session's MCP servers
//     (mcpStarter starts them).
//   - history.go: the model's view of the session log, kept incrementally.
//   - load.go: session/load (sessionOpener.load) and the replay of a
//     session to the editor.
//   - lifecycle.go: session/new (sessionMaker), list (listSessions),
//     resume (sessionOpener), close and delete (sessionRemover), titles.
//     reopen.go: a session opened on use for a client that skipped
//     initialize (reopener). fork.go: session/fork (forker, unstable ACP).
//     providers.go: providers/list, set, disable (providerRouter, unstable
//     ACP). promptusage.go: PromptResponse.usage.
//   - interrupted.go: at a session's first prompt, the notice of the session
//     of its directory a stop of Rebound's cut, and how to get it back.
//   - slash.go: /retry, /continue, /compact, /init, /status, and the
//     turn's answer to them (a step with no model: turn.answer,
//     compactNow). modelhint.go: what a give-up adds about a model the
//     provider does not have (modelHints).
//   - usage.go: usage_update (context fill and cost; usageMeter).
//   - options.go: session config options (configMenu; optionSetter serves
//     set_mode and set_config_option; optionRecorder writes a change
//     through the session's use, optionwriter.go); catalog.go: the
//     provider's model list (catalog) and what follows a session's answer
//     (afterAnswer); auth.go: sign-in (signIn: authenticate, logout, the
//     provider a turn uses, the auth required error); signin.go: the
//     provider set up through the editor's forms (ProviderSetUp); modes.go,
//     instructions.go: modes, the system prompt (systemPrompt).
package agent
