package pg

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgpassfile"
	"github.com/jackc/pgservicefile"
)

// ConnParams are the connection options of pgbench's command line: -h, -p,
// -U and the database (-d or the DBNAME argument), which may itself be a
// connection string (key=value pairs or a postgres:// URI), as libpq's
// expand_dbname allows.
type ConnParams struct {
	Host, Port, User, DBName string
	// AppName is libpq's fallback_application_name: the application name
	// unless PGAPPNAME or the connection string sets one ("pgbench").
	AppName string
}

// LookupEnv reads an environment variable (os.LookupEnv in the CLI).
type LookupEnv func(string) (string, bool)

// serverEnv are the variables that name a server (or a database on one):
// the others (PGPASSWORD, PGSSLMODE, PGCONNECT_TIMEOUT, ...) only tune a
// connection to a server named elsewhere.
var serverEnv = []string{"PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGUSER", "PGSERVICE"}

// NamesServer says whether anything names a server the way libpq finds
// one: -h, -p, -U or a database on the command line, or PGHOST, PGHOSTADDR,
// PGPORT, PGDATABASE, PGUSER or PGSERVICE in the environment. by says
// what did ("-h", "PGHOST"). When nothing does, txload uses its embedded
// server (--url and DATABASE_URL are the CLI's to check first).
func (p ConnParams) NamesServer(env LookupEnv) (named bool, by string) {
	for _, f := range []struct{ name, v string }{{"-h", p.Host}, {"-p", p.Port}, {"-U", p.User}, {"DBNAME", p.DBName}} {
		if f.v != "" {
			return true, f.name
		}
	}
	for _, k := range serverEnv {
		if v := lookup(env, k); v != "" {
			return true, k
		}
	}
	return false, ""
}

func lookup(env LookupEnv, k string) string {
	if env == nil {
		return ""
	}
	v, _ := env(k)
	return v
}

// ConnString is the connection pgbench makes, as a key=value connection
// string for pgx (pg.NewTarget). pgx's ParseConfig then applies the rest of
// libpq's rules from the process environment (PGHOST, PGPORT, PGUSER,
// PGPASSWORD, PGSSLMODE, ...), the service file and ~/.pgpass. What pgx does
// not do, ConnString does, as libpq and pgbench do:
//
//   - the database is DBNAME, else PGDATABASE, else PGUSER, else the
//     operating system user (pgbench's rule: -U alone does not choose the
//     database);
//   - a DBNAME that is a connection string is expanded, its settings
//     winning over -h, -p and -U (they come before it in pgbench's
//     keyword array);
//   - hostaddr (and PGHOSTADDR) is the address connected to;
//   - a service not in ~/.pg_service.conf (or PGSERVICEFILE) is looked up
//     in PGSYSCONFDIR/pg_service.conf (default /etc/postgresql-common, as
//     Debian's libpq), and a service found nowhere is an error;
//   - a password file that is not a plain file or that the group or others
//     can read is ignored, with libpq's warning;
//   - fallback_application_name becomes the application name when nothing
//     sets one.
//
// warnings are libpq's lines for stderr. env must be the process's own
// environment (pgx reads that one).
func (p ConnParams) ConnString(env LookupEnv) (conn string, warnings []string, err error) {
	settings := map[string]string{}
	set := func(k, v string) {
		if v != "" {
			settings[k] = v
		}
	}
	set("host", p.Host)
	set("port", p.Port)
	set("user", p.User)
	db := p.DBName
	if db == "" {
		db = lookup(env, "PGDATABASE")
	}
	if db == "" {
		db = lookup(env, "PGUSER")
	}
	if db == "" {
		u, err := user.Current()
		if err != nil {
			return "", nil, fmt.Errorf("could not look up the current user name: %w", err)
		}
		db = u.Username
	}
	if IsConnString(db) {
		if err := cleanURL("", db); err != nil {
			return "", nil, err
		}
		kv, err := parseConnInfo(db)
		if err != nil {
			return "", nil, err
		}
		for k, v := range kv {
			if k == "dbname" || k == "database" {
				k = "dbname"
			}
			set(k, v)
		}
	} else {
		settings["dbname"] = db
	}

	// hostaddr: the address libpq connects to.
	addr := settings["hostaddr"]
	if addr == "" {
		addr = lookup(env, "PGHOSTADDR")
	}
	delete(settings, "hostaddr")
	if addr != "" {
		settings["host"] = addr
	}

	if fb := settings["fallback_application_name"]; fb != "" || p.AppName != "" {
		if fb == "" {
			fb = p.AppName
		}
		if settings["application_name"] == "" && lookup(env, "PGAPPNAME") == "" {
			settings["application_name"] = fb
		}
	}
	delete(settings, "fallback_application_name")

	if err := serviceFile(settings, env); err != nil {
		return "", nil, err
	}
	// PGCLIENTENCODING, which pgx does not read: the encoding of the
	// workload's connections (see encoding.go); "auto" is the locale's.
	if settings["client_encoding"] == "" {
		set("client_encoding", lookup(env, "PGCLIENTENCODING"))
	}
	if strings.EqualFold(settings["client_encoding"], "auto") {
		settings["client_encoding"] = localeEncoding(env)
	}
	if err := checkPorts(settings, env); err != nil {
		return "", nil, err
	}
	if settings["password"] == "" && lookup(env, "PGPASSWORD") == "" {
		f, w := passfile(settings, env)
		switch {
		case w != "":
			warnings = append(warnings, w)
			settings["passfile"] = os.DevNull
		case f != "":
			socketPassword(settings, env, f)
		}
	}
	return formatConnInfo(settings), warnings, nil
}

