package report

import (
	"strings"
	"testing"
	"time"

	"github.com/txload/txload/metrics"
)

func TestDrainLine(t *testing.T) {
	for _, tc := range []struct {
		elapsed time.Duration
		ok      int64
		want    string
	}{
		{0, 0, ""},
		{340 * time.Microsecond, 8, "8 committed and 0 failed in the 340µs after it"},
		{12400 * time.Microsecond, 3, "3 committed and 0 failed in the 12ms after it"},
	} {
		s := metrics.NewSnapshot([]string{"op"})
		s.Ops[0].OK = tc.ok
		s.Elapsed = tc.elapsed
		got := DrainLine(s)
		if tc.want == "" {
			if got != "" {
				t.Errorf("nothing in flight: %q, want no line", got)
			}
			continue
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("drain of %s: %q, want it to contain %q", tc.elapsed, got, tc.want)
		}
	}
}
