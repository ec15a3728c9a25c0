package pg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/internal/pgtest"
)

// The environment variables these tests control: every one starts unset
// (pgx reads the process environment), and HOME is a fresh directory so
// that no ~/.pgpass or ~/.pg_service.conf of the machine takes part.
var libpqEnv = []string{"PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGUSER", "PGPASSWORD", "PGPASSFILE",
	"PGSERVICE", "PGSERVICEFILE", "PGSYSCONFDIR", "PGSSLMODE", "PGAPPNAME", "PGCONNECT_TIMEOUT", "PGOPTIONS", "PGTARGETSESSIONATTRS"}

// cleanEnv unsets the libpq variables and sets env and HOME; it returns
// the environment for a child process (pgbench).
func cleanEnv(t *testing.T, home string, env map[string]string) []string {
	t.Helper()
	for _, k := range libpqEnv {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("HOME", home)
	child := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C", "LC_ALL=C"}
	for k, v := range env {
		t.Setenv(k, v)
		child = append(child, k+"="+v)
	}
	return child
}

// server is the test server's address, split as pgbench's flags take it.
type server struct{ host, port, user, db string }

func testServer(t *testing.T) server {
	t.Helper()
	cfg, err := pgx.ParseConfig(srv.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	return server{cfg.Host, strconv.Itoa(int(cfg.Port)), cfg.User, cfg.Database}
}

// reached is where a connection landed.
type reached struct{ db, user, app string }

// connectWith resolves p the way txload pgbench does and connects.
func connectWith(t *testing.T, p ConnParams) (reached, []string, error) {
	t.Helper()
	dsn, warnings, err := p.ConnString(os.LookupEnv)
	if err != nil {
		return reached{}, warnings, err
	}
	target, err := NewTarget([]string{dsn})
	if err != nil {
		return reached{}, warnings, err
	}
	conn, err := target.Connect(testCtx(t))
	if err != nil {
		return reached{}, warnings, err
	}
	defer conn.Close(context.Background())
	var r reached
	err = conn.QueryRow(testCtx(t), "SELECT current_database(), current_user, current_setting('application_name')").Scan(&r.db, &r.user, &r.app)
	return r, warnings, err
}

// realPgbench runs Debian's pgbench, debug output on, one transaction of
// SELECT 1, with env and args; it returns the database pgbench connected
// to (its debug line), or its error output.
func realPgbench(t *testing.T, env []string, args ...string) (db string, stderr string, ok bool) {
	t.Helper()
	path, major := pgtest.Pgbench(t)
	debug := "-d"
	if major >= 17 {
		debug = "--debug"
	}
	script := filepath.Join(t.TempDir(), "one.sql")
	if err := os.WriteFile(script, []byte("SELECT 1;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, append([]string{debug, "-n", "-t", "1", "-f", script}, args...)...)
	cmd.Env = env
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	m := regexp.MustCompile(`pghost: \S* pgport: \S* nclients: \d+ nxacts: \d+ dbName: (\S+)`).FindStringSubmatch(buf.String())
	if err != nil || m == nil {
		return "", buf.String(), false
	}
	return m[1], buf.String(), true
}

func osUser(t *testing.T) string {
	t.Helper()
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	return u.Username
}

// Each case connects the way txload pgbench does and the way pgbench does,
// with the same flags and environment: both reach the same database, or
// both fail on the same one.
func TestConnLikePgbench(t *testing.T) {
	s := testServer(t)
	me := osUser(t)
	home := t.TempDir()
	sysconf := t.TempDir()
	service := fmt.Sprintf("[bench]\nhost=%s\nport=%s\nuser=%s\ndbname=%s\n", s.host, s.port, s.user, s.db)
	if err := os.WriteFile(filepath.Join(sysconf, "pg_service.conf"), []byte(service), 0o644); err != nil {
		t.Fatal(err)
	}
	uri := fmt.Sprintf("postgresql://%s@%s:%s/%s?application_name=fromuri", s.user, s.host, s.port, s.db)
	for _, tc := range []struct {
		name   string
		env    map[string]string
		params ConnParams
		args   []string // pgbench's command line for params
		wantDB string   // "" = both fail, naming failDB
		failDB string
	}{
		{"environment", map[string]string{"PGHOST": s.host, "PGPORT": s.port, "PGUSER": s.user, "PGDATABASE": s.db},
			ConnParams{}, nil, s.db, ""},
		{"flags over environment", map[string]string{"PGHOST": "/nonexistent", "PGPORT": "1", "PGUSER": "nobody", "PGDATABASE": "nowhere"},
			ConnParams{Host: s.host, Port: s.port, User: s.user, DBName: s.db}, []string{"-h", s.host, "-p", s.port, "-U", s.user, s.db}, s.db, ""},
		{"PGUSER names the database", map[string]string{"PGHOST": s.host, "PGPORT": s.port, "PGUSER": s.user},
			ConnParams{}, nil, s.user, ""},
		{"-U does not name the database", map[string]string{"PGHOST": s.host, "PGPORT": s.port},
			ConnParams{User: s.user}, []string{"-U", s.user}, "", me},
		{"a URI as DBNAME wins over -h", map[string]string{},
			ConnParams{Host: "/nonexistent", Port: "1", DBName: uri}, []string{"-h", "/nonexistent", "-p", "1", uri}, s.db, ""},
		{"key=value as DBNAME", map[string]string{"PGPORT": "1"},
			ConnParams{DBName: fmt.Sprintf("host=%s port=%s user=%s dbname=%s", s.host, s.port, s.user, s.db)},
			[]string{fmt.Sprintf("host=%s port=%s user=%s dbname=%s", s.host, s.port, s.user, s.db)}, s.db, ""},
		{"PGHOSTADDR", map[string]string{"PGHOSTADDR": s.host, "PGPORT": s.port, "PGUSER": s.user, "PGDATABASE": s.db},
			ConnParams{}, nil, s.db, ""},
		{"service in PGSYSCONFDIR, database from PGDATABASE", map[string]string{"PGSYSCONFDIR": sysconf, "PGSERVICE": "bench", "PGDATABASE": s.db},
			ConnParams{}, nil, s.db, ""},
		// pgbench passes the OS user as the database, over the service's.
		{"service alone", map[string]string{"PGSYSCONFDIR": sysconf, "PGSERVICE": "bench"},
			ConnParams{}, nil, "", me},
	} {
		t.Run(tc.name, func(t *testing.T) {
			child := cleanEnv(t, home, tc.env)
			got, _, err := connectWith(t, tc.params)
			db, out, ok := realPgbench(t, child, tc.args...)
			if tc.wantDB != "" {
				if err != nil {
					t.Fatalf("txload: %v", err)
				}
				if got.db != tc.wantDB {
					t.Errorf("txload reached database %q, want %q", got.db, tc.wantDB)
				}
				if !ok || db != tc.wantDB {
					t.Errorf("pgbench reached %q (ok %v), want %q:\n%s", db, ok, tc.wantDB, out)
				}
				return
			}
			want := fmt.Sprintf("database \"%s\" does not exist", tc.failDB)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("txload: %v, want an error with %q", err, want)
			}
			if ok || !strings.Contains(out, want) {
				t.Errorf("pgbench: %q, want an error with %q", out, want)
			}
		})
	}
}

// The application name is pgbench's unless PGAPPNAME or the connection
// string sets one.
func TestConnApplicationName(t *testing.T) {
	s := testServer(t)
	p := ConnParams{Host: s.host, Port: s.port, User: s.user, DBName: s.db, AppName: "pgbench"}
	cleanEnv(t, t.TempDir(), nil)
	if r, _, err := connectWith(t, p); err != nil || r.app != "pgbench" {
		t.Errorf("fallback: %+v %v", r, err)
	}
	cleanEnv(t, t.TempDir(), map[string]string{"PGAPPNAME": "mine"})
	if r, _, err := connectWith(t, p); err != nil || r.app != "mine" {
		t.Errorf("PGAPPNAME: %+v %v", r, err)
	}
	p.DBName = fmt.Sprintf("dbname=%s application_name=fromconn", s.db)
	cleanEnv(t, t.TempDir(), nil)
	if r, _, err := connectWith(t, p); err != nil || r.app != "fromconn" {
		t.Errorf("connection string: %+v %v", r, err)
	}
}

// socketProxy serves a Unix socket dir/.s.PGSQL.port that forwards to the
// test server over TCP, so that a socket directory can be given as host.
func socketProxy(t *testing.T, s server) (dir string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "sock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	l, err := net.Listen("unix", filepath.Join(dir, ".s.PGSQL."+s.port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b, err := net.Dial("tcp", net.JoinHostPort(s.host, s.port))
				if err != nil {
					return
				}
				defer b.Close()
				go func() { _, _ = io.Copy(b, c); b.(*net.TCPConn).CloseWrite() }()
				_, _ = io.Copy(c, b)
			}()
		}
	}()
	return dir
}

