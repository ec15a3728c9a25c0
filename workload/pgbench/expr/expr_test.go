package expr

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func mustEval(t testing.TB, src string, env *Env) Value {
	t.Helper()
	n, err := Parse(src)
	if err != nil {
		t.Fatalf("Parse(%q): %v", src, err)
	}
	v, err := n.Eval(env)
	if err != nil {
		t.Fatalf("Eval(%q): %v", src, err)
	}
	return v
}

// testEnv has variables of every kind.
func testEnv() *Env {
	vars := map[string]Value{
		"i":     {Kind: Int, I: 7},
		"neg":   {Kind: Int, I: -3},
		"d":     {Kind: Double, F: 2.5},
		"t":     {Kind: Bool, B: true},
		"f":     {Kind: Bool, B: false},
		"n":     {Kind: Null},
		"si":    {Kind: Str, S: "42"},
		"sd":    {Kind: Str, S: "1.25"},
		"sb":    {Kind: Str, S: "yes"},
		"sn":    {Kind: Str, S: "null"},
		"bad":   {Kind: Str, S: "abc"},
		"empty": {Kind: Str, S: ""},
		"scale": {Kind: Int, I: 10},
	}
	return &Env{
		Lookup: func(name string) (Value, bool) {
			v, ok := vars[name]
			return v, ok
		},
		Rand:        rand.New(rand.NewPCG(1, 2)),
		DefaultSeed: 12345,
	}
}

func iv(i int64) Value   { return Value{Kind: Int, I: i} }
func dv(f float64) Value { return Value{Kind: Double, F: f} }
func bv(b bool) Value    { return Value{Kind: Bool, B: b} }

var null = Value{}

func sameValue(a, b Value) bool {
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case Bool:
		return a.B == b.B
	case Int:
		return a.I == b.I
	case Double:
		return a.F == b.F || math.IsNaN(a.F) && math.IsNaN(b.F)
	case Str:
		return a.S == b.S
	}
	return true
}

