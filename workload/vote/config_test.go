package vote

import "testing"

// TestValidate: each bad flag value gets its one line, before anything
// touches a database; NaN and infinities included.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string // "" = valid
	}{
		{"defaults", nil, ""},
		{"a read of every article", []string{"--articles", "1000", "--read-batch", "1000"}, ""},
		{"zipf", []string{"--distribution", "zipf", "--zipf-exponent", "0.5"}, ""},
		{"read batch above articles", []string{"--articles", "1000", "--read-batch", "1000000"}, "--read-batch must be between 1 and --articles (1000), got 1000000"},
		{"read batch zero", []string{"--read-batch", "0"}, "--read-batch must be between 1 and --articles (100000), got 0"},
		{"no articles", []string{"--articles", "0"}, "--articles must be at least 1, got 0"},
		{"write every zero", []string{"--write-every", "0"}, "--write-every must be at least 1, got 0"},
		{"zipf exponent NaN", []string{"--zipf-exponent", "NaN"}, "--zipf-exponent must be a finite number greater than 0, got NaN"},
		{"zipf exponent Inf", []string{"--zipf-exponent", "Inf"}, "--zipf-exponent must be a finite number greater than 0, got +Inf"},
		{"zipf exponent -Inf", []string{"--zipf-exponent", "-Inf"}, "--zipf-exponent must be a finite number greater than 0, got -Inf"},
		{"zipf exponent zero", []string{"--zipf-exponent", "0"}, "--zipf-exponent must be a finite number greater than 0, got 0"},
		{"distribution", []string{"--distribution", "pareto"}, `--distribution "pareto" is not allowed (allowed: uniform, zipf)`},
		{"variant", []string{"--variant", "cache"}, `--variant "cache" is not allowed (allowed: join, counter, matview)`},
		{"refresh zero", []string{"--refresh", "0s"}, "--refresh must be greater than 0, got 0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGenerator()
			if err := g.Flags().Parse(tc.args); err != nil {
				t.Fatalf("parsing %q: %v", tc.args, err)
			}
			err := g.Hooks().Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Fatalf("Validate = %v, want %s", err, tc.want)
			}
		})
	}
}
