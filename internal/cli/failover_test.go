package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// Bad input to failover: one line naming the flag, exit 2, before any
// server is started (no embedded pair, nothing on a --url) and no file
// written.
func TestFailoverBadInput(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := srv.NewDatabase(t)
	two := "postgres://u@127.0.0.1:1,127.0.0.1:2/db?target_session_attrs=read-write"
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"at after duration", nil, []string{"bank", "--at", "20s", "--duration", "10s"}, "txload: --at 20s is not before the end of the load (--warmup 0s + --duration 10s): the failover must happen while the load runs\n"},
		{"promotion after duration", nil, []string{"bank", "--at", "9s", "--promote-after", "2s", "--duration", "10s"}, "txload: --at 9s + --promote-after 2s is not before the end of the load"},
		{"single host", nil, []string{"bank", "--url", db}, "txload: --url names one host (127.0.0.1:"},
		{"single host from DATABASE_URL", map[string]string{"DATABASE_URL": db}, []string{"bank"}, "txload: --url names one host"},
		{"one url per node", nil, []string{"bank", "--url", db, "--url", db}, "txload: --url: give the cluster's nodes in one URL"},
		{"no target_session_attrs", nil, []string{"bank", "--url", "postgres://u@127.0.0.1:1,127.0.0.1:2/db"}, "txload: --url lacks target_session_attrs=read-write"},
		{"fault with a cluster", nil, []string{"bank", "--url", two, "--fault", "kill"}, "txload: --fault applies to the embedded pair"},
		{"command on the embedded pair", nil, []string{"bank", "--failover-command", "true"}, "txload: --failover-command applies to --url"},
		{"replication", nil, []string{"bank", "--replication", "async,quorum"}, `txload: --replication: replication "quorum": want async or sync`},
		{"fault", nil, []string{"bank", "--fault", "segv"}, `txload: --fault: fault "segv": want immediate, kill or fast`},
		{"fast while held", nil, []string{"bank", "--fault", "fast", "--hold-standby", "1s"}, "txload: --fault fast with --hold-standby"},
		{"probe interval", nil, []string{"bank", "--probe-interval", "0s"}, "txload: --probe-interval must be positive"},
		{"at not a duration", nil, []string{"bank", "--at", "NaN"}, `txload: --at takes a duration such as 500ms, 30s, 5m or 1h30m, at most 2562047h, not "NaN"`},
		{"at overflows", nil, []string{"bank", "--at", "9999999999h"}, `txload: --at takes a duration such as 500ms, 30s, 5m or 1h30m, at most 2562047h, not "9999999999h"`},
		{"transactions", nil, []string{"bank", "--transactions", "10"}, "txload: unknown flag: --transactions"},
		{"no marker", nil, []string{"select-only"}, "txload: select-only: failover writes a marker inside every transaction, to tell which commits a failover lost, and cannot here: script select-only, line 2 (SELECT abalance FROM pgbench_accounts WHERE aid = :aid;) runs outside a BEGIN ... END block"},
		{"pgio", nil, []string{"pgio"}, "txload: workload pgio has no failover"},
		{"bad workload flag", nil, []string{"bank", "--accounts", "0"}, "txload: --accounts"},
		{"unwritable --json", nil, []string{"bank", "--json", "/nonexistent/dir/f.json"}, "txload: --json /nonexistent/dir/f.json: directory /nonexistent/dir does not exist\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "f.json")
			args := append([]string{"failover"}, tc.args...)
			if !strings.Contains(strings.Join(tc.args, " "), "--json") {
				args = append(args, "--json", out)
			}
			r := txload(ctx, tc.env, args...)
			if r.code != 2 {
				t.Errorf("exit %d, want 2\n%s", r.code, r.stderr)
			}
			if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); len(lines) != 1 || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("stderr %q, want one line with %q", r.stderr, tc.want)
			}
			if r.stdout != "" {
				t.Errorf("stdout: %s", r.stdout)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s was written", out)
			}
		})
	}
}