// ConnOptionError is a connection option libpq refuses when it connects
// (a port that is not a number, or out of range), in its words.
type ConnOptionError struct{ Msg string }

func (e *ConnOptionError) Error() string { return e.Msg }

// checkPorts checks the port (or ports, one per host) as libpq does before
// it connects.
func checkPorts(settings map[string]string, env LookupEnv) error {
	ports := settings["port"]
	if ports == "" {
		ports = lookup(env, "PGPORT")
	}
	if ports == "" {
		return nil
	}
	for _, port := range strings.Split(ports, ",") {
		if port == "" {
			continue
		}
		digits := strings.TrimRight(port, " \t\n\r\f\v")
		n, err := strconv.ParseInt(strings.TrimLeft(digits, " \t\n\r\f\v"), 10, 32)
		if err != nil { // strtol's: not a number, or beyond an int
			return &ConnOptionError{Msg: fmt.Sprintf("invalid integer value \"%s\" for connection option \"port\"", port)}
		}
		if n < 1 || n > 65535 {
			return &ConnOptionError{Msg: fmt.Sprintf("invalid port number: \"%s\"", port)}
		}
	}
	return nil
}

// localeEncoding is libpq's client_encoding=auto: the codeset of the
// locale (LC_ALL, else LC_CTYPE, else LANG), UTF8 for UTF-8 and SQL_ASCII
// for the C locale and the rest.
func localeEncoding(env LookupEnv) string {
	loc := ""
	for _, k := range []string{"LC_ALL", "LC_CTYPE", "LANG"} {
		if loc = lookup(env, k); loc != "" {
			break
		}
	}
	_, codeset, _ := strings.Cut(loc, ".")
	codeset, _, _ = strings.Cut(codeset, "@")
	if c := strings.ToLower(strings.ReplaceAll(codeset, "-", "")); c == "utf8" {
		return "UTF8"
	}
	return "SQL_ASCII"
}

// DefaultSocketDir is Debian's libpq DEFAULT_PGSOCKET_DIR, the socket
// directory ~/.pgpass calls "localhost".
const DefaultSocketDir = "/var/run/postgresql"

// socketPassword looks up the password file as libpq does for a Unix socket
// directory other than the default: its host field must be the directory
// itself (pgx would match "localhost"). The password found, if any, is set,
// and pgx is kept from its own lookup.
func socketPassword(settings map[string]string, env LookupEnv, file string) {
	host := settings["host"]
	if host == "" && settings["service"] == "" && lookup(env, "PGSERVICE") == "" {
		host = lookup(env, "PGHOST")
	}
	if !strings.HasPrefix(host, "/") || strings.Contains(host, ",") || filepath.Clean(host) == DefaultSocketDir {
		return
	}
	pick := func(key, envKey, def string) string {
		if v := settings[key]; v != "" {
			return v
		}
		if v := lookup(env, envKey); v != "" {
			return v
		}
		return def
	}
	usr := pick("user", "PGUSER", "")
	if usr == "" {
		if u, err := user.Current(); err == nil {
			usr = u.Username
		}
	}
	port := pick("port", "PGPORT", "5432")
	db := pick("dbname", "PGDATABASE", usr)
	pf, err := pgpassfile.ReadPassfile(file)
	if err != nil {
		return
	}
	settings["passfile"] = os.DevNull
	if pw := pf.FindPassword(host, port, db, usr); pw != "" {
		settings["password"] = pw
	}
}

