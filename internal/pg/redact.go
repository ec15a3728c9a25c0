package pg

import (
	"net/url"
	"regexp"
	"strings"
)

const redacted = "xxxxx"

var dsnPassword = regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s]*)`)

// Redact returns a connection string with its password replaced, whether it
// is a URL (postgres://user:secret@host/db?password=…) or key=value pairs.
func Redact(conn string) string {
	if strings.Contains(conn, "://") {
		u, err := url.Parse(conn)
		if err != nil {
			// An unparseable URL may still hold a password: keep only the scheme.
			return conn[:strings.Index(conn, "://")+3] + "(unparseable URL, redacted)"
		}
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), redacted)
		}
		q := u.Query()
		if q.Has("password") {
			q.Set("password", redacted)
			u.RawQuery = q.Encode()
		}
		return u.String()
	}
	return dsnPassword.ReplaceAllString(conn, "${1}"+redacted)
}

// passwords returns the passwords conns carry, for scrubbing messages.
func passwords(conns []string) []string {
	var out []string
	for _, c := range conns {
		if u, err := url.Parse(c); err == nil && strings.Contains(c, "://") {
			if p, ok := u.User.Password(); ok && p != "" {
				out = append(out, p)
			}
			if p := u.Query().Get("password"); p != "" {
				out = append(out, p)
			}
			continue
		}
		for _, m := range dsnPassword.FindAllStringSubmatch(c, -1) {
			if p := strings.Trim(m[2], "'"); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// Scrub removes every password in secrets from msg.
func Scrub(msg string, secrets []string) string {
	for _, s := range secrets {
		msg = strings.ReplaceAll(msg, s, redacted)
		if esc := url.QueryEscape(s); esc != s {
			msg = strings.ReplaceAll(msg, esc, redacted)
		}
	}
	return msg
}
