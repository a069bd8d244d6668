#!/usr/bin/env python3
"""Checks for the editor trial (see README.md).

  check.py TRANSCRIPT.jsonl [...]
      Schema audit only: validates every agent->client message against the ACP
      v1 JSON schema shipped with the SDK (node_modules/@agentclientprotocol/
      sdk/schema/v1/schema.json): requests/notifications by method, responses
      by the method of the request they answer; reports non-JSON lines on the
      agent's stdout, error responses to the client's requests, responses to
      methods it has no schema for, and keys the schema does not define
      (strict audit, _meta excepted).

  check.py --case NAME [--run DIR]
      The schema audit of DIR/out/NAME.transcript.jsonl plus the assertions of
      case NAME over the transcript, the client's stdout and exit status, the
      mock provider's request log (what the model was sent) and the project
      directory DIR/proj as the case left it. Prints one line,
      "PASS NAME: what was checked" or "FAIL NAME: what failed", and exits 1
      on failure. DIR defaults to $TRIAL_RUN or .run next to this script.
"""
import json, os, re, sys
import jsonschema
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA_FILE = os.path.join(HERE, 'node_modules/@agentclientprotocol/sdk/schema/v1/schema.json')
SCHEMA = json.load(open(SCHEMA_FILE))
D = SCHEMA['$defs']
ROOT = "urn:acp"
from referencing.jsonschema import DRAFT202012
res = Resource.from_contents(SCHEMA, default_specification=DRAFT202012)
reg = Registry().with_resource(ROOT, res)

def validator(defname):
    return Draft202012Validator({"$ref": f"{ROOT}#/$defs/{defname}"}, registry=reg)

REQ = {"session/request_permission": "RequestPermissionRequest", "fs/read_text_file": "ReadTextFileRequest",
       "fs/write_text_file": "WriteTextFileRequest", "terminal/create": "CreateTerminalRequest",
       "terminal/output": "TerminalOutputRequest", "terminal/wait_for_exit": "WaitForTerminalExitRequest",
       "terminal/kill": "KillTerminalRequest", "terminal/release": "ReleaseTerminalRequest",
       "elicitation/create": "CreateElicitationRequest"}
NOTE = {"session/update": "SessionNotification", "$/cancel_request": "CancelRequestNotification"}
RESP = {"initialize": "InitializeResponse", "session/new": "NewSessionResponse", "session/load": "LoadSessionResponse",
        "session/prompt": "PromptResponse", "authenticate": "AuthenticateResponse",
        "session/list": "ListSessionsResponse", "session/resume": "ResumeSessionResponse",
        "session/set_mode": "SetSessionModeResponse", "session/set_config_option": "SetSessionConfigOptionResponse",
        "session/close": "CloseSessionResponse", "session/delete": "DeleteSessionResponse"}

# The unstable ACP parts Rebound implements (README, "Unstable ACP"): not in
# the SDK's stable schema, so the audit lets exactly these through; their
# shapes are checked by the golden harness against
# testdata/acp-schema/unstable.json.
UNSTABLE = ("InitializeResponse.agentCapabilities.providers",
            "InitializeResponse.agentCapabilities.sessionCapabilities.fork",
            "PromptResponse.usage")

def resolve(node):
    while isinstance(node, dict) and "$ref" in node:
        node = D[node["$ref"].split("/")[-1]]
    return node

def fits(node, inst):
    try:
        # resolve internal refs relative to ROOT
        return not any(True for _ in Draft202012Validator({"allOf": [rewrite(node)]}, registry=reg).iter_errors(inst))
    except Exception:
        return False

def rewrite(node):
    if isinstance(node, dict):
        return {k: (ROOT + v if k == "$ref" and isinstance(v, str) and v.startswith("#") else rewrite(v)) for k, v in node.items()}
    if isinstance(node, list):
        return [rewrite(x) for x in node]
    return node

def audit(node, inst, path, out):
    """Report keys of inst not defined by node (following $ref/allOf and matching oneOf/anyOf branches)."""
    node = resolve(node)
    if not isinstance(node, dict):
        return
    if isinstance(inst, list):
        items = node.get("items")
        if items is not None:
            for i, x in enumerate(inst):
                audit(items, x, f"{path}[{i}]", out)
        for b in node.get("anyOf", []) + node.get("oneOf", []):
            if fits(b, inst):
                audit(b, inst, path, out)
        return
    if not isinstance(inst, dict):
        return
    if not any(k in node for k in ("properties", "allOf", "oneOf", "anyOf", "additionalProperties")):
        return  # free-form value (e.g. rawInput)
    props = {}
    def gather(n):
        n = resolve(n)
        if not isinstance(n, dict):
            return
        props.update(n.get("properties", {}))
        for a in n.get("allOf", []):
            gather(a)
        for b in n.get("oneOf", []) + n.get("anyOf", []):
            if fits(b, inst):
                gather(b)
        if n.get("additionalProperties") not in (None, False):
            props["*"] = n["additionalProperties"]
    gather(node)
    for k, v in inst.items():
        if k == "_meta":
            continue
        if k in props:
            audit(props[k], v, f"{path}.{k}", out)
        elif "*" not in props:
            out.append(f"{path}.{k}")

def check(file, expected_errors=()):
    """The schema audit of file. An error response to a method in
    expected_errors is validated (as a JSON-RPC Error) but not reported."""
    problems = []
    pending = {}
    for n, line in enumerate(open(file), 1):
        rec = json.loads(line)
        if rec.get("parseError"):
            problems.append(f"{file}:{n}: NON-JSON line from {rec['dir']}: {rec['raw'][:200]!r}")
            continue
        m = rec["msg"]
        if rec["dir"] == "send":
            if "method" in m and "id" in m:
                pending[m["id"]] = m["method"]
            continue
        defname = None
        body = m
        if "method" in m:
            defname = (REQ if "id" in m else NOTE).get(m["method"])
            body = m.get("params")
            if defname is None:
                problems.append(f"{file}:{n}: unknown agent->client method {m['method']}")
                continue
        else:
            meth = pending.get(m.get("id"))
            if "error" in m:
                if meth not in expected_errors:
                    problems.append(f"{file}:{n}: error response to {meth}: {json.dumps(m['error'])[:300]}")
                    continue
                defname, body = "Error", m["error"]
            else:
                defname = RESP.get(meth)
                body = m.get("result")
            if defname is None:
                problems.append(f"{file}:{n}: response to {meth}, which check.py has no schema for (add it to RESP)")
                continue
        errs = list(validator(defname).iter_errors(body))
        for e in errs[:3]:
            problems.append(f"{file}:{n}: {defname} INVALID at {'/'.join(map(str, e.absolute_path))}: {e.message[:200]}")
        extra = []
        audit(D[defname], body, defname, extra)
        for x in extra:
            if any(x == u or x.startswith(u + ".") for u in UNSTABLE):
                continue
            problems.append(f"{file}:{n}: {defname}: key not in schema: {x}")
    return problems



# ----------------------------------------------------------------- the cases
# Each case function gets a Run and calls r.ok(condition, "what") for every
# assertion; "what" is what the PASS line lists (or the FAIL line, if false).

