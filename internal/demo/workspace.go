package demo

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
)

// workspace is the directories the agent runs in: its state directory, the
// directory of its config file and the project the session works in.
type workspace struct {
	state     string // the agent's state directory, kept: the summary points at the session log
	tempState bool   // state was made by the demo
	keepState bool   // a session started: a temporary state is kept too
	cfgDir    string
	cfgPath   string
	project   string
}

// newWorkspace makes the workspace of def (source names def in errors).
// On an error nothing it made is left behind.
func newWorkspace(stateDirFlag string, def *definition, source string) (_ *workspace, err error) {
	ws := &workspace{}
	defer func() {
		if err != nil {
			ws.remove()
		}
	}()
	if ws.state, ws.tempState, err = stateDir(stateDirFlag); err != nil {
		return nil, err
	}
	if ws.cfgDir, err = os.MkdirTemp("", "rebound-demo-config-"); err != nil {
		return nil, err
	}
	cfgText, err := def.configTOML()
	if err != nil {
		return nil, fmt.Errorf("%s: %v", source, err)
	}
	ws.cfgPath = filepath.Join(ws.cfgDir, "config.toml")
	if err := os.WriteFile(ws.cfgPath, cfgText, 0o600); err != nil {
		return nil, err
	}
	if ws.project, err = os.MkdirTemp("", "rebound-demo-project-"); err != nil {
		return nil, err
	}
	if ws.project, err = fillProject(def, ws.project); err != nil {
		return nil, fmt.Errorf("writing the demo project: %v", err)
	}
	return ws, nil
}

// remove deletes the project and the config, and a temporary state
// directory unless a session started in it (a demo that failed before
// leaves nothing behind).
func (ws *workspace) remove() {
	if ws.project != "" {
		os.RemoveAll(ws.project)
	}
	if ws.cfgDir != "" {
		os.RemoveAll(ws.cfgDir)
	}
	if ws.tempState && !ws.keepState && ws.state != "" {
		os.RemoveAll(ws.state)
	}
}

// agentEnv is the agent's environment: the mock provider at baseURL, this
// workspace, and the streaming mode and HOME of opts.
func (ws *workspace) agentEnv(baseURL string, opts Options) map[string]string {
	env := map[string]string{
		"OPENAI_BASE_URL":   baseURL,
		"OPENAI_API_KEY":    "demo-key-not-a-secret",
		"REBOUND_STATE_DIR": ws.state,
		"REBOUND_CONFIG":    ws.cfgPath,
		"REBOUND_LOG_LEVEL": "info",
		"REBOUND_STREAMING": opts.Streaming,
	}
	if opts.Home != "" {
		env["HOME"] = opts.Home
	}
	return env
}

// envList is env as KEY=value entries, sorted.
func envList(env map[string]string) []string {
	var list []string
	for _, k := range slices.Sorted(maps.Keys(env)) {
		list = append(list, k+"="+env[k])
	}
	return list
}

// stateDir is the agent's state directory: dir made absolute and created,
// or a new temporary one (temp).
func stateDir(dir string) (state string, temp bool, err error) {
	if dir == "" {
		state, err = os.MkdirTemp("", "rebound-demo-")
		return state, true, err
	}
	if state, err = filepath.Abs(dir); err == nil {
		err = os.MkdirAll(state, 0o700)
	}
	if err != nil {
		return "", false, fmt.Errorf("--state-dir: %v", err)
	}
	return state, false, nil
}

// fillProject writes the script's project into dir, a new directory, and
// returns its path with links resolved. The session works in a project of
// its own, so that a script's edits and commands never touch the directory
// the demo was started in.
func fillProject(def *definition, dir string) (string, error) {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	return dir, def.writeProject(dir)
}
