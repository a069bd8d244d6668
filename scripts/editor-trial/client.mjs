#!/usr/bin/env node
// Minimal ACP (Agent Client Protocol) test client.
//
// Rebound's editor trial (scripts/editor-trial, see README.md). Derived from the
// team's shared acp-client; extended with --terminal, repeated --prompt,
// --load-session, --permission allow_always|reject_always, logging of tool
// calls and terminals, and the session methods beyond new/load/prompt:
// session/list, resume, set_mode, set_config_option, close and delete;
// MCP servers (--mcp-server) and sign-in (--authenticate, --terminal-login).
//
// Spawns an agent subprocess, talks ACP v1 over stdio (newline-delimited
// JSON-RPC) using @agentclientprotocol/sdk (2.x "app" API), runs one prompt
// turn and records every JSON-RPC line in both directions to a JSONL file.
//
// Usage: node client.mjs --prompt "text" [options] -- <agent-cmd> [agent-args...]
// See README.md for the option list.

import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as fs from "node:fs";
import * as fsp from "node:fs/promises";
import * as path from "node:path";
import * as acp from "@agentclientprotocol/sdk";

const USAGE = `usage: node client.mjs --prompt TEXT [--prompt TEXT ...] [options] -- AGENT_CMD [AGENT_ARGS...]

After initialize the client does, in this order: --terminal-login,
--authenticate, --delete-session, --list-sessions, then (when a session is
wanted) session/new, load or resume, --set-mode, each --set-config, the
prompts, --close-session.

options:
  --prompt TEXT              prompt text to send (repeat to send several
                             prompts, one after another, in one session)
  --terminal                 advertise clientCapabilities.terminal=true and serve
                             terminal/create|output|wait_for_exit|kill|release
  --load-session ID          session/load ID instead of session/new (then the
                             prompts, if any, run in the loaded session)
  --resume-session ID        session/resume ID instead of session/new (no replay)
  --list-sessions            session/list, following nextCursor; prints each
                             session as "session: {json}" and each page as
                             "page: N sessions, nextCursor: C". Without
                             --prompt, --load-session, --resume-session,
                             --set-mode or --set-config no session is made
  --list-cwd DIR             session/list only the sessions of DIR
  --list-page-size N         ask for pages of N (Rebound's
                             _meta["rebound/pageSize"])
  --set-mode MODE            session/set_mode MODE once the session is open,
                             before the prompts
  --set-config ID=VALUE      session/set_config_option (repeatable, in order);
                             prints the answer's "configOptions: [json]".
                             An error answer is printed ("error: {json}")
                             and the client exits 1
  --close-session            session/close the session at the end
  --delete-session ID        session/delete ID (before --list-sessions)
  --cwd DIR                  session cwd (default: current dir; made absolute)
  --transcript FILE          write every JSON-RPC line as JSONL {ts,dir,msg}
  --cancel-after-ms N        send session/cancel N ms after the first session/prompt
  --permission MODE          allow (default: first allow_* option), reject
                             (first reject_* option), allow_always,
                             reject_always (that exact kind) or cancel
  --permission-delay-ms N    hold each permission request N ms before
                             answering (a session/cancel answers held
                             requests with outcome "cancelled" at once)
  --authenticate METHOD_ID   call authenticate after initialize; prints
                             "authenticate METHOD_ID: {json}" or, for an
                             error answer, "authenticate METHOD_ID error:
                             {json}", and goes on (then exits 1 at the end)
  --terminal-login TEXT      run the terminal auth method initialize
                             advertised, as an editor would: the agent
                             command plus the method's args and env, with
                             TEXT and a newline on its stdin (not a terminal);
                             prints "terminalLogin: {json}" (the method, exit
                             code, stdout); a non-zero exit makes the client
                             exit 1 at the end. Needs
                             --client-caps '{"auth":{"terminal":true}}'
  --mcp-server JSON          an mcpServers entry for session/new, load and
                             resume (repeatable, in order), e.g.
                             '{"name":"mock","command":"@MCPMOCK@","args":[],"env":[]}';
                             @MCPMOCK@ in any string is replaced by
                             $MCPMOCK_BIN (the trial's mock MCP server)
  --client-caps JSON         extra clientCapabilities, deep-merged over the
                             defaults, e.g. '{"session":{"notices":{}}}'
  --protocol-version N       protocolVersion to offer (default ${acp.PROTOCOL_VERSION})
  --timeout-ms N             give up after N ms (default 300000)
  --quiet                    do not print session updates to stderr
  -h, --help                 show this help`;

