package expr

// Expected values in this file come from real pgbench 15 (PostgreSQL
// 15.18, Debian build, x86-64): each expression was run as
//
//	\set v debug(EXPR)
//	SELECT ':v' AS t;
//
// with "pgbench -n -t 1 -d", reading the debug() line ("int 7") and the
// SQL text pgbench sent ("7"), or pgbench's error message. The tests do
// not need pgbench.

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// describe renders a value as pgbench's debug() does, without the prefix.
func describe(v Value) string {
	switch v.Kind {
	case Null:
		return "null"
	case Bool:
		return "boolean " + v.Text()
	case Int:
		return "int " + v.Text()
	case Double:
		return "double " + v.Text()
	}
	return "string " + v.S
}

func TestPgbench15Results(t *testing.T) {
	tests := []pgbenchCase{
		{"5 - 3 - 1", "int 1", "1", ""},
		{"2 << 3 + 1", "int 32", "32", ""},
		{"-2 * 3", "int -6", "-6", ""},
		{"~1 | 2", "int -2", "-2", ""},
		{"~ 1 + 2", "int -4", "-4", ""},
		{"7 / 2", "int 3", "3", ""},
		{"-7 / 2", "int -3", "-3", ""},
		{"-7 % 3", "int -1", "-1", ""},
		{"7 % -3", "int 1", "1", ""},
		{"5.5 % 2", "int 0", "0", ""},
		{"7.0 / 2", "double 3.5", "3.5", ""},
		{"1 = 1.0", "boolean true", "true", ""},
		{"2 > 1.5", "boolean true", "true", ""},
		{"1 < 2 < 3", "", "", "syntax error"},
		{"1 = 2 IS NULL", "boolean false", "false", ""},
		{"NULL IS NULL", "boolean true", "true", ""},
		{"NULL ISNULL", "boolean true", "true", ""},
		{"1 NOTNULL", "boolean true", "true", ""},
		{"1 IS NOT NULL", "boolean true", "true", ""},
		{"true IS TRUE", "boolean true", "true", ""},
		{"1 IS TRUE", "boolean false", "false", ""},
		{"NULL IS TRUE", "boolean false", "false", ""},
		{"NOT NULL", "null", "NULL", ""},
		{"NOT true", "boolean false", "false", ""},
		{"NOT 1", "", "", "cannot coerce int to boolean"},
		{"NULL AND false", "null", "NULL", ""},
		{"false AND NULL", "boolean false", "false", ""},
		{"true AND NULL", "null", "NULL", ""},
		{"NULL OR true", "null", "NULL", ""},
		{"true OR NULL", "boolean true", "true", ""},
		{"false OR NULL", "null", "NULL", ""},
		{"1 AND true", "", "", "cannot coerce int to boolean"},
		{"true AND 1", "", "", "cannot coerce int to boolean"},
		{"true OR 1", "boolean true", "true", ""},
		{"false OR 1", "", "", "cannot coerce int to boolean"},
		{"CASE WHEN 1 THEN 10 ELSE 20 END", "int 10", "10", ""},
		{"CASE WHEN 0 THEN 10 END", "null", "NULL", ""},
		{"CASE WHEN NULL THEN 1 WHEN 2.5 THEN 2 ELSE 3 END", "int 2", "2", ""},
		{"case when false then 1 when true then 2 end", "int 2", "2", ""},
		{"abs(-5)", "int 5", "5", ""},
		{"abs(-5.5)", "double 5.5", "5.5", ""},
		{"abs(-9223372036854775807 - 1)", "int -9223372036854775808", "-9223372036854775808", ""},
		{"abs(true)", "double 4.94065645841247e-324", "4.94065645841247e-324", ""},
		{"abs(NULL)", "null", "NULL", ""},
		{"abs(,-5)", "int 5", "5", ""},
		{"ABS(-3)", "int 3", "3", ""},
		{"-9223372036854775808", "int -9223372036854775808", "-9223372036854775808", ""},
		{"9223372036854775808", "", "", "syntax error"},
		{"-9223372036854775808 / -1", "", "", "bigint div out of range"},
		{"-9223372036854775808 % -1", "int 0", "0", ""},
		{"9223372036854775807 + 1", "", "", "bigint add out of range"},
		{"-9223372036854775807 - 2", "", "", "bigint sub out of range"},
		{"9223372036854775807 * 2", "", "", "bigint mul out of range"},
		{"- -9223372036854775808", "", "", "bigint sub out of range"},
		{"99999999999999999999", "", "", "bigint constant overflow (99999999999999999999)"},
		{"1e400", "", "", "double constant overflow (1e400)"},
		{"1e-400", "", "", "double constant overflow (1e-400)"},
		{"1 << 64", "int 1", "1", ""},
		{"1 << 63", "int -9223372036854775808", "-9223372036854775808", ""},
		{"1 << -1", "int -9223372036854775808", "-9223372036854775808", ""},
		{"-16 >> 2", "int -4", "-4", ""},
		{"-1 >> 70", "int -1", "-1", ""},
		{"5 # 3", "int 6", "6", ""},
		{"5 & 3", "int 1", "1", ""},
		{"5 | 3", "int 7", "7", ""},
		{"~0", "int -1", "-1", ""},
		{"~1.6", "int -3", "-3", ""},
		{"1.5 << 1", "int 4", "4", ""},
		{"true + 1", "", "", "cannot coerce boolean to int"},
		{"+true", "boolean true", "true", ""},
		{"-true", "", "", "cannot coerce boolean to int"},
		{"-NULL", "null", "NULL", ""},
		{"1 + NULL", "null", "NULL", ""},
		{"least(3, 1.5, 2)", "double 1.5", "1.5", ""},
		{"least(3, 1, 2)", "int 1", "1", ""},
		{"greatest(3, 1, 2)", "int 3", "3", ""},
		{"greatest(1, 2.0)", "double 2", "2", ""},
		{"least(1, NULL)", "null", "NULL", ""},
		{"least()", "", "", "at least one argument expected (least)"},
		{"greatest(true)", "", "", "cannot coerce boolean to int"},
		{"greatest(1, true)", "", "", "cannot coerce boolean to int"},
		{"least(1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17)", "", "", "too many function arguments, maximum is 16"},
		{"pi()", "double 3.14159265358979", "3.14159265358979", ""},
		{"pi(1)", "", "", "unexpected number of arguments (pi)"},
		{"sqrt(2)", "double 1.4142135623731", "1.4142135623731", ""},
		{"sqrt(-1)", "double NaN", "NaN", ""},
		{"ln(-1)", "double NaN", "NaN", ""},
		{"ln(0)", "double -Infinity", "-Infinity", ""},
		{"exp(1)", "double 2.71828182845905", "2.71828182845905", ""},
		{"exp(1000)", "double Infinity", "Infinity", ""},
		{"pow(2, 10)", "double 1024", "1024", ""},
		{"power(2, 0.5)", "double 1.4142135623731", "1.4142135623731", ""},
		{"pow(-8, 1.0/3)", "double NaN", "NaN", ""},
		{"int(5.5)", "int 6", "6", ""},
		{"int(6.5)", "int 6", "6", ""},
		{"int(-5.5)", "int -6", "-6", ""},
		{"int(1e30)", "", "", "double to int overflow for 1000000000000000019884624838656.000000"},
		{"int(true)", "", "", "cannot coerce boolean to int"},
		{"double(5)", "double 5", "5", ""},
		{"double(NULL)", "null", "NULL", ""},
		{"mod(7, 3)", "int 1", "1", ""},
		{"mod(7.9, 3)", "int 2", "2", ""},
		{"mod(1)", "", "", "unexpected number of arguments (mod)"},
		{"1.0/0", "double Infinity", "Infinity", ""},
		{"0.0/0", "double NaN", "NaN", ""},
		{"-1.0/0", "double -Infinity", "-Infinity", ""},
		{"-(0.0/0)", "double NaN", "NaN", ""},
		{"1e300*1e300", "double Infinity", "Infinity", ""},
		{"1 IS 2", "", "", "syntax error"},
		{"random(5, 1)", "", "", "empty range given to random"},
		{"random(-9223372036854775808, 9223372036854775807)", "", "", "random range is too large"},
		{"random(0, 9223372036854775807)", "", "", "random range is too large"},
		{"random(1, 1)", "int 1", "1", ""},
		{"random_gaussian(1, 10, 1.0)", "", "", "gaussian parameter must be at least 2.000000 (not 1.000000)"},
		{"random_gaussian(1, 10, 1.9999)", "", "", "gaussian parameter must be at least 2.000000 (not 1.999900)"},
		{"random_exponential(1, 10, 0)", "", "", "exponential parameter must be greater than zero (not 0.000000)"},
		{"random_exponential(1, 10, -1)", "", "", "exponential parameter must be greater than zero (not -1.000000)"},
		{"random_zipfian(1, 10, 0.5)", "", "", "zipfian parameter must be in range [1.001, 1000] (not 0.500000)"},
		{"random_zipfian(1, 10, 1001)", "", "", "zipfian parameter must be in range [1.001, 1000] (not 1001.000000)"},
		{"random_zipfian(1, 10, 1.0)", "", "", "zipfian parameter must be in range [1.001, 1000] (not 1.000000)"},
		{"random_zipfian(1, 1, 1.5)", "int 1", "1", ""},
		{"permute(0, 0)", "", "", "permute size parameter must be greater than zero"},
		{"permute(1, -5, 3)", "", "", "permute size parameter must be greater than zero"},
		{"permute(5, 1, 3)", "int 0", "0", ""},
		{"random(NULL, 3)", "null", "NULL", ""},
		{"random(1)", "", "", "unexpected number of arguments (random)"},
		{"hash(1, 2, 3)", "", "", "unexpected number of arguments (hash)"},
		{"hash()", "", "", "unexpected number of arguments (hash)"},
		{"permute(1)", "", "", "unexpected number of arguments (permute)"},
		{"permute(1,2,3,4)", "", "", "unexpected number of arguments (permute)"},
		{"1.0/3", "double 0.333333333333333", "0.333333333333333", ""},
		{"2.0/3", "double 0.666666666666667", "0.666666666666667", ""},
		{"1e15", "double 1e+15", "1e+15", ""},
		{"1e14", "double 100000000000000", "100000000000000", ""},
		{"123456789012345678.0", "double 1.23456789012346e+17", "1.23456789012346e+17", ""},
		{"0.1 + 0.2", "double 0.3", "0.3", ""},
		{"1e-5", "double 1e-05", "1e-05", ""},
		{"0.0001", "double 0.0001", "0.0001", ""},
		{"100000.0", "double 100000", "100000", ""},
		{"1.5e300", "double 1.5e+300", "1.5e+300", ""},
		{"-0.0", "double 0", "0", ""},
		{"0.0 * -1", "double -0", "-0", ""},
		{"1e16 + 1", "double 1e+16", "1e+16", ""},
		{"3.0", "double 3", "3", ""},
		{"12345.678901234567", "double 12345.6789012346", "12345.6789012346", ""},
		{".5", "double 0.5", "0.5", ""},
		{"1.", "double 1", "1", ""},
		{"1.e3", "double 1000", "1000", ""},
		{"5e", "", "", "syntax error"},
		{"1 2", "", "", "syntax error"},
		{"(1", "", "", "syntax error"},
		{"1)", "", "", "syntax error"},
		{"1 +", "", "", "syntax error"},
		{"f(1,)", "", "", "unexpected function name (f)"},
		{"abs(1,)", "", "", "syntax error"},
		{"abs((1))", "int 1", "1", ""},
		{":", "", "", "unexpected character (:)"},
		{":x", "", "", "undefined variable \"x\""},
		{"true = true", "", "", "cannot coerce boolean to int"},
		{"1 = true", "", "", "cannot coerce boolean to int"},
		{"notnull", "", "", "syntax error"},
		{"isnull", "", "", "syntax error"},
		{"1 isnull isnull", "boolean false", "false", ""},
		{"1 = 1 = 1", "", "", "syntax error"},
		{"1 <> 2", "boolean true", "true", ""},
		{"1 != 2", "boolean true", "true", ""},
		{"2 >= 2", "boolean true", "true", ""},
		{"1 <= 0.5", "boolean false", "false", ""},
		{"abc", "", "", "unexpected function name (abc)"},
		{"random", "", "", "syntax error"},
		{"1 IS NULL IS NULL", "boolean false", "false", ""},
		{"NOT 1 = 2", "boolean true", "true", ""},
		{"-2 ^ 3", "", "", "unexpected character (^)"},
		{"1 @ 2", "", "", "unexpected character (@)"},
		{"CASE END", "", "", "syntax error"},
		{"CASE WHEN true THEN 1 ELSE 2", "", "", "syntax error"},
		{"CASE 1 WHEN 1 THEN 2 END", "", "", "syntax error"},
		{"int(-9223372036854775808.0)", "int -9223372036854775808", "-9223372036854775808", ""},
		{"int(9223372036854775807.0)", "", "", "double to int overflow for 9223372036854775808.000000"},
		{"int(-9223372036854775809.0)", "int -9223372036854775808", "-9223372036854775808", ""},
		{"exp(-1000)", "double 0", "0", ""},
		{"1.0/3*3", "double 1", "1", ""},
		{"1e-310", "", "", "double constant overflow (1e-310)"},
		{"2.2250738585072014e-308", "double 2.2250738585072e-308", "2.2250738585072e-308", ""},
		{"4.9406564584124654e-324", "", "", "double constant overflow (4.9406564584124654e-324)"},
		{"0e-500", "double 0", "0", ""},
		{"0.0000e-999", "double 0", "0", ""},
		{"1.7976931348623157e308", "double 1.79769313486232e+308", "1.79769313486232e+308", ""},
		{"1.7976931348623159e308", "", "", "double constant overflow (1.7976931348623159e308)"},
		{"000000000000000000000000000000000000001", "int 1", "1", ""},
		{"9223372036854775807", "int 9223372036854775807", "9223372036854775807", ""},
		{"0.000", "double 0", "0", ""},
	}
	runPgbenchTable(t, tests, &Env{})
}