// IsConnString is libpq's recognized_connection_string: a URI, or anything
// with an '='.
func IsConnString(s string) bool {
	return strings.HasPrefix(s, "postgresql://") || strings.HasPrefix(s, "postgres://") || strings.Contains(s, "=")
}

func homeDir() string {
	h, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return h
}

// defaultSysconfDir is Debian's libpq SYSCONFDIR.
const defaultSysconfDir = "/etc/postgresql-common"

// serviceFile is libpq's parseServiceInfo: the service is looked up in the
// user's file (PGSERVICEFILE or ~/.pg_service.conf), then in the system's
// (PGSYSCONFDIR/pg_service.conf); the file that has it is named to pgx.
func serviceFile(settings map[string]string, env LookupEnv) error {
	svc := settings["service"]
	if svc == "" {
		svc = lookup(env, "PGSERVICE")
	}
	if svc == "" {
		return nil
	}
	userFile := settings["servicefile"]
	if userFile == "" {
		userFile = lookup(env, "PGSERVICEFILE")
	}
	if userFile == "" {
		if h := homeDir(); h != "" {
			userFile = filepath.Join(h, ".pg_service.conf")
		}
	}
	sysconf := lookup(env, "PGSYSCONFDIR")
	if sysconf == "" {
		sysconf = defaultSysconfDir
	}
	for _, f := range []string{userFile, filepath.Join(sysconf, "pg_service.conf")} {
		if f == "" {
			continue
		}
		if _, err := os.Stat(f); err != nil {
			continue
		}
		sf, err := pgservicefile.ReadServicefile(f)
		if err != nil {
			return fmt.Errorf("reading service file %q: %w", f, err)
		}
		if _, err := sf.GetService(svc); err == nil {
			settings["servicefile"] = f
			return nil
		}
	}
	return fmt.Errorf("definition of service %q not found", svc)
}

// passfile is libpq's check of the password file: it must be a plain file
// that only its owner can read. It returns the file, if there is one, or
// libpq's warning when it is to be ignored.
func passfile(settings map[string]string, env LookupEnv) (file, warning string) {
	f := settings["passfile"]
	if f == "" {
		f = lookup(env, "PGPASSFILE")
	}
	if f == "" {
		h := homeDir()
		if h == "" {
			return "", ""
		}
		f = filepath.Join(h, ".pgpass")
	}
	st, err := os.Stat(f)
	switch {
	case err != nil:
		return "", ""
	case !st.Mode().IsRegular():
		return "", fmt.Sprintf("WARNING: password file \"%s\" is not a plain file", f)
	case runtime.GOOS != "windows" && st.Mode().Perm()&(fs.ModePerm&^0o700) != 0:
		return "", fmt.Sprintf("WARNING: password file \"%s\" has group or world access; permissions should be u=rw (0600) or less", f)
	}
	return f, ""
}

// formatConnInfo writes settings as key='value' pairs, sorted.
func formatConnInfo(settings map[string]string) string {
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	for _, k := range keys {
		if sb.Len() > 0 {
			sb.WriteByte(' ')
		}
		v := strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(settings[k])
		fmt.Fprintf(&sb, "%s='%s'", k, v)
	}
	return sb.String()
}

// parseConnInfo parses a libpq connection string: a postgres:// URI or
// key=value pairs.
func parseConnInfo(s string) (map[string]string, error) {
	for _, prefix := range []string{"postgresql://", "postgres://"} {
		if rest, ok := strings.CutPrefix(s, prefix); ok {
			return parseURI(s, rest)
		}
	}
	return parseKeywords(s)
}

