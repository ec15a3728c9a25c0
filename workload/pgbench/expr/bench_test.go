package expr

import (
	"math/rand/v2"
	"testing"
)

func benchEnv() *Env {
	scale := Value{Kind: Int, I: 10}
	return &Env{
		Lookup: func(name string) (Value, bool) {
			if name == "scale" {
				return scale, true
			}
			return Value{}, false
		},
		Rand: rand.New(rand.NewPCG(1, 2)),
	}
}

func benchmarkExpr(b *testing.B, src string) {
	n, err := Parse(src)
	if err != nil {
		b.Fatal(err)
	}
	env := benchEnv()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := n.Eval(env); err != nil {
			b.Fatal(err)
		}
	}
}

// \set aid random(1, 100000 * :scale), as in pgbench's TPC-B script.
func BenchmarkEval(b *testing.B) { benchmarkExpr(b, "random(1, 100000 * :scale)") }

func BenchmarkEvalArith(b *testing.B) { benchmarkExpr(b, "(:scale * 3 + 7) % 5 - 1") }

func BenchmarkEvalZipfian(b *testing.B) { benchmarkExpr(b, "random_zipfian(1, 100000 * :scale, 1.5)") }

func BenchmarkEvalCase(b *testing.B) {
	benchmarkExpr(b, "CASE WHEN :scale > 5 AND :scale IS NOT NULL THEN hash(:scale) ELSE 0 END")
}

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("random(1, 100000 * :scale)"); err != nil {
			b.Fatal(err)
		}
	}
}

// Evaluation allocates nothing for arithmetic, comparisons, logic,
// variables and the random and hash functions.
func TestEvalDoesNotAllocate(t *testing.T) {
	for _, src := range []string{
		"random(1, 100000 * :scale)",
		"(:scale * 3 + 7) % 5 - 1",
		"1.5 * :scale / 3",
		"-:scale << 2 # 255",
		":scale > 5 AND NOT :scale IS NULL OR false",
		"CASE WHEN :scale = 10 THEN least(1, 2.5, :scale) END",
		"hash(:scale) # hash_fnv1a(:scale, 3) # permute(:scale, 1000)",
		"random_gaussian(1, 1000, 2.5) + random_exponential(1, 1000, 3) + random_zipfian(1, 1000, 1.2)",
		"pow(2, :scale) + sqrt(2) + abs(-3)",
	} {
		n, err := Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		env := benchEnv()
		allocs := testing.AllocsPerRun(200, func() {
			if _, err := n.Eval(env); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per evaluation", src, allocs)
		}
	}
}