func TestEval(t *testing.T) {
	tests := []struct {
		name, src string
		want      Value
	}{
		// literals
		{"int", "42", iv(42)},
		{"int leading zeros", "007", iv(7)},
		{"max int", "9223372036854775807", iv(math.MaxInt64)},
		{"min int", "-9223372036854775808", iv(math.MinInt64)},
		{"double", "1.5", dv(1.5)},
		{"double exp", "1e3", dv(1000)},
		{"double dot", ".5", dv(0.5)},
		{"double trailing dot", "1.", dv(1)},
		{"double exp sign", "2.5E-1", dv(0.25)},
		{"true", "true", bv(true)},
		{"TRUE", "TRUE", bv(true)},
		{"False", "False", bv(false)},
		{"null", "null", null},
		{"NULL", "NULL", null},
		{"parens", "((3))", iv(3)},
		{"whitespace", " \t1\r\n+\f2\v ", iv(3)},
		{"continuation", "1 + \\\n 2", iv(3)},

		// variables
		{"var int", ":i", iv(7)},
		{"var double", ":d", dv(2.5)},
		{"var bool", ":t", bv(true)},
		{"var null", ":n", null},
		{"var str int", ":si", iv(42)},
		{"var str double", ":sd", dv(1.25)},
		{"var str bool", ":sb", bv(true)},
		{"var str null", ":sn", null},
		{"var str arith", ":si + 1", iv(43)},

		// + - * / %
		{"add", "1 + 2", iv(3)},
		{"add double", "1 + 0.5", dv(1.5)},
		{"sub", "1 - 2", iv(-1)},
		{"sub left assoc", "5 - 3 - 1", iv(1)},
		{"mul", "6 * 7", iv(42)},
		{"mul double", "1.5 * 2", dv(3)},
		{"div trunc", "7 / 2", iv(3)},
		{"div trunc neg", "-7 / 2", iv(-3)},
		{"div double", "7.0 / 2", dv(3.5)},
		{"div int by double", "7 / 2.0", dv(3.5)},
		{"div double by zero", "1.0 / 0", dv(math.Inf(1))},
		{"div min by -1 double", "-9223372036854775808 / -1.0", dv(9223372036854775808.0)},
		{"mod", "7 % 3", iv(1)},
		{"mod neg dividend", "-7 % 3", iv(-1)},
		{"mod neg divisor", "7 % -3", iv(1)},
		{"mod min -1", "-9223372036854775808 % -1", iv(0)},
		{"mod rounds doubles", "5.5 % 2", iv(0)},
		{"mod half even", "4.5 % 3", iv(1)},
		{"div by -1", "5 / -1", iv(-5)},
		{"unary minus", "-5", iv(-5)},
		{"unary minus double", "-2.5", dv(-2.5)},
		{"double minus", "- -5", iv(5)},
		{"unary plus", "+5", iv(5)},
		{"unary plus keeps bool", "+true", bv(true)},
		{"unary minus null", "-NULL", null},
		{"unary minus var", "-:i", iv(-7)},

		// precedence
		{"mul before add", "1 + 2 * 3", iv(7)},
		{"parens first", "(1 + 2) * 3", iv(9)},
		{"add before shift", "2 << 3 + 1", iv(32)},
		{"unary binds tightest", "-2 * 3", iv(-6)},
		{"unary minus before mul", "- 2 * - 3", iv(6)},
		{"div left assoc", "100 / 10 / 5", iv(2)},
		{"tilde is bitwise level", "~1 | 2", iv(-2)},
		{"tilde takes sum", "~ 1 + 2", iv(-4)},
		{"bitwise left assoc", "1 | 2 & 3", iv(3)},
		{"xor and", "6 # 3 & 1", iv(1)},
		{"shift chain", "1 << 4 >> 2", iv(4)},
		{"cmp after arith", "1 + 1 = 2", bv(true)},
		{"cmp after bitwise", "1 | 2 = 3", bv(true)},
		{"not before cmp", "NOT 1 = 2", bv(true)},
		{"not before and", "NOT false AND false", bv(false)},
		{"and before or", "true OR false AND false", bv(true)},
		{"or left", "false OR false OR true", bv(true)},
		{"is after cmp", "1 = 2 IS NULL", bv(false)},
		{"is after arith", "1 + NULL IS NULL", bv(true)},
		{"not of is", "NOT NULL IS NULL", bv(false)},
		{"is chain", "1 IS NULL IS NULL", bv(false)},
		{"isnull chain", "1 isnull isnull", bv(false)},

		// bitwise
		{"and", "5 & 3", iv(1)},
		{"or", "5 | 3", iv(7)},
		{"xor", "5 # 3", iv(6)},
		{"not", "~0", iv(-1)},
		{"not rounds", "~1.6", iv(-3)},
		{"shl", "1 << 10", iv(1024)},
		{"shl 63", "1 << 63", iv(math.MinInt64)},
		{"shl 64 wraps count", "1 << 64", iv(1)},
		{"shl negative count", "1 << -1", iv(math.MinInt64)},
		{"shr arithmetic", "-16 >> 2", iv(-4)},
		{"shr big count", "-1 >> 70", iv(-1)},
		{"shift of double", "1.5 << 1", iv(4)},
		{"bitwise null", "1 & NULL", null},

		// comparisons
		{"eq", "1 = 1", bv(true)},
		{"eq int double", "1 = 1.0", bv(true)},
		{"ne <>", "1 <> 2", bv(true)},
		{"ne !=", "1 != 1", bv(false)},
		{"lt", "1 < 2", bv(true)},
		{"le", "2 <= 2", bv(true)},
		{"gt", "2 > 1.5", bv(true)},
		{"ge", "1 >= 2", bv(false)},
		{"le double", "1 <= 0.5", bv(false)},
		{"cmp big int double", "9007199254740993 = 9007199254740992.0", bv(true)},
		{"cmp nan", "0.0/0 = 0.0/0", bv(false)},
		{"cmp null", "1 < NULL", null},
		{"cmp str var", ":si = 42", bv(true)},

		// IS
		{"null is null", "NULL IS NULL", bv(true)},
		{"isnull", "NULL ISNULL", bv(true)},
		{"notnull", "1 NOTNULL", bv(true)},
		{"is not null", "1 IS NOT NULL", bv(true)},
		{"null is not null", "NULL IS NOT NULL", bv(false)},
		{"is true", "true IS TRUE", bv(true)},
		{"is false", "false IS FALSE", bv(true)},
		{"true is false", "true IS FALSE", bv(false)},
		{"int is true", "1 IS TRUE", bv(false)},
		{"null is true", "NULL IS TRUE", bv(false)},
		{"null is not true", "NULL IS NOT TRUE", bv(true)},
		{"var is null", ":n IS NULL", bv(true)},

		// three-valued logic as pgbench has it
		{"not null", "NOT NULL", null},
		{"not true", "NOT true", bv(false)},
		{"not false", "NOT false", bv(true)},
		{"null and false", "NULL AND false", null},
		{"false and null", "false AND NULL", bv(false)},
		{"true and null", "true AND NULL", null},
		{"true and true", "true AND true", bv(true)},
		{"true and false", "true AND false", bv(false)},
		{"null or true", "NULL OR true", null},
		{"true or null", "true OR null", bv(true)},
		{"false or null", "false OR NULL", null},
		{"false or false", "false OR false", bv(false)},
		{"true or int skips", "true OR 1", bv(true)},
		{"false and int skips", "false AND 1", bv(false)},
		{"and skips error", "false AND 1/0 = 1", bv(false)},
		{"or skips error", "true or :undefined", bv(true)},

		// CASE
		{"case else", "CASE WHEN 1 THEN 10 ELSE 20 END", iv(10)},
		{"case no else", "CASE WHEN 0 THEN 10 END", null},
		{"case null cond", "CASE WHEN NULL THEN 1 WHEN 2.5 THEN 2 ELSE 3 END", iv(2)},
		{"case lower", "case when false then 1 when true then 2 end", iv(2)},
		{"case else taken", "CASE WHEN false THEN 1 WHEN 0.0 THEN 2 ELSE 3 END", iv(3)},
		{"case lazy", "CASE WHEN true THEN 1 ELSE 1/0 END", iv(1)},
		{"case in arith", "1 + CASE WHEN :i > 5 THEN 10 ELSE 0 END * 2", iv(21)},
		{"case nested", "CASE WHEN true THEN CASE WHEN false THEN 1 ELSE 2 END END", iv(2)},

		// NULL propagation through functions
		{"add null", "1 + NULL", null},
		{"abs null", "abs(NULL)", null},
		{"least null", "least(1, NULL)", null},
		{"random null", "random(NULL, 3)", null},
		{"hash null", "hash(NULL)", null},
		{"double null", "double(NULL)", null},
		{"debug null", "debug(NULL)", null},

		// functions
		{"abs int", "abs(-5)", iv(5)},
		{"abs double", "abs(-5.5)", dv(5.5)},
		{"abs min int wraps", "abs(-9223372036854775807 - 1)", iv(math.MinInt64)},
		{"abs bool", "abs(true)", dv(math.Float64frombits(1))},
		{"abs upper", "ABS(-3)", iv(3)},
		{"abs leading comma", "abs(,-5)", iv(5)},
		{"debug returns", "debug(5) + 1", iv(6)},
		{"double", "double(5)", dv(5)},
		{"double of str var", "double(:si)", dv(42)},
		{"exp", "exp(0)", dv(1)},
		{"exp overflow", "exp(1000)", dv(math.Inf(1))},
		{"ln", "ln(1)", dv(0)},
		{"ln zero", "ln(0)", dv(math.Inf(-1))},
		{"ln negative", "ln(-1)", dv(math.NaN())},
		{"sqrt", "sqrt(16)", dv(4)},
		{"sqrt negative", "sqrt(-1)", dv(math.NaN())},
		{"pi", "pi()", dv(math.Pi)},
		{"pow", "pow(2, 10)", dv(1024)},
		{"power", "power(2, 0.5)", dv(math.Sqrt2)},
		{"pow negative base", "pow(-8, 1.0/3)", dv(math.NaN())},
		{"int", "int(5.4)", iv(5)},
		{"int half even", "int(6.5)", iv(6)},
		{"int half even up", "int(5.5)", iv(6)},
		{"int negative", "int(-5.5)", iv(-6)},
		{"int min", "int(-9223372036854775808.0)", iv(math.MinInt64)},
		{"int of int", "int(3)", iv(3)},
		{"least int", "least(3, 1, 2)", iv(1)},
		{"least double", "least(3, 1.5, 2)", dv(1.5)},
		{"greatest int", "greatest(3, 1, 2)", iv(3)},
		{"greatest double", "greatest(1, 2.0)", dv(2)},
		{"greatest one", "greatest(-4)", iv(-4)},
		{"least sixteen", "least(16,15,14,13,12,11,10,9,8,7,6,5,4,3,2,1)", iv(1)},
		{"mod function", "mod(7, 3)", iv(1)},
		{"mod function double", "mod(7.9, 3)", iv(2)},
		{"random single", "random(1, 1)", iv(1)},
		{"random_zipfian single", "random_zipfian(1, 1, 1.5)", iv(1)},
		{"random_gaussian single", "random_gaussian(5, 5, 2)", iv(5)},
		{"random_exponential single", "random_exponential(5, 5, 1)", iv(5)},
		{"hash", "hash(12345, 42)", iv(-591810079667318857)},
		{"hash_murmur2", "hash_murmur2(12345, 42)", iv(-591810079667318857)},
		{"hash_fnv1a", "hash_fnv1a(12345, 42)", iv(-5267424053501251834)},
		{"hash default seed", "hash(7) = hash(7, 12345)", bv(true)},
		{"hash_fnv1a default seed", "hash_fnv1a(7) = hash_fnv1a(7, 12345)", bv(true)},
		{"permute", "permute(7, 100, 5)", iv(1)},
		{"permute default seed", "permute(3, 10) = permute(3, 10, 12345)", bv(true)},
		{"permute size 1", "permute(5, 1, 3)", iv(0)},
		{"function case insensitive", "Hash_FNV1A(12345, 42)", iv(-5267424053501251834)},
		{"function space before paren", "abs (-1)", iv(1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := mustEval(t, tc.src, testEnv())
			if !sameValue(got, tc.want) {
				t.Errorf("%s = %s, want %s", tc.src, describe(got), describe(tc.want))
			}
		})
	}
}