type pgbenchCase struct {
	src, debug, text, err string
}

// runPgbenchTable checks each expression's value (as debug() prints it)
// and Text, or its error, against what pgbench 15 gave.
func runPgbenchTable(t *testing.T, tests []pgbenchCase, env *Env) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.src, func(t *testing.T) {
			n, err := Parse(tc.src)
			var v Value
			if err == nil {
				v, err = n.Eval(env)
			}
			if tc.err != "" {
				if err == nil {
					t.Fatalf("got %s, want error %q", describe(v), tc.err)
				}
				if !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %q does not contain %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if got := describe(v); got != tc.debug {
				t.Errorf("value %s, want %s", got, tc.debug)
			}
			if got := v.Text(); got != tc.text {
				t.Errorf("Text %q, want %q", got, tc.text)
			}
		})
	}
}

// Precedence and associativity corner cases, with pgbench 15 run as
// "pgbench -n -t 1 -D x=7 -D d=2.5 -D b=true -D n=NULL -D s=12".
func TestPgbench15Precedence(t *testing.T) {
	tests := []pgbenchCase{
		{"NOT NOT true", "boolean true", "true", ""},
		{"- NOT true", "", "", "cannot coerce boolean to int"},
		{"1 + NOT true AND false", "", "", "cannot coerce boolean to int"},
		{"~ 1 IS NULL", "boolean false", "false", ""},
		{"CASE WHEN true THEN 1 END + 1", "int 2", "2", ""},
		{"abs(, 1, 2)", "", "", "unexpected number of arguments (abs)"},
		{"least(, 1, 2)", "int 1", "1", ""},
		{":x:d", "", "", "syntax error"},
		{"1.5.5", "", "", "syntax error"},
		{"1..2", "", "", "syntax error"},
		{"0x10", "", "", "syntax error"},
		{"truex", "", "", "unexpected function name (truex)"},
		{"2 isnull = true", "", "", "cannot coerce boolean to int"},
		{"not 1 isnull", "boolean true", "true", ""},
		{"1 < 2 isnull", "boolean false", "false", ""},
		{"1 = 2 and 3 = 3", "boolean false", "false", ""},
		{"-(-9223372036854775808)", "", "", "bigint sub out of range"},
		{"--1", "int 1", "1", ""},
		{"1 -- 1", "int 2", "2", ""},
		{"9223372036854775807 + -9223372036854775808", "int -1", "-1", ""},
		{"CASE WHEN 1 THEN 2 WHEN 3 THEN 4 ELSE 5 END", "int 2", "2", ""},
		{"case when true then 1 else 2 end is null", "boolean false", "false", ""},
		{"abs(-9223372036854775808)", "int -9223372036854775808", "-9223372036854775808", ""},
		{"1 << 3 << 2", "int 32", "32", ""},
		{"hash(1,)", "", "", "syntax error"},
		{"debug()", "", "", "unexpected number of arguments (debug)"},
		{"Least(1)", "int 1", "1", ""},
		{"RANDOM(1,1)", "int 1", "1", ""},
		{"NOT true = false", "", "", "cannot coerce boolean to int"},
		{"NOT 1 < 2 AND true", "boolean false", "false", ""},
		{"1 IS NOT TRUE IS NOT FALSE", "boolean true", "true", ""},
		{":b IS TRUE AND :n IS NULL", "boolean true", "true", ""},
		{":x > :d OR :b", "boolean true", "true", ""},
		{"- :d * 2", "double -5", "-5", ""},
		{"~ :x", "int -8", "-8", ""},
		{"~ :d", "int -3", "-3", ""},
		{"true AND NOT false OR NULL", "boolean true", "true", ""},
		{"NULL OR false", "null", "NULL", ""},
		{"x", "", "", "unexpected function name (x)"},
		{"1 isnull notnull", "boolean true", "true", ""},
		{"1 is null = false", "", "", "cannot coerce boolean to int"},
		{"(1 < 2) < true", "", "", "cannot coerce boolean to int"},
	}
	vars := map[string]Value{
		"x": ParseValue("7"), "d": ParseValue("2.5"), "b": ParseValue("true"),
		"n": ParseValue("NULL"), "s": ParseValue("12"),
	}
	runPgbenchTable(t, tests, &Env{Lookup: func(name string) (Value, bool) {
		v, ok := vars[name]
		return v, ok
	}})
}

