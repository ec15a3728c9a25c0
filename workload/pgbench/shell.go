package pgbench

import (
	"bufio"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"

	"github.com/txload/txload/workload/pgbench/expr"
	"github.com/txload/txload/workload/pgbench/script"
)

// shellCommandSize is pgbench's SHELL_COMMAND_SIZE: a shell command, its
// words joined by spaces, is shorter than 255 bytes.
const shellCommandSize = 256

// shell runs a \shell or \setshell command as pgbench's runShellCommand
// does: its words joined by spaces (":name" is the variable's value,
// "::x" the literal ":x"), run by /bin/sh -c; \shell fails when the shell
// exits with a status other than 0, \setshell reads the first line the
// command prints (at most 63 bytes, as pgbench's fgets) and sets its
// variable to the integer there. The client's I/O loop waits for the
// command, as pgbench's thread waits. Errors are worded as pgbench's, the
// command's first word naming it.
func (p *program) shell(c *script.Command) error {
	argv := c.Args
	var cmd strings.Builder
	for i, a := range argv {
		switch {
		case !strings.HasPrefix(a, ":"):
		case strings.HasPrefix(a, "::"):
			a = a[1:]
		default:
			v, ok := p.lookup(a[1:])
			if !ok {
				return fmt.Errorf("%s: undefined variable \"%s\"", argv[0], a)
			}
			a = v.Text()
		}
		sep := 0
		if i > 0 {
			sep = 1
		}
		if cmd.Len()+len(a)+sep >= shellCommandSize-1 {
			return fmt.Errorf("%s: shell command is too long", argv[0])
		}
		if i > 0 {
			cmd.WriteByte(' ')
		}
		cmd.WriteString(a)
	}
	sh := exec.Command("/bin/sh", "-c", cmd.String())
	sh.Stderr = p.log
	if c.Kind == script.Shell {
		sh.Stdout = p.stdout
		if err := sh.Run(); err != nil {
			return fmt.Errorf("%s: could not launch shell command", argv[0])
		}
		return nil
	}
	out, err := sh.StdoutPipe()
	if err != nil {
		return fmt.Errorf("%s: could not launch shell command", argv[0])
	}
	if err := sh.Start(); err != nil {
		return fmt.Errorf("%s: could not launch shell command", argv[0])
	}
	res, rerr := readLine(bufio.NewReader(out), 63)
	out.Close()
	werr := sh.Wait()
	var exit *exec.ExitError
	if werr != nil && !errors.As(werr, &exit) {
		return fmt.Errorf("%s: could not run shell command: %v", argv[0], werr)
	}
	if rerr != nil {
		return fmt.Errorf("%s: could not read result of shell command", argv[0])
	}
	n, ok := strtol(res)
	if !ok {
		return fmt.Errorf("%s: shell command must return an integer (not \"%s\")", argv[0], res)
	}
	if err := p.assign("setshell", c.Var, expr.Value{Kind: expr.Int, I: int64(int32(n))}); err != nil {
		return err
	}
	if p.trace != nil {
		name := ""
		if len(argv) > 1 {
			name = argv[1]
		}
		p.trace.printf("%s: shell parameter name: \"%s\", value: \"%s\"", argv[0], name, res)
	}
	return nil
}

// readLine is C's fgets with a buffer of max+1 bytes: up to max bytes, to
// the first newline included; an error when there is nothing to read.
func readLine(r *bufio.Reader, max int) (string, error) {
	var b []byte
	for len(b) < max {
		c, err := r.ReadByte()
		if err != nil {
			if len(b) == 0 {
				return "", err
			}
			break
		}
		b = append(b, c)
		if c == '\n' {
			break
		}
	}
	return string(b), nil
}

// strtol is C's strtol(s, &end, 10) as runShellCommand checks it: leading
// white space, a sign and digits, then only white space; saturated at the
// int64 bounds as strtol saturates a 64-bit long. A string of white space
// alone reads as 0 (strtol converts nothing and the check passes).
func strtol(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	i := 0
	for i < len(s) && isCSpace(s[i]) {
		i++
	}
	start := i
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	d := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	end := i
	if i == d { // no digits: nothing converted, end is the start of s
		end = 0
	}
	for end < len(s) && isCSpace(s[end]) {
		end++
	}
	if end != len(s) {
		return 0, false
	}
	if i == d {
		return 0, true
	}
	n, err := strconv.ParseInt(s[start:i], 10, 64)
	if err != nil { // out of range: ParseInt saturates as strtol does
		return n, true
	}
	return n, true
}

func isCSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}
