package cli

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/txload/txload/internal/runner"
)

// sweepDoc is what the tests read of a sweep's --json.
type sweepDoc struct {
	Interrupted   bool   `json:"interrupted"`
	InterruptedBy string `json:"interrupted_by"`
	Runs          []struct {
		Labels        map[string]string `json:"labels"`
		Interrupted   bool              `json:"interrupted"`
		InterruptedBy string            `json:"interrupted_by"`
	} `json:"runs"`
}

// stepWatch is stdout calling ready once it holds n step lines.
type stepWatch struct {
	syncBuffer
	n     int
	once  sync.Once
	ready func()
}

func (w *stepWatch) Write(p []byte) (int, error) {
	n, err := w.syncBuffer.Write(p)
	if len(stepLine.FindAllString(w.syncBuffer.String(), -1)) >= w.n {
		w.once.Do(w.ready)
	}
	return n, err
}

// A sweep interrupted by a stop signal writes the outputs it was asked
// for with what ran and says it was interrupted: in the text (the cut
// step's line and a closing INTERRUPTED line), in --json (the document's
// interrupted and interrupted_by, and the cut step as an interrupted run),
// in --html; --csv holds the steps judged before it, its header alone
// when none was.
func TestSweepInterrupted(t *testing.T) {
	sigterm := &runner.Interrupt{Signal: syscall.SIGTERM}
	for _, tc := range []struct {
		name string
		args []string
		// arm cancels the sweep at its moment, given stdout and stderr.
		arm func(cancel func()) (stdout, stderr watched)
		// judged is the steps judged before the interrupt.
		judged int
	}{
		{"at the first progress line", []string{"--step-duration", "20s", "--step-warmup", "1s", "--progress", "1s"},
			func(cancel func()) (watched, watched) { return &syncBuffer{}, &progressWatch{ready: cancel} }, 0},
		{"in the third step, after two passed", []string{"--step-duration", "2s", "--step-warmup", "0s", "--start", "50", "--progress", "0"},
			func(cancel func()) (watched, watched) {
				return &stepWatch{n: 2, ready: func() { time.AfterFunc(700*time.Millisecond, cancel) }}, &syncBuffer{}
			}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := srv.NewDatabase(t)
			dir := t.TempDir()
			js, html, csvPath := filepath.Join(dir, "sweep.json"), filepath.Join(dir, "sweep.html"), filepath.Join(dir, "sweep.csv")
			ctx, cancel := context.WithCancelCause(t.Context())
			defer cancel(nil)
			stdout, stderr := tc.arm(func() { cancel(sigterm) })
			args := append([]string{"sweep", "select-only", "--url", url, "--init", "fresh", "--slo", "p99<=2s", "--max-error-rate", "1",
				"--json", js, "--html", html, "--csv", csvPath}, tc.args...)
			code := txloadTo(ctx, nil, stdout, stderr, args...)
			out := stdout.String()
			if code != ExitInterrupted {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitInterrupted, out, stderr.String())
			}
			t.Log(out)
			mustContain(t, out, "INTERRUPTED after ", ": not judged\n",
				"INTERRUPTED by SIGTERM after "+map[int]string{0: "0 judged steps", 2: "2 judged steps"}[tc.judged]+": the search had not ended\n")
			if n := len(stepLine.FindAllString(out, -1)); n != tc.judged {
				t.Errorf("%d judged step lines, want %d", n, tc.judged)
			}

			b, err := os.ReadFile(js)
			if err != nil {
				t.Fatalf("--json not written: %v\n%s", err, out)
			}
			var doc sweepDoc
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			if !doc.Interrupted || doc.InterruptedBy != "SIGTERM" {
				t.Errorf("the document says interrupted %v by %q", doc.Interrupted, doc.InterruptedBy)
			}
			if len(doc.Runs) != tc.judged+1 {
				t.Fatalf("%d runs in the document, want %d judged and the cut one", len(doc.Runs), tc.judged)
			}
			for i, r := range doc.Runs {
				cut := i == tc.judged
				if r.Interrupted != cut || cut && r.InterruptedBy != "SIGTERM" || r.Labels["target"] == "" {
					t.Errorf("run %d: interrupted %v by %q, target %q", i+1, r.Interrupted, r.InterruptedBy, r.Labels["target"])
				}
			}

			h, err := os.ReadFile(html)
			if err != nil {
				t.Fatalf("--html not written: %v", err)
			}
			mustContain(t, string(h), "interrupted: not judged", map[int]string{0: "interrupted after 0 steps", 2: "interrupted after 2 steps"}[tc.judged]+": the search had not ended")

			f, err := os.Open(csvPath)
			if err != nil {
				t.Fatalf("--csv not written: %v", err)
			}
			defer f.Close()
			rows, err := csv.NewReader(f).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != tc.judged+1 || !strings.HasPrefix(strings.Join(rows[0], ","), "step,target_ops,") {
				t.Errorf("CSV rows %q, want the header and %d steps", rows, tc.judged)
			}
		})
	}
}

// watched is a test's output, watched or not.
type watched interface {
	Write(p []byte) (int, error)
	String() string
}