func TestPgbench15HashAndPermute(t *testing.T) {
	tests := []struct {
		src  string
		want int64
	}{
		{"hash_fnv1a(0, 0)", -6284781860667377211},
		{"hash_fnv1a(1, 0)", -8517097267634966620},
		{"hash_fnv1a(12345, 42)", -5267424053501251834},
		{"hash_fnv1a(-1, 0)", -8289690350564177859},
		{"hash_fnv1a(-9223372036854775808, 5)", 1000525915692638368},
		{"hash_fnv1a(9223372036854775807, -1)", 9116682525541297170},
		{"hash_fnv1a(1000000, 1234567890123)", 5012614408812344383},
		{"hash_murmur2(0, 0)", 8217090173679840641},
		{"hash_murmur2(1, 0)", -8089716718896805586},
		{"hash_murmur2(12345, 42)", -591810079667318857},
		{"hash_murmur2(-1, 0)", 4219408603045787357},
		{"hash_murmur2(-9223372036854775808, 5)", 2844011218866982035},
		{"hash_murmur2(9223372036854775807, -1)", -7449049946749928351},
		{"hash_murmur2(1000000, 1234567890123)", 2262330629438177674},
		{"hash(12345, 42)", -591810079667318857},
		{"hash(7, -7)", 7922462792965490861},
		{"hash_fnv1a(2.5, 1)", -4052466453699787802},
		{"permute(0, 10, 0)", 0},
		{"permute(1, 10, 0)", 7},
		{"permute(2, 10, 0)", 1},
		{"permute(3, 10, 0)", 2},
		{"permute(4, 10, 0)", 6},
		{"permute(5, 10, 0)", 8},
		{"permute(6, 10, 0)", 3},
		{"permute(7, 10, 0)", 4},
		{"permute(8, 10, 0)", 9},
		{"permute(9, 10, 0)", 5},
		{"permute(7, 100, 5)", 1},
		{"permute(0, 2, 1)", 1},
		{"permute(1, 2, 1)", 0},
		{"permute(0, 3, 12345)", 0},
		{"permute(1, 3, 12345)", 2},
		{"permute(2, 3, 12345)", 1},
		{"permute(-1, 1000, 42)", 510},
		{"permute(123456789, 1000000007, -3)", 329734810},
		{"permute(1, 9223372036854775807, 9223372036854775807)", 5822102785119445813},
		{"permute(9223372036854775806, 9223372036854775807, 1)", 7746059349680338730},
		{"permute(-9223372036854775808, 4611686018427387904, 77)", 2954106043047463786},
		{"permute(10, 5, 99)", 2},
		{"permute(12, 17, 17)", 0},
		{"permute(99999, 100000, 2)", 53343},
	}
	for _, tc := range tests {
		t.Run(tc.src, func(t *testing.T) {
			v := mustEval(t, tc.src, &Env{})
			if v.Kind != Int || v.I != tc.want {
				t.Errorf("got %s, want int %d", describe(v), tc.want)
			}
		})
	}
}

