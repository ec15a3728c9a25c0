package pgbench

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/txload/txload/internal/pgtest"
	"github.com/txload/txload/workload"
)

// testMarker is a TxMarker that writes (client, seq) rows into mark and
// remembers each seq's fate.
type testMarker struct {
	mu        sync.Mutex
	client    int
	seq       int64
	open      bool
	committed map[int64]bool // seq → committed (false: rolled back)
}

func (m *testMarker) Begin() (string, []any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.open {
		panic("Begin while a marker is open")
	}
	m.seq++
	m.open = true
	return "INSERT INTO mark (client, seq) VALUES ($1, $2)", []any{int32(m.client), m.seq}
}

func (m *testMarker) Committed(time.Time) { m.resolve(true) }

func (m *testMarker) RolledBack(bool, time.Time) { m.resolve(false) }

func (m *testMarker) resolve(ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.open {
		panic("marker resolved twice")
	}
	m.open = false
	m.committed[m.seq] = ok
}

// countSession runs n attempts of operation 0, never retrying.
type countSession struct {
	id, n, done, failed int
	firstErr            error
}

func (s *countSession) ID() int { return s.id }
func (s *countSession) Next(time.Time) workload.Step {
	if s.done == s.n {
		return workload.Step{Kind: workload.Stop}
	}
	return workload.Step{Kind: workload.Start, Op: 0, Attempt: 1}
}
func (s *countSession) Done(now time.Time, err error, _ int) workload.Step {
	s.done++
	if err != nil {
		s.failed++
		if s.firstErr == nil {
			s.firstErr = err
		}
	}
	return s.Next(now)
}
func (s *countSession) Connected(now time.Time, err error) workload.Step { return s.Next(now) }
func (s *countSession) StatementAt(int, int, time.Duration, time.Time)   {}

// The marker goes inside the script's transaction: a transaction that
// fails at COMMIT (a deferred unique constraint) leaves no marker, every
// committed one leaves exactly its own, under each protocol.
func TestMarkInsideTransaction(t *testing.T) {
	t.Parallel()
	const clients, txs = 2, 40
	dir := t.TempDir()
	file := filepath.Join(dir, "t.sql")
	if err := writeFile(file, `\set fail random(0, 1)
BEGIN;
UPDATE acct SET n = n + 1 WHERE id = :client_id + 1;
INSERT INTO dup SELECT 1 FROM generate_series(1, 2 * :fail);
END;
`); err != nil {
		t.Fatal(err)
	}
	for _, proto := range []string{"simple", "extended", "prepared"} {
		t.Run(proto, func(t *testing.T) {
			ctx := testCtx(t)
			url := srv.NewDatabase(t)
			conn := pgtest.Conn(t, url)
			for _, q := range []string{
				"CREATE TABLE acct (id INT PRIMARY KEY, n INT NOT NULL)",
				"INSERT INTO acct SELECT g, 0 FROM generate_series(1, 2) g",
				"CREATE TABLE dup (v INT, UNIQUE (v) DEFERRABLE INITIALLY DEFERRED)",
				"CREATE TABLE mark (client INT, seq BIGINT, PRIMARY KEY (client, seq))",
			} {
				if _, err := conn.Exec(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			g := newRunGen("")
			if err := g.Flags().Parse([]string{"--file", file, "--protocol", proto}); err != nil {
				t.Fatal(err)
			}
			h := g.Hooks()
			if err := h.Validate(); err != nil {
				t.Fatal(err)
			}
			if err := h.MarkTransactions(); err != nil {
				t.Fatal(err)
			}
			markers := make([]*testMarker, clients)
			for i := range markers {
				markers[i] = &testMarker{client: i, committed: map[int64]bool{}}
			}
			load, err := h.Ops(ctx, target(t, url), workload.RunOptions{Seed: 7, Concurrency: clients,
				Marks: func(id int) workload.TxMarker { return markers[id] }})
			if err != nil {
				t.Fatal(err)
			}
			sessions := make([]*countSession, clients)
			group := make([]workload.Session, clients)
			for i := range sessions {
				sessions[i] = &countSession{id: i, n: txs}
				group[i] = sessions[i]
			}
			if err := load.Drive(ctx, workload.Clients{Groups: [][]workload.Session{group}, Ready: func(time.Time) {}}); err != nil {
				t.Fatal(err)
			}
			for i, m := range markers {
				var n int
				if err := conn.QueryRow(ctx, "SELECT n FROM acct WHERE id = $1", i+1).Scan(&n); err != nil {
					t.Fatal(err)
				}
				ok := 0
				for _, c := range m.committed {
					if c {
						ok++
					}
				}
				s := sessions[i]
				if m.open || len(m.committed) != txs || ok != n || s.done-s.failed != n || s.failed == 0 || n == 0 {
					t.Fatalf("client %d: %d markers resolved (%d committed), open %v; %d transactions committed of %d (%d failed): want every one marked, some failed (first error: %v)",
						i, len(m.committed), ok, m.open, n, s.done, s.failed, s.firstErr)
				}
				rows, err := conn.Query(ctx, "SELECT seq FROM mark WHERE client = $1", i)
				if err != nil {
					t.Fatal(err)
				}
				seen := 0
				for rows.Next() {
					var seq int64
					if err := rows.Scan(&seq); err != nil {
						t.Fatal(err)
					}
					if !m.committed[seq] {
						t.Errorf("client %d: marker %d is in the table, its transaction was rolled back", i, seq)
					}
					seen++
				}
				if err := rows.Err(); err != nil {
					t.Fatal(err)
				}
				if seen != n {
					t.Errorf("client %d: %d markers in the table, %d transactions committed", i, seen, n)
				}
			}
		})
	}
}

// Scripts whose transactions cannot carry a marker are refused with one
// line naming the command.
func TestMarkableScripts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ builtin, script, want string }{
		{"tpcb-like", "", ""},
		{"simple-update", "", ""},
		{"select-only", "", "line 2 (SELECT abalance FROM pgbench_accounts WHERE aid = :aid;) runs outside a BEGIN ... END block"},
		{"", "BEGIN;\nSELECT 1;\nEND;\nUPDATE acct SET n = 1;\n", "line 4 (UPDATE acct SET n = 1;) runs outside"},
		{"", "BEGIN \\; UPDATE acct SET n = 1 \\; COMMIT;\n", "opens and commits a transaction in one command"},
		{"", "BEGIN;\nSELECT 1;\nROLLBACK;\n", "never commits"},
	} {
		g := newRunGen(tc.builtin)
		name := tc.builtin
		if tc.script != "" {
			name = filepath.Join(t.TempDir(), "s.sql")
			if err := writeFile(name, tc.script); err != nil {
				t.Fatal(err)
			}
			if err := g.Flags().Parse([]string{"--file", name}); err != nil {
				t.Fatal(err)
			}
		}
		if err := g.Hooks().Validate(); err != nil {
			t.Fatal(err)
		}
		err := g.Hooks().MarkTransactions()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n")):
			t.Errorf("%s: %v, want one line with %q", name, err, tc.want)
		}
	}
}
