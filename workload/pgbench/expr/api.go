package expr

// This file fixes the package's API; the implementation fills it in.

import (
	"io"
	"math/rand/v2"
)

// Kind is the type of a Value.
type Kind uint8

// The kinds of value pgbench expressions handle. Str is only ever held by a
// variable (from --define, \gset or \aset); using one where a number is
// needed converts it as pgbench does, or fails.
const (
	Null Kind = iota
	Bool
	Int
	Double
	Str
)

// Value is the result of an expression or the value of a variable.
type Value struct {
	Kind Kind
	B    bool
	I    int64
	F    float64
	S    string
}

// Node is a parsed expression.
type Node interface {
	Eval(env *Env) (Value, error)
}

// Env is what evaluation may touch.
type Env struct {
	// Lookup returns the value of a variable, false if it is not set.
	Lookup func(name string) (Value, bool)
	// Rand is the client's random generator (deterministic under a seed).
	Rand *rand.Rand
	// Debug receives debug() output; nil discards it.
	Debug io.Writer
	// DefaultSeed is the value of :default_seed, used by hash functions
	// and permute when no seed argument is given.
	DefaultSeed int64
	// Script and Command say where the expression is, for debug()'s line:
	// the script's index and the command's number from 1, as pgbench
	// prints them.
	Script, Command int
}

// Parse parses one expression as written after \set NAME or \if. Errors
// are *SyntaxError values.
func Parse(src string) (Node, error) { return parse(src) }

// Text returns the text substituted for a variable in SQL: integers in
// decimal, doubles as pgbench prints them ("%.15g", with NaN, Infinity and
// -Infinity), booleans true/false, NULL as "NULL" (what pgbench 15
// substitutes), strings as they are.
func (v Value) Text() string { return v.text() }

// ParseValue reads a variable's text (from --define, \gset) into a Value:
// an integer or a double when it reads as one and prints back as the same
// text, else a string. A string keeps its exact text for SQL substitution
// and is converted as pgbench does (see Resolve) when an expression uses it.
func ParseValue(s string) Value { return parseValue(s) }
