// Package expr is pgbench's expression language, as written after \set NAME
// and \if, with the semantics of PostgreSQL 15/16 pgbench (exprscan.l,
// exprparse.y and the evaluation in pgbench.c).
//
// Syntax: integer constants (an overflow is a parse error, and
// -9223372036854775808 is accepted), doubles (1.5, 1e3, .5, 1.), true,
// false and null in any case, :variables, parentheses, function calls, and
// the operators, from loosest to tightest binding:
//
//	OR                               left
//	AND                              left
//	NOT                              prefix
//	IS [NOT] NULL|TRUE|FALSE, ISNULL, NOTNULL   postfix
//	= <> != < <= > >=                non-associative
//	| # & << >> and prefix ~         left (# is xor)
//	+ -                              left
//	* / %                            left
//	prefix + -
//
// and CASE WHEN c THEN v [WHEN ...] [ELSE e] END (without ELSE, NULL).
// Keywords and function names ignore case. An unknown function, a wrong
// argument count and any other syntax error are reported by Parse as a
// *SyntaxError.
//
// Evaluation follows pgbench: an operator or function with a NULL argument
// gives NULL (except IS and debug); AND and OR give NULL when their left
// operand is NULL and skip their right operand when the left one decides;
// NOT, AND and OR want booleans; arithmetic on two integers is integer
// arithmetic with overflow errors ("bigint add out of range"), else double
// arithmetic, except % which always rounds its operands to integers;
// integer division truncates; a double becomes an integer by rounding half
// to even; -x is 0 - x and ~x is -1 # x; shift counts are taken modulo 64.
// CASE conditions and \if use Value.Truth (NULL and zero are false).
//
// Variables come from Env.Lookup; a Str value (text from --define or
// \gset) is converted on use by Resolve. The seed omitted from hash(),
// hash_murmur2(), hash_fnv1a() and permute() is the variable :default_seed
// when Lookup has it (as in pgbench), else Env.DefaultSeed.
//
// The random functions draw from Env.Rand with pgbench's algorithms and
// the very sequence of draws pgbench makes, so with
// rand.New(NewPRNG(seed)) they return what a pgbench client seeded with
// seed would. hash functions and permute are bit-exact with pgbench.
//
// A parsed Node is immutable: it may be evaluated by many goroutines at
// once, each with its own Env (a *rand.Rand is not safe for concurrent
// use). Evaluation allocates nothing except for errors and debug() output.
//
// debug(x) writes one line to Env.Debug, in a single Write, such as
// "debug(script=0,command=1): int 5" (double 1.5, boolean true, null;
// where: Env.Script and Env.Command), and returns x.
package expr