// --replication async,sync runs both and ends with the comparison; the
// --json has a run and a failover section for each, and the HTML report
// the figures and the timeline.
func TestFailoverComparison(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two embedded pairs")
	}
	t.Parallel() // pairs of its own, which mostly wait
	dir := t.TempDir()
	js, page := filepath.Join(dir, "f.json"), filepath.Join(dir, "f.html")
	r := txload(t.Context(), nil, "failover", "simple-update", "--replication", "async,sync", "--duration", "3s", "--at", "1s",
		"--progress", "0", "--json", js, "--html", page)
	// Async may lose the commits acknowledged just as the primary went
	// down (their WAL not yet sent): then the run says so and exits 1.
	if r.code != 0 && !(r.code == 1 && strings.Contains(r.stderr, "txload: async: ") && !strings.Contains(r.stderr, "; sync: ")) {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, r.stdout, "failover: embedded primary and standby, async replication", "failover: embedded primary and standby, sync replication",
		"comparison:\n  replication", "\n  async ", "\n  sync ", "write unavailability")
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Runs []struct {
			Labels    map[string]string `json:"labels"`
			Intervals []json.RawMessage `json:"intervals"`
		} `json:"runs"`
		Failover []struct {
			Replication string   `json:"replication"`
			Unavailable *float64 `json:"write_unavailable_seconds"`
			Acked       int64    `json:"acknowledged"`
			Lost        int64    `json:"lost"`
		} `json:"failover"`
		Series []struct {
			Events []struct{ Label string } `json:"events"`
		} `json:"series"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Runs) != 2 || len(doc.Failover) != 2 || len(doc.Series) != 2 || doc.Runs[1].Labels["replication"] != "sync" {
		t.Fatalf("--json: %s", b)
	}
	for _, run := range doc.Runs {
		// Spooled as the run went: encoding/json used to leave them out,
		// and txload report drew no chart over time from the file.
		if len(run.Intervals) < 2 {
			t.Errorf("--json: run %v has %d intervals", run.Labels, len(run.Intervals))
		}
	}
	for i, f := range doc.Failover {
		if f.Replication != []string{"async", "sync"}[i] || f.Unavailable == nil || *f.Unavailable <= 0 || f.Acked == 0 || (f.Replication == "sync" && f.Lost != 0) ||
			(f.Lost > 0) != (r.code == 1) && f.Replication == "async" {
			t.Fatalf("failover section %d: %+v", i, f)
		}
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, string(html), "Failover (async)", "Failover: comparison", "write unavailability", ">fault<", ">new primary<")
}

// progressWatch is stderr calling ready at the first progress line: the
// load runs.
type progressWatch struct {
	syncBuffer
	once  sync.Once
	ready func()
}

func (w *progressWatch) Write(p []byte) (int, error) {
	n, err := w.syncBuffer.Write(p)
	if progressLine.MatchString(w.syncBuffer.String()) {
		w.once.Do(w.ready)
	}
	return n, err
}

var progressLine = regexp.MustCompile(`(?m)^ +[0-9.]+s +[0-9.]+ ops/s`)

// Interrupted while the load runs, long before --at: the report and
// --json say that no fault was caused and count the commits on the
// primary, never on a new primary; the run exits as an interrupted run
// does.
func TestFailoverInterruptedBeforeFault(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded pair")
	}
	t.Parallel() // a pair of its own, which mostly waits
	js := filepath.Join(t.TempDir(), "f.json")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out syncBuffer
	errb := &progressWatch{ready: cancel}
	code := txloadTo(ctx, nil, &out, errb, "failover", "bank", "--duration", "20m", "--at", "10m", "--progress", "1s", "--json", js)
	stdout, stderr := out.String(), errb.String()
	if code != ExitInterrupted {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitInterrupted, stdout, stderr)
	}
	mustContain(t, stdout, "(planned: interrupted before the fault)", "no fault was caused, no failover happened", "none: no failover",
		"acknowledged, not on the primary (still the primary: no failover)")
	if i := strings.Index(stdout, "\nfailover: "); i < 0 || strings.Contains(stdout[i:], "new primary") {
		t.Errorf("the failover's report speaks of a new primary, or is missing:\n%s", stdout)
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Failover []struct {
			NoFault     string     `json:"no_fault"`
			CountedOn   string     `json:"counted_on"`
			FaultAt     *time.Time `json:"fault_at"`
			Interrupted bool       `json:"interrupted"`
			Acked       int64      `json:"acknowledged"`
			Lost        int64      `json:"lost"`
		} `json:"failover"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Failover) != 1 {
		t.Fatalf("--json: %s", b)
	}
	f := doc.Failover[0]
	if !strings.Contains(f.NoFault, "no fault was caused") || f.CountedOn != "primary" || f.FaultAt != nil || !f.Interrupted || f.Acked == 0 || f.Lost != 0 {
		t.Fatalf("--json's failover section: %+v", f)
	}
}
