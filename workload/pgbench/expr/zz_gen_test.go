package expr

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

var genOps = []string{"+", "-", "*", "/", "%", "=", "<>", "!=", "<", "<=", ">", ">=", "&", "|", "#", "<<", ">>", "AND", "OR", "and", "or"}
var genFuncs = []string{"abs(%s)", "least(%s, %s)", "greatest(%s, %s, %s)", "int(%s)", "double(%s)", "sqrt(%s)", "ln(%s)", "exp(%s)",
	"pow(%s, %s)", "mod(%s, %s)", "hash(%s)", "hash_fnv1a(%s, %s)", "hash_murmur2(%s)", "permute(%s, %s)", "permute(%s, %s, %s)",
	"random(%s, %s)", "random_gaussian(%s, %s, %s)", "random_exponential(%s, %s, %s)", "random_zipfian(%s, %s, %s)", "pi()"}
var genLits = []string{"0", "1", "2", "3", "-1", "7", "10", "100", "1000", "9223372036854775807", "-9223372036854775808", "0.5", "1.5", "2.0", "1e3", ".25", "-2.5", "3.0", "1e18", "1e-3",
	"true", "false", "NULL", "TRUE", "null", ":x", ":d", ":b", ":n", ":s", "1e300", "2.5e-5", "63", "64", "-64"}

func gen(r *rand.Rand, depth int) string {
	if depth <= 0 || r.IntN(4) == 0 {
		return genLits[r.IntN(len(genLits))]
	}
	switch r.IntN(9) {
	case 0, 1, 2, 3:
		return gen(r, depth-1) + " " + genOps[r.IntN(len(genOps))] + " " + gen(r, depth-1)
	case 4:
		return "(" + gen(r, depth-1) + ")"
	case 5:
		pre := []string{"-", "+", "~", "NOT ", "- "}[r.IntN(5)]
		return pre + gen(r, depth-1)
	case 6:
		post := []string{" IS NULL", " IS NOT NULL", " ISNULL", " NOTNULL", " IS TRUE", " IS NOT FALSE"}[r.IntN(6)]
		return gen(r, depth-1) + post
	case 7:
		s := "CASE WHEN " + gen(r, depth-1) + " THEN " + gen(r, depth-1)
		if r.IntN(2) == 0 {
			s += " WHEN " + gen(r, depth-1) + " THEN " + gen(r, depth-1)
		}
		if r.IntN(2) == 0 {
			s += " ELSE " + gen(r, depth-1)
		}
		return s + " END"
	default:
		f := genFuncs[r.IntN(len(genFuncs))]
		n := strings.Count(f, "%s")
		args := make([]any, n)
		for i := range args {
			args[i] = gen(r, depth-1)
		}
		return fmt.Sprintf(f, args...)
	}
}

var numOps = []string{"+", "-", "*", "/", "%", "&", "|", "#", "<<", ">>", "+", "-", "*"}
var numLits = []string{"0", "1", "2", "3", "-1", "7", "10", "100", "1000", "123456789", "0.5", "1.5", "2.0", "1e3", ".25", "-2.5", "3.0", "1e6", ":x", ":d", ":s", "63", "-64", "2.5", "1e-3"}
var numFuncs = []string{"abs(%s)", "least(%s, %s)", "greatest(%s, %s, %s)", "int(%s)", "double(%s)", "sqrt(abs(%s))", "ln(abs(%s) + 1)", "exp(%s / 1000.0)",
	"pow(%s, 0.5)", "mod(%s, 7)", "hash(%s)", "hash_fnv1a(%s, %s)", "hash_murmur2(%s)", "permute(%s, 1000)", "permute(%s, abs(%s) + 1, %s)",
	"random(%s, 1000000)", "random(-5, %s)", "random_gaussian(%s, 100000, 2.5)", "random_gaussian(1, 1000, abs(%s) + 2)", "random_exponential(1, 100000, abs(%s) + 0.1)", "random_zipfian(1, 100000, 1.1 + abs(%s) / 1000.0)", "random_zipfian(%s, 1000, 2.5)", "pi()",
	"CASE WHEN %s > %s THEN %s ELSE 0 END"}

func genNum(r *rand.Rand, depth int) string {
	if depth <= 0 || r.IntN(4) == 0 {
		return numLits[r.IntN(len(numLits))]
	}
	switch r.IntN(8) {
	case 0, 1, 2:
		return genNum(r, depth-1) + " " + numOps[r.IntN(len(numOps))] + " " + genNum(r, depth-1)
	case 3:
		return "(" + genNum(r, depth-1) + ")"
	case 4:
		return []string{"-", "+", "~"}[r.IntN(3)] + genNum(r, depth-1)
	default:
		f := numFuncs[r.IntN(len(numFuncs))]
		n := strings.Count(f, "%s")
		args := make([]any, n)
		for i := range args {
			args[i] = genNum(r, depth-1)
		}
		return fmt.Sprintf(f, args...)
	}
}

func TestGenExprs(t *testing.T) {
	if out := os.Getenv("GEN_NUM"); out != "" {
		r := rand.New(rand.NewPCG(7, 3))
		var b strings.Builder
		for i := 0; i < 1000; i++ {
			b.WriteString(genNum(r, 3) + "\n")
		}
		os.WriteFile(out, []byte(b.String()), 0o644)
		return
	}
	out := os.Getenv("GEN_OUT")
	if out == "" {
		t.Skip()
	}
	r := rand.New(rand.NewPCG(99, 1))
	var b strings.Builder
	for i := 0; i < 1500; i++ {
		b.WriteString(gen(r, 3) + "\n")
	}
	os.WriteFile(out, []byte(b.String()), 0o644)
}