func TestEvalErrors(t *testing.T) {
	tests := []struct {
		name, src, err string
	}{
		{"div by zero", "1 / 0", "division by zero"},
		{"mod by zero", "1 % 0", "division by zero"},
		{"mod func by zero", "mod(5, 0)", "division by zero"},
		{"mod by zero double", "1 % 0.4", "division by zero"},
		{"div min by -1", "-9223372036854775808 / -1", "bigint div out of range"},
		{"add overflow", "9223372036854775807 + 1", "bigint add out of range"},
		{"sub overflow", "-9223372036854775807 - 2", "bigint sub out of range"},
		{"mul overflow", "9223372036854775807 * 2", "bigint mul out of range"},
		{"mul overflow min", "-9223372036854775808 * -1", "bigint mul out of range"},
		{"neg min", "- -9223372036854775808", "bigint sub out of range"},
		{"neg min var", "-(:i - :i - 9223372036854775807 - 1)", "bigint sub out of range"},
		{"undefined variable", ":nope + 1", `undefined variable "nope"`},
		{"malformed variable", ":bad + 1", `malformed variable "bad" value: "abc"`},
		{"empty variable", ":empty", `malformed variable "empty" value: ""`},
		{"bool arith", "true + 1", "cannot coerce boolean to int"},
		{"bool double arith", "true + 1.5", "cannot coerce boolean to double"},
		{"neg bool", "-true", "cannot coerce boolean to int"},
		{"bool eq", "true = true", "cannot coerce boolean to int"},
		{"not int", "NOT 1", "cannot coerce int to boolean"},
		{"and int", "1 AND true", "cannot coerce int to boolean"},
		{"and int right", "true AND 1", "cannot coerce int to boolean"},
		{"or double", "false OR 1.5", "cannot coerce double to boolean"},
		{"bitwise bool", "true | 1", "cannot coerce boolean to int"},
		{"int bool", "int(true)", "cannot coerce boolean to int"},
		{"int overflow", "int(1e30)", "double to int overflow for 1000000000000000019884624838656.000000"},
		{"int overflow max", "int(9223372036854775807.0)", "double to int overflow for 9223372036854775808.000000"},
		{"int nan", "int(0.0/0)", "double to int overflow for NaN"},
		{"double bool", "double(false)", "cannot coerce boolean to double"},
		{"greatest bool", "greatest(true)", "cannot coerce boolean to int"},
		{"least bool double", "least(1.5, true)", "cannot coerce boolean to double"},
		{"too many args", "least(1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17)", "too many function arguments, maximum is 16"},
		{"random empty range", "random(5, 1)", "empty range given to random"},
		{"random range too large", "random(-9223372036854775808, 9223372036854775807)", "random range is too large"},
		{"random range too large 2", "random(0, 9223372036854775807)", "random range is too large"},
		{"gaussian 1.0", "random_gaussian(1, 10, 1.0)", "gaussian parameter must be at least 2.000000 (not 1.000000)"},
		{"gaussian 1.9999", "random_gaussian(1, 10, 1.9999)", "gaussian parameter must be at least 2.000000 (not 1.999900)"},
		{"gaussian empty range", "random_gaussian(10, 1, 3)", "empty range given to random"},
		{"exponential 0", "random_exponential(1, 10, 0)", "exponential parameter must be greater than zero (not 0.000000)"},
		{"exponential -1", "random_exponential(1, 10, -1)", "exponential parameter must be greater than zero (not -1.000000)"},
		{"zipfian 0.5", "random_zipfian(1, 10, 0.5)", "zipfian parameter must be in range [1.001, 1000] (not 0.500000)"},
		{"zipfian 1001", "random_zipfian(1, 10, 1001)", "zipfian parameter must be in range [1.001, 1000] (not 1001.000000)"},
		{"zipfian 1.0", "random_zipfian(1, 10, 1.0)", "zipfian parameter must be in range [1.001, 1000] (not 1.000000)"},
		{"zipfian nan", "random_zipfian(1, 10, 0.0/0)", "zipfian parameter must be in range [1.001, 1000] (not NaN)"},
		{"permute size 0", "permute(0, 0)", "permute size parameter must be greater than zero"},
		{"permute size negative", "permute(1, -5, 3)", "permute size parameter must be greater than zero"},
		{"error in argument", "abs(1/0)", "division by zero"},
		{"error before null", "least(NULL, 1/0)", "division by zero"},
		{"error in case cond", "CASE WHEN 1/0 THEN 1 END", "division by zero"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, err := Parse(tc.src)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.src, err)
			}
			v, err := n.Eval(testEnv())
			if err == nil {
				t.Fatalf("%s = %s, want error %q", tc.src, describe(v), tc.err)
			}
			if err.Error() != tc.err {
				t.Errorf("%s: error %q, want %q", tc.src, err, tc.err)
			}
			var se *SyntaxError
			if errors.As(err, &se) {
				t.Errorf("evaluation error is a SyntaxError")
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, src, err string
	}{
		{"empty", "", "syntax error (unexpected end of expression) at column 1"},
		{"blank", "   ", "syntax error (unexpected end of expression) at column 4"},
		{"unbalanced open", "(1 + 2", "syntax error (unexpected end of expression) at column 7"},
		{"unbalanced close", "1 + 2)", `syntax error (unexpected ")") at column 6`},
		{"trailing garbage", "1 2", `syntax error (unexpected "2") at column 3`},
		{"trailing word", "1 foo", `syntax error (unexpected "foo") at column 3`},
		{"missing operand", "1 +", "syntax error (unexpected end of expression) at column 4"},
		{"unknown function", "foo(1)", "unexpected function name (foo) at column 1"},
		{"unknown identifier", "abc", "unexpected function name (abc) at column 1"},
		{"function without parens", "random", "syntax error (unexpected end of expression) at column 7"},
		{"nonassoc cmp", "1 < 2 < 3", `syntax error (unexpected "<") at column 7`},
		{"nonassoc eq", "1 = 1 = 1", `syntax error (unexpected "=") at column 7`},
		{"nonassoc mixed", "1 < 2 + 1 <> 3", `syntax error (unexpected "<>") at column 11`},
		{"is int", "1 IS 2", `syntax error (unexpected "2") at column 6`},
		{"is not int", "1 IS NOT 2", `syntax error (unexpected "2") at column 10`},
		{"int overflow", "99999999999999999999", "bigint constant overflow (99999999999999999999) at column 1"},
		{"min int without minus", "9223372036854775808", `syntax error (unexpected "9223372036854775808") at column 1`},
		{"min int binary minus", "2 - 9223372036854775808", `syntax error (unexpected "9223372036854775808") at column 5`},
		{"min int in parens", "-(9223372036854775808)", `syntax error (unexpected "9223372036854775808") at column 3`},
		{"double overflow", "1e400", "double constant overflow (1e400) at column 1"},
		{"double underflow", "1e-400", "double constant overflow (1e-400) at column 1"},
		{"double denormal", "1e-310", "double constant overflow (1e-310) at column 1"},
		{"exponent without digits", "5e", `syntax error (unexpected "e") at column 2`},
		{"bad character", "1 @ 2", "unexpected character (@) at column 3"},
		{"caret", "-2 ^ 3", "unexpected character (^) at column 4"},
		{"bang", "!true", "unexpected character (!) at column 1"},
		{"lone colon", ":", "unexpected character (:) at column 1"},
		{"colon space", ": x", "unexpected character (:) at column 1"},
		{"lone dot", "1 + .", "unexpected character (.) at column 5"},
		{"quote", "'a'", "unexpected character (') at column 1"},
		{"backslash", "1 \\ 2", `unexpected character (\) at column 3`},
		{"wrong arg count", "abs(1, 2)", "unexpected number of arguments (abs) at column 9"},
		{"pi with arg", "pi(1)", "unexpected number of arguments (pi) at column 5"},
		{"random one arg", "random(1)", "unexpected number of arguments (random) at column 9"},
		{"gaussian two args", "random_gaussian(1, 2)", "unexpected number of arguments (random_gaussian)"},
		{"hash no args", "hash()", "unexpected number of arguments (hash) at column 6"},
		{"hash three args", "hash(1, 2, 3)", "unexpected number of arguments (hash)"},
		{"permute one arg", "permute(1)", "unexpected number of arguments (permute)"},
		{"permute four args", "permute(1, 2, 3, 4)", "unexpected number of arguments (permute)"},
		{"least no args", "least()", "at least one argument expected (least) at column 7"},
		{"greatest no args", "greatest()", "at least one argument expected (greatest)"},
		{"trailing comma", "abs(1,)", `syntax error (unexpected ")") at column 7`},
		{"double leading comma", "abs(,,1)", `syntax error (unexpected ",") at column 6`},
		{"only comma", "abs(,)", `syntax error (unexpected ")") at column 6`},
		{"case without when", "CASE END", `syntax error (unexpected "END") at column 6`},
		{"case without end", "CASE WHEN true THEN 1 ELSE 2", "syntax error (unexpected end of expression) at column 29"},
		{"simple case", "CASE 1 WHEN 1 THEN 2 END", `syntax error (unexpected "1") at column 6`},
		{"case without then", "CASE WHEN true 1 END", `syntax error (unexpected "1") at column 16`},
		{"keyword alone", "notnull", `syntax error (unexpected "notnull") at column 1`},
		{"and alone", "AND", `syntax error (unexpected "AND") at column 1`},
		{"then alone", "1 THEN 2", `syntax error (unexpected "THEN") at column 3`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, err := Parse(tc.src)
			if err == nil {
				t.Fatalf("Parse(%q) = %T, want error %q", tc.src, n, tc.err)
			}
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("error %v is a %T, not a *SyntaxError", err, err)
			}
			if !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Parse(%q): %q, want %q", tc.src, err, tc.err)
			}
		})
	}
}

