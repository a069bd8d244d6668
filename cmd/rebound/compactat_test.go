package main

import (
	"testing"

	"github.com/rebound-agent/rebound/config"
)

// A user who turned compaction on overflow off gets no compaction before a
// request either, whatever compact_at says.
func TestCompactAt_OffWithOverflow(t *testing.T) {
	for _, c := range []struct {
		o    config.Overflow
		want float64
	}{
		{config.Overflow{Enabled: true, CompactAt: 0.9}, 0.9},
		{config.Overflow{Enabled: true, CompactAt: 0}, 0},
		{config.Overflow{Enabled: false, CompactAt: 0.9}, 0},
	} {
		if got := compactAt(c.o); got != c.want {
			t.Errorf("compactAt(%+v) = %v, want %v", c.o, got, c.want)
		}
	}
}