function parseArgs(argv) {
  const opts = {
    cwd: process.cwd(),
    permission: "allow",
    permissionDelayMs: 0,
    protocolVersion: acp.PROTOCOL_VERSION,
    timeoutMs: 300000,
    quiet: false,
    prompts: [],
    terminal: false,
    setConfig: [],
    mcpServers: [],
  };
  const sep = argv.indexOf("--");
  const own = sep >= 0 ? argv.slice(0, sep) : argv;
  opts.agent = sep >= 0 ? argv.slice(sep + 1) : [];
  const num = (name, v) => {
    const n = Number(v);
    if (!Number.isFinite(n) || n < 0) die(`${name} needs a non-negative number`);
    return n;
  };
  for (let i = 0; i < own.length; i++) {
    const a = own[i];
    const next = () => {
      if (i + 1 >= own.length) die(`${a} needs a value`);
      return own[++i];
    };
    switch (a) {
      case "--prompt": opts.prompts.push(next()); break;
      case "--terminal": opts.terminal = true; break;
      case "--load-session": opts.loadSession = next(); break;
      case "--resume-session": opts.resumeSession = next(); break;
      case "--list-sessions": opts.listSessions = true; break;
      case "--list-cwd": opts.listCwd = next(); break;
      case "--list-page-size": opts.listPageSize = num(a, next()); break;
      case "--set-mode": opts.setMode = next(); break;
      case "--set-config": {
        const v = next();
        const eq = v.indexOf("=");
        if (eq <= 0) die("--set-config needs ID=VALUE");
        opts.setConfig.push({ configId: v.slice(0, eq), value: v.slice(eq + 1) });
        break;
      }
      case "--close-session": opts.closeSession = true; break;
      case "--delete-session": opts.deleteSession = next(); break;
      case "--cwd": opts.cwd = next(); break;
      case "--transcript": opts.transcript = next(); break;
      case "--cancel-after-ms": opts.cancelAfterMs = num(a, next()); break;
      case "--permission": opts.permission = next(); break;
      case "--permission-delay-ms": opts.permissionDelayMs = num(a, next()); break;
      case "--authenticate": opts.authenticate = next(); break;
      case "--terminal-login": opts.terminalLogin = next(); break;
      case "--mcp-server": {
        let v;
        try { v = JSON.parse(next()); } catch { die("--mcp-server needs JSON"); }
        if (v === null || typeof v !== "object" || Array.isArray(v)) die("--mcp-server needs a JSON object");
        opts.mcpServers.push(v);
        break;
      }
      case "--client-caps":
        try { opts.clientCaps = JSON.parse(next()); } catch { die("--client-caps needs JSON"); }
        break;
      case "--protocol-version": opts.protocolVersion = num(a, next()); break;
      case "--timeout-ms": opts.timeoutMs = num(a, next()); break;
      case "--quiet": opts.quiet = true; break;
      case "-h": case "--help": console.log(USAGE); process.exit(0);
      default: die(`unknown option ${a}`);
    }
  }
  if (opts.loadSession && opts.resumeSession) die("--load-session and --resume-session exclude each other");
  // A session is wanted for anything but listing and deleting.
  opts.wantSession = opts.prompts.length > 0 || !!opts.loadSession || !!opts.resumeSession ||
    !!opts.setMode || opts.setConfig.length > 0 || !!opts.closeSession;
  if (!opts.wantSession && !opts.listSessions && !opts.deleteSession) {
    die("--prompt is required (or --load-session, --resume-session, --list-sessions, --delete-session)");
  }
  if (opts.agent.length === 0) die("agent command missing (put it after --)");
  if (!["allow", "reject", "cancel", "allow_always", "reject_always"].includes(opts.permission)) {
    die("--permission must be allow, reject, allow_always, reject_always or cancel");
  }
  opts.cwd = path.resolve(opts.cwd);
  if (opts.mcpServers.length > 0) opts.mcpServers = substMcpmock(opts.mcpServers);
  if (opts.listCwd) opts.listCwd = path.resolve(opts.listCwd);
  return opts;
}