MAIN_GO = 'package main\n\nimport "fmt"\n\nfunc main() {\n\tfmt.Println("hello BANANA")\n}\n'  # as mkproj.sh writes it
MODEL_CAP = 64 * 1024 + 1024  # the 64 KiB output cap plus room for Rebound's notes


class Run:
    def __init__(self, run_dir, name):
        self.name = name
        self.run_dir = run_dir
        self.base = os.path.join(run_dir, "out", name)
        self.proj = os.path.join(run_dir, "proj")
        self.checked, self.failed = [], []
        self.recs = self._jsonl(self.base + ".transcript.jsonl")
        self.stdout = self._read(self.base + ".stdout") or ""
        self.mock = self._jsonl(self.base + ".mock.log")

    @staticmethod
    def _read(path):
        try:
            with open(path, encoding="utf-8") as f:
                return f.read()
        except FileNotFoundError:
            return None

    def _jsonl(self, path):
        text = self._read(path)
        return [json.loads(l) for l in text.splitlines() if l.strip()] if text else []

    def ok(self, cond, what):
        (self.checked if cond else self.failed).append(what)
        return cond

    # -- transcript
    def msgs(self, dir=None):
        return [(i, r["msg"]) for i, r in enumerate(self.recs)
                if "msg" in r and (dir is None or r["dir"] == dir)]

    def requests(self, method):
        """agent->client requests of method, as (index, msg)."""
        return [(i, m) for i, m in self.msgs("recv") if m.get("method") == method and "id" in m]

    def notes(self, method):
        return [(i, m) for i, m in self.msgs("recv") if m.get("method") == method and "id" not in m]

    def answer(self, req_id):
        """the client's response to the agent's request req_id."""
        for i, m in self.msgs("send"):
            if m.get("id") == req_id and "method" not in m:
                return m
        return None

    def sent(self, method):
        """client->agent requests of method, as (index, msg)."""
        return [(i, m) for i, m in self.msgs("send") if m.get("method") == method and "id" in m]

    def responses(self, method):
        """the agent's responses to the client's requests of method, as
        (index, msg), in order."""
        ids = {m["id"] for _, m in self.sent(method)}
        return [(i, m) for i, m in self.msgs("recv") if "method" not in m and m.get("id") in ids]

    def result(self, method, n=0):
        """the result of the n-th response to method (None if none, or an error)."""
        r = self.responses(method)
        return r[n][1].get("result") if len(r) > n else None

    def out_json(self, prefix):
        """the JSON after prefix on each stdout line that starts with it."""
        return [json.loads(l[len(prefix):]) for l in self.stdout.splitlines() if l.startswith(prefix)]

    def sid(self):
        got = re.findall(r"^sessionId: (.*)$", self.stdout, re.M)
        return got[0] if got else None

    def listed(self):
        """the sessions the client printed from session/list."""
        return self.out_json("session: ")

    def terminal_requests(self):
        return [(i, m) for i, m in self.msgs("recv") if str(m.get("method", "")).startswith("terminal/")]

    def updates(self, tc=None, kind=None):
        out = []
        for i, m in self.notes("session/update"):
            u = m["params"]["update"]
            if kind and u["sessionUpdate"] != kind:
                continue
            if tc and u.get("toolCallId") != tc:
                continue
            out.append((i, u))
        return out

    def tool(self, tc):
        return self.updates(tc=tc)

    def started(self, tc):
        return [u for _, u in self.updates(tc=tc, kind="tool_call")]

    def status(self, tc):
        st = None
        for _, u in self.tool(tc):
            st = u.get("status", st)
        return st

    def texts(self, tc):
        """every text the user is shown for tc (tool content of kind text)."""
        out = []
        for _, u in self.tool(tc):
            for c in u.get("content") or []:
                if c.get("type") == "content" and c["content"].get("type") == "text":
                    out.append(c["content"]["text"])
        return out

    def agent_text(self):
        return "".join(u["content"].get("text", "") for _, u in self.updates(kind="agent_message_chunk"))

    def stop_reasons(self):
        return re.findall(r"^stopReason: (.*)$", self.stdout, re.M)

    def permissions(self, tc=None):
        out = []
        for i, m in self.requests("session/request_permission"):
            if tc and m["params"]["toolCall"]["toolCallId"] != tc:
                continue
            a = self.answer(m["id"])
            out.append((i, m, (a or {}).get("result", {}).get("outcome", {})))
        return out

    # -- what the model was sent (mock provider's request log)
    def model_result(self, tc, req=-1):
        """the tool result for tc in the req-th request to the model."""
        if not self.mock:
            return None
        found = [m.get("content") for m in self.mock[req]["messages"]
                 if m.get("role") == "tool" and m.get("toolCallId") == tc]
        return found[0] if len(found) == 1 else None

    # -- the project
    def file(self, rel):
        return self._read(os.path.join(self.proj, rel))

    # -- common assertions
    def terminal_status_before_release(self, tc, needle):
        """a tool_call_update with [terminal, text containing needle] for tc,
        sent before terminal/release of that terminal."""
        term = None
        for _, u in self.tool(tc):
            for c in u.get("content") or []:
                if c.get("type") == "terminal":
                    term = c["terminalId"]
        rel = [i for i, m in self.requests("terminal/release") if m["params"]["terminalId"] == term]
        for i, u in self.tool(tc):
            c = u.get("content") or []
            types = [x.get("type") for x in c]
            if types == ["terminal", "content"] and c[0]["terminalId"] == term and needle in c[1]["content"].get("text", ""):
                return bool(rel) and i < rel[0]
        return False

    def cancel_request_for(self, method):
        ids = {m["id"] for _, m in self.requests(method)}
        return any(m["params"].get("requestId") in ids for _, m in self.notes("$/cancel_request"))

    def tail_kept(self, text, exit_code):
        return (text is not None and len(text.encode()) <= MODEL_CAP
                and "\nEND\n" in text[-400:] and text.rstrip().endswith(f"[exit code {exit_code}]"))


def common(r, stops, rc_want="0", errors=(), warns=()):
    """schema, exit statuses, stop reasons, no warn/error in Rebound's log,
    no response the SDK's own schemas rejected; listed as one item when they
    all hold. errors are the methods whose error responses the case expects
    (and checks itself); warns are regexps of the log lines at warn level the
    case expects (and checks itself)."""
    n = len(r.failed)
    issues = check(r.base + ".transcript.jsonl", errors) if r.recs else ["no transcript"]
    if issues:
        r.failed.append(f"schema: {issues[0]}" + (f" (+{len(issues) - 1} more)" if len(issues) > 1 else ""))
    sdk = [l for l in r.stdout.splitlines() if l.startswith("sdk-invalid: ")]
    if sdk:
        r.failed.append(f"the SDK's schema rejected: {sdk[0][:300]}" + (f" (+{len(sdk) - 1} more)" if len(sdk) > 1 else ""))
    rc, mrc = (r._read(r.base + ".rc") or "?").strip(), (r._read(r.base + ".mock.rc") or "?").strip()
    if rc != rc_want:
        r.failed.append(f"client exit {rc}, want {rc_want}")
    if mrc != "0":
        r.failed.append(f"mock-provider exit {mrc}")
    got = r.stop_reasons()
    if got != stops:
        r.failed.append(f"stopReason {got}, want {stops}")
    stderr = r._read(r.base + ".stderr") or ""
    bad = [l for l in stderr.splitlines() if re.search(r'"level":"(warn|error|fatal|panic)"', l)
           and not any(re.search(w, l) for w in warns)]
    if bad:
        r.failed.append(f"agent logged: {bad[0][:200]}")
    if len(r.failed) == n:
        exits = "exits 0" if rc_want == "0" else f"client exit {rc_want}, mock exit 0"
        nowarn = "no other warn log" if warns else "no warn log"
        r.checked.append(f"stopReason {','.join(stops) or '-'} (schema ok, SDK schemas ok, {exits}, {nowarn})")