// With --random-seed=7, pgbench 15 showed :default_seed = -2715325821952477995
// (one client), and with that default seed:
func TestPgbench15DefaultSeed(t *testing.T) {
	tests := []struct {
		src  string
		want int64
	}{
		{"hash(5)", 448783848948553407},
		{"hash_murmur2(5, :default_seed)", 448783848948553407},
		{"hash_fnv1a(5)", 8426818810275457173},
		{"permute(3, 10)", 0},
		{":default_seed", -2715325821952477995},
	}
	_, seed := PgbenchSeeds(7, 1)
	if seed != -2715325821952477995 {
		t.Fatalf("PgbenchSeeds(7, 1) default seed = %d", seed)
	}
	for _, viaVar := range []bool{false, true} {
		env := &Env{DefaultSeed: seed}
		if viaVar {
			env = &Env{DefaultSeed: 99, Lookup: func(name string) (Value, bool) {
				if name == "default_seed" {
					return Value{Kind: Int, I: seed}, true
				}
				return Value{}, false
			}}
		}
		for _, tc := range tests {
			if strings.Contains(tc.src, ":default_seed") && !viaVar {
				continue
			}
			t.Run(tc.src, func(t *testing.T) {
				v := mustEval(t, tc.src, env)
				if v.Kind != Int || v.I != tc.want {
					t.Errorf("got %s, want int %d", describe(v), tc.want)
				}
			})
		}
	}
}

