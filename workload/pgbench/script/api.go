package script

// This file fixes the package's API; the implementation is in the other
// files of the package.

import (
	"fmt"
	"strings"
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
	// Shell runs Args as a shell command (\shell); SetShell runs them
	// and sets Var to the integer the command prints (\setshell).
	Shell
	SetShell
)

// Script is one parsed script file (or builtin).
type Script struct {
	Name     string // file name as given, or builtin name
	Weight   int    // from FILE@WEIGHT, default 1
	Commands []Command

	// Title is how pgbench names the script in its report: the file name,
	// or a builtin's description such as "<builtin: TPC-B (sort of)>".
	Title string

	gsetLines map[int]int // command index -> line of its \gset or \aset
}

// Command is one SQL command or meta-command.
type Command struct {
	Kind Kind
	File string // for error messages: File:Line
	Line int    // line of the command's first character (the backslash of a meta-command)

	// SQL: the statement as written (with :var references), the same with
	// $1..$n in place of the references, and the variable names in
	// parameter order. Gset/Aset are set when \gset or \aset ended it;
	// Prefix is their optional prefix.
	//
	// Text is what pgbench sends in simple mode before substituting
	// variables: leading white space and "--" comments are dropped, and so
	// is trailing white space; the terminating ';' is kept, "\;" becomes
	// ";" and "\:" becomes ":". For meta-commands, Text is the command as
	// written, from its backslash to the end of its (last) line.
	Text       string
	Prepared   string
	Params     []string
	Gset, Aset bool
	Prefix     string

	// ParamPos holds, for each of Params, the byte offset in Text of the
	// ':' of its reference (which is 1+len(name) bytes long). pgbench's
	// simple mode replaces exactly these references whose variable is
	// set, and leaves the others as written.
	ParamPos []int

	// Compound is set when the SQL command holds several statements
	// joined by "\;" (pgbench sends them in one query; \gset then applies
	// to the last one, \aset to all).
	Compound bool

	// Name is a meta-command's name as written ("set", "SLEEP"): pgbench
	// names the command so in its messages.
	Name string

	// Set: Var = Expr. If/Elif: Expr. ExprSrc is the expression as
	// written (continuation lines joined by a space). SetShell: Var is
	// the variable set.
	Var     string
	Expr    expr.Node
	ExprSrc string

	// Shell, SetShell: the words of the shell command; a word that begins
	// with one ':' names a variable, with "::" a literal ':'.
	Args []string

	// Sleep: a number or a :variable, times Unit (us, ms or s; default s).
	SleepValue int64
	SleepVar   string
	// SleepVarSet says the argument was a :variable (SleepVar may be "").
	SleepVarSet bool
	Unit        time.Duration

	// If/Elif/Else: index of the next Elif/Else/Endif of the same \if.
	// Endif: its own index + 1 (where execution continues). Other kinds: 0.
	Next int

	// If/Elif/Else/Endif: index of the \endif that closes the chain.
	End int
}

// Error is a script error that names the file and line. Its text shows
// the bytes of a script that are not printable text escaped (\x1b, \u2028),
// so that a binary file cannot garble a terminal.
//
// Pgbench gives the same error as pgbench prints it.
type Error struct {
	File string
	Line int
	Msg  string
	pg   pgForm
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s:%d: %s", Printable(e.File), e.Line, Printable(e.Msg))
}

// pgForm is an error as pgbench's syntax_error() prints it: "FILE:LINE:
// MSG (MORE) in command "COMMAND"", then the command's line and a caret
// under Column; or, when plain is set, plain alone (its errors that name
// no line: conditionals, an empty script).
type pgForm struct {
	msg, more, command, line string
	column                   int // -1: none
	plain                    string
	lineno                   int // the line pgbench names, when not Line
}

// Pgbench is the error as pgbench prints it on stderr, prog naming the
// program: its first line begins with "prog: error: ", the command's line
// and a caret may follow; each line ends in a newline.
func (e *Error) Pgbench(prog string) string {
	f := e.pg
	if f.plain != "" {
		return prog + ": error: " + f.plain + "\n"
	}
	if f.msg == "" {
		return fmt.Sprintf("%s: error: %s\n", prog, e.Error())
	}
	lineno := e.Line
	if f.lineno > 0 {
		lineno = f.lineno
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: error: %s:%d: %s", prog, e.File, lineno, f.msg)
	if f.more != "" {
		fmt.Fprintf(&b, " (%s)", f.more)
	}
	if f.column >= 0 && f.line == "" {
		fmt.Fprintf(&b, " at column %d", f.column+1)
	}
	if f.command != "" {
		fmt.Fprintf(&b, " in command \"%s\"", f.command)
	}
	b.WriteByte('\n')
	if f.line != "" {
		b.WriteString(f.line + "\n")
		if f.column >= 0 {
			fmt.Fprintf(&b, "%*c error found here\n", f.column+1, '^')
		}
	}
	return b.String()
}

// Printable returns s with every byte that is not valid UTF-8 written as
// \xNN and every rune that is not printable (control characters, line and
// paragraph separators, tabs) as \xNN, \uNNNN or \UNNNNNNNN; the rest,
// backslashes included, as it is.
func Printable(s string) string { return printable(s) }

// Parse parses the text of a script named name, as pgbench does with the
// contents of a --file: the Script's Name and Title are name, its Weight 1.
// Its bytes are sent as they are (the server reads them in the client
// encoding); a NUL byte (a binary file) is an error that gives its offset.
func Parse(name, src string) (*Script, error) { return parse(name, name, src, 0) }

// ParseAs is Parse as pgbench of version major (15 to 18) parses: before
// 17, \syncpipeline is an invalid command.
func ParseAs(name, src string, major int) (*Script, error) { return parse(name, name, src, major) }

// ValidVariableName is pgbench's valid_variable_name: ASCII letters,
// digits, '_' and any non-ASCII byte, not beginning with a digit.
func ValidVariableName(name string) bool { return validVariableName(name) }

// ParseFileArg splits FILE[@WEIGHT] as pgbench's --file (and --builtin)
// takes it: at the last '@'; the weight is 1 when absent and must be an
// integer from 0 to 2147483647.
func ParseFileArg(arg string) (path string, weight int, err error) { return parseFileArg(arg) }

// Builtin returns one of pgbench's builtin scripts: tpcb-like, simple-update,
// select-only, with pgbench's exact text. As pgbench's -b, it accepts any
// unambiguous prefix of a name ("tpcb", "simple", "select").
func Builtin(name string) (*Script, error) { return builtin(name) }