def case_a(r):
    common(r, ["end_turn"])
    reads = [m["params"]["path"] for _, m in r.requests("fs/read_text_file")]
    r.ok(reads == [os.path.join(r.proj, "README.md")], "README read via fs/read_text_file")
    r.ok([r.status(t) for t in ("call_1", "call_2", "call_3")] == ["completed"] * 3, "3 tools completed")
    r.ok(r.texts("call_2") == ["2 files"] and r.model_result("call_2") == "main.go\npkg/util/util.go\n",
         "find skips .gitignored files")
    res = r.model_result("call_3") or ""
    r.ok(r.texts("call_3") == ["3 matches"] and res.count("\n") == 3
         and not re.search(r"vendor_ignored|build/|debug\.log", res), "search: 3 matches, ignored files skipped")


def case_b(r):
    common(r, ["end_turn"])
    p = r.permissions("call_1")
    r.ok(len(p) == 1 and [c["type"] for c in p[0][1]["params"]["toolCall"].get("content", [])] == ["diff"],
         "permission asked with a diff")
    r.ok(p and p[0][2].get("optionId") == "allow_once", "allowed once")
    w = r.requests("fs/write_text_file")
    r.ok(len(w) == 1 and w[0][1]["params"]["path"] == os.path.join(r.proj, "main.go"), "fs/write_text_file main.go")
    r.ok(r.status("call_1") == "completed", "completed")
    r.ok(r.file("main.go") == MAIN_GO.replace("hello BANANA", "hello APPLE"), "main.go changed on disk")


def case_c(r):
    common(r, ["end_turn"])
    p = r.permissions("call_1")
    r.ok(p and p[0][2].get("optionId") == "reject_once", "rejected once")
    r.ok(not r.requests("fs/write_text_file"), "no fs/write_text_file")
    r.ok(r.status("call_1") == "failed" and r.texts("call_1") == ["Rejected"], 'failed, user sees "Rejected"')
    r.ok("declined" in (r.model_result("call_1") or ""), "model told the user declined")
    r.ok(r.file("main.go") == MAIN_GO, "main.go unchanged on disk")


def terminal_flow(r, tc):
    """terminal/create, then wait_for_exit, output and release of that terminal, in order."""
    c = r.requests("terminal/create")
    if len(c) != 1:
        return False
    a = r.answer(c[0][1]["id"])
    term = (a or {}).get("result", {}).get("terminalId")
    seq = [m["method"] for _, m in r.terminal_requests() if m["params"].get("terminalId") == term]
    shown = any(any(x.get("type") == "terminal" and x.get("terminalId") == term for x in u.get("content") or [])
                for _, u in r.tool(tc))
    return shown and seq == ["terminal/wait_for_exit", "terminal/output", "terminal/release"]


def case_d(r):
    common(r, ["end_turn"])
    c = r.requests("terminal/create")
    r.ok(len(c) == 1 and c[0][1]["params"]["command"] == "/bin/sh"
         and c[0][1]["params"].get("args") == ["-c", "echo hi; ls"] and c[0][1]["params"].get("cwd") == r.proj,
         "terminal/create /bin/sh -c in the project")
    r.ok(terminal_flow(r, "call_1"), "terminal shown, then wait_for_exit/output/release")
    r.ok(r.status("call_1") == "completed", "completed")
    res = r.model_result("call_1") or ""
    r.ok(res.startswith("hi\n") and res.endswith("[exit code 0]"), "model got output and exit code 0")


def case_e(r):
    common(r, ["end_turn"])
    r.ok(not r.terminal_requests(), "no terminal/* (not offered): ran locally")
    r.ok(r.status("call_1") == "completed" and any("hi\n" in t and "[exit code 0]" in t for t in r.texts("call_1")),
         "completed, user sees output and exit code")
    res = r.model_result("call_1") or ""
    r.ok(res.startswith("hi\n") and res.endswith("[exit code 0]"), "model got output and exit code 0")


def case_f(r):
    common(r, ["end_turn"])
    r.ok(len(r.mock) == 3, "3 model requests (1 dropped stream, 1 retry)")
    r.ok(len(r.started("call_1")) == 1 and len(r.requests("fs/read_text_file")) == 1, "tool ran once")
    phases = [u["_meta"]["rebound/retry"].get("phase") for _, u in r.updates(kind="session_info_update")
              if "rebound/retry" in u.get("_meta", {})]
    r.ok(phases == ["scheduled", "started"], "retry scheduled+started shown")
    titles = [u.get("title") for _, u in r.updates(kind="session_info_update") if u.get("title")]
    r.ok(len(titles) == 1, "the session's title sent once, after the first turn")
    r.ok(r.agent_text() == "Reading the README.The magic word is BANANA, says the README.", "reply shown once, whole")
    r.ok(len(r.mock) == 3 and r.model_result("call_1", 2) is not None, "retry sent the tool result once")


def case_g(r):
    common(r, ["cancelled"])
    p = r.permissions("call_1")
    r.ok(p and p[0][2] == {"outcome": "cancelled"}, "permission answered cancelled")
    r.ok(r.cancel_request_for("session/request_permission"), "$/cancel_request for the permission request")
    r.ok(r.status("call_1") == "failed" and not r.started("call_2"), "call_1 failed, call_2 never started")
    r.ok(not r.requests("fs/write_text_file") and not r.terminal_requests(), "nothing written or run")
    r.ok(len(r.mock) == 1, "no model request after the cancel")
    r.ok(r.file("main.go") == MAIN_GO, "main.go unchanged on disk")


def case_g2(r):
    common(r, ["end_turn"])
    users = [u["content"]["text"] for _, u in r.updates(kind="user_message_chunk")]
    r.ok(users == ["edit then test"], "replay: the cancelled prompt")
    st = {u["toolCallId"]: (u.get("status"), u.get("title")) for _, u in r.updates(kind="tool_call")}
    r.ok(st.get("call_1") == ("failed", "Edit `main.go`") and st.get("call_2") == ("failed", "Run `go vet ./...`"),
         "replay: both calls failed, the unrun one described")
    r.ok("after cancel ok" in r.agent_text(), "new prompt answered")
    msgs = r.mock[0]["messages"] if r.mock else []
    r.ok(r.model_result("call_1", 0) is not None and r.model_result("call_2", 0) is not None
         and msgs[-1] == {"role": "user", "content": "again"} if msgs else False,
         "model history: a result for each call, then the new prompt")
    r.ok(r.file("main.go") == MAIN_GO, "main.go unchanged")


