package report

import "testing"

// pgbench's "number of threads" comes from the document's "threads"; a
// document written before txload recorded it had a thread per client.
func TestPgbenchRunOfThreads(t *testing.T) {
	for _, tc := range []struct {
		name   string
		config map[string]any
		want   int
	}{
		{"recorded", map[string]any{"concurrency": "8", "threads": "2"}, 2},
		{"older document", map[string]any{"concurrency": "8"}, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := PgbenchRunOf(&Document{Config: tc.config}).Threads; got != tc.want {
				t.Errorf("threads %d, want %d", got, tc.want)
			}
		})
	}
}
