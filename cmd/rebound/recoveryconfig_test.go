package main

import (
	"testing"

	"github.com/rebound-agent/rebound/config"
	"github.com/rebound-agent/rebound/recovery"
)

// TestRecoveryConfig_JitterMode: recovery.jitter_mode reaches the policy.
func TestRecoveryConfig_JitterMode(t *testing.T) {
	for _, mode := range recovery.JitterModes {
		r := config.Default().Recovery
		r.JitterMode = mode
		if got := recoveryConfig(r).Policy.JitterMode; got != mode {
			t.Errorf("jitter_mode %q became %q", mode, got)
		}
	}
}
