package lagrun

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/txload/txload/internal/runner"
	"github.com/txload/txload/lag"
	"github.com/txload/txload/workload/all"
)

// Every refusal is one usage error naming the flag, found without a
// server: the URLs below are never dialled.
func TestValidateRefuses(t *testing.T) {
	const src, dst = "postgres://u@127.0.0.1:1/src", "postgres://u@127.0.0.1:1/dst"
	external := func(o *Options) { o.Source, o.Dest = src, dst }
	for _, tc := range []struct {
		name     string
		workload string
		args     []string // the workload's flags
		edit     func(*Options)
		want     string
	}{
		{"mark interval 0", "", nil, func(o *Options) { o.MarkInterval = 0 }, "--mark-interval must be positive (for example 10ms), got 0s"},
		{"poll interval negative", "", nil, func(o *Options) { o.PollInterval = -time.Millisecond }, "--poll-interval must be positive (for example 1ms), got -1ms"},
		{"replication", "", nil, func(o *Options) { o.Replication = "carrier-pigeon" }, `--replication "carrier-pigeon" is not allowed (allowed: logical, physical)`},
		{"pooler", "", nil, func(o *Options) { external(o); o.Pooler = "weird" }, `--pooler "weird" is not allowed (allowed: auto, none, transaction, session)`},
		{"source without dest", "", nil, func(o *Options) { o.Source = src }, "--source needs --dest: give both, or neither for an embedded pair"},
		{"dest without source", "", nil, func(o *Options) { o.Dest = dst }, "--dest needs --source: give both, or neither for an embedded pair"},
		{"a workload that runs no load", "tpcb", nil, nil, "--workload tpcb: lag needs a workload that runs load (lag works for: " + runsLoad(t) + ")"},
		{"mark transactions of pgio", "pgio", nil, func(o *Options) { external(o); o.MarkTransactions = true },
			"--mark-transactions: workload pgio cannot write a marker inside its transactions (those that can: " + canMark(t, external) + "); the marker stream (--mark-interval) measures the lag"},
		{"mark transactions of select-only", "select-only", nil, func(o *Options) { external(o); o.MarkTransactions = true },
			"--mark-transactions: script select-only, line 2 (SELECT abalance FROM pgbench_accounts WHERE aid = :aid;) runs outside a BEGIN ... END block: it is a transaction of its own, which a marker cannot share; put the script's statements in explicit transactions (the marker stream, --mark-interval, measures the lag without them)"},
		{"empty table name", "", nil, func(o *Options) { external(o); o.Tables = []string{"pgbench_accounts", "", "x"} },
			`--tables "pgbench_accounts,,x": give table names separated by commas`},
		{"script without --tables", "script", []string{"--file", "/dev/null"}, external,
			"--workload script names no tables it writes: give them with --tables T[,T...] (compared on both sides after the run)"},
		{"script on the embedded pair", "script", []string{"--file", "/dev/null"}, func(o *Options) { o.Tables = []string{"t"} },
			"--workload script creates no tables, and the embedded pair starts empty: give --source and --dest, where its tables exist"},
		{"replication with URLs", "", nil, func(o *Options) { external(o); o.ReplicationSet = true },
			"--replication applies to the embedded pair; with --source and --dest the replication is yours"},
		{"embedded version with URLs", "", nil, func(o *Options) { external(o); o.EmbeddedVersionSet = true },
			"--embedded-version applies to the embedded pair, not to --source and --dest"},
		{"blank source", "", nil, func(o *Options) { o.Source, o.Dest = " ", dst }, "--source is empty: give a database URL such as postgres://user@host:5432/db"},
		{"blank dest", "", nil, func(o *Options) { o.Source, o.Dest = src, "\t" }, "--dest is empty: give a database URL such as postgres://user@host:5432/db"},
		{"unknown embedded version", "", nil, func(o *Options) { o.EmbeddedVersion = "7" }, `--embedded-version: unknown PostgreSQL version "7": give a major version, `},
		{"init on the embedded pair", "", nil, func(o *Options) { o.InitSet = true }, "--init applies to --source: the embedded pair is always loaded fresh"},
		{"map on the embedded pair", "", nil, func(o *Options) { o.Maps = []string{"a=b"} }, "--map applies to --source and --dest: the embedded pair names tables alike"},
		{"map", "", nil, func(o *Options) { external(o); o.Maps = []string{"nope"} }, `--map "nope": want SRC=DST, a source table and its name on the destination`},
		{"map with no destination", "", nil, func(o *Options) { external(o); o.Maps = []string{"pgbench_accounts="} }, `--map "pgbench_accounts=": want SRC=DST, a source table and its name on the destination`},
		{"map of a table the workload does not write", "", nil, func(o *Options) { external(o); o.Maps = []string{"x=y"} },
			"--map x=y: x is not a table tpcb-like writes (it writes: pgbench_accounts, pgbench_branches, pgbench_tellers, pgbench_history, and txload_lag_marker)"},
		{"unparseable slo", "", nil, func(o *Options) { external(o); o.SLO = "p99 maybe" }, `--slo: "p99 maybe" has no comparison; want METRIC<=DURATION or METRIC<DURATION, METRIC one of p50, p90, p95, p99, p99.9, max, mean (e.g. "p99<=50ms,max<1s")`},
		{"init fresh", "", nil, func(o *Options) { external(o); o.InitSet = true },
			"--init fresh would drop and reload the source's tables under the replication: use keep or skip"},
		{"bad run flag", "", nil, func(o *Options) { external(o); o.Run.Engine.Rate = -5 },
			"--rate must be 0 (closed loop) or a positive, finite number of operations per second, got -5"},
		{"bad workload flag", "", []string{"--scale", "0"}, external, "--scale must be at least 1, got 0"},
		{"drain timeout 0", "", nil, func(o *Options) { o.Run.Engine.DrainTimeout = 0 },
			"--drain-timeout must be positive for lag (the destination's time to catch up), got 0s"},
		{"unwritable --json", "", nil, func(o *Options) { o.Run.JSON = "/nonexistent/dir/lag.json" },
			"--json /nonexistent/dir/lag.json: directory /nonexistent/dir does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := tc.workload
			if name == "" {
				name = "tpcb-like"
			}
			o := options(t, name, tc.args...)
			if tc.edit != nil {
				tc.edit(&o)
			}
			err := o.Validate()
			var ue *runner.UsageError
			if !errors.As(err, &ue) {
				t.Fatalf("got %v (%T), want a usage error", err, err)
			}
			// The embedded versions' list is the one message not given whole.
			if got := err.Error(); got != tc.want && !(strings.HasSuffix(tc.want, ", ") && strings.HasPrefix(got, tc.want)) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
			if _, err := Run(t.Context(), o); err == nil || err.Error() != o.Validate().Error() {
				t.Errorf("Run: %v, want the same refusal", err)
			}
		})
	}
}