func TestDeepNesting(t *testing.T) {
	ok := strings.Repeat("(", 500) + "1" + strings.Repeat(")", 500)
	if v := mustEval(t, ok, nil); v.I != 1 {
		t.Fatalf("got %s", describe(v))
	}
	deep := strings.Repeat("(", 5000) + "1" + strings.Repeat(")", 5000)
	if _, err := Parse(deep); err == nil || !strings.Contains(err.Error(), "too deeply nested") {
		t.Fatalf("deep nesting: %v", err)
	}
	// long left-associative chains need no nesting
	long := "1" + strings.Repeat(" + 1", 10000)
	if v := mustEval(t, long, nil); v.I != 10001 {
		t.Fatalf("long chain: %s", describe(v))
	}
}

// pgbench evaluates a > b as b < a, so b first; arguments of a function are
// evaluated left to right, AND/OR/CASE lazily.
func TestEvaluationOrder(t *testing.T) {
	tests := []struct {
		src, out string
	}{
		{"debug(1) > debug(2)", "debug(script=0,command=0): int 2\ndebug(script=0,command=0): int 1\n"},
		{"debug(1) >= debug(2)", "debug(script=0,command=0): int 2\ndebug(script=0,command=0): int 1\n"},
		{"debug(1) < debug(2)", "debug(script=0,command=0): int 1\ndebug(script=0,command=0): int 2\n"},
		{"least(debug(1), debug(2.5), debug(true))", "debug(script=0,command=0): int 1\ndebug(script=0,command=0): double 2.5\ndebug(script=0,command=0): boolean true\n"},
		{"debug(false) AND debug(true)", "debug(script=0,command=0): boolean false\n"},
		{"debug(NULL) OR debug(true)", "debug(script=0,command=0): null\n"},
		{"CASE WHEN debug(0) THEN debug(1) WHEN debug(2) THEN debug(3) ELSE debug(4) END", "debug(script=0,command=0): int 0\ndebug(script=0,command=0): int 2\ndebug(script=0,command=0): int 3\n"},
		{"debug(1.0/3)", "debug(script=0,command=0): double 0.333333333333333\n"},
	}
	for _, tc := range tests {
		t.Run(tc.src, func(t *testing.T) {
			var buf bytes.Buffer
			n, err := Parse(tc.src)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = n.Eval(&Env{Debug: &buf})
			if buf.String() != tc.out {
				t.Errorf("debug output %q, want %q", buf.String(), tc.out)
			}
		})
	}
}