def case_g3(r):
    common(r, ["cancelled", "end_turn"])
    r.ok(r.cancel_request_for("session/request_permission"), "$/cancel_request for the permission request")
    r.ok(r.status("call_1") == "failed" and not r.started("call_2"), "call_1 failed, call_2 never started")
    r.ok(r.agent_text().endswith("Second prompt answered."), "next prompt in the same connection answered")
    r.ok(len(r.mock) == 2 and r.model_result("call_1", 1) is not None and r.model_result("call_2", 1) is not None,
         "model history has a result for each call")
    r.ok(r.file("main.go") == MAIN_GO, "main.go unchanged")


def case_h(r):
    common(r, ["end_turn"])
    calls = ("call_1", "call_2", "call_3")
    locs = [((r.started(t) or [{}])[0].get("locations") or [{}])[0].get("path") for t in calls]
    r.ok(locs[:2] == ["/etc/passwd", "/etc/passwd"], "../ and absolute path both name /etc/passwd")
    r.ok([r.status(t) for t in calls] == ["failed"] * 3, "3 escaping reads failed")
    r.ok(not r.requests("fs/read_text_file"), "escape refused without asking the editor")
    res = [r.model_result(t) or "" for t in calls]
    r.ok(all("outside the workspace" in x for x in res) and "symlink" in res[2],
         "model told: outside the workspace (.., absolute, symlink)")
    r.ok(not any("root:" in t for tc in calls for t in r.texts(tc)) and not any("root:" in x for x in res),
         "no passwd content leaked")


def case_i1(r):
    common(r, ["end_turn"] * 3)
    p = r.permissions()
    r.ok(len(p) == 1 and p[0][1]["params"]["toolCall"]["toolCallId"] == "call_2"
         and p[0][2].get("optionId") == "allow_always", "one permission (edit), allow_always")
    r.ok(r.status("call_3") == "completed" and not r.permissions("call_3"), "later write not asked again")
    r.ok("hello APPLE" in (r.file("main.go") or "") and r.file("notes/new.txt") == "fresh\n", "files on disk")


def case_i2(r):
    common(r, ["end_turn"])
    users = [u["content"]["text"] for _, u in r.updates(kind="user_message_chunk")]
    r.ok(users == ["what does main.go print", "change it to APPLE", "write a note"], "replay: 3 prompts")
    r.ok([u.get("status") for _, u in r.updates(kind="tool_call")][:3] == ["completed"] * 3, "replay: 3 calls completed")
    r.ok(not r.permissions() and r.status("call_4") == "completed", "allow_always survived the load (not asked)")
    r.ok(r.file("notes/new.txt") == "loaded\n", "notes/new.txt edited on disk")


def case_k(r):
    common(r, ["cancelled", "end_turn"])
    r.ok(r.cancel_request_for("terminal/wait_for_exit"), "$/cancel_request for wait_for_exit")
    meths = [m["method"] for _, m in r.terminal_requests()]
    r.ok(meths == ["terminal/create", "terminal/wait_for_exit", "terminal/kill", "terminal/output", "terminal/release"],
         "create/wait/kill/output/release")
    r.ok(r.terminal_status_before_release("call_1", "cancelled"), "[terminal, cancelled status] before release")
    r.ok(r.status("call_1") == "failed" and not r.started("call_2") and not r.requests("fs/read_text_file"),
         "failed; next call never ran")
    res = r.model_result("call_1") or ""
    r.ok("started" in res and "cancelled" in res and "never" not in res, "model: output so far, cancelled")


def case_k2(r):
    common(r, ["cancelled"])
    r.ok(not r.terminal_requests(), "ran locally")
    t = "\n".join(r.texts("call_1"))
    r.ok(r.status("call_1") == "failed" and "started" in t and "cancelled" in t and "never" not in t,
         "failed, user sees output so far + cancelled, process killed")
    r.ok(not r.started("call_2") and len(r.mock) == 1, "next call never ran, no model request after cancel")


def case_x(r):
    common(r, ["end_turn"])
    r.ok(r.status("call_1") == "failed" and r.terminal_status_before_release("call_1", "[exit code 3]"),
         "exit 3: failed, [terminal, exit code] before release")
    r.ok(r.tail_kept(r.model_result("call_1"), 3) and "cut" in r.model_result("call_1"),
         "100 KB output: model got the tail + exit code, <=64 KiB")
    kill = [m["params"]["terminalId"] for _, m in r.requests("terminal/kill")]
    r.ok(r.status("call_2") == "failed" and kill == ["term-2"] and r.cancel_request_for("terminal/wait_for_exit")
         and r.terminal_status_before_release("call_2", "timed out"),
         "timeout: killed, $/cancel_request, [terminal, timed out] before release")
    res2 = r.model_result("call_2") or ""
    r.ok("start" in res2 and "timed out" in res2 and "never" not in res2, "model told it timed out")
    r.ok(r.status("call_3") == "failed" and not r.permissions("call_3") and r.file("main.go") == MAIN_GO,
         "edit with missing old_text: failed, not asked, file unchanged")
    r.ok(r.status("call_4") == "completed" and r.model_result("call_4") == "vendor_ignored/dep/dep.go\n",
         "find in an ignored dir named explicitly")
    r.ok(r.status("call_5") == "failed" and "regular expression" in (r.model_result("call_5") or ""), "bad regexp failed")
    r.ok(r.status("call_6") == "completed", "read of an ignored file")
    t7 = (r.started("call_7") or [{}])[0].get("title", "")
    r.ok(t7.startswith("Run ````") and t7.endswith("````") and r.status("call_7") == "completed"
         and (r.model_result("call_7") or "").endswith("```\n[exit code 0]"), "backticks stay in the title's code span")
    reads = [m["params"]["path"] for _, m in r.requests("fs/read_text_file")]
    r.ok(r.status("call_8") == "failed" and r.texts("call_8") == ["nope.txt does not exist"]
         and not any(p.endswith("nope.txt") for p in reads), "missing file named, editor not asked")


def case_xload(r):
    common(r, ["(no prompt)"])
    x = Run(r.run_dir, "x")
    want = {f"call_{i}": x.status(f"call_{i}") for i in range(1, 9)}
    got = {u["toolCallId"]: u.get("status") for _, u in r.updates(kind="tool_call")}
    r.ok(got == want, "replay: the 8 calls with their final statuses")
    r.ok(not r.terminal_requests() and not r.permissions() and not r.requests("fs/read_text_file") and not r.mock,
         "nothing re-run, no model request")


def case_y(r):
    common(r, ["end_turn"])
    r.ok(not r.terminal_requests(), "ran locally")
    res = r.model_result("call_1")
    r.ok(r.status("call_1") == "failed", "exit 3: failed")
    r.ok(r.tail_kept(res, 3) and "omitted" in res, "100 KB output: model got the tail + exit code, <=64 KiB")


def case_yt(r):
    common(r, ["end_turn"])
    c = r.requests("terminal/create")
    r.ok(len(c) == 1 and c[0][1]["params"].get("outputByteLimit") == 65536, "terminal/create outputByteLimit 65536")
    r.ok(r.status("call_1") == "failed" and r.terminal_status_before_release("call_1", "[exit code 3]"),
         "exit 3: failed, [terminal, exit code] before release")
    res = r.model_result("call_1")
    r.ok(r.tail_kept(res, 3) and "cut" in res, "model got the tail + exit code, <=64 KiB")


