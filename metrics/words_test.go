package metrics

import "testing"

// Counts are said in words that fit them: "1 time", "2 times".
func TestCount(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		noun string
		want string
	}{
		{1, "time", "1 time"}, {2, "time", "2 times"}, {0, "operation", "0 operations"}, {1, "operation", "1 operation"},
		{1, "retry", "1 retry"}, {3, "retry", "3 retries"}, {2, "day", "2 days"}, {2, "class", "2 classes"},
		{2, "reconnection attempt", "2 reconnection attempts"}, {-1, "step", "-1 steps"},
	} {
		if got := Count(tc.n, tc.noun); got != tc.want {
			t.Errorf("Count(%d, %q) = %q, want %q", tc.n, tc.noun, got, tc.want)
		}
	}
}
