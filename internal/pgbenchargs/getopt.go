package pgbenchargs

import (
	"fmt"
	"strings"
)

// longOpt is an entry of getopt_long's struct option table.
type longOpt struct {
	name   string
	hasArg bool
	id     optID
}

// getopt walks argv the way glibc's getopt_long does with pgbench's option
// string: options and operands may be mixed (operands are collected in
// order), "--" ends the options, short options cluster ("-nS", "-c4"), long
// options take "=value" or the next argument and may be abbreviated to any
// unambiguous prefix. A required argument is the next word whatever it is,
// as in C ("-d -c" gives -d the value "-c").
type getopt struct {
	prog  string
	short map[byte]shortOpt
	long  []longOpt
	// passthrough says whether a long option that is not pgbench's is one
	// of txload's own, and if it takes a value.
	passthrough func(name string) (known, hasArg bool)
}

type shortOpt struct {
	hasArg bool
	id     optID
}

// occurrence is one option found on the command line.
type occurrence struct {
	id  optID
	arg string
	// spelled is the option as written, for messages: "-c", "--client".
	spelled string
}

// getoptError is one of getopt's own complaints: pgbench then adds its hint.
type getoptError struct{ msg string }

func (e *getoptError) Error() string { return e.msg }

// parse returns the options in order, the operands, and the passed-through
// txload options ("--name=value" or "--name").
func (g *getopt) parse(args []string, visit func(occurrence) error) (operands, passed []string, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(operands, args[i+1:]...), passed, nil
		case len(a) < 2 || a[0] != '-':
			operands = append(operands, a)
		case strings.HasPrefix(a, "--"):
			name, value, hasValue := strings.Cut(a[2:], "=")
			o, err := g.findLong(a[2:], name)
			if err != nil {
				return nil, nil, err
			}
			if o == nil {
				known, takes := false, false
				if g.passthrough != nil {
					known, takes = g.passthrough(name)
				}
				if !known {
					return nil, nil, &getoptError{fmt.Sprintf("%s: unrecognized option '--%s'", g.prog, a[2:])}
				}
				switch {
				case hasValue:
					passed = append(passed, "--"+name+"="+value)
				case takes && i+1 < len(args):
					i++
					passed = append(passed, "--"+name+"="+args[i])
				case takes:
					return nil, nil, &getoptError{fmt.Sprintf("%s: option '--%s' requires an argument", g.prog, name)}
				default:
					passed = append(passed, "--"+name)
				}
				continue
			}
			occ := occurrence{id: o.id, spelled: "--" + o.name}
			switch {
			case hasValue && !o.hasArg:
				return nil, nil, &getoptError{fmt.Sprintf("%s: option '--%s' doesn't allow an argument", g.prog, o.name)}
			case hasValue:
				occ.arg = value
			case o.hasArg && i+1 < len(args):
				i++
				occ.arg = args[i]
			case o.hasArg:
				return nil, nil, &getoptError{fmt.Sprintf("%s: option '--%s' requires an argument", g.prog, o.name)}
			}
			if err := visit(occ); err != nil {
				return nil, nil, err
			}
		default:
			// A cluster of short options.
			for j := 1; j < len(a); j++ {
				c := a[j]
				s, ok := g.short[c]
				if !ok {
					return nil, nil, &getoptError{fmt.Sprintf("%s: invalid option -- '%c'", g.prog, c)}
				}
				occ := occurrence{id: s.id, spelled: "-" + string(c)}
				if s.hasArg {
					switch {
					case j+1 < len(a):
						occ.arg = a[j+1:]
					case i+1 < len(args):
						i++
						occ.arg = args[i]
					default:
						return nil, nil, &getoptError{fmt.Sprintf("%s: option requires an argument -- '%c'", g.prog, c)}
					}
					j = len(a)
				}
				if err := visit(occ); err != nil {
					return nil, nil, err
				}
			}
		}
	}
	return operands, passed, nil
}

// findLong finds the long option name: an exact match, else the only
// option it is a prefix of. nil when it is no option's prefix. whole is the
// argument after "--", "=value" included, as glibc quotes it.
func (g *getopt) findLong(whole, name string) (*longOpt, error) {
	var found []*longOpt
	for i := range g.long {
		o := &g.long[i]
		if o.name == name {
			return o, nil
		}
		if strings.HasPrefix(o.name, name) {
			found = append(found, o)
		}
	}
	switch {
	case len(found) == 0:
		return nil, nil
	case len(found) == 1:
		return found[0], nil
	}
	// glibc does not call it ambiguous when every candidate is the same
	// option (aliases); pgbench has none, but keep the rule.
	same := true
	for _, o := range found[1:] {
		if o.id != found[0].id || o.hasArg != found[0].hasArg {
			same = false
		}
	}
	if same {
		return found[0], nil
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s: option '--%s' is ambiguous; possibilities:", g.prog, whole)
	for _, o := range found {
		fmt.Fprintf(&sb, " '--%s'", o.name)
	}
	return nil, &getoptError{sb.String()}
}