// A socket directory as host, from -h or PGHOST.
func TestConnSocketDirectory(t *testing.T) {
	s := testServer(t)
	dir := socketProxy(t, s)
	for _, tc := range []struct {
		name   string
		env    map[string]string
		params ConnParams
		args   []string
	}{
		{"-h", map[string]string{"PGPORT": s.port, "PGUSER": s.user}, ConnParams{Host: dir, DBName: s.db}, []string{"-h", dir, s.db}},
		{"PGHOST", map[string]string{"PGHOST": dir, "PGPORT": s.port, "PGUSER": s.user, "PGDATABASE": s.db}, ConnParams{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			child := cleanEnv(t, t.TempDir(), tc.env)
			r, _, err := connectWith(t, tc.params)
			if err != nil || r.db != s.db {
				t.Fatalf("txload through %s: %+v %v", dir, r, err)
			}
			if db, out, ok := realPgbench(t, child, tc.args...); !ok || db != s.db {
				t.Fatalf("pgbench through %s: %q\n%s", dir, db, out)
			}
		})
	}
}

// passwordRole creates a role that must give its password (scram), by a
// line at the top of the server's pg_hba.conf, removed at the end.
func passwordRole(t *testing.T, s server) (role, password string) {
	t.Helper()
	ctx := testCtx(t)
	admin, err := pgx.Connect(ctx, srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	var hba string
	if err := admin.QueryRow(ctx, "SHOW hba_file").Scan(&hba); err != nil {
		t.Skipf("cannot read the server's hba_file setting: %v", err)
	}
	orig, err := os.ReadFile(hba)
	if err != nil {
		t.Skipf("the server's pg_hba.conf is not reachable from here (%v): cannot require a password", err)
	}
	role, password = "pw_"+strings.TrimPrefix(s.db, "txload_test_"), "s3cret'pw"
	if _, err := admin.Exec(ctx, fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s'; GRANT ALL ON DATABASE %s TO %s",
		role, strings.ReplaceAll(password, "'", "''"), s.db, role)); err != nil {
		t.Fatal(err)
	}
	line := fmt.Sprintf("host all %s all scram-sha-256\n", role)
	if err := os.WriteFile(hba, append([]byte(line), orig...), 0); err != nil {
		t.Skipf("cannot write the server's pg_hba.conf: %v", err)
	}
	reload := func() {
		if _, err := admin.Exec(context.Background(), "SELECT pg_reload_conf()"); err != nil {
			t.Fatal(err)
		}
	}
	reload()
	t.Cleanup(func() {
		cur, err := os.ReadFile(hba)
		if err == nil {
			_ = os.WriteFile(hba, bytes.Replace(cur, []byte(line), nil, 1), 0)
		}
		a, err := pgx.Connect(context.Background(), srv.URL())
		if err != nil {
			return
		}
		defer a.Close(context.Background())
		_, _ = a.Exec(context.Background(), "SELECT pg_reload_conf()")
		_, _ = a.Exec(context.Background(), fmt.Sprintf("DROP ROLE IF EXISTS %s", role))
	})
	// The reload is asynchronous: wait until the role is refused without
	// its password.
	for i := 0; i < 100; i++ {
		c, err := pgx.Connect(ctx, fmt.Sprintf("host=%s port=%s user=%s dbname=%s", s.host, s.port, role, s.db))
		if err != nil {
			return role, password
		}
		c.Close(ctx)
		reload()
	}
	t.Fatal("the server still lets the role in without a password")
	return "", ""
}

