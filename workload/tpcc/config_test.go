package tpcc

import (
	"testing"

	"github.com/txload/txload/workload"
)

// Each bad value gets its one line, before anything touches a database.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		run  workload.RunSettings
		want string // "" = valid
	}{
		{"defaults", nil, workload.RunSettings{Concurrency: 8}, ""},
		{"no warehouse", []string{"--warehouses", "0"}, workload.RunSettings{}, "--warehouses must be between 1 and 100000, got 0"},
		{"too many partitions", []string{"--warehouses", "2", "--partitions", "3"}, workload.RunSettings{}, "--partitions must be between 0 (none) and --warehouses (2), got 3"},
		{"negative wait", []string{"--wait=-1"}, workload.RunSettings{}, "--wait must be 0 (no wait times) or a factor of the spec's keying and think times up to 100 (1: as the spec), got -1"},
		{"NaN wait", []string{"--wait", "NaN"}, workload.RunSettings{}, "--wait must be 0 (no wait times) or a factor of the spec's keying and think times up to 100 (1: as the spec), got NaN"},
		{"infinite wait", []string{"--wait", "+Inf"}, workload.RunSettings{}, "--wait must be 0 (no wait times) or a factor of the spec's keying and think times up to 100 (1: as the spec), got +Inf"},
		{"wait as the spec's", []string{"--wait", "1"}, workload.RunSettings{Concurrency: 8}, ""},
		{"wait with the terminals' count", []string{"--wait", "0.1", "--warehouses", "2"}, workload.RunSettings{Concurrency: 20, ConcurrencySet: true}, ""},
		{"wait with too few clients", []string{"--wait", "1", "--warehouses", "2"}, workload.RunSettings{Concurrency: 8, ConcurrencySet: true},
			"--wait runs 10 terminals per warehouse, 20 for --warehouses 2: --concurrency 8 is not that (leave it out)"},
		{"wait and rate", []string{"--wait", "1"}, workload.RunSettings{Concurrency: 8, Rate: 100}, "--wait runs terminals that wait their keying and think times, a closed loop: not with --rate"},
		{"wait and instances", []string{"--wait", "1"}, workload.RunSettings{Concurrency: 8, Instances: 2}, "--wait with --instance: the terminals of a warehouse would be split between processes; run --wait in one"},
		{"load jobs", []string{"--load-jobs", "0"}, workload.RunSettings{}, "--load-jobs must be between 1 and 64, got 0"},
		{"isolation", []string{"--isolation", "snapshot"}, workload.RunSettings{},
			`--isolation: "snapshot" is not an isolation level (allowed: read committed, repeatable read, serializable, or rc, rr, ser; PostgreSQL's repeatable read is snapshot isolation)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGenerator()
			if err := g.Flags().Parse(tc.args); err != nil {
				t.Fatalf("parsing %q: %v", tc.args, err)
			}
			h := g.Hooks()
			err := h.Validate()
			if err == nil {
				err = h.ValidateRun(tc.run)
			}
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Fatalf("Validate = %v, want %s", err, tc.want)
			}
		})
	}
}