func TestPgbenchSeeds(t *testing.T) {
	// pgbench 15, --random-seed=7: :default_seed with 2 and 3 clients
	if _, d := PgbenchSeeds(7, 2); d != -6956873347570724869 {
		t.Errorf("2 clients: default seed %d", d)
	}
	if _, d := PgbenchSeeds(7, 3); d != -3160969665871953745 {
		t.Errorf("3 clients: default seed %d", d)
	}
}

// pgbench 15 with --random-seed=7 and one client drew these in sequence,
// in one script; the same sequence comes out of its generator replayed
// with NewPRNG.
func TestPgbench15RandomStream(t *testing.T) {
	steps := []struct {
		src  string
		want int64
	}{
		{"random(1, 1000000)", 869439},
		{"random(1, 1000000)", 372040},
		{"random(1, 1000000)", 23551},
		{"random(-5, 5)", 1},
		{"random(0, 4611686018427387904)", 3367402122636759785},
		{"random_gaussian(1, 1000, 2.5)", 417},
		{"random_gaussian(1, 1000, 2.5)", 464},
		{"random_gaussian(-100, 100, 10)", 15},
		{"random_exponential(1, 1000, 3)", 603},
		{"random_exponential(1, 1000, 0.5)", 149},
		{"random_zipfian(1, 1000, 1.5)", 4},
		{"random_zipfian(1, 1000, 1.5)", 1},
		{"random_zipfian(1, 1000000, 1.01)", 5},
		{"random_zipfian(5, 10, 3)", 6},
		{"random(1, 1000000)", 671415},
	}
	seeds, _ := PgbenchSeeds(7, 1)
	env := &Env{Rand: rand.New(NewPRNG(seeds[0]))}
	for i, st := range steps {
		v := mustEval(t, st.src, env)
		if v.Kind != Int || v.I != st.want {
			t.Fatalf("step %d %s: got %s, want %d", i, st.src, describe(v), st.want)
		}
	}
	// with -c 2, client 1 drew 467069 then 571164 from random(1, 1000000)
	seeds, _ = PgbenchSeeds(7, 2)
	env = &Env{Rand: rand.New(NewPRNG(seeds[1]))}
	for _, want := range []int64{467069, 571164} {
		if v := mustEval(t, "random(1, 1000000)", env); v.I != want {
			t.Fatalf("client 1: got %d, want %d", v.I, want)
		}
	}
}

