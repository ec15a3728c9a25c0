package report_test

import (
	"bytes"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/txload/txload/report"
)

// A document written by an older `txload pgbench` named its settings after
// pgbench's flags (clients, jobs, time in seconds, random-seed): every
// reader finds them under today's keys, and a merge of two records the
// sum under today's key.
func TestOlderDocumentKeys(t *testing.T) {
	base := time.Unix(5000, 0)
	old := func(seed int) *report.Document {
		d := fakeRun(t, seed, base, 1, nil)
		d.Command, d.Workload = "pgbench", "pgbench"
		d.Config = map[string]any{"clients": "2", "jobs": "1", "transactions": "0", "time": "2", "protocol": "prepared",
			"rate": "0", "max-tries": "1", "random-seed": "7", "threads": "1", "urls": []any{"postgres://x@h/db"}}
		return d
	}
	d := old(0)
	for _, c := range []struct{ got, want string }{
		{d.Mode(), "closed loop, 2 workers"},
		{d.ConfigString(report.KeyConcurrency), "2"},
		{d.ConfigString(report.KeyDuration), "2s"},
		{d.ConfigString(report.KeySeed), "7"},
		{d.ConfigString(report.KeyThreads), "1"},
		{d.ConfigString("jobs"), "1"},
		{d.ConfigString(report.KeyScale), ""},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	r := report.PgbenchRunOf(d)
	if r.Clients != 2 || r.Threads != 1 || r.Duration != 2*time.Second || r.QueryMode != "prepared" || r.Scale != 1 || !r.OtherErrorsAbort {
		t.Errorf("PgbenchRunOf(older document) = %+v", r)
	}
	// Today's key wins over an older one.
	d.Config[report.KeyConcurrency] = "5"
	if got := d.ConfigString(report.KeyConcurrency); got != "5" {
		t.Errorf("concurrency beside clients: %q, want today's key's 5", got)
	}
	m, err := report.Merge([]*report.Document{old(0), old(1)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Config["clients"]; ok {
		t.Errorf("merged config keeps the older key beside the sum: %v", m.Config)
	}
	if m.ConfigString(report.KeyConcurrency) != "4" || m.ConfigString(report.KeyThreads) != "2" || m.Mode() != "closed loop, 4 workers" {
		t.Errorf("merged: concurrency %q threads %q mode %q, want 4, 2, closed loop, 4 workers",
			m.ConfigString(report.KeyConcurrency), m.ConfigString(report.KeyThreads), m.Mode())
	}
	var b bytes.Buffer
	if err := report.WritePgbench(&b, m); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"number of clients: 4\n", "number of threads: 2\n", "duration: 2 s\n", "query mode: prepared\n"} {
		if !strings.Contains(b.String(), line) {
			t.Errorf("merged pgbench report lacks %q:\n%s", line, b.String())
		}
	}
}

// Settings are recorded under the keys every reader knows, over the
// flags of the same name; what does not describe the document's runs is
// left out.
func TestSettingsRecord(t *testing.T) {
	base := report.Settings{Concurrency: 8, Threads: 2, Arrival: "poisson", MaxTries: 10, Progress: time.Second, Seed: 3}
	for _, tt := range []struct {
		name   string
		s      func(report.Settings) report.Settings
		flags  map[string]any
		want   map[string]any
		absent []string
	}{
		{"a duration", func(s report.Settings) report.Settings {
			s.Schedule, s.Duration, s.Rate = true, 2*time.Second, 50
			return s
		}, map[string]any{"transactions": "0", "concurrency": "16", "isolation": "ser"},
			map[string]any{"concurrency": "8", "duration": "2s", "rate": "50", "latency-limit": "0s", "warmup": "0s", "isolation": "ser", "threads": "2", "max-tries": "10", "seed": "3", "progress": "1s", "arrival": "poisson"},
			[]string{"transactions", "connect", "scale", "protocol"}},
		{"transactions per client", func(s report.Settings) report.Settings {
			s.Schedule, s.Transactions, s.Connect, s.Scale, s.Protocol = true, 20, true, 2, "prepared"
			return s
		}, map[string]any{"duration": "10s"},
			map[string]any{"transactions": "20", "connect": "true", "scale": "2", "protocol": "prepared", "rate": "0"},
			[]string{"duration"}},
		{"no limit of tries, a sweep's steps", func(s report.Settings) report.Settings {
			s.MaxTries, s.Rate, s.Duration = 0, 100, time.Second
			return s
		}, map[string]any{"start": "100"},
			map[string]any{"max-tries": "0", "start": "100"},
			[]string{"rate", "duration", "transactions", "latency-limit", "warmup"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			config := maps.Clone(tt.flags)
			tt.s(base).Record(config)
			for k, v := range tt.want {
				if fmt.Sprint(config[k]) != v {
					t.Errorf("%s = %v, want %v", k, config[k], v)
				}
			}
			for _, k := range tt.absent {
				if v, ok := config[k]; ok {
					t.Errorf("%s = %v recorded, want none", k, v)
				}
			}
		})
	}
}

// With a connection per transaction, pgbench's report gives the average
// connection time: of documents merged, their connections' time over all
// their transactions.
func TestWritePgbenchConnectionPerTransaction(t *testing.T) {
	base := time.Unix(6000, 0)
	a, b := fakeRun(t, 0, base, 1, nil), fakeRun(t, 1, base, 1, nil)
	for _, d := range []*report.Document{a, b} {
		d.Config = map[string]any{"concurrency": "2", "connect": "true", "duration": "1s"}
	}
	a.Runs[0].ConnectionSec, b.Runs[0].ConnectionSec = 1.01, 2.22 // 101 and 111 transactions: 10 and 20 ms each
	a.Runs[0].ConnectSec = 0.5                                    // not the figure under -C
	m, err := report.Merge([]*report.Document{a, b}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		doc  *report.Document
		want string
	}{{a, "average connection time = 10.000 ms\n"}, {b, "average connection time = 20.000 ms\n"},
		{m, fmt.Sprintf("average connection time = %.3f ms\n", 1e3*(1.01+2.22)/(101+111))}} {
		var out bytes.Buffer
		if err := report.WritePgbench(&out, c.doc); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), c.want) || !strings.Contains(out.String(), "(including reconnection times)") {
			t.Errorf("report lacks %q:\n%s", c.want, out.String())
		}
	}
}
