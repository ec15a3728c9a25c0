package pgbenchrun

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/txload/txload/internal/pgbenchargs"
	"github.com/txload/txload/internal/runner"
)

// The server is chosen as pgbench would and as txload adds: --url, else
// what libpq's options and environment name, else $DATABASE_URL, else the
// embedded server, said on stderr; --url beside a libpq option is refused.
func TestCommandTarget(t *testing.T) {
	for _, tc := range []struct {
		name        string
		args        pgbenchargs.Options
		urls        []string
		env         map[string]string
		databaseURL string
		wantURLs    []string // nil: the embedded server
		wantErr     string
		wantStderr  string
	}{
		{name: "url", urls: []string{"postgres://a/b"}, databaseURL: "postgres://c/d", wantURLs: []string{"postgres://a/b"}},
		{name: "url and -h", args: pgbenchargs.Options{Host: "h"}, urls: []string{"postgres://a/b"}, wantErr: "--url and -h both name the server: give one"},
		{name: "url and dbname", args: pgbenchargs.Options{DBName: "x"}, urls: []string{"postgres://a/b"}, wantErr: "--url and the database name both name the server: give one"},
		{name: "-h and -p", args: pgbenchargs.Options{Host: "h1", Port: "5433", DBName: "db"}, databaseURL: "postgres://c/d", wantURLs: []string{"host='h1'", "port='5433'", "dbname='db'", "application_name='pgbench'"}},
		// libpq's environment names the server: the connection is libpq's
		// (pgx reads PGHOST itself), not $DATABASE_URL.
		{name: "PGHOST", env: map[string]string{"PGHOST": "envhost"}, databaseURL: "postgres://c/d", wantURLs: []string{"application_name='pgbench'"}},
		{name: "DATABASE_URL", databaseURL: "postgres://c/d", wantURLs: []string{"postgres://c/d"}},
		{name: "embedded", wantStderr: "txload pgbench: nothing names a server (no -h, -p, -U or database name, no PGHOST, PGHOSTADDR, PGPORT, PGUSER, PGDATABASE or PGSERVICE, no --url or DATABASE_URL): running on an embedded PostgreSQL 17, removed on exit\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			c := &Command{Args: &tc.args, Target: runner.TargetOptions{URLs: tc.urls, EmbeddedVersion: "17"},
				LookupEnv: func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }, DatabaseURL: tc.databaseURL, Stderr: &stderr}
			got, err := c.target()
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if stderr.String() != tc.wantStderr {
				t.Errorf("stderr %q, want %q", stderr.String(), tc.wantStderr)
			}
			if tc.wantURLs == nil {
				if got.URLs != nil {
					t.Errorf("URLs %q, want none (the embedded server)", got.URLs)
				}
				return
			}
			if len(got.URLs) != 1 {
				t.Fatalf("URLs %q, want one", got.URLs)
			}
			if tc.urls != nil || tc.databaseURL == tc.wantURLs[0] {
				if got.URLs[0] != tc.wantURLs[0] {
					t.Errorf("URL %q, want %q", got.URLs[0], tc.wantURLs[0])
				}
				return
			}
			// A libpq connection string: each part it must name.
			for _, part := range tc.wantURLs {
				if !strings.Contains(got.URLs[0], part) {
					t.Errorf("connection %q does not name %q", got.URLs[0], part)
				}
			}
		})
	}
}

// A server that cannot be reached gets pgbench's lines: libpq's account
// of the attempt, then "could not create connection for initialization"
// (-i) or "... for setup" (a benchmark); exit 1, the lines printed.
func TestCommandConnectFails(t *testing.T) {
	noEnv := func(string) (string, bool) { return "", false }
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-i"}, "pgbench: error: could not create connection for initialization\n"},
		{[]string{"-t", "1"}, "pgbench: error: could not create connection for setup\n"},
	} {
		// Port 1 on loopback: nothing listens, the connection is refused.
		o, err := pgbenchargs.Parse(append(tc.args, "-h", "127.0.0.1", "-p", "1", "-U", "u", "d"), pgbenchargs.Config{Prog: Prog, Major: 15, LookupEnv: noEnv})
		if err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		c := &Command{Args: o, LookupEnv: noEnv, Stdout: &stdout, Stderr: &stderr}
		err = c.Run(context.Background())
		var ex *Exit
		if !errors.As(err, &ex) || ex.Code != 1 {
			t.Fatalf("%q: error %v, want an *Exit with code 1", tc.args, err)
		}
		lines := stderr.String()
		if !strings.HasPrefix(lines, `pgbench: error: connection to server at "127.0.0.1", port 1 failed: Connection refused`) || !strings.HasSuffix(lines, tc.want) {
			t.Errorf("%q: stderr\n%s\nwant libpq's account, then %q", tc.args, lines, tc.want)
		}
	}
}

// Fail prints pgbench's error line, once prefixed.
func TestFail(t *testing.T) {
	for _, tc := range []struct{ err, want string }{
		{"bad thing\n", "pgbench: error: bad thing\n"},
		{"pgbench: fatal: own prefix", "pgbench: fatal: own prefix\n"},
	} {
		var w bytes.Buffer
		err := Fail(&w, 3, errors.New(tc.err))
		var ex *Exit
		if !errors.As(err, &ex) || ex.Code != 3 || w.String() != tc.want {
			t.Errorf("Fail(%q): %v, %q; want code 3, %q", tc.err, err, w.String(), tc.want)
		}
	}
}