// What pgbench 15 made of "-D x=VALUE" when an expression used :x
// (\set v debug(:x)); SQL substitution of :x itself sends VALUE unchanged.
func TestPgbench15DefineValues(t *testing.T) {
	tests := []struct {
		in, debug, err string
	}{
		{"007", "int 7", ""},
		{" 42", "int 42", ""},
		{"42 ", "", `malformed variable "x" value: "42 "`},
		{"+5", "int 5", ""},
		{"-", "", `invalid input syntax for type bigint: "-"`},
		{"+", "", `invalid input syntax for type bigint: "+"`},
		{"abc", "", `malformed variable "x" value: "abc"`},
		{"1.50", "double 1.5", ""},
		{"1e3", "double 1000", ""},
		{" 2.5", "double 2.5", ""},
		{"2.5 ", "", `malformed variable "x" value: "2.5 "`},
		{"inf", "double Infinity", ""},
		{"-Infinity", "double -Infinity", ""},
		{"infinity", "double Infinity", ""},
		{"INFINITYx", "", `malformed variable "x" value: "INFINITYx"`},
		{"nan", "double NaN", ""},
		{"nan(123)", "double NaN", ""},
		{"-nan", "double NaN", ""},
		{"0x10", "double 16", ""},
		{"0x1p3", "double 8", ""},
		{"  -0x1.8p1", "double -3", ""},
		{"0x", "", `malformed variable "x" value: "0x"`},
		{"0x.p1", "", `malformed variable "x" value: "0x.p1"`},
		{"t", "boolean true", ""},
		{"TRUE", "boolean true", ""},
		{"tr", "boolean true", ""},
		{"yes", "boolean true", ""},
		{"y", "boolean true", ""},
		{"on", "boolean true", ""},
		{"of", "boolean false", ""},
		{"o", "", `malformed variable "x" value: "o"`},
		{"n", "boolean false", ""},
		{"NO", "boolean false", ""},
		{"f", "boolean false", ""},
		{"NULL", "null", ""},
		{"Null", "null", ""},
		{"99999999999999999999", "", `value "99999999999999999999" is out of range for type bigint`},
		{"1e400", "", `malformed variable "x" value: "1e400"`},
		{"1e-400", "", `malformed variable "x" value: "1e-400"`},
		{"1e-310", "", `malformed variable "x" value: "1e-310"`},
		{"2.2250738585072014e-308", "double 2.2250738585072e-308", ""},
		{"2.2250738585072011e-308", "", `malformed variable "x" value: "2.2250738585072011e-308"`},
		{"4.9406564584124654e-324", "", `malformed variable "x" value: "4.9406564584124654e-324"`},
		{"0e-500", "double 0", ""},
		{"0.0000e-999", "double 0", ""},
		{"1e308", "double 1e+308", ""},
		{"1.7976931348623157e308", "double 1.79769313486232e+308", ""},
		{"1.7976931348623159e308", "", `malformed variable "x" value: "1.7976931348623159e308"`},
		{"1e+5", "double 100000", ""},
		{"1E5", "double 100000", ""},
		{" +.5e-1", "double 0.05", ""},
		{".5", "double 0.5", ""},
		{"5.", "double 5", ""},
		{".", "", `malformed variable "x" value: "."`},
		{"1e", "", `malformed variable "x" value: "1e"`},
		{"1_000", "", `malformed variable "x" value: "1_000"`},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			env := &Env{Lookup: func(name string) (Value, bool) {
				if name == "x" {
					return ParseValue(tc.in), true
				}
				return Value{}, false
			}}
			n, err := Parse(":x")
			if err != nil {
				t.Fatal(err)
			}
			v, err := n.Eval(env)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("got %v / %v, want error %q", describe(v), err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := describe(v); got != tc.debug {
				t.Errorf("got %s, want %s", got, tc.debug)
			}
			// the text substituted for :x in SQL is the original text
			if got := ParseValue(tc.in).Text(); got != tc.in {
				t.Errorf("ParseValue(%q).Text() = %q", tc.in, got)
			}
		})
	}
}