def case_z(r):
    common(r, ["refusal"])
    r.ok(bool(r.updates(kind="agent_thought_chunk")), "reasoning shown as thought chunks")
    r.ok(r.status("call_1") == "completed", "find completed")
    pol = [u["_meta"]["rebound/retry"].get("policy") for _, u in r.updates(kind="session_info_update")
           if u.get("_meta", {}).get("rebound/retry", {}).get("phase") == "scheduled"]
    # Live (the default): the cut reply was shown, so it is continued, not
    # retried from scratch; held would retry it once with a larger budget.
    r.ok(pol == ["continuation"] and len(r.mock) == 3, "truncated step continued once (live: shown text is kept)")


# ------------------------------------------------ session list, resume, modes, config, close, delete

MODES = ["ask", "accept_edits", "read_only", "full_access"]
READ_TOOLS = ["find_files", "read_file", "search_files", "update_plan"]  # the plan tool changes nothing


def opt(options, id):
    """the config option id of a configOptions list (None if absent)."""
    return next((o for o in options or [] if o.get("id") == id), None)


def ids(options):
    return [o.get("id") for o in options or []]


def values(option):
    return sorted(c.get("value") for c in (option or {}).get("options", []))


def session_answer(r, method):
    """the answer to session/new, load or resume, checked to carry the modes
    and config options (mode, model) and to be what the client printed."""
    res = r.result(method) or {}
    modes, conf = res.get("modes") or {}, res.get("configOptions")
    ok = ([m.get("id") for m in modes.get("availableModes", [])] == MODES
          and ids(conf)[:2] == ["mode", "model"] and opt(conf, "mode")["currentValue"] == modes.get("currentModeId")
          and values(opt(conf, "mode")) == sorted(MODES)
          and r.out_json("modes: ") == [modes] and r.out_json("configOptions: ") == [conf])
    return res, ok


