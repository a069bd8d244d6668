"""Drives rebound.exe under Wine as an editor would, over ACP on stdio:
initialize, session/new, one prompt whose model (the mock provider) runs a
command with cmd.exe and edits a file, every permission granted. With
DRIVE_TERMINAL=1 it offers terminals, as Zed does, and runs what
terminal/create asks for under Wine (whose command line is made from the
arguments by the C runtime's quoting rules). Exits 1 with the reason on the
first thing that is not as expected."""
import json
import os
import subprocess
import sys
import threading

rebound, cwd, proj = sys.argv[1], sys.argv[2], sys.argv[3]
argv = sys.argv[4:]
p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, encoding="utf-8")
# Each read is bounded: a hung agent fails the run instead of stalling it.
timer = threading.Timer(120, p.kill)
timer.start()


def fail(msg):
    print("FAIL:", msg, file=sys.stderr)
    p.kill()
    sys.exit(1)


def send(obj):
    p.stdin.write(json.dumps(obj) + "\n")
    p.stdin.flush()


def read():
    line = p.stdout.readline()
    if not line:
        fail("rebound.exe closed stdout (see its log above)")
    return json.loads(line)


def call(id_, method, params, on_request=None, on_note=None):
    send({"jsonrpc": "2.0", "id": id_, "method": method, "params": params})
    while True:
        m = read()
        if m.get("id") == id_ and "method" not in m:
            if "error" in m:
                fail(f"{method}: {m['error']}")
            return m["result"]
        if "method" in m and "id" in m:
            send({"jsonrpc": "2.0", "id": m["id"], "result": on_request(m)})
        elif "method" in m and on_note:
            on_note(m)


use_terminal = os.environ.get("DRIVE_TERMINAL") == "1"
terminals = {}


def unix_path(p):
    # Wine maps Z: to the Unix root.
    return p[2:].replace("\\", "/") if p[:2].upper() == "Z:" else p


def terminal(m):
    params = m["params"]
    if m["method"] == "terminal/create":
        env = dict(os.environ)
        env.update({v["name"]: v["value"] for v in params.get("env", [])})
        t = subprocess.Popen(["wine", params["command"], *params.get("args", [])], cwd=unix_path(params.get("cwd", cwd)),
                             env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        tid = "term_%d" % (len(terminals) + 1)
        terminals[tid] = {"proc": t, "out": b"", "request": params}
        return {"terminalId": tid}
    t = terminals[params["terminalId"]]
    if m["method"] == "terminal/wait_for_exit":
        t["out"] += t["proc"].communicate(timeout=60)[0]
        return {"exitCode": t["proc"].returncode}
    if m["method"] == "terminal/output":
        status = None if t["proc"].poll() is None else {"exitCode": t["proc"].returncode}
        return {"output": t["out"].decode("utf-8", "replace"), "truncated": False, "exitStatus": status}
    if m["method"] in ("terminal/kill", "terminal/release"):
        if t["proc"].poll() is None:
            t["proc"].kill()
        return {}
    fail(f"unexpected request {m['method']}")


init = call(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {"terminal": use_terminal}})
if init.get("protocolVersion") != 1:
    fail(f"initialize: {init}")
sid = call(2, "session/new", {"cwd": cwd, "mcpServers": []})["sessionId"]

asked, updates = [], []


def permit(m):
    if m["method"].startswith("terminal/") and use_terminal:
        return terminal(m)
    if m["method"] != "session/request_permission":
        fail(f"unexpected request {m['method']}")
    asked.append(m["params"])
    opt = next(o for o in m["params"]["options"] if o["kind"] == "allow_once")
    return {"outcome": {"outcome": "selected", "optionId": opt["optionId"]}}


res = call(3, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "run and edit"}]},
           permit, lambda m: updates.append(m["params"]["update"]))
timer.cancel()
p.stdin.close()
p.wait(timeout=30)

if res.get("stopReason") != "end_turn":
    fail(f"prompt: {res}")
shown = json.dumps(asked)
if "cmd.exe /c" not in shown:
    fail(f"the command's permission request does not name cmd.exe: {shown}")
outputs = json.dumps([u for u in updates if u.get("sessionUpdate") == "tool_call_update"])
if use_terminal:
    # The tool call shows the terminal: the output, quotes intact (no
    # quoting rule turned "from cmd" into \"from cmd\"), is the terminal's.
    shown_out = "".join(t["out"].decode("utf-8", "replace") for t in terminals.values())
    if 'smoke "from cmd"' not in shown_out or "second line" not in shown_out:
        fail(f"the terminal's output is not the command's: {shown_out!r}")
elif 'smoke \\"from cmd\\"' not in outputs or "second line" not in outputs:
    fail(f"the command's output is not in its tool call: {outputs}")
done = [u for u in updates if u.get("sessionUpdate") == "tool_call_update" and u.get("status") == "completed"]
if len(done) != 2:
    fail(f"{len(done)} tool calls completed, want 2: {outputs}")
with open(proj + "/notes/todo.txt", encoding="utf-8") as f:
    if f.read() != "new line\n":
        fail("notes/todo.txt was not edited")
if use_terminal:
    if len(terminals) != 1:
        fail(f"{len(terminals)} terminals created, want 1")
    req = next(iter(terminals.values()))["request"]
    if "/bin/sh" in json.dumps(req):
        fail(f"the terminal was asked to run /bin/sh: {req}")
print("PASS wine smoke: initialize, session/new, a cmd.exe command%s and an edit under" %
      (" in the editor's terminal" if use_terminal else ""), rebound)
