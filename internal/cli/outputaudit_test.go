package cli

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/txload/txload/internal/pgtest"
)

// `run --output pgbench` audits as the text output does: the audit's
// lines on stderr (stdout is pgbench's report alone), its violations
// exit 1, and the document keeps them. A clean run exits 0 with the
// report unchanged.
func TestPgbenchOutputAudits(t *testing.T) {
	t.Parallel()
	report := regexp.MustCompile(`(?m)^number of transactions actually processed: 40/40$`)
	for _, tc := range []struct {
		name   string
		args   []string
		tamper string
		want   string
	}{
		{"bank clean", []string{"bank", "--accounts", "100", "--isolation", "rc"}, "", "check: ok"},
		{"bank tampered", []string{"bank", "--accounts", "100", "--isolation", "rc"},
			"UPDATE bank_account SET balance = balance + 500 WHERE id = 7", "VIOLATION: "},
		{"tpcb-like clean", []string{"tpcb-like"}, "", "check: ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := srv.NewDatabase(t)
			if r := txload(t.Context(), nil, append([]string{"run"}, append(tc.args, "--url", url, "--init", "fresh", "--transactions", "20", "--progress", "0")...)...); r.code != 0 {
				t.Fatalf("first run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			if tc.tamper != "" {
				if _, err := pgtest.Conn(t, url).Exec(context.Background(), tc.tamper); err != nil {
					t.Fatal(err)
				}
			}
			js := jsonPath(t)
			r := txload(t.Context(), nil, append([]string{"run"}, append(tc.args, "--url", url, "--init", "keep", "--concurrency", "2",
				"--transactions", "20", "--progress", "0", "--output", "pgbench", "--json", js)...)...)
			wantCode := 0
			if tc.tamper != "" {
				wantCode = 1
			}
			if r.code != wantCode {
				t.Fatalf("exit %d, want %d\n%s\n%s", r.code, wantCode, r.stdout, r.stderr)
			}
			if !report.MatchString(r.stdout) {
				t.Errorf("no pgbench report on stdout:\n%s", r.stdout)
			}
			if strings.Contains(r.stdout, "check: ok") || strings.Contains(r.stdout, "VIOLATION") {
				t.Errorf("the audit printed on stdout, in pgbench's report:\n%s", r.stdout)
			}
			mustContain(t, r.stderr, tc.want)
			chk := readDoc(t, js).Runs[0].Check
			if chk == nil {
				t.Fatalf("the document holds no audit")
			}
			if got := len(chk.Violations) > 0; got != (tc.tamper != "") {
				t.Errorf("the document's violations: %q", chk.Violations)
			}
		})
	}
}