def summary_ok(s, sid, cwd, title):
    """s (a listed session) is sid in cwd, with title and an ISO updatedAt."""
    return (s is not None and s.get("sessionId") == sid and s.get("cwd") == cwd and s.get("title") == title
            and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", s.get("updatedAt") or "") is not None)


def case_l1(r):
    common(r, ["end_turn"])
    init = r.result("initialize") or {}
    caps = (init.get("agentCapabilities") or {}).get("sessionCapabilities") or {}
    r.ok(all(k in caps for k in ("list", "resume", "close", "delete")), "initialize: sessionCapabilities list, resume, close, delete")
    res, ok = session_answer(r, "session/new")
    r.ok(ok and res["modes"]["currentModeId"] == "ask", "session/new answers modes (ask) and configOptions mode, model")
    r.ok(ids(res.get("configOptions")) == ["mode", "model"] and opt(res["configOptions"], "model")["currentValue"] == "mock-model",
         "no thought_level for mock-model (takes no reasoning effort)")


def case_l2(r):
    common(r, ["end_turn"])
    new = r.sent("session/new")
    r.ok(len(new) == 1 and new[0][1]["params"]["cwd"] == os.path.join(r.run_dir, "proj2"), "session made in proj2")


def case_l(r):
    common(r, [])
    l1, l2 = Run(r.run_dir, "l1"), Run(r.run_dir, "l2")
    reqs = [m["params"] for _, m in r.sent("session/list")]
    pages = [m.get("result") or {} for _, m in r.responses("session/list")]
    r.ok(len(pages) == len(reqs) and len(pages) > 2 and all(len(p.get("sessions", [])) <= 5 for p in pages)
         and all(p.get("nextCursor") for p in pages[:-1]) and "nextCursor" not in pages[-1],
         f"{len(pages)} pages of <= 5 (rebound/pageSize), the last without nextCursor")
    r.ok([q.get("cursor") for q in reqs] == [None] + [p.get("nextCursor") for p in pages[:-1]],
         "each page asked with the previous page's nextCursor")
    got = r.listed()
    sids = [s.get("sessionId") for s in got]
    on_disk = sorted(f[:-len(".jsonl")] for f in os.listdir(os.path.join(r.run_dir, "state", "sessions")) if f.endswith(".jsonl"))
    r.ok(len(sids) == len(set(sids)) and sorted(sids) == on_disk, f"{len(sids)} sessions, each once: every session on disk")
    r.ok([s.get("updatedAt") for s in got] == sorted((s.get("updatedAt") for s in got), reverse=True), "most recent first")
    by = {s.get("sessionId"): s for s in got}
    r.ok(summary_ok(by.get(l1.sid()), l1.sid(), os.path.join(r.run_dir, "proj"), "edit main.go for the list"),
         "l1's session listed with cwd, title and updatedAt")
    r.ok(summary_ok(by.get(l2.sid()), l2.sid(), os.path.join(r.run_dir, "proj2"), "edit main.go elsewhere"),
         "l2's session (proj2) listed too")


def case_lc(r):
    common(r, [])
    l1, l2 = Run(r.run_dir, "l1"), Run(r.run_dir, "l2")
    proj = os.path.join(r.run_dir, "proj")
    reqs = [m["params"] for _, m in r.sent("session/list")]
    got = r.listed()
    r.ok(reqs and all(q.get("cwd") == proj for q in reqs), "session/list with cwd proj")
    r.ok(got and all(s.get("cwd") == proj for s in got), f"{len(got)} sessions, all in proj")
    sids = {s.get("sessionId") for s in got}
    r.ok(l1.sid() in sids and l2.sid() not in sids, "l1's session in, l2's (proj2) filtered out")


def case_r(r):
    common(r, ["end_turn"])
    l1 = Run(r.run_dir, "l1")
    res = r.sent("session/resume")
    r.ok(len(res) == 1 and res[0][1]["params"]["sessionId"] == l1.sid() and r.sid() == l1.sid() and not r.sent("session/new"),
         "session/resume of l1's session")
    _, ok = session_answer(r, "session/resume")
    r.ok(ok, "the answer has modes and configOptions")
    prompt_at = r.sent("session/prompt")[0][0] if r.sent("session/prompt") else -1
    # After the answer, before the prompt, only the session's state: the
    # commands, its configuration and its usage, never its conversation.
    state = ("available_commands_update", "config_option_update", "usage_update")
    r.ok(not r.updates(kind="user_message_chunk")
         and all(i > prompt_at or m["params"]["update"]["sessionUpdate"] in state for i, m in r.notes("session/update")),
         "no replay: no user_message_chunk, nothing before the prompt but commands, config options and usage")
    msgs = r.mock[0]["messages"] if r.mock else []
    r.ok(len(r.mock) == 1 and [m["role"] for m in msgs] == ["system", "user", "assistant", "tool", "assistant", "user"]
         and msgs[1]["content"] == "edit main.go for the list" and msgs[2].get("toolCalls", [{}])[0].get("id") == "call_1"
         and msgs[3].get("toolCallId") == "call_1" and msgs[4]["content"] == "Edited." and msgs[5]["content"] == "continue",
         "the model got l1's turn (prompt, edit call, result, reply), then the new prompt")
    r.ok(r.agent_text() == "Resumed: the earlier edit is still in my history.", "reply shown")


def case_m(r):
    common(r, ["end_turn"])
    res, ok = session_answer(r, "session/new")
    r.ok(ok and res["modes"]["currentModeId"] == "ask", "new session in mode ask")
    sm = r.sent("session/set_mode")
    r.ok(len(sm) == 1 and sm[0][1]["params"]["modeId"] == "read_only" and r.result("session/set_mode") == {},
         "session/set_mode read_only answered {}")
    resp_at = r.responses("session/set_mode")[0][0] if r.responses("session/set_mode") else -1
    cou = [(i, u) for i, u in r.updates(kind="config_option_update")]
    r.ok(len(cou) == 1 and sm and sm[0][0] < cou[0][0] < resp_at
         and (opt(cou[0][1]["configOptions"], "mode") or {}).get("currentValue") == "read_only"
         and ids(cou[0][1]["configOptions"]) == ["mode", "model"]
         and r.out_json("update config_option_update: ") == [{"configOptions": cou[0][1]["configOptions"]}],
         "config_option_update (mode read_only, all options) before the answer")
    r.ok(len(r.mock) == 2 and all(sorted(m.get("tools") or []) == READ_TOOLS for m in r.mock),
         "the model was offered only read_file, find_files, search_files (and update_plan)")
    r.ok(r.status("call_1") == "failed" and r.texts("call_1") == ["Not run: the session is read-only"],
         "write_file failed, user sees: Not run: the session is read-only")
    r.ok((r.model_result("call_1") or "").startswith("This session is read-only: write_file was not run."),
         "model told the session is read-only")
    r.ok(not r.permissions() and not r.requests("fs/write_text_file") and r.file("notes/ro.txt") is None,
         "not asked, nothing written")


def case_o(r):
    common(r, ["end_turn"])
    res, ok = session_answer(r, "session/new")
    conf0 = res.get("configOptions")
    # The answer does not wait for the provider's model list: it may come
    # in one config_option_update after it (then the only one).
    lists = [u["configOptions"] for _, u in r.updates(kind="config_option_update")]
    listed = lists[0] if lists else conf0
    r.ok(ok and ids(conf0) == ["mode", "model"] and opt(conf0, "model")["currentValue"] == "mock-model"
         and len(lists) <= 1 and set(["gpt-4o-mini", "mock-model", "o3-mini"]) <= set(values(opt(listed, "model"))),
         "new: mode, model (mock-model; the mock's models listed, in the answer or the one update after it), no thought_level")
    sets = [m["params"] for _, m in r.sent("session/set_config_option")]
    answers = [(m.get("result") or {}).get("configOptions") for _, m in r.responses("session/set_config_option")]
    r.ok([(p["configId"], p["value"]) for p in sets] == [("model", "o3-mini"), ("thought_level", "high"), ("mode", "accept_edits")]
         and len(answers) == 3, "3 set_config_option answered")
    printed = [l.split(" configOptions: ", 1)[1] for l in r.stdout.splitlines() if l.startswith("setConfig ")]
    r.ok([json.loads(x) for x in printed] == answers, "client printed each answer's configOptions")
    if len(answers) == 3:
        a1, a2, a3 = answers
        r.ok(ids(a1) == ["mode", "model", "thought_level"] and opt(a1, "model")["currentValue"] == "o3-mini"
             and opt(a1, "thought_level")["currentValue"] == "default"
             and values(opt(a1, "thought_level")) == sorted(["default", "low", "medium", "high"]),
             "model=o3-mini: full list, now with thought_level (default, low, medium, high)")
        r.ok(ids(a2) == ["mode", "model", "thought_level"] and opt(a2, "thought_level")["currentValue"] == "high"
             and opt(a2, "model")["currentValue"] == "o3-mini", "thought_level=high: full list, high")
        r.ok(ids(a3) == ["mode", "model", "thought_level"] and opt(a3, "mode")["currentValue"] == "accept_edits",
             "mode=accept_edits: full list")
    cmu = [u for _, u in r.updates(kind="current_mode_update")]
    r.ok([u.get("currentModeId") for u in cmu] == ["accept_edits"] and len(lists) <= 1,
         "mode change told as current_mode_update (and no config_option_update but the model list's)")
    r.ok(len(r.mock) == 1 and r.mock[0].get("model") == "o3-mini" and r.mock[0].get("reasoningEffort") == "high",
         "the model request: model o3-mini, reasoningEffort high")
    r.ok(r.agent_text() == "Answered by the model picked in the config options.", "reply shown")


def case_obad(r):
    common(r, [], rc_want="1", errors=("session/set_config_option",))
    resp = r.responses("session/set_config_option")
    err = resp[0][1].get("error") if len(resp) == 1 else None
    r.ok(err is not None and err.get("code") == -32602, "set_config_option model=nope: error -32602")
    msg = (err or {}).get("message", "")
    r.ok('"nope"' in msg and all(v in msg for v in ("o3-mini", "gpt-4o-mini", "mock-model")),
         "the message names the value and the valid models")
    r.ok([e.get("code") for e in r.out_json("error: ")] == [-32602], "the client printed the error and exited 1")
    r.ok(not r.sent("session/prompt") and not r.mock, "no prompt, no model request")


def case_cl(r):
    common(r, ["end_turn"])
    close = r.sent("session/close")
    prompt_resp = r.responses("session/prompt")
    r.ok(len(close) == 1 and close[0][1]["params"]["sessionId"] == r.sid() and prompt_resp
         and close[0][0] > prompt_resp[-1][0], "session/close after the prompt's answer")
    r.ok(r.result("session/close") == {} and re.search(r"^closed: \S+ \{\}$", r.stdout, re.M) is not None,
         "session/close answered {}")
    stderr = r._read(r.base + ".stderr") or ""
    r.ok(re.search(r'"session":"%s".*"message":"session closed"' % re.escape(r.sid() or "-"), stderr) is not None,
         "Rebound logged: session closed")


def case_del(r):
    common(r, [])
    l1, l2, cl = Run(r.run_dir, "l1"), Run(r.run_dir, "l2"), Run(r.run_dir, "cl")
    d = r.sent("session/delete")
    r.ok(len(d) == 1 and d[0][1]["params"]["sessionId"] == l2.sid() and r.result("session/delete") == {},
         "session/delete of l2's session answered {}")
    sids = {s.get("sessionId") for s in r.listed()}
    r.ok(l2.sid() not in sids and not os.path.exists(os.path.join(r.run_dir, "state", "sessions", f"{l2.sid()}.jsonl")),
         "then session/list leaves it out, and its log is gone")
    r.ok(l1.sid() in sids and cl.sid() in sids, "l1's and the closed session (cl) still listed")
    r.ok(not r.sent("session/new") and not r.mock, "no session made, no model request")


# ------------------------------------------------------------------ MCP servers

MOCK_TOOLS = ["big", "crash", "echo", "env", "fail", "mixed", "pid", "rpcerror", "slow", "spawn", "spawn_detached"]


def offered(req, server):
    """the tools of server offered in one model request, without the prefix."""
    pre = f"mcp__{server}__"
    return sorted(t[len(pre):] for t in req.get("tools") or [] if t.startswith(pre))


def mcp_call_ok(r, tc, title, asked_before_run=True):
    """tc was shown titled title, permission was asked and answered
    allow_once, before the call ran (in_progress)."""
    calls = r.started(tc)
    p = r.permissions(tc)
    runs = [i for i, u in r.tool(tc) if u.get("status") == "in_progress"]
    # The permission request's title says what runs whole: the tool, its
    # server and its arguments (issue 29 item 1), not the card's short title.
    server, _, tool = title.partition(": ")
    asked = f"Call `{tool}` of the MCP server `{server}` with "
    return (len(calls) == 1 and calls[0].get("title") == title and len(p) == 1
            and p[0][1]["params"]["toolCall"].get("title", "").startswith(asked)
            and p[0][2].get("optionId") == "allow_once"
            and bool(runs) and p[0][0] < runs[0])


def case_u(r):
    common(r, ["end_turn", "end_turn"])
    new_at = r.responses("session/new")[0][0] if r.responses("session/new") else -1
    cmds = r.updates(kind="available_commands_update")
    names = [c["name"] for c in cmds[0][1]["availableCommands"]] if cmds else []
    r.ok(len(cmds) == 1 and cmds[0][0] > new_at and sorted(names) == ["compact", "continue", "init", "retry", "status"],
         "available_commands_update after the session/new answer: retry, init, status, continue, compact")
    retry = [c for c in (cmds[0][1]["availableCommands"] if cmds else []) if c["name"] == "retry"]
    r.ok(bool(retry) and "wait" in (retry[0].get("input") or {}).get("hint", ""), "/retry's input hint offers wait")
    plans = [u["entries"] for _, u in r.updates(kind="plan")]
    r.ok([[(e["content"], e["status"]) for e in p] for p in plans] == [
        [("Read main.go", "in_progress"), ("Change the greeting", "pending")],
        [("Read main.go", "completed"), ("Change the greeting", "in_progress")]],
        "two complete plan updates, in order")
    r.ok(not [u for _, u in r.updates(kind="tool_call") if "plan" in (u.get("title") or "").lower()] and not r.permissions(),
         "no tool call card and no permission for the plan")
    usage = [u for _, u in r.updates(kind="usage_update")]
    # The list may arrive after the first request ends: no window is known
    # before it, and no usage_update is sent for that request.
    r.ok(1 <= len(usage) <= 3 and usage[-1].get("size") == 50000 and 0 < usage[-1].get("used", 0) < 50000,
         "a usage_update after the requests; the window (50000) from the mock's model list")
    r.ok(len(r.mock) == 3, "three model requests for the planned turn, none for /status")
    text = r.agent_text()
    r.ok("Planned: main.go is read" in text and "Model: mock-model" in text and "Mode: ask" in text,
         "the reply, then /status's answer (model, mode) without asking the model")


def case_mcp(r):
    common(r, ["end_turn"])
    new = r.sent("session/new")
    srv = new[0][1]["params"].get("mcpServers") if new else None
    r.ok(srv == [{"name": "mock", "command": os.path.join(r.run_dir, "mcpmock"), "args": [], "env": []}],
         "session/new with the stdio server mock (the trial's mcpmock)")
    r.ok(len(r.mock) == 2 and all(offered(m, "mock") == MOCK_TOOLS for m in r.mock),
         "the model was offered mcp__mock__<tool> for each of the server's tools")
    r.ok(mcp_call_ok(r, "call_1", "mock: echo"), 'call_1 titled "mock: echo", permission asked (allow_once) before it ran')
    r.ok(r.status("call_1") == "completed" and r.texts("call_1") == ["hello from the editor trial"],
         "echo completed, the user sees the echoed text")
    r.ok(r.model_result("call_1") == "hello from the editor trial", "the model got the echoed text")
    r.ok(mcp_call_ok(r, "call_2", "mock: fail"), 'call_2 titled "mock: fail", permission asked')
    r.ok(r.status("call_2") == "failed" and r.texts("call_2") == ["failed on purpose"],
         "fail (isError): failed, the user sees the server's message")
    r.ok("failed on purpose" in (r.model_result("call_2") or ""), "the model got the server's message")
    r.ok(not r.updates(kind="notice"), "no notice (the server started)")
    r.ok(r.agent_text() == "Asking the mock server.The echo came back; the other call failed.", "reply shown")


def case_mcp_dead(r):
    dead_warn = r'"message":"MCP server not available"'
    common(r, ["end_turn"], warns=(dead_warn,))
    new = r.sent("session/new")
    names = [s.get("name") for s in (new[0][1]["params"].get("mcpServers") if new else [])]
    init = r.sent("initialize")
    caps = init[0][1]["params"].get("clientCapabilities", {}) if init else {}
    r.ok(names == ["dead", "live"] and caps.get("session", {}).get("notices") == {},
         "session/new with servers dead and live; the client advertises session.notices")
    prompt = r.sent("session/prompt")
    answer = r.responses("session/prompt")
    notices = r.updates(kind="notice")
    r.ok(len(notices) == 1 and '"dead"' in notices[0][1].get("title", "") and notices[0][1].get("severity") == "warning"
         and "exiting at once as asked" in notices[0][1].get("description", ""),
         'one notice (warning): MCP server "dead" is not available, with its stderr\'s last line')
    r.ok(bool(notices and prompt and answer) and prompt[0][0] < notices[0][0] < answer[0][0],
         "the notice arrived during the first prompt")
    r.ok(not any("live" in u.get("title", "") for _, u in notices), "no notice for live")
    r.ok(len(r.mock) == 2 and all(offered(m, "live") == MOCK_TOOLS and not offered(m, "dead") for m in r.mock),
         "the model was offered live's tools, none of dead's")
    r.ok(bool(r.mock) and "cannot be used: dead." in r.mock[0]["messages"][0]["content"],
         "the system prompt says dead is not available")
    r.ok(mcp_call_ok(r, "call_1", "live: echo") and r.status("call_1") == "completed"
         and r.model_result("call_1") == "still alive", "a call to live's echo works")
    stderr = r._read(r.base + ".stderr") or ""
    warns = [l for l in stderr.splitlines() if re.search(dead_warn, l)]
    r.ok(len(warns) == 1 and '"mcpServer":"dead"' in warns[0], "Rebound logged (warn) that dead is not available")
    r.ok(r.agent_text() == "Only the live server is here.The live server answered.", "the turn went on: reply shown")


def proc_gone(pid, wait_s=3.0):
    """whether process pid is gone (or a zombie: killed, not yet reaped),
    waiting up to wait_s for it; False for a pid that is not a number."""
    import time
    try:
        pid = int(pid)
    except (TypeError, ValueError):
        return False
    deadline = time.monotonic() + wait_s
    while True:
        if os.path.isdir("/proc/self"):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    stat = f.read()
                comm, state = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()[0]
                gone = state in ("Z", "X") or comm != "mcpmock"  # a zombie, or the pid reused
            except FileNotFoundError:
                gone = True
        else:
            try:
                os.kill(pid, 0)
                gone = False
            except ProcessLookupError:
                gone = True
            except PermissionError:
                gone = False
        if gone or time.monotonic() >= deadline:
            return gone
        time.sleep(0.1)


def case_mcp_cleanup(r):
    common(r, ["end_turn"])
    pid = (r._read(r.base + ".mcpmock.pid") or "").strip()
    child = r.model_result("call_2")
    r.ok(pid.isdigit() and r.texts("call_1") == [pid] and r.model_result("call_1") == pid,
         f"the server wrote its pid ({pid or '-'}) and the pid tool returned it")
    r.ok(r.status("call_2") == "completed" and (child or "").isdigit(),
         f"spawn started a child ({child or '-'}, in the server's process group, ignoring SIGTERM)")
    r.ok(proc_gone(pid), "after the run (client gone, Rebound's stdin closed) the server process is gone")
    r.ok(proc_gone(child), "and so is its child (the whole process group)")


# ------------------------------------------------------------------ signing in

API_KEY_DESC = ("Looks for your model provider's API key: OPENAI_API_KEY in the environment Rebound is started "
                "with, else the key `rebound login` stored. Run `rebound login` in a terminal first.")
API_KEY_METHOD = {"id": "api-key", "name": "API key", "description": API_KEY_DESC}


def auth_methods(r):
    return (r.result("initialize") or {}).get("authMethods")


def error_of(r, method):
    resp = r.responses(method)
    return resp[0][1].get("error") if len(resp) == 1 else None


def credentials_ok(path, key):
    """the credentials file at path holds key for OPENAI_API_KEY, with mode
    0600 in a directory of mode 0700."""
    try:
        st, dst = os.stat(path), os.stat(os.path.dirname(path))
        text = open(path).read()
    except OSError:
        return False
    return st.st_mode & 0o777 == 0o600 and dst.st_mode & 0o777 == 0o700 and f"\nOPENAI_API_KEY={key}\n" in "\n" + text


def key_not_leaked(r, key):
    """key appears in none of: the transcript, the client's stdout, Rebound's
    log (stderr) and the session's log."""
    texts = [r._read(r.base + ext) or "" for ext in (".transcript.jsonl", ".stdout", ".stderr")]
    texts.append(r._read(os.path.join(r.run_dir, "state", "sessions", f"{r.sid()}.jsonl")) or "")
    return all(key not in t for t in texts)


def case_auth_none(r):
    common(r, [], rc_want="1", errors=("authenticate", "session/prompt"))
    r.ok(auth_methods(r) == [API_KEY_METHOD], "initialize: authMethods is the api-key agent method only (no terminal method)")
    err = error_of(r, "authenticate")
    r.ok(err is not None and err.get("code") == -32000 and "`rebound login`" in err.get("message", ""),
         "authenticate api-key without a key: -32000, saying to run `rebound login`")
    r.ok(r.sid() is not None and r.result("session/new") is not None, "session/new still works without a key")
    err = error_of(r, "session/prompt")
    msg = (err or {}).get("message", "")
    methods = ((err or {}).get("data") or {}).get("authMethods")
    r.ok(err is not None and err.get("code") == -32000 and "`rebound login`" in msg and '"api-key"' in msg,
         "the prompt: -32000, saying to run `rebound login`, naming the api-key method")
    r.ok(methods == [API_KEY_METHOD] and not list(validator("AuthMethod").iter_errors(methods[0])),
         "the error's data.authMethods: the api-key method (a valid AuthMethod)")
    r.ok([e.get("code") for e in r.out_json("error: ")] == [-32000], "the client printed the error and exited 1")
    r.ok(not r.mock, "no model request")
    r.ok(not os.path.exists(os.path.join(r.run_dir, "xdg-none", "rebound")), "nothing written to XDG_CONFIG_HOME")


def case_auth_login(r):
    common(r, ["end_turn"])
    key = "sk-trial-login-key"
    cred = os.path.join(r.run_dir, "xdg-login", "rebound", "credentials")
    login_rc = (r._read(r.base + ".login.rc") or "").strip()
    login_out = r._read(r.base + ".login.out") or ""
    r.ok(login_rc == "0" and cred in login_out and key not in login_out,
         "`rebound login` with the key on stdin: exit 0, prints the file (not the key)")
    r.ok(credentials_ok(cred, key), "the credentials file holds the key, mode 0600, its dir 0700")
    r.ok(auth_methods(r) == [API_KEY_METHOD], "initialize: authMethods api-key")
    r.ok(r.result("authenticate") == {} and r.out_json("authenticate api-key: ") == [{}],
         "authenticate api-key (no OPENAI_API_KEY, the stored key): {}")
    r.ok(len(r.mock) == 1 and r.mock[0].get("auth") is True, "the prompt reached the model, with a key")
    r.ok(r.agent_text() == "Signed in: this answer came through the stored key.", "reply shown")
    r.ok(key_not_leaked(r, key), "the key is in no transcript, log or session log")


def case_auth_terminal(r):
    common(r, ["end_turn"])
    key = "sk-trial-terminal-key"
    cred = os.path.join(r.run_dir, "xdg-terminal", "rebound", "credentials")
    init = r.sent("initialize")
    caps = init[0][1]["params"].get("clientCapabilities", {}) if init else {}
    methods = auth_methods(r) or []
    r.ok(caps.get("auth") == {"terminal": True} and len(methods) == 2 and methods[0] == API_KEY_METHOD,
         "with clientCapabilities.auth.terminal: api-key, then a second method")
    term = methods[1] if len(methods) == 2 else {}
    r.ok(term.get("type") == "terminal" and term.get("id") == "terminal-login" and term.get("args") == ["login"]
         and term.get("name") and "env" not in term, 'the terminal method: type terminal, args ["login"]')
    tl = r.out_json("terminalLogin: ")
    r.ok(len(tl) == 1 and tl[0].get("method") == "terminal-login" and tl[0].get("exitCode") == 0
         and tl[0].get("argv") == [os.path.join(r.run_dir, "rebound"), "login"] and cred in tl[0].get("stdout", ""),
         "running it as an editor would (rebound + args, key on stdin): exit 0, the file named")
    r.ok(credentials_ok(cred, key), "the credentials file holds the key, mode 0600, its dir 0700")
    r.ok(r.result("authenticate") == {}, "then authenticate api-key: {} (the running Rebound finds the new key)")
    r.ok(len(r.mock) == 1 and r.mock[0].get("auth") is True
         and r.agent_text() == "Signed in: this answer came through the stored key.", "the prompt works")
    r.ok(key_not_leaked(r, key), "the key is in no transcript, log or session log")


CASES = {k[5:].replace("_", "-"): v for k, v in globals().items() if k.startswith("case_")}  # case_mcp_dead: mcp-dead


def run_case(name, run_dir):
    r = Run(run_dir, name)
    try:
        CASES[name](r)
    except Exception as e:  # a malformed transcript must fail the case, not the trial
        r.failed.append(f"check crashed: {type(e).__name__}: {e}")
    if r.failed:
        print(f"FAIL {name}: " + "; ".join(r.failed) + (f" (passed: {len(r.checked)})" if r.checked else ""))
        return False
    print(f"PASS {name}: " + "; ".join(r.checked))
    return True


if __name__ == "__main__":
    args = sys.argv[1:]
    if args and args[0] == "--case":
        name = args[1]
        run_dir = args[3] if len(args) > 3 and args[2] == "--run" else os.environ.get("TRIAL_RUN", os.path.join(HERE, ".run"))
        if name not in CASES:
            sys.exit(f"check.py: unknown case {name!r}; cases: {' '.join(CASES)}")
        sys.exit(0 if run_case(name, run_dir) else 1)
    if not args or args[0].startswith("-"):
        sys.exit(__doc__)
    allp = []
    for f in args:
        p = check(f)
        allp += p
        print(f"{f}: {len(p)} issue(s)")
        for x in p:
            print("  " + x)
    sys.exit(1 if allp else 0)