// parseKeywords is libpq's conninfo_parse.
func parseKeywords(s string) (map[string]string, error) {
	out := map[string]string{}
	i := 0
	space := func() {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
	}
	for {
		space()
		if i >= len(s) {
			return out, nil
		}
		start := i
		for i < len(s) && !isSpace(s[i]) && s[i] != '=' {
			i++
		}
		key := s[start:i]
		space()
		if i >= len(s) || s[i] != '=' {
			return nil, fmt.Errorf("missing \"=\" after \"%s\" in connection info string", key)
		}
		i++
		space()
		var v strings.Builder
		if i < len(s) && s[i] == '\'' {
			i++
			closed := false
			for i < len(s) {
				c := s[i]
				if c == '\\' && i+1 < len(s) {
					v.WriteByte(s[i+1])
					i += 2
					continue
				}
				i++
				if c == '\'' {
					closed = true
					break
				}
				v.WriteByte(c)
			}
			if !closed {
				return nil, errors.New("unterminated quoted string in connection info string")
			}
		} else {
			for i < len(s) && !isSpace(s[i]) {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				v.WriteByte(s[i])
				i++
			}
		}
		out[key] = v.String()
	}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// parseURI is libpq's conninfo_uri_parse_options: [user[:password]@]
// [host[:port][,...]][/dbname][?param=value&...], percent-decoded.
func parseURI(whole, rest string) (map[string]string, error) {
	out := map[string]string{}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("invalid URI %q: %s", Redact(whole), fmt.Sprintf(format, args...))
	}
	decode := func(s string) (string, error) {
		v, err := url.PathUnescape(s)
		if err != nil {
			return "", bad("invalid percent-encoded token %q", s)
		}
		return v, nil
	}
	// libpq looks for '@' before the first '/'.
	if at := strings.IndexAny(rest, "@/"); at >= 0 && rest[at] == '@' {
		info := rest[:at]
		rest = rest[at+1:]
		u, pw, hasPW := strings.Cut(info, ":")
		var err error
		if out["user"], err = decode(u); err != nil {
			return nil, err
		}
		if hasPW {
			if out["password"], err = decode(pw); err != nil {
				return nil, err
			}
		}
		if out["user"] == "" {
			delete(out, "user")
		}
	}
	var hosts, ports []string
	anyPort := false
	for {
		var host string
		if strings.HasPrefix(rest, "[") {
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return nil, bad("missing \"]\" in IPv6 host address")
			}
			host, rest = rest[1:end], rest[end+1:]
			if host == "" {
				return nil, bad("IPv6 host address may not be empty")
			}
		} else {
			end := strings.IndexAny(rest, ":/?,")
			if end < 0 {
				end = len(rest)
			}
			host, rest = rest[:end], rest[end:]
		}
		port := ""
		if strings.HasPrefix(rest, ":") {
			end := strings.IndexAny(rest[1:], "/?,")
			if end < 0 {
				end = len(rest) - 1
			}
			port, rest = rest[1:1+end], rest[1+end:]
			anyPort = true
		}
		h, err := decode(host)
		if err != nil {
			return nil, err
		}
		hosts = append(hosts, h)
		ports = append(ports, port)
		if !strings.HasPrefix(rest, ",") {
			break
		}
		rest = rest[1:]
	}
	if strings.Join(hosts, "") != "" || len(hosts) > 1 {
		out["host"] = strings.Join(hosts, ",")
	}
	if anyPort {
		out["port"] = strings.Join(ports, ",")
	}
	if strings.HasPrefix(rest, "/") {
		end := strings.IndexByte(rest, '?')
		if end < 0 {
			end = len(rest)
		}
		db, err := decode(rest[1:end])
		if err != nil {
			return nil, err
		}
		if db != "" {
			out["dbname"] = db
		}
		rest = rest[end:]
	}
	if strings.HasPrefix(rest, "?") {
		for _, kv := range strings.Split(rest[1:], "&") {
			if kv == "" {
				continue
			}
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, bad("missing key/value separator \"=\" in URI query parameter: %q", kv)
			}
			var err error
			if k, err = decode(k); err != nil {
				return nil, err
			}
			if v, err = url.QueryUnescape(v); err != nil {
				return nil, bad("invalid percent-encoded token %q", v)
			}
			if k == "ssl" && v == "true" {
				k, v = "sslmode", "require"
			}
			out[k] = v
		}
	} else if rest != "" {
		return nil, bad("unexpected %q", rest)
	}
	return out, nil
}
