package workload_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/spf13/pflag"

	"github.com/txload/txload/workload"
)

// A workload's defaults of the run's flags are fields and its verbs
// constants: what the commands get from them.
func TestRunDefaultsFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    workload.RunDefaults
		want map[string]string
	}{
		{"none", workload.RunDefaults{}, map[string]string{}},
		{"pgbench", workload.RunDefaults{MaxTries: 1, Init: workload.InitSkip}, map[string]string{"max-tries": "1", "init": "skip"}},
		{"keep", workload.RunDefaults{Init: workload.InitKeep}, map[string]string{"init": "keep"}},
		{"fresh", workload.RunDefaults{Init: workload.InitFresh}, map[string]string{"init": "fresh"}},
		{"continue", workload.RunDefaults{ContinueOnError: true}, map[string]string{"continue-on-error": "true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.d.Flags(); !maps.Equal(got, tc.want) {
				t.Fatalf("%v, want %v", got, tc.want)
			}
		})
	}
}

func TestOnlyFor(t *testing.T) {
	fs := pflag.NewFlagSet("w", pflag.ContinueOnError)
	fs.Int("a", 0, "")
	fs.Int("b", 0, "")
	workload.OnlyFor(fs, workload.VerbRun|workload.VerbSweep, "a")
	a, b := fs.Lookup("a"), fs.Lookup("b")
	for _, tc := range []struct {
		f    *pflag.Flag
		verb string
		want bool
	}{
		{a, "run", true}, {a, "sweep", true}, {a, "init", false}, {a, "failover", false},
		{b, "init", true}, {b, "run", true},
	} {
		if got := workload.FlagFor(tc.f, tc.verb); got != tc.want {
			t.Errorf("--%s for %s: %v, want %v", tc.f.Name, tc.verb, got, tc.want)
		}
	}
	if got := (workload.VerbInit | workload.VerbCheck | workload.VerbFailover).Names(); !slices.Equal(got, []string{"init", "check", "failover"}) {
		t.Errorf("names %v", got)
	}
}
