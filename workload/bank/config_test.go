package bank

import "testing"

// TestValidate: each bad flag value gets its one line, before anything
// touches a database.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string // "" = valid
	}{
		{"defaults", nil, ""},
		{"a list of levels", []string{"--isolation", "rc,rr,ser", "--selection", "2,100000"}, ""},
		{"largest total", []string{"--accounts", "2", "--selection", "2", "--initial-balance", "4611686018427387903"}, ""},
		{"one account", []string{"--accounts", "1"}, "--accounts must be between 2 and 2147483647 (an INT column), got 1"},
		{"more accounts than an INT holds", []string{"--accounts", "3000000000"}, "--accounts must be between 2 and 2147483647 (an INT column), got 3000000000"},
		{"amount zero", []string{"--amount", "0"}, "--amount must be at least 1, got 0"},
		{"negative balance", []string{"--initial-balance", "-1"}, "--initial-balance must not be negative, got -1"},
		{"total overflows", []string{"--accounts", "100000", "--initial-balance", "100000000000000000"},
			"--initial-balance 100000000000000000 × --accounts 100000 overflows the total balance (at most 9223372036854775807)"},
		{"snapshot", []string{"--isolation", "snapshot"},
			`--isolation: "snapshot" is not an isolation level (allowed: read committed, repeatable read, serializable, or rc, rr, ser; PostgreSQL's repeatable read is snapshot isolation)`},
		{"unknown level in a list", []string{"--isolation", "rc,linearizable"},
			`--isolation: "linearizable" is not an isolation level (allowed: read committed, repeatable read, serializable, or rc, rr, ser)`},
		{"empty isolation", []string{"--isolation", " , "}, "--isolation is empty (allowed: read committed, repeatable read, serializable)"},
		{"selection above accounts", []string{"--accounts", "10", "--selection", "11"}, "--selection must be between 2 and --accounts (10), got 11"},
		{"selection not a number", []string{"--selection", "NaN"}, `--selection "NaN" is not a whole number`},
		{"transfer", []string{"--transfer", "steal"}, `--transfer "steal" is not allowed (allowed: read-modify-write, delta, for-update)`},
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