// Generated expressions, each run by pgbench 15 on its own as
//
//	pgbench -n -t 1 --random-seed=11 -D x=7 -D d=2.5 -D b=true -D n=NULL -D s=12
//
// (1000 such were compared, all equal; these are a sample). The random
// functions replay pgbench's draws through NewPRNG and PgbenchSeeds.
func TestPgbench15Generated(t *testing.T) {
	tests := []struct {
		src, debug, text string
	}{
		{"random_gaussian(:d, 100000, 2.5)", "int 8761", "8761"},
		{"CASE WHEN ~-2.5 > +random_zipfian(:x, 1000, 2.5) THEN int((-1)) ELSE 0 END", "int 0", "0"},
		{"((random_zipfian(2.0, 1000, 2.5)))", "int 2", "2"},
		{"sqrt(abs(1e-3 + random_gaussian(1, 1000, abs(1e6) + 2)))", "double 22.3607021356665", "22.3607021356665"},
		{"123456789 * random_gaussian(CASE WHEN 2.5 > 0 THEN 1.5 ELSE 0 END, 100000, 2.5)", "int 1081604928429", "1081604928429"},
		{"permute(2.0, abs(random_zipfian(1, 100000, 1.1 + abs(2.5 | 10) / 1000.0)) + 1, 2.5 # .25 & 3.0 & 2.5)", "int 0", "0"},
		{"7 & random_zipfian(1, 100000, 1.1 + abs(-2.5 | .25) / 1000.0)", "int 2", "2"},
		{"random(-5, (1e6 & :s))", "int -3", "-3"},
		{"1 - random(-5, 2.5) & (1.5) - +1e6", "int -999998", "-999998"},
		{"1.5 | random_gaussian(1, 1000, abs(-64) + 2)", "int 487", "487"},
		{"random_zipfian(1, 100000, 1.1 + abs(1000 - :x) / 1000.0)", "int 1", "1"},
		{"(2) - :d + :x >> random_zipfian(:d, 1000, 2.5) | random_zipfian(1, 100000, 1.1 + abs(:s) / 1000.0)", "int 1", "1"},
		{"int(-63) + random_gaussian(10, 100000, 2.5)", "int 8706", "8706"},
		{"(random_gaussian(1, 1000, abs(random_gaussian(.25, 100000, 2.5)) + 2))", "int 501", "501"},
		{"pi() << random_zipfian(1, 100000, 1.1 + abs(+0) / 1000.0)", "int 12", "12"},
		{"random(-5, int(-2.5 - .25))", "int -4", "-4"},
		{"-random_zipfian(7, 1000, 2.5) << ~:d >> 3", "int 288230376151711744", "288230376151711744"},
		{"hash(random_exponential(1, 100000, abs(3.0) + 0.1))", "int -4619289265864966324", "-4619289265864966324"},
		{"random_exponential(1, 100000, abs(least(1.5, 63) % ~-64) + 0.1)", "int 74537", "74537"},
		{":d + random_exponential(1, 100000, abs(~-64) + 0.1)", "double 3673.5", "3673.5"},
		{"~random(2, 1000000) << 63 * :x", "int 3170534137668829184", "3170534137668829184"},
		{"random_zipfian(1, 100000, 1.1 + abs(random_gaussian(-3.0, 100000, 2.5)) / 1000.0)", "int 1", "1"},
		{"random_zipfian(:d, 1000, 2.5)", "int 2", "2"},
		{"0.5 - random_zipfian(1, 100000, 1.1 + abs(random(-5, :x)) / 1000.0)", "double -0.5", "-0.5"},
		{"random(-random_exponential(1, 100000, abs(1000) + 0.1), 1000000)", "int 310414", "310414"},
		{"random_exponential(1, 100000, abs(-1 & 1e3 + random_gaussian(1e-3, 100000, 2.5)) + 0.1)", "int 16", "16"},
		{"random_zipfian(3 & hash_murmur2(1.5), 1000, 2.5)", "int 1", "1"},
		{"-2.5 / 2.0 - 1e-3 # random_gaussian(permute(:d, abs(1.5) + 1, 1.5), 100000, 2.5)", "int -8761", "-8761"},
		{"(sqrt(abs(random(:d, 1000000))))", "double 972.177452937477", "972.177452937477"},
		{"random_gaussian(1, 1000, abs((pi())) + 2)", "int 300", "300"},
		{"ln(abs(permute(100, abs(abs(1e6)) + 1, :x)) + 1)", "double 13.1173086236346", "13.1173086236346"},
		{"1.5", "double 1.5", "1.5"},
		{"exp(~(2.5) / 1000.0)", "double 0.367879441171442", "0.367879441171442"},
		{"(-1e3 - 63 / 2)", "double -1031", "-1031"},
		{"pi()", "double 3.14159265358979", "3.14159265358979"},
		{"++2.0 - -1", "double 3", "3"},
		{"(1000 | 63) + -1e6", "double -998977", "-998977"},
		{"1e3", "double 1000", "1000"},
		{"sqrt(abs(:s & 2.0)) - double(~2)", "double 3", "3"},
		{"permute(:s, abs(63) + 1, 1000) / .25 * -sqrt(abs(:s))", "double -457.261413198184", "-457.261413198184"},
		{"+ln(abs(-64) + 1)", "double 4.17438726989564", "4.17438726989564"},
		{"(1e6)", "double 1000000", "1000000"},
		{"1.5", "double 1.5", "1.5"},
		{"2.0", "double 2", "2"},
		{"2.5", "double 2.5", "2.5"},
		{"ln(abs(1e-3) + 1)", "double 0.000999500333083423", "0.000999500333083423"},
		{"CASE WHEN (.25) > CASE WHEN abs(100) > permute(2.5, 1000) THEN 2.0 ELSE 0 END THEN -2.5 ELSE 0 END", "double -2.5", "-2.5"},
		{"0.5", "double 0.5", "0.5"},
		{"(hash(7) / 2.5)", "double 3.3286241197844e+18", "3.3286241197844e+18"},
		{"double(7)", "double 7", "7"},
		{"+hash_fnv1a(2, 123456789) + 3", "int -5593462647518386059", "-5593462647518386059"},
		{"1000 >> hash(-64) & permute(63, abs((-2.5)) + 1, 10 # 123456789)", "int 0", "0"},
		{"10", "int 10", "10"},
		{"123456789", "int 123456789", "123456789"},
		{"abs(-1) - 10 * 3.0 << double(1e-3 / 7)", "int -29", "-29"},
		{"(mod(+:x, 7))", "int 0", "0"},
		{"mod(hash_murmur2(2) * permute(1e-3, abs(:d) + 1, 3.0), 7)", "int 5", "5"},
		{"int((-1)) << ---2.5", "int -4611686018427387904", "-4611686018427387904"},
		{"10", "int 10", "10"},
		{"permute(~abs(63), 1000)", "int 221", "221"},
	}
	seeds, defaultSeed := PgbenchSeeds(11, 1)
	vars := map[string]Value{
		"x": ParseValue("7"), "d": ParseValue("2.5"), "b": ParseValue("true"),
		"n": ParseValue("NULL"), "s": ParseValue("12"),
	}
	for _, tc := range tests {
		t.Run(tc.src, func(t *testing.T) {
			env := &Env{
				Lookup: func(name string) (Value, bool) {
					v, ok := vars[name]
					return v, ok
				},
				Rand:        rand.New(NewPRNG(seeds[0])),
				DefaultSeed: defaultSeed,
			}
			v := mustEval(t, tc.src, env)
			if got := describe(v); got != tc.debug {
				t.Errorf("value %s, want %s", got, tc.debug)
			}
			if got := v.Text(); got != tc.text {
				t.Errorf("Text %q, want %q", got, tc.text)
			}
		})
	}
}
