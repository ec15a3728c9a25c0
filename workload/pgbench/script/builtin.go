package script

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// builtinScript is an entry of pgbench's builtin_script[].
type builtinScript struct {
	name  string // for -b
	title string // pgbench's desc, in its report
	text  string
}

// builtins are pgbench's builtin scripts (pgbench.c builtin_script[], with
// naccounts 100000, nbranches 1 and ntellers 10), byte for byte: the same
// as "pgbench --show-script=NAME" prints.
var builtins = []builtinScript{
	{
		"tpcb-like",
		"<builtin: TPC-B (sort of)>",
		`\set aid random(1, 100000 * :scale)
\set bid random(1, 1 * :scale)
\set tid random(1, 10 * :scale)
\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
`,
	},
	{
		"simple-update",
		"<builtin: simple update>",
		`\set aid random(1, 100000 * :scale)
\set bid random(1, 1 * :scale)
\set tid random(1, 10 * :scale)
\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
`,
	},
	{
		"select-only",
		"<builtin: select only>",
		`\set aid random(1, 100000 * :scale)
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
`,
	},
}

// builtin is pgbench's findBuiltin then ParseScript: name may be any
// prefix of exactly one builtin's name.
func builtin(name string) (*Script, error) {
	var found []*builtinScript
	for i := range builtins {
		if strings.HasPrefix(builtins[i].name, name) {
			found = append(found, &builtins[i])
		}
	}
	switch len(found) {
	case 1:
		b := found[0]
		s, err := parse(b.title, b.title, b.text, 0)
		if err != nil {
			return nil, err
		}
		s.Name = b.name
		return s, nil
	case 0:
		return nil, fmt.Errorf("no builtin script found for name \"%s\" (available: %s)", name, BuiltinNames())
	default:
		return nil, fmt.Errorf("ambiguous builtin name: %d builtin scripts found for prefix \"%s\" (available: %s)",
			len(found), name, BuiltinNames())
	}
}

// BuiltinNames lists the builtin scripts' names, comma-separated.
func BuiltinNames() string {
	names := make([]string, len(builtins))
	for i, b := range builtins {
		names[i] = b.name
	}
	return strings.Join(names, ", ")
}

// ListBuiltins is what pgbench prints for "-b list":
//
//	Available builtin scripts:
//	      tpcb-like: <builtin: TPC-B (sort of)>
//	  ...
func ListBuiltins() string {
	var sb strings.Builder
	sb.WriteString("Available builtin scripts:\n")
	for _, b := range builtins {
		fmt.Fprintf(&sb, "  %13s: %s\n", b.name, b.title)
	}
	return sb.String()
}

// BuiltinText returns the text of the builtin script name (a prefix, as for
// Builtin), as pgbench's --show-script prints it after a "-- name: title"
// line.
func BuiltinText(name string) (text string, err error) {
	s, err := builtin(name)
	if err != nil {
		return "", err
	}
	for _, b := range builtins {
		if b.name == s.Name {
			return b.text, nil
		}
	}
	return "", fmt.Errorf("no builtin script found for name \"%s\"", name)
}

// parseFileArg is pgbench's parseScriptWeight: split at the last '@'; the
// weight is read as strtol would (leading white space and a sign allowed,
// nothing after the digits) and must be in 0..INT_MAX.
func parseFileArg(arg string) (string, int, error) {
	i := strings.LastIndexByte(arg, '@')
	if i < 0 {
		return arg, 1, nil
	}
	path, spec := arg[:i], arg[i:]
	w := strings.TrimLeft(spec[1:], " \t\n\v\f\r")
	digits := strings.TrimLeft(w, "+-")
	if len(w)-len(digits) > 1 || digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
		return "", 0, fmt.Errorf("invalid weight specification: %s", spec)
	}
	v, err := strconv.ParseInt(w, 10, 64)
	if err != nil {
		// Beyond a C long: strtol sets ERANGE.
		return "", 0, fmt.Errorf("invalid weight specification: %s", spec)
	}
	if v < 0 || v > math.MaxInt32 {
		return "", 0, fmt.Errorf("weight specification out of range (0 .. %d): %d", math.MaxInt32, v)
	}
	return path, int(v), nil
}