// runsLoad lists the registered workloads that run load, as the refusal
// of one that does not names them: derived, so that a new workload does
// not break the test.
func runsLoad(t *testing.T) string {
	t.Helper()
	var out []string
	for _, m := range all.Registry().All() {
		if m.New().Hooks().Ops != nil {
			out = append(out, m.Name)
		}
	}
	if !slices.Contains(out, "bank") || slices.Contains(out, "tpcb") {
		t.Fatalf("workloads that run load: %v", out)
	}
	return strings.Join(out, ", ")
}

// canMark lists the registered workloads whose lag with
// --mark-transactions on an external pair passes Validate, with their
// defaults: those the refusal of one that cannot must name.
func canMark(t *testing.T, external func(*Options)) string {
	t.Helper()
	var out []string
	for _, name := range all.Registry().Names() {
		o := options(t, name)
		external(&o)
		o.MarkTransactions = true
		if o.Validate() == nil {
			out = append(out, name)
		}
	}
	if !slices.Contains(out, "bank") || slices.Contains(out, "pgio") || slices.Contains(out, "select-only") {
		t.Fatalf("workloads that can mark their transactions: %v", out)
	}
	return strings.Join(out, ", ")
}

// What a valid invocation becomes: the tables by their names on the
// destination, the load's options as the runner gets them.
func TestValidatePlan(t *testing.T) {
	js := filepath.Join(t.TempDir(), "lag.json")
	for _, tc := range []struct {
		name       string
		edit       func(*Options)
		tables     []lag.Pair
		marker     string
		init       string
		embedded   bool
		conditions int
	}{
		{"embedded pair", nil, pairs("pgbench_accounts", "pgbench_branches", "pgbench_tellers", "pgbench_history"), lag.Table, "skip", true, 0},
		{"external, mapped", func(o *Options) {
			o.Source, o.Dest = "postgres://a/b", "postgres://c/d"
			o.Maps = []string{"pgbench_history=hist", lag.Table + "=markers"}
			o.SLO = "p99<=1s,max<5s"
		}, append(pairs("pgbench_accounts", "pgbench_branches", "pgbench_tellers"), lag.Pair{Source: "pgbench_history", Dest: "hist"}), "markers", "skip", false, 2},
		{"external, --init keep, --tables", func(o *Options) {
			o.Source, o.Dest = "postgres://a/b", "postgres://a/b"
			o.InitSet, o.Run.Init = true, "keep"
			o.Tables = []string{"pgbench_accounts"}
		}, pairs("pgbench_accounts"), lag.Table, "keep", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := options(t, "tpcb-like")
			o.Run.JSON = js
			if tc.edit != nil {
				tc.edit(&o)
			}
			p, err := o.plan()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(p.tables, tc.tables) || p.marker != tc.marker {
				t.Errorf("tables %v, marker %s; want %v, %s", p.tables, p.marker, tc.tables, tc.marker)
			}
			if p.load.Init != tc.init || !p.load.InitSet || p.load.Command != "lag" {
				t.Errorf("runner's init %q (set %v), command %q; want %q", p.load.Init, p.load.InitSet, p.load.Command, tc.init)
			}
			if (p.embedded != nil) != tc.embedded || len(p.objective) != tc.conditions {
				t.Errorf("embedded %v, %d conditions", p.embedded, len(p.objective))
			}
			// lag writes --json itself, with its intervals: the runner
			// writes none.
			if p.json != js || p.load.JSON != "" || !p.load.KeepIntervals || p.drainTimeout != DefaultDrainTimeout {
				t.Errorf("json %q, runner's %q, keep intervals %v, drain timeout %s", p.json, p.load.JSON, p.load.KeepIntervals, p.drainTimeout)
			}
			if o.Run.Init == "skip" && tc.init != "skip" || o.Run.JSON != js {
				t.Error("Validate changed the options it was given")
			}
		})
	}
}

func pairs(names ...string) []lag.Pair {
	var out []lag.Pair
	for _, n := range names {
		out = append(out, lag.Pair{Source: n, Dest: n})
	}
	return out
}
