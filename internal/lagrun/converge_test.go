package lagrun

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/txload/txload/internal/pgtest"
	"github.com/txload/txload/lag"
)

// openPairOf opens two databases as a run's pair of the given mode, both
// holding the table items and the marker tables.
func openPairOf(t *testing.T, mode string) (pr *pair, src, dst string) {
	t.Helper()
	ctx := t.Context()
	src, dst = srv.NewDatabase(t), srv.NewDatabase(t)
	for _, u := range []string{src, dst} {
		exec(t, u, "CREATE TABLE items (id int PRIMARY KEY, v int NOT NULL)", "INSERT INTO items SELECT g, g FROM generate_series(1, 100) g")
	}
	if err := lag.CreateSource(ctx, pgtest.Conn(t, src)); err != nil {
		t.Fatal(err)
	}
	if err := lag.CreateDest(ctx, pgtest.Conn(t, dst), lag.Table); err != nil {
		t.Fatal(err)
	}
	pr = &pair{mode: mode, srcURL: src, dstURL: dst}
	var err error
	if pr.src, err = open(ctx, src, &Options{}, io.Discard); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pr.src.Close)
	if pr.dst, err = open(ctx, dst, &Options{}, io.Discard); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pr.dst.Close)
	return pr, src, dst
}

// With a replication of the user's, a table that differs is compared
// again, a second apart, up to three times while the drain timeout allows:
// a pipeline that does not keep the commit order may still be applying it.
// PostgreSQL's own replication keeps the order: there, one comparison is
// the verdict.
func TestConvergeRechecks(t *testing.T) {
	t.Parallel()
	p := &plan{tables: pairs("items"), marker: lag.Table, drainTimeout: 30 * time.Second}
	for _, tc := range []struct {
		name     string
		mode     string
		restore  time.Duration // the missing row arrives this long after the load ended (0: never)
		spent    bool          // the drain timeout has passed
		compared []int         // the comparisons allowed
		ok       bool
		failure  string
	}{
		{"logical replication: once", "logical", 1200 * time.Millisecond, false, []int{1}, false, "items: 1 missing"},
		{"physical replication: once", "physical", 1200 * time.Millisecond, false, []int{1}, false, "items: 1 missing"},
		{"yours, the row arrives", "external", 1200 * time.Millisecond, false, []int{2, 3}, true, ""},
		{"yours, never", "external", 0, false, []int{4}, false, "items: 1 missing"},
		{"yours, drain timeout spent", "external", 1200 * time.Millisecond, true, []int{1}, false, "items: 1 missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pr, _, dst := openPairOf(t, tc.mode)
			exec(t, dst, "DELETE FROM items WHERE id = 42")
			loadEnd := time.Now()
			if tc.spent {
				loadEnd = loadEnd.Add(-p.drainTimeout)
			}
			restored := make(chan error, 1)
			if tc.restore > 0 {
				conn := pgtest.Conn(t, dst)
				go func() {
					time.Sleep(tc.restore)
					_, err := conn.Exec(context.Background(), "INSERT INTO items VALUES (42, 42)")
					restored <- err
				}()
			} else {
				restored <- nil
			}
			conv, err := p.converge(t.Context(), pr, 1, 1, loadEnd)
			if err := <-restored; err != nil {
				t.Fatal(err)
			}
			if err != nil {
				t.Fatal(err)
			}
			if n := conv.Compared[0]; n < tc.compared[0] || n > tc.compared[len(tc.compared)-1] {
				t.Errorf("compared %d times, want %v", n, tc.compared)
			}
			f := conv.Failures()
			if (len(f) == 0) != tc.ok || (!tc.ok && (len(f) != 1 || f[0] != tc.failure)) {
				t.Errorf("failures %q, want %q", f, tc.failure)
			}
			if !conv.Markers.OK() || conv.Took <= 0 {
				t.Errorf("markers %+v, took %s", conv.Markers, conv.Took)
			}
		})
	}
}