function die(msg) {
  console.error(`acp-client: ${msg}\n\n${USAGE}`);
  process.exit(64);
}

const log = (...a) => console.error("[acp-client]", ...a);

// substMcpmock replaces @MCPMOCK@ in every string of v with $MCPMOCK_BIN.
function substMcpmock(v) {
  if (typeof v === "string") {
    if (!v.includes("@MCPMOCK@")) return v;
    const bin = process.env.MCPMOCK_BIN;
    if (!bin) die("@MCPMOCK@ used but MCPMOCK_BIN is not set");
    return v.split("@MCPMOCK@").join(bin);
  }
  if (Array.isArray(v)) return v.map(substMcpmock);
  if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, substMcpmock(x)]));
  return v;
}

// runTerminalLogin runs a terminal auth method the way an editor does: the
// agent's own command with the method's args appended and its env added,
// here with input on stdin instead of a terminal.
function runTerminalLogin(agentCmd, method, input) {
  return new Promise((resolve) => {
    const argv = [...agentCmd, ...(method.args ?? [])];
    const child = spawn(argv[0], argv.slice(1), {
      env: { ...process.env, ...(method.env ?? {}) },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "", stderr = "";
    child.stdout.on("data", (d) => { stdout += d; });
    child.stderr.on("data", (d) => { stderr += d; });
    child.stdin.on("error", () => {});
    child.stdin.end(input + "\n");
    child.on("error", (err) => resolve({ argv, exitCode: null, error: err.message, stdout, stderr }));
    child.on("close", (code, signal) => resolve({ argv, exitCode: code, signal, stdout, stderr }));
  });
}

function deepMerge(base, extra) {
  if (extra === null || typeof extra !== "object" || Array.isArray(extra)) return extra;
  const out = { ...(base && typeof base === "object" ? base : {}) };
  for (const [k, v] of Object.entries(extra)) out[k] = deepMerge(out[k], v);
  return out;
}

// ---------------------------------------------------------------- transcript
// Taps the raw byte streams, so it also records lines the SDK rejects or
// writes on its own (e.g. parse-error responses).
function makeTranscript(file) {
  const out = file ? fs.createWriteStream(file, { flags: "w" }) : null;
  const write = (dir, line) => {
    if (!out || line.trim() === "") return;
    let rec;
    try {
      rec = { ts: new Date().toISOString(), dir, msg: JSON.parse(line) };
    } catch {
      rec = { ts: new Date().toISOString(), dir, raw: line, parseError: true };
    }
    out.write(JSON.stringify(rec) + "\n");
  };
  const tap = (dir) => {
    const dec = new TextDecoder();
    let buf = "";
    return new TransformStream({
      transform(chunk, controller) {
        buf += dec.decode(chunk, { stream: true });
        let nl;
        while ((nl = buf.indexOf("\n")) >= 0) {
          write(dir, buf.slice(0, nl));
          buf = buf.slice(nl + 1);
        }
        controller.enqueue(chunk);
      },
      flush() {
        buf += dec.decode();
        if (buf) write(dir, buf);
      },
    });
  };
  const close = () => new Promise((r) => (out ? out.end(r) : r()));
  return { tap, close };
}

// ------------------------------------------------------------------- display
function showUpdate(quiet, n) {
  if (quiet) return;
  const u = n.update;
  switch (u.sessionUpdate) {
    case "agent_message_chunk":
    case "user_message_chunk":
    case "agent_thought_chunk": {
      const c = u.content;
      const text = c.type === "text" ? c.text : `[${c.type}]`;
      const tag = u.sessionUpdate === "agent_message_chunk" ? "agent" :
        u.sessionUpdate === "agent_thought_chunk" ? "thought" : "user";
      log(`${tag}: ${text}`);
      break;
    }
    case "tool_call":
      log(`tool_call ${u.toolCallId} "${u.title}" kind=${u.kind ?? "-"} status=${u.status ?? "pending"}` +
        ` content=${contentTypes(u.content)} locations=${JSON.stringify((u.locations ?? []).map((l) => l.path + (l.line != null ? ":" + l.line : "")))}` +
        ` rawInput=${JSON.stringify(u.rawInput ?? null)}`);
      break;
    case "tool_call_update":
      log(`tool_call_update ${u.toolCallId} status=${u.status ?? "-"}${u.title ? ` title="${u.title}"` : ""}` +
        `${u.kind ? ` kind=${u.kind}` : ""} content=${contentTypes(u.content)}` +
        `${u.content ? " " + contentSummary(u.content) : ""}`);
      break;
    case "plan":
      log(`plan: ${u.entries.map((e) => `[${e.status}] ${e.content}`).join(" | ")}`);
      break;
    default:
      log(`${u.sessionUpdate}: ${JSON.stringify(u)}`);
  }
}

// content types of a ToolCallContent[] (undefined/null => "-")
function contentTypes(content) {
  if (content == null) return "-";
  return "[" + content.map((c) => c.type === "content" ? `content/${c.content?.type}` : c.type).join(",") + "]";
}
function contentSummary(content) {
  return content.map((c) => {
    if (c.type === "diff") return `{diff ${c.path} old=${c.oldText == null ? "null" : c.oldText.length + "ch"} new=${c.newText.length}ch}`;
    if (c.type === "terminal") return `{terminal ${c.terminalId}}`;
    if (c.type === "content" && c.content?.type === "text") {
      const t = c.content.text;
      return `{text ${JSON.stringify(t.length > 160 ? t.slice(0, 160) + "…" : t)}}`;
    }
    return `{${c.type}}`;
  }).join(" ");
}

// ------------------------------------------------------------------ terminals
// Serves terminal/* the way an editor would: spawns command+args (no shell) in
// cwd, captures stdout+stderr interleaved, keeps at most outputByteLimit bytes
// (dropping from the beginning, at a character boundary).
function makeTerminals(quiet) {
  const terms = new Map();
  let next = 1;
  const trim = (t) => {
    if (t.limit == null || t.buf.length <= t.limit) return;
    let start = t.buf.length - t.limit;
    while (start < t.buf.length && (t.buf[start] & 0xc0) === 0x80) start++; // UTF-8 continuation byte
    t.buf = t.buf.subarray(start);
    t.truncated = true;
  };
  const status = (t) => t.exit ? { exitCode: t.exit.exitCode, signal: t.exit.signal } : null;
  const get = (params) => {
    const t = terms.get(params.terminalId);
    if (!t) throw acp.RequestError.invalidParams({ terminalId: params.terminalId, reason: "unknown or released terminal" });
    return t;
  };
  const killTree = (t) => {
    if (t.exit) return;
    try { process.kill(-t.child.pid, "SIGKILL"); } catch { try { t.child.kill("SIGKILL"); } catch {} }
  };
  return {
    create(params) {
      const id = `term-${next++}`;
      const env = { ...process.env };
      for (const e of params.env ?? []) env[e.name] = e.value;
      const t = { id, buf: Buffer.alloc(0), truncated: false, limit: params.outputByteLimit ?? null, exit: null };
      if (!quiet) log(`terminal/create ${id}: ${JSON.stringify([params.command, ...(params.args ?? [])])} cwd=${params.cwd ?? "-"} outputByteLimit=${params.outputByteLimit ?? "-"} env=${JSON.stringify(params.env ?? [])}`);
      t.child = spawn(params.command, params.args ?? [], {
        cwd: params.cwd ?? undefined, env, stdio: ["ignore", "pipe", "pipe"], detached: true,
      });
      const onData = (d) => { t.buf = Buffer.concat([t.buf, d]); trim(t); };
      t.child.stdout.on("data", onData);
      t.child.stderr.on("data", onData);
      t.exited = new Promise((resolve) => {
        let done = false;
        const finish = (exit) => { if (done) return; done = true; t.exit = exit; if (!quiet) log(`terminal ${id} exited ${JSON.stringify(exit)}`); resolve(exit); };
        t.child.on("close", (code, signal) => finish({ exitCode: code ?? null, signal: signal ?? null }));
        t.child.on("error", (err) => { onData(Buffer.from(`spawn error: ${err.message}\n`)); finish({ exitCode: 127, signal: null }); });
      });
      terms.set(id, t);
      return { terminalId: id };
    },
    output(params) {
      const t = get(params);
      const out = { output: t.buf.toString("utf8"), truncated: t.truncated };
      const st = status(t);
      if (st) out.exitStatus = st;
      return out;
    },
    async waitForExit(params, signal) {
      const t = get(params);
      const exit = await Promise.race([t.exited, new Promise((_, rej) => signal?.addEventListener("abort", () => rej(acp.RequestError.requestCancelled()), { once: true }))]);
      return { exitCode: exit.exitCode, signal: exit.signal };
    },
    kill(params) { killTree(get(params)); return {}; },
    release(params) {
      const t = get(params);
      killTree(t);
      terms.delete(params.terminalId);
      return {};
    },
    killAll() { for (const t of terms.values()) killTree(t); },
  };
}

// ---------------------------------------------------------- SDK validation
// The SDK parses what the agent sends it (requests, notifications) with its
// generated zod schemas, but hands responses back unparsed. So each response
// to the client's requests is parsed here with the SDK's zod schema of that
// method. The schemas are not among the package's exports; they are loaded
// by file URL from the installed package.
const RESPONSE_SCHEMAS = {
  [acp.methods.agent.initialize]: "zInitializeResponse",
  [acp.methods.agent.authenticate]: "zAuthenticateResponse",
  [acp.methods.agent.session.new]: "zNewSessionResponse",
  [acp.methods.agent.session.load]: "zLoadSessionResponse",
  [acp.methods.agent.session.list]: "zListSessionsResponse",
  [acp.methods.agent.session.delete]: "zDeleteSessionResponse",
  [acp.methods.agent.session.resume]: "zResumeSessionResponse",
  [acp.methods.agent.session.close]: "zCloseSessionResponse",
  [acp.methods.agent.session.setMode]: "zSetSessionModeResponse",
  [acp.methods.agent.session.setConfigOption]: "zSetSessionConfigOptionResponse",
  [acp.methods.agent.session.prompt]: "zPromptResponse",
};
async function loadZod() {
  const url = new URL("./node_modules/@agentclientprotocol/sdk/dist/v1/schema/zod.gen.js", import.meta.url);
  try {
    return await import(url.href);
  } catch (err) {
    log(`warning: the SDK's zod schemas could not be loaded (${err.message}); responses are not checked by the SDK's schemas`);
    return null;
  }
}

// ---------------------------------------------------------------------- main
async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const transcript = makeTranscript(opts.transcript);

  const child = spawn(opts.agent[0], opts.agent.slice(1), {
    stdio: ["pipe", "pipe", "inherit"],
  });
  let childExit = null;
  const childExited = new Promise((resolve) => {
    child.on("exit", (code, signal) => {
      childExit = { code, signal };
      resolve(childExit);
    });
    child.on("error", (err) => {
      log(`failed to start agent: ${err.message}`);
      childExit = { code: null, signal: null, error: err.message };
      resolve(childExit);
    });
  });
  child.stdin.on("error", () => {}); // EPIPE if the agent dies early

  // client -> agent: SDK writes bytes into sendTap, which copies to stdin.
  const sendTap = transcript.tap("send");
  void sendTap.readable.pipeTo(Writable.toWeb(child.stdin)).catch(() => {});
  // agent -> client: stdout bytes pass through recvTap into the SDK.
  const recvStream = Readable.toWeb(child.stdout).pipeThrough(transcript.tap("recv"));
  const stream = acp.ndJsonStream(sendTap.writable, recvStream);

  let sessionId = null;
  let cancelSent = false;
  const heldPermissions = new Set(); // resolvers for delayed permission answers

  const chooseOutcome = (options) => {
    if (cancelSent || opts.permission === "cancel") return { outcome: "cancelled" };
    const prefix = opts.permission === "allow" ? "allow" : opts.permission === "reject" ? "reject" : opts.permission;
    const opt = options.find((o) => String(o.kind).startsWith(prefix));
    if (!opt) {
      log(`no ${prefix}_* option offered; answering "cancelled"`);
      return { outcome: "cancelled" };
    }
    return { outcome: "selected", optionId: opt.optionId };
  };

  const terminals = makeTerminals(opts.quiet);
  let app = acp
    .client({ name: "acp-client" })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      showUpdate(opts.quiet, params);
      const k = params.update.sessionUpdate;
      if (k === "current_mode_update" || k === "config_option_update") {
        const { sessionUpdate, ...rest } = params.update;
        console.log(`update ${k}: ${JSON.stringify(rest)}`);
      }
    })
    .onRequest(acp.methods.client.session.requestPermission, async ({ params }) => {
      if (!opts.quiet) {
        const tc = params.toolCall;
        log(`permission requested for ${tc.toolCallId}: title=${JSON.stringify(tc.title ?? null)} kind=${tc.kind ?? "-"}` +
          ` content=${contentTypes(tc.content)}${tc.content ? " " + contentSummary(tc.content) : ""} options: ` +
          params.options.map((o) => `${o.optionId}(${o.kind} "${o.name}")`).join(", "));
      }
      if (opts.permissionDelayMs > 0 && !cancelSent) {
        await new Promise((resolve) => {
          const entry = { resolve };
          const t = setTimeout(() => { heldPermissions.delete(entry); resolve(); },
            opts.permissionDelayMs);
          entry.timer = t;
          heldPermissions.add(entry);
        });
      }
      const outcome = chooseOutcome(params.options);
      if (!opts.quiet) log(`permission answer: ${JSON.stringify(outcome)}`);
      return { outcome };
    })
    .onRequest(acp.methods.client.fs.readTextFile, async ({ params }) => {
      let text;
      try {
        text = await fsp.readFile(params.path, "utf8");
      } catch (err) {
        if (err.code === "ENOENT") throw acp.RequestError.resourceNotFound(params.path);
        throw acp.RequestError.internalError({ details: err.message });
      }
      if (params.line != null || params.limit != null) {
        const lines = text.split("\n");
        const start = Math.max(0, (params.line ?? 1) - 1);
        const end = params.limit != null ? start + params.limit : lines.length;
        text = lines.slice(start, end).join("\n");
      }
      return { content: text };
    })
    .onRequest(acp.methods.client.fs.writeTextFile, async ({ params }) => {
      await fsp.mkdir(path.dirname(params.path), { recursive: true });
      await fsp.writeFile(params.path, params.content, "utf8");
      return {};
    });
  if (opts.terminal) {
    const T = acp.methods.client.terminal;
    const wrap = (name, fn) => async (ctx) => {
      const res = await fn(ctx.params, ctx.signal);
      if (!opts.quiet && name !== "create") log(`${name} ${ctx.params.terminalId} -> ${JSON.stringify(res).slice(0, 200)}`);
      return res;
    };
    app = app
      .onRequest(T.create, wrap("create", (p) => terminals.create(p)))
      .onRequest(T.output, wrap("terminal/output", (p) => terminals.output(p)))
      .onRequest(T.waitForExit, wrap("terminal/wait_for_exit", (p, sig) => terminals.waitForExit(p, sig)))
      .onRequest(T.kill, wrap("terminal/kill", (p) => terminals.kill(p)))
      .onRequest(T.release, wrap("terminal/release", (p) => terminals.release(p)));
  }

  const timeout = setTimeout(() => {
    log(`timeout after ${opts.timeoutMs} ms; killing agent`);
    child.kill("SIGKILL");
  }, opts.timeoutMs);

  let exitCode = 0;
  const zod = await loadZod();
  let sdkInvalid = 0;
  // request sends method and checks the response with the SDK's schema: a
  // response it rejects is printed as "sdk-invalid: METHOD: issues" and makes
  // the client exit 1 at the end.
  const request = async (agent, method, params) => {
    const res = await agent.request(method, params);
    const schema = zod?.[RESPONSE_SCHEMAS[method]];
    if (zod && !schema) {
      sdkInvalid++;
      console.log(`sdk-invalid: ${method}: no response schema known for this method`);
    } else if (schema) {
      const parsed = schema.safeParse(res);
      if (!parsed.success) {
        sdkInvalid++;
        console.log(`sdk-invalid: ${method}: ${JSON.stringify(parsed.error.issues).slice(0, 1000)}`);
      }
    }
    return res;
  };
  try {
    const result = await app.connectWith(stream, async (agent) => {
      const init = await request(agent, acp.methods.agent.initialize, {
        protocolVersion: opts.protocolVersion,
        clientCapabilities: deepMerge({
          fs: { readTextFile: true, writeTextFile: true },
          terminal: opts.terminal,
        }, opts.clientCaps ?? {}),
        clientInfo: { name: "acp-client", title: "ACP test client", version: "0.1.0" },
      });
      if (init.protocolVersion !== opts.protocolVersion) {
        log(`warning: agent answered protocolVersion ${init.protocolVersion}, offered ${opts.protocolVersion}`);
      }
      if (!opts.quiet) {
        log(`initialized: agent=${JSON.stringify(init.agentInfo ?? null)} loadSession=${init.agentCapabilities?.loadSession ?? false} ` +
          `authMethods=${(init.authMethods ?? []).map((m) => m.id).join(",") || "-"}`);
      }
      console.log(`authMethods: ${JSON.stringify(init.authMethods ?? [])}`);
      if (opts.terminalLogin !== undefined) {
        const method = (init.authMethods ?? []).find((m) => m.type === "terminal");
        if (!method) {
          log("--terminal-login: initialize advertised no terminal auth method");
          console.log(`terminalLogin: ${JSON.stringify({ method: null })}`);
          exitCode = 1;
        } else {
          const res = await runTerminalLogin(opts.agent, method, opts.terminalLogin);
          if (!opts.quiet) log(`terminal login ${JSON.stringify(res.argv)}: exit ${res.exitCode}; stderr: ${JSON.stringify(res.stderr.slice(0, 500))}`);
          console.log(`terminalLogin: ${JSON.stringify({ method: method.id, argv: res.argv, exitCode: res.exitCode, stdout: res.stdout })}`);
          if (res.exitCode !== 0) exitCode = 1;
        }
      }
      if (opts.authenticate) {
        try {
          const res = await request(agent, acp.methods.agent.authenticate, { methodId: opts.authenticate });
          console.log(`authenticate ${opts.authenticate}: ${JSON.stringify(res)}`);
        } catch (err) {
          if (!(err instanceof acp.RequestError)) throw err;
          log(`authenticate ${opts.authenticate}: error ${err.code}: ${err.message}`);
          console.log(`authenticate ${opts.authenticate} error: ${JSON.stringify({ code: err.code, message: err.message, data: err.data })}`);
          exitCode = 1;
        }
      }
      const S = acp.methods.agent.session;
      if (opts.deleteSession) {
        const res = await request(agent, S.delete, { sessionId: opts.deleteSession });
        console.log(`deleted: ${opts.deleteSession} ${JSON.stringify(res)}`);
      }
      if (opts.listSessions) {
        let cursor;
        let pages = 0;
        do {
          const params = {};
          if (opts.listCwd) params.cwd = opts.listCwd;
          if (cursor) params.cursor = cursor;
          if (opts.listPageSize !== undefined) params._meta = { "rebound/pageSize": opts.listPageSize };
          const page = await request(agent, S.list, params);
          pages++;
          for (const s of page.sessions) console.log(`session: ${JSON.stringify(s)}`);
          console.log(`page: ${page.sessions.length} sessions, nextCursor: ${page.nextCursor ?? "-"}`);
          cursor = page.nextCursor ?? undefined;
          if (pages > 1000) throw new Error("session/list: more than 1000 pages; the cursor does not advance?");
        } while (cursor);
      }
      if (!opts.wantSession) return null;

      let sess;
      if (opts.loadSession) {
        sess = await request(agent, S.load, {
          sessionId: opts.loadSession,
          cwd: opts.cwd,
          mcpServers: opts.mcpServers,
        });
        sessionId = opts.loadSession;
        if (!opts.quiet) log(`session loaded: ${sessionId}`);
      } else if (opts.resumeSession) {
        sess = await request(agent, S.resume, {
          sessionId: opts.resumeSession,
          cwd: opts.cwd,
          mcpServers: opts.mcpServers,
        });
        sessionId = opts.resumeSession;
        if (!opts.quiet) log(`session resumed: ${sessionId}`);
      } else {
        sess = await request(agent, S.new, {
          cwd: opts.cwd,
          mcpServers: opts.mcpServers,
        });
        sessionId = sess.sessionId;
        if (!opts.quiet) log(`session: ${sessionId}`);
      }
      console.log(`sessionId: ${sessionId}`);
      if (sess?.modes !== undefined) console.log(`modes: ${JSON.stringify(sess.modes)}`);
      if (sess?.configOptions !== undefined) console.log(`configOptions: ${JSON.stringify(sess.configOptions)}`);

      if (opts.setMode) {
        const res = await request(agent, S.setMode, { sessionId, modeId: opts.setMode });
        console.log(`setMode ${opts.setMode}: ${JSON.stringify(res)}`);
      }
      for (const { configId, value } of opts.setConfig) {
        const res = await request(agent, S.setConfigOption, { sessionId, configId, value });
        console.log(`setConfig ${configId}=${value} configOptions: ${JSON.stringify(res.configOptions)}`);
      }

      let last = { stopReason: "(no prompt)" };
      for (const [i, text] of opts.prompts.entries()) {
        cancelSent = false;
        if (!opts.quiet && opts.prompts.length > 1) log(`--- prompt ${i + 1}/${opts.prompts.length}`);
        const promptDone = request(agent, acp.methods.agent.session.prompt, {
          sessionId,
          prompt: [{ type: "text", text }],
        });
        let cancelTimer;
        if (opts.cancelAfterMs !== undefined && i === 0) {
          cancelTimer = setTimeout(() => {
            cancelSent = true;
            if (!opts.quiet) log("sending session/cancel");
            void agent.notify(acp.methods.agent.session.cancel, { sessionId });
            // Spec: pending permission requests MUST be answered "cancelled".
            for (const entry of heldPermissions) {
              clearTimeout(entry.timer);
              entry.resolve();
            }
            heldPermissions.clear();
          }, opts.cancelAfterMs);
        }
        try {
          last = await promptDone;
        } finally {
          clearTimeout(cancelTimer);
        }
        if (opts.prompts.length > 1 && i < opts.prompts.length - 1) console.log(`stopReason: ${last.stopReason}`);
      }
      if (opts.closeSession) {
        const res = await request(agent, S.close, { sessionId });
        console.log(`closed: ${sessionId} ${JSON.stringify(res)}`);
      }
      return last;
    });
    if (result) console.log(`stopReason: ${result.stopReason}`);
    if (sdkInvalid > 0) {
      log(`${sdkInvalid} response(s) rejected by the SDK's schemas`);
      exitCode = 1;
    }
    if (exitCode !== 0) log("exiting 1: see the errors above");
  } catch (err) {
    exitCode = 1;
    if (err instanceof acp.RequestError) {
      log(`error ${err.code}: ${err.message}${err.data !== undefined ? " " + JSON.stringify(err.data) : ""}`);
      console.log(`error: ${JSON.stringify({ code: err.code, message: err.message, data: err.data })}`);
    } else {
      log(`error: ${err?.message ?? err}`);
    }
    await Promise.race([childExited, new Promise((r) => setTimeout(r, 500))]);
    if (childExit) log(`agent exited: ${JSON.stringify(childExit)}`);
  } finally {
    clearTimeout(timeout);
    terminals.killAll();
    // Spec (stdio transport): close stdin, then terminate the subprocess.
    child.stdin.end();
    const grace = setTimeout(() => child.kill("SIGTERM"), 2000);
    await Promise.race([childExited, new Promise((r) => setTimeout(r, 5000))]);
    clearTimeout(grace);
    if (!childExit) child.kill("SIGKILL");
    await transcript.close();
  }
  process.exit(exitCode);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
