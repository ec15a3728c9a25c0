package embedded

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Kill ends the postmaster and every child at once, with nothing in the
// server log (a shutdown would log its request); Restart recovers from the
// crash, and a commit made with synchronous_commit=on survives it.
func TestKill(t *testing.T) {
	linuxOnly(t)
	if testing.Short() {
		t.Skip("starts a server")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	s, err := Start(ctx, Options{Log: testLog{t}, Settings: []string{"synchronous_commit=on"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	conn, err := pgx.Connect(ctx, s.URL())
	if err != nil {
		t.Fatal(err)
	}
	var backend int
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE k (id int); INSERT INTO k VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	if !s.Running() {
		t.Fatal("Running() = false before Kill")
	}
	pid := s.proc.Pid
	kids := childPIDs(pid)
	if len(kids) < 2 {
		t.Fatalf("postmaster %d has children %v, want its backend and auxiliary processes", pid, kids)
	}
	logStart := s.logSize()
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	if s.Running() {
		t.Error("Running() = true after Kill")
	}
	for _, p := range append([]int{pid, backend}, kids...) {
		if !ended(p) {
			t.Errorf("process %d survived Kill", p)
		}
	}
	if _, err := conn.Exec(ctx, "SELECT 1"); err == nil {
		t.Error("a connection to the killed server still answers")
	}
	conn.Close(ctx)
	if said := strings.TrimSpace(string(s.logSince(logStart))); said != "" {
		t.Errorf("the server logged something as it was killed:\n%s", said)
	}
	if err := s.Kill(); err == nil {
		t.Error("Kill of a killed server: no error")
	}
	if _, err := os.Stat(s.DataDir()); err != nil {
		t.Fatalf("the data directory went with the kill: %v", err)
	}
	if err := s.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if log := string(s.logSince(logStart)); !strings.Contains(log, "not properly shut down") {
		t.Errorf("the restart recovered from no crash:\n%s", log)
	}
	conn, err = pgx.Connect(ctx, s.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM k").Scan(&n); err != nil || n != 1 {
		t.Errorf("after the restart k has %d rows (%v), want 1", n, err)
	}
	if got, want := fmt.Sprint(s.Port()), strings.Split(strings.Split(s.URL(), ":")[2], "/")[0]; got != want {
		t.Errorf("Port() = %s, URL says %s", got, want)
	}
}
