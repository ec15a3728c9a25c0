package cli

import (
	"strings"
	"testing"
)

// A server's error message that holds terminal escapes (a RAISE's text:
// ESC[8m conceals every later line, a VIOLATION's included; ESC]0;…BEL
// retitles the window; U+009B is a C1 CSI) reaches the terminal quoted,
// wherever txload prints it: the first error of a class, the ABORTED note
// and the last line, --verbose-errors, pgbench's error lines.
func TestServerMessageEscapesQuoted(t *testing.T) {
	t.Parallel()
	url := srv.NewDatabase(t)
	if r := txload(t.Context(), nil, "init", "bank", "--url", url, "--accounts", "100"); r.code != 0 {
		t.Fatalf("init: exit %d\n%s", r.code, r.stderr)
	}
	raise := `'x' || chr(27) || '[8m' || chr(27) || ']0;TITLE' || chr(7) || chr(155) || 'y'`
	sqlExec(t, url, `CREATE FUNCTION esc() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION '%', `+raise+`; END $$`,
		`CREATE TRIGGER esc BEFORE INSERT ON bank_ledger FOR EACH ROW EXECUTE FUNCTION esc()`)
	quoted := `x\x1b[8m\x1b]0;TITLE\x07\u009by`
	script := writeScript(t, "esc.sql", "DO $$ BEGIN RAISE EXCEPTION '%', "+raise+"; END $$;\n")
	bank := []string{"run", "bank", "--url", url, "--init", "keep", "--accounts", "100", "--isolation", "rc", "-c", "1", "-t", "3", "--progress", "0"}
	for _, tc := range []struct {
		name string
		args []string
		// where: the lines that must hold the message quoted.
		where []string
	}{
		{"first error", append(bank, "--continue-on-error"), []string{"first other error: ERROR: " + quoted}},
		{"aborted", bank, []string{"ABORTED: 1 client ended on an error no retry cures", "txload: 1 client aborted: ERROR: " + quoted}},
		{"verbose errors", append(bank, "--continue-on-error", "--verbose-errors"), []string{"error: worker 0 transfer attempt 1: other: ERROR: " + quoted}},
		{"pgbench", []string{"pgbench", "-n", "-t", "1", "-c", "1", "-f", script, url}, []string{"ERROR:  " + quoted}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := txload(t.Context(), nil, tc.args...)
			out := r.stdout + r.stderr
			for _, c := range []string{"\x1b", "\x07", "\u009b"} {
				if strings.Contains(out, c) {
					t.Fatalf("%q reached the terminal raw (exit %d):\n%q", c, r.code, out)
				}
			}
			for _, w := range tc.where {
				if !strings.Contains(out, w) {
					t.Errorf("no %q in (exit %d):\n%s", w, r.code, out)
				}
			}
		})
	}
}