type countWriter struct{ writes int }

func (w *countWriter) Write(p []byte) (int, error) { w.writes++; return len(p), nil }

func TestDebugSingleWrite(t *testing.T) {
	w := &countWriter{}
	mustEval(t, "debug(1) + debug(2.5)", &Env{Debug: w})
	if w.writes != 2 {
		t.Fatalf("%d writes for two debug() calls", w.writes)
	}
	// no writer: output is discarded
	if v := mustEval(t, "debug(3)", &Env{}); v.I != 3 {
		t.Fatal(describe(v))
	}
}

func TestTruth(t *testing.T) {
	tests := []struct {
		v    Value
		want bool
	}{
		{null, false},
		{bv(true), true},
		{bv(false), false},
		{iv(0), false},
		{iv(-1), true},
		{dv(0), false},
		{dv(0.1), true},
		{Value{Kind: Str, S: "1"}, true},
		{Value{Kind: Str, S: "0"}, false},
		{Value{Kind: Str, S: "yes"}, true},
		{Value{Kind: Str, S: "abc"}, false},
	}
	for _, tc := range tests {
		t.Run(describe(tc.v), func(t *testing.T) {
			if got := tc.v.Truth(); got != tc.want {
				t.Errorf("Truth = %v", got)
			}
		})
	}
}

