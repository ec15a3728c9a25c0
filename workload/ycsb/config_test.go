package ycsb

import (
	"strings"
	"testing"
)

func configOf(t *testing.T, args ...string) (*config, error) {
	t.Helper()
	g := newGenerator()
	if err := g.flags.Parse(args); err != nil {
		t.Fatal(err)
	}
	err := g.validate()
	return &g.cfg, err
}

// Each of YCSB's workload files, and proportions given as flags in place
// of the workload's mix.
func TestWorkloads(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		mix     [kinds]float64
		dist    distribution
		maxScan int64
	}{
		{[]string{"--workload", "a"}, [kinds]float64{read: 0.5, update: 0.5}, zipfianDist, 1000},
		{[]string{"--workload", "B"}, [kinds]float64{read: 0.95, update: 0.05}, zipfianDist, 1000},
		{[]string{"--workload", "c"}, [kinds]float64{read: 1}, zipfianDist, 1000},
		{[]string{"--workload", "d"}, [kinds]float64{read: 0.95, insert: 0.05}, latestDist, 1000},
		{[]string{"--workload", "e"}, [kinds]float64{scan: 0.95, insert: 0.05}, zipfianDist, 100},
		{[]string{"--workload", "f"}, [kinds]float64{read: 0.5, readModifyWrite: 0.5}, zipfianDist, 1000},
		{[]string{"--workload", "e", "--max-scan-length", "10"}, [kinds]float64{scan: 0.95, insert: 0.05}, zipfianDist, 10},
		{[]string{"--read-proportion", "0.9", "--insert-proportion", "0.1", "--request-distribution", "uniform"},
			[kinds]float64{read: 0.9, insert: 0.1}, uniformDist, 1000},
		{[]string{"--workload", "d", "--request-distribution", "hotspot"}, [kinds]float64{read: 0.95, insert: 0.05}, hotspotDist, 1000},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			c, err := configOf(t, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if c.proportions != tc.mix || c.distribution != tc.dist || c.maxScan != tc.maxScan {
				t.Fatalf("mix %v %s, scans up to %d; want %v %s, %d", c.proportions, c.distribution, c.maxScan, tc.mix, tc.dist, tc.maxScan)
			}
		})
	}
}

// Bad values: one line naming the flag and what is allowed.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--workload", "g"}, `--workload "g" is not allowed (allowed: a, b, c, d, e, f)`},
		{[]string{"--records", "0"}, "--records must be between 1 and 2147483647, got 0"},
		{[]string{"--records", "2147483648"}, "--records must be between 1 and 2147483647, got 2147483648"},
		{[]string{"--fields", "1001"}, "--fields must be between 1 and 1000, got 1001"},
		{[]string{"--field-length", "8"}, "--field-length must be between 9"},
		{[]string{"--read-proportion", "NaN"}, "--read-proportion must be between 0 and 1, got NaN"},
		{[]string{"--update-proportion", "-Inf"}, "--update-proportion must be between 0 and 1, got -Inf"},
		{[]string{"--scan-proportion", "1.0000001"}, "--scan-proportion must be between 0 and 1"},
		{[]string{"--read-proportion", "0", "--update-proportion", "0"}, "the proportions add up to 0"},
		{[]string{"--request-distribution", "sequential"}, `--request-distribution "sequential" is not allowed (allowed: zipfian, uniform, latest, hotspot)`},
		{[]string{"--min-scan-length", "0"}, "--min-scan-length must be between 1 and 100000, got 0"},
		{[]string{"--min-scan-length", "50", "--max-scan-length", "10"}, "--max-scan-length must be between --min-scan-length (50) and 100000, got 10"},
		{[]string{"--scan-length-distribution", "hotspot"}, `--scan-length-distribution "hotspot" is not allowed (allowed: uniform, zipfian)`},
		{[]string{"--hotspot-data-fraction", "NaN"}, "--hotspot-data-fraction must be above 0 and below 1, got NaN"},
		{[]string{"--hotspot-opn-fraction", "1.5"}, "--hotspot-opn-fraction must be between 0 and 1, got 1.5"},
		{[]string{"--request-distribution", "hotspot", "--records", "4"}, "makes 0 hot records"},
		{[]string{"--workload", "d", "--records", "1"}, "--request-distribution latest needs --records 2 at least"},
		{[]string{"--operation-count", "1000000001"}, "--operation-count must be between 0 and 1000000000"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := configOf(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// The operation mix of each workload, drawn as a run's clients draw it
// (YCSB's DiscreteGenerator): each kind its proportion of the draws.
func TestOperationMix(t *testing.T) {
	for _, w := range []string{"a", "b", "c", "d", "e", "f"} {
		t.Run(w, func(t *testing.T) {
			c, err := configOf(t, "--workload", w)
			if err != nil {
				t.Fatal(err)
			}
			var weights []float64
			var ks []kind
			sum := 0.0
			for k, p := range c.proportions {
				if p > 0 {
					weights, ks, sum = append(weights, p), append(ks, kind(k)), sum+p
				}
			}
			rng := newRand(6)
			var counts [kinds]int
			for range draws {
				counts[ks[discrete(rng, weights, sum)]]++
			}
			for k := range kinds {
				if c.proportions[k] == 0 && counts[k] > 0 {
					t.Errorf("%s drawn %d times, its proportion is 0", kind(k), counts[k])
				} else if c.proportions[k] > 0 && c.proportions[k] < 1 {
					within(t, kind(k).String(), float64(counts[k])/draws, c.proportions[k])
				}
			}
		})
	}
}
