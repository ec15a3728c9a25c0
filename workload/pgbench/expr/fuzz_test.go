package expr

import (
	"io"
	"math/rand/v2"
	"testing"
)

// FuzzParse: Parse never panics, and neither does evaluating what it
// accepts, with variables of every kind.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"1 + 2 * 3", "-9223372036854775808", "9223372036854775807 + 1",
		"CASE WHEN :x > 1 THEN 1.5 ELSE NULL END", "NOT :b AND :n OR true",
		"random(1, 100000 * :scale)", "random_zipfian(1, 10, 1.5)",
		"random_gaussian(1, 10, 2.5)", "random_exponential(1, 10, 0.5)",
		"hash(:x) # hash_fnv1a(1, 2)", "permute(:x, 10)", "least(1, 2.5, :s)",
		"greatest(:d, -1)", "abs(,1)", "1 IS NOT NULL", ":x ISNULL",
		"pow(2, 0.5) <= sqrt(2)", "ln(0) < exp(1)", "int(1e18) << 3",
		"mod(-7, 2) >> 1", "~:x | 2 & 3", "debug(pi())", "double(:s) / 0",
		"1 < 2 < 3", "(((1)", "foo(1)", "1e400", ":", "'x'",
	} {
		f.Add(s)
	}
	vars := map[string]Value{
		"x":            {Kind: Int, I: 7},
		"min":          {Kind: Int, I: -9223372036854775808},
		"d":            {Kind: Double, F: 2.5},
		"b":            {Kind: Bool, B: true},
		"n":            {Kind: Null},
		"s":            {Kind: Str, S: "12"},
		"t":            {Kind: Str, S: "abc"},
		"scale":        {Kind: Int, I: 10},
		"default_seed": {Kind: Str, S: "1e3"},
	}
	f.Fuzz(func(t *testing.T, src string) {
		n, err := Parse(src)
		if err != nil {
			if _, ok := err.(*SyntaxError); !ok {
				t.Fatalf("Parse error %v is a %T", err, err)
			}
			return
		}
		env := &Env{
			Lookup: func(name string) (Value, bool) {
				v, ok := vars[name]
				return v, ok
			},
			Rand:  rand.New(rand.NewPCG(1, 2)),
			Debug: io.Discard,
		}
		v, err := n.Eval(env)
		if err == nil {
			_ = v.Text()
			_ = v.Truth()
			if v.Kind == Str {
				t.Fatalf("Eval returned a string")
			}
		}
	})
}