// PGPASSWORD, ~/.pgpass (for TCP and for a socket directory, which
// matches "localhost"), and a pgpass that others can read, which libpq and
// txload ignore with a warning.
func TestConnPassword(t *testing.T) {
	s := testServer(t)
	role, password := passwordRole(t, s)
	dir := socketProxy(t, s)
	escaped := strings.NewReplacer(`\`, `\\`, `:`, `\:`).Replace(password)
	for _, tc := range []struct {
		name    string
		env     map[string]string
		pgpass  string
		mode    os.FileMode
		host    string
		ok      bool
		warning bool
	}{
		{"PGPASSWORD", map[string]string{"PGPASSWORD": password}, "", 0, s.host, true, false},
		{"no password", nil, "", 0, s.host, false, false},
		{"pgpass", nil, fmt.Sprintf("%s:%s:*:%s:%s\n", s.host, s.port, role, escaped), 0o600, s.host, true, false},
		// A socket directory other than the default matches its own path,
		// not "localhost" (pgx alone would match localhost).
		{"pgpass for a socket", nil, fmt.Sprintf("%s:%s:%s:%s:%s\n", dir, s.port, s.db, role, escaped), 0o600, dir, true, false},
		{"pgpass localhost for a socket", nil, fmt.Sprintf("localhost:%s:%s:%s:%s\n", s.port, s.db, role, escaped), 0o600, dir, false, false},
		{"pgpass others can read", nil, fmt.Sprintf("*:*:*:%s:%s\n", role, escaped), 0o644, s.host, false, true},
		{"PGPASSWORD wins over a bad pgpass", map[string]string{"PGPASSWORD": password}, fmt.Sprintf("*:*:*:%s:wrong\n", role), 0o644, s.host, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			if tc.pgpass != "" {
				f := filepath.Join(home, ".pgpass")
				if err := os.WriteFile(f, []byte(tc.pgpass), tc.mode); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(f, tc.mode); err != nil {
					t.Fatal(err)
				}
			}
			child := cleanEnv(t, home, tc.env)
			p := ConnParams{Host: tc.host, Port: s.port, User: role, DBName: s.db}
			r, warnings, err := connectWith(t, p)
			if tc.ok && (err != nil || r.user != role) {
				t.Errorf("txload: %+v %v", r, err)
			}
			if !tc.ok && err == nil {
				t.Errorf("txload connected without the password")
			}
			_, out, ok := realPgbench(t, child, "-h", tc.host, "-p", s.port, "-U", role, s.db)
			if ok != tc.ok {
				t.Errorf("pgbench connected: %v, want %v:\n%s", ok, tc.ok, out)
			}
			if tc.warning != (len(warnings) == 1) {
				t.Fatalf("warnings %q", warnings)
			}
			for _, w := range warnings {
				if !strings.Contains(out, w+"\n") {
					t.Errorf("txload warns %q; pgbench says:\n%s", w, out)
				}
			}
		})
	}
}

// What names a server: any of -h, -p, -U, DBNAME, or a libpq variable
// that names a host, port, user, database or service; not one that only
// tunes a connection.
func TestNamesServer(t *testing.T) {
	none := func(string) (string, bool) { return "", false }
	if named, by := (ConnParams{}).NamesServer(none); named {
		t.Fatalf("nothing names a server, got %q", by)
	}
	for _, tc := range []struct {
		p   ConnParams
		env map[string]string
		by  string
	}{
		{ConnParams{Host: "/tmp"}, nil, "-h"},
		{ConnParams{Port: "5433"}, nil, "-p"},
		{ConnParams{User: "me"}, nil, "-U"},
		{ConnParams{DBName: "bench"}, nil, "DBNAME"},
		{ConnParams{}, map[string]string{"PGHOST": "db1"}, "PGHOST"},
		{ConnParams{}, map[string]string{"PGHOSTADDR": "10.0.0.1"}, "PGHOSTADDR"},
		{ConnParams{}, map[string]string{"PGPORT": "5433"}, "PGPORT"},
		{ConnParams{}, map[string]string{"PGDATABASE": "bench"}, "PGDATABASE"},
		{ConnParams{}, map[string]string{"PGUSER": "me"}, "PGUSER"},
		{ConnParams{}, map[string]string{"PGSERVICE": "bench"}, "PGSERVICE"},
		{ConnParams{}, map[string]string{"PGPASSWORD": "x", "PGSSLMODE": "require", "PGAPPNAME": "a", "PGCONNECT_TIMEOUT": "3"}, ""},
	} {
		env := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
		named, by := tc.p.NamesServer(env)
		if named != (tc.by != "") || by != tc.by {
			t.Errorf("%+v %v: named %v by %q, want %q", tc.p, tc.env, named, by, tc.by)
		}
	}
}

// What pgx alone does not do: a service only in PGSYSCONFDIR, a service
// found nowhere, hostaddr, a malformed connection string.
func TestConnStringBeyondPgx(t *testing.T) {
	s := testServer(t)
	sysconf := t.TempDir()
	if err := os.WriteFile(filepath.Join(sysconf, "pg_service.conf"),
		[]byte(fmt.Sprintf("[bench]\nhost=%s\nport=%s\nuser=%s\n", s.host, s.port, s.user)), 0o644); err != nil {
		t.Fatal(err)
	}
	cleanEnv(t, t.TempDir(), map[string]string{"PGSYSCONFDIR": sysconf, "PGSERVICE": "bench"})
	if _, err := pgx.ParseConfig("dbname=" + s.db); err == nil {
		t.Log("pgx now finds services in PGSYSCONFDIR by itself")
	}
	r, _, err := connectWith(t, ConnParams{DBName: s.db})
	if err != nil || r.db != s.db {
		t.Fatalf("service from PGSYSCONFDIR: %+v %v", r, err)
	}
	cleanEnv(t, t.TempDir(), map[string]string{"PGSYSCONFDIR": sysconf, "PGSERVICE": "missing"})
	if _, _, err := (ConnParams{DBName: s.db}).ConnString(os.LookupEnv); err == nil || err.Error() != `definition of service "missing" not found` {
		t.Fatalf("missing service: %v", err)
	}
	cleanEnv(t, t.TempDir(), nil)
	r, _, err = connectWith(t, ConnParams{DBName: fmt.Sprintf("hostaddr=%s port=%s user=%s dbname=%s", s.host, s.port, s.user, s.db)})
	if err != nil || r.db != s.db {
		t.Fatalf("hostaddr: %+v %v", r, err)
	}
	for _, bad := range []string{"host=", "host='x", "user=a host", "postgres://[::1/db", "postgres://h/db?x"} {
		if _, _, err := (ConnParams{DBName: bad}).ConnString(os.LookupEnv); bad != "host=" && err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	_, _, err = (ConnParams{DBName: "host 'x'"}).ConnString(os.LookupEnv)
	if err != nil {
		t.Errorf("a plain database name: %v", err)
	}
	var cs string
	if cs, _, err = (ConnParams{DBName: "user=a password='p\\'w' dbname=d"}).ConnString(os.LookupEnv); err != nil {
		t.Fatal(err)
	}
	if Redact(cs) == cs || strings.Contains(Redact(cs), "p\\'w") {
		t.Errorf("the connection string's password is not redacted: %s", Redact(cs))
	}
	cfg, err := pgx.ParseConfig(cs)
	if err != nil || cfg.Password != "p'w" || cfg.User != "a" || cfg.Database != "d" {
		t.Errorf("round trip: %+v %v", cfg, err)
	}
	if !errors.Is(err, nil) {
		t.Fatal(err)
	}
}

// URIs as libpq splits them.
func TestParseURI(t *testing.T) {
	for in, want := range map[string]map[string]string{
		"postgresql://": {},
		"postgres://u:p%40w@h1:5432,h2,[::1]:6/db%20x?sslmode=require&application_name=a%20b": {
			"user": "u", "password": "p@w", "host": "h1,h2,::1", "port": "5432,,6", "dbname": "db x", "sslmode": "require", "application_name": "a b"},
		"postgresql:///db?host=/tmp&port=5433": {"dbname": "db", "host": "/tmp", "port": "5433"},
		"postgresql://h?ssl=true":              {"host": "h", "sslmode": "require"},
		"postgresql://@h/":                     {"host": "h"},
	} {
		got, err := parseConnInfo(in)
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: %v, want %v", in, got, want)
		}
	}
	for in, want := range map[string]map[string]string{
		"host=h port = 5 dbname='a b' password='x\\'y' user=u\\ v": {"host": "h", "port": "5", "dbname": "a b", "password": "x'y", "user": "u v"},
		"  ": {},
	} {
		got, err := parseConnInfo(in)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%q: %v %v, want %v", in, got, err, want)
		}
	}
}
