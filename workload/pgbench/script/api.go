package script

// This file fixes the package's API; the implementation fills it in.

import (
	"errors"
	"time"

	"github.com/txload/txload/workload/pgbench/expr"
)

// Kind is the kind of a command.
type Kind uint8

// The commands of a pgbench script.
const (
	SQL Kind = iota
	Set
	Sleep
	If
	Elif
	Else
	Endif
	StartPipeline
	EndPipeline
	SyncPipeline
)

// Script is one parsed script file (or builtin).
type Script struct {
	Name     string // file name as given, or builtin name
	Weight   int    // from FILE@WEIGHT, default 1
	Commands []Command
}

// Command is one SQL command or meta-command.
type Command struct {
	Kind Kind
	File string // for error messages: File:Line
	Line int

	// SQL: the statement as written (with :var references), the same with
	// $1..$n in place of the references, and the variable names in
	// parameter order. Gset/Aset are set when \gset or \aset ended it;
	// Prefix is their optional prefix.
	Text       string
	Prepared   string
	Params     []string
	Gset, Aset bool
	Prefix     string

	// Set: Var = Expr. If/Elif: Expr.
	Var  string
	Expr expr.Node

	// Sleep: a number or a :variable, times Unit (us, ms or s; default s).
	SleepValue int64
	SleepVar   string
	Unit       time.Duration

	// If/Elif/Else: index of the next Elif/Else/Endif of the same \if;
	// Endif for the others of the chain, in Next too.
	Next int
}

// Error is a script error that names the file and line.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string { return "" }

var errNotImplemented = errors.New("script: not implemented")

// Parse parses the text of a script named name.
func Parse(name, src string) (*Script, error) { return nil, errNotImplemented }

// ParseFileArg splits FILE[@WEIGHT] as pgbench's --file takes it.
func ParseFileArg(arg string) (path string, weight int, err error) { return "", 0, errNotImplemented }

// Builtin returns one of pgbench's builtin scripts: tpcb-like, simple-update,
// select-only, with pgbench's exact text.
func Builtin(name string) (*Script, error) { return nil, errNotImplemented }