func TestText(t *testing.T) {
	tests := []struct {
		v    Value
		want string
	}{
		{null, "NULL"},
		{bv(true), "true"},
		{bv(false), "false"},
		{iv(-42), "-42"},
		{iv(math.MinInt64), "-9223372036854775808"},
		{dv(1.0 / 3), "0.333333333333333"},
		{dv(2.0 / 3), "0.666666666666667"},
		{dv(1e15), "1e+15"},
		{dv(1e14), "100000000000000"},
		{dv(123456789012345678), "1.23456789012346e+17"},
		{dv(0.1 + 0.2), "0.3"},
		{dv(1e-5), "1e-05"},
		{dv(0.0001), "0.0001"},
		{dv(100000), "100000"},
		{dv(1.5e300), "1.5e+300"},
		{dv(math.Copysign(0, -1)), "-0"},
		{dv(3), "3"},
		{dv(math.NaN()), "NaN"},
		{dv(math.Inf(1)), "Infinity"},
		{dv(math.Inf(-1)), "-Infinity"},
		{dv(math.MaxFloat64), "1.79769313486232e+308"},
		{dv(5e-324), "4.94065645841247e-324"},
		{Value{Kind: Str, S: " 007 "}, " 007 "},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			if got := tc.v.Text(); got != tc.want {
				t.Errorf("Text = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseValue(t *testing.T) {
	tests := []struct {
		in   string
		want Value
	}{
		{"42", iv(42)},
		{"-7", iv(-7)},
		{"9223372036854775807", iv(math.MaxInt64)},
		{"1.5", dv(1.5)},
		{"0.333333333333333", dv(0.333333333333333)},
		{"1e+15", dv(1e15)},
		{"NaN", dv(math.NaN())},
		{"007", Value{Kind: Str, S: "007"}},
		{"+5", Value{Kind: Str, S: "+5"}},
		{" 42", Value{Kind: Str, S: " 42"}},
		{"1.50", Value{Kind: Str, S: "1.50"}},
		{"1e3", Value{Kind: Str, S: "1e3"}},
		{"99999999999999999999", Value{Kind: Str, S: "99999999999999999999"}},
		{"true", Value{Kind: Str, S: "true"}},
		{"NULL", Value{Kind: Str, S: "NULL"}},
		{"", Value{Kind: Str, S: ""}},
		{"abc", Value{Kind: Str, S: "abc"}},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got := ParseValue(tc.in)
			if !sameValue(got, tc.want) {
				t.Errorf("ParseValue(%q) = %s, want %s", tc.in, describe(got), describe(tc.want))
			}
			if got.Text() != tc.in {
				t.Errorf("Text() = %q, want %q", got.Text(), tc.in)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	for _, v := range []Value{null, bv(true), iv(3), dv(1.5)} {
		got, err := Resolve("x", v)
		if err != nil || !sameValue(got, v) {
			t.Errorf("Resolve(%s) = %s, %v", describe(v), describe(got), err)
		}
	}
	if _, err := Resolve("x", Value{Kind: 99}); err == nil {
		t.Error("Resolve of an invalid kind succeeded")
	}
}

func TestNilEnv(t *testing.T) {
	if v := mustEval(t, "hash(1)", nil); v.I != HashMurmur2(1, 0) {
		t.Errorf("hash(1) with nil env = %s", describe(v))
	}
	v := mustEval(t, "random(1, 6)", nil)
	if v.I < 1 || v.I > 6 {
		t.Errorf("random(1, 6) with nil env = %d", v.I)
	}
	n, _ := Parse(":x")
	if _, err := n.Eval(nil); err == nil || err.Error() != `undefined variable "x"` {
		t.Errorf(":x with nil env: %v", err)
	}
}

// Variables named like keywords or starting with digits are fine.
func TestVariableNames(t *testing.T) {
	env := &Env{Lookup: func(name string) (Value, bool) {
		switch name {
		case "and", "1x", "é", "default_seed_x", "X_1":
			return iv(int64(len(name))), true
		}
		return Value{}, false
	}}
	for _, src := range []string{":and", ":1x", ":é", ":default_seed_x", ":X_1"} {
		v := mustEval(t, src, env)
		if v.I != int64(len(src)-1) {
			t.Errorf("%s = %s", src, describe(v))
		}
	}
}

func TestHashAndPermuteHelpers(t *testing.T) {
	// permute is a bijection of [0, size)
	for _, size := range []int64{1, 2, 3, 7, 10, 64, 100, 1000} {
		seen := make(map[int64]bool)
		for i := int64(0); i < size; i++ {
			p := Permute(i, size, 99)
			if p < 0 || p >= size || seen[p] {
				t.Fatalf("Permute(%d, %d) = %d: not a permutation", i, size, p)
			}
			seen[p] = true
		}
		// values are taken modulo size, negative ones as unsigned
		if Permute(size+3, size, 99) != Permute(3%size, size, 99) {
			t.Errorf("Permute(size+3) != Permute(3) for size %d", size)
		}
	}
	if HashFNV1a(0, 0) != -6284781860667377211 || HashMurmur2(0, 0) != 8217090173679840641 {
		t.Error("hash helpers disagree with pgbench")
	}
}
