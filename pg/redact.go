package pg

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

const redacted = "xxxxx"

var (
	// key=value connection strings: password=… and sslpassword=….
	dsnPassword = regexp.MustCompile(`(?i)(\b(?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s]*)`)
	// URL query parameters password=… and sslpassword=….
	queryPassword = regexp.MustCompile(`(?i)([?&](?:ssl)?password=)([^&#]*)`)
)

// userinfo splits a URL-form connection string the way pgx and libpq read
// it: the user information is everything before the last @ of the part that
// precedes the path. net/url stops at # or ?, and would take the digits of a
// password such as "2024#Summer" for a port: a password it would then print.
func userinfo(conn string) (prefix, info, rest string, ok bool) {
	i := strings.Index(conn, "://")
	if i < 0 {
		return "", "", "", false
	}
	head := conn[i+3:]
	if slash := strings.Index(head, "/"); slash >= 0 {
		head = head[:slash]
	}
	at := strings.LastIndex(head, "@")
	if at < 0 {
		return conn[:i+3], "", conn[i+3:], true
	}
	return conn[:i+3], head[:at], conn[i+3+at:], true
}

// ambiguous reports whether a URL-form connection string may hold a password
// outside the places Redact masks. Every '@' before the first '/' is fine:
// the userinfo ends at the last of them. An '@' after it is ambiguous when an
// unescaped '/', '?' or '#' in a password may have stranded the password's
// tail there: when it is in the path, after a '#', after a "port" that is not
// a number (user:pass/word@host), or in a query that is not key=value pairs.
// An '@' in a query value of an otherwise well-formed URL is data.
// ErrUncleanURL is a URL whose password holds a character that ends the
// user info (@, /, ? or #): a usage error.
var ErrUncleanURL = errors.New("does not parse cleanly: a password with @, /, ? or # must be percent-encoded (@ as %40, / as %2F, ? as %3F, # as %23)")

// cleanURL refuses a URL that does not parse cleanly: pgx and libpq would
// read part of the password as the host or the database, and print it in
// their errors. The error shows the URL without its user info.
func cleanURL(what, u string) error {
	if ambiguous(u) {
		return fmt.Errorf("%s%s %w", what, Redact(u), ErrUncleanURL)
	}
	return nil
}

func ambiguous(conn string) bool {
	i := strings.Index(conn, "://")
	if i < 0 {
		return false
	}
	p := conn[i+3:]
	authority := p
	if end := strings.IndexAny(p, "/?"); end >= 0 {
		authority = p[:end]
	}
	if strings.Count(authority, "@") > 1 {
		return true // a password's own @ would be read as the end of the user info
	}
	at := strings.LastIndex(p, "@")
	slash := strings.Index(p, "/")
	if at < 0 || slash < 0 || at < slash {
		return false
	}
	if strings.Contains(p[:at], "#") {
		return true // a connection string has no fragment
	}
	end := strings.IndexAny(p, "/?")
	auth, rest := p[:end], p[end:]
	if a := strings.LastIndex(auth, "@"); a >= 0 {
		auth = auth[a+1:]
	}
	for _, h := range strings.Split(auth, ",") {
		if j := strings.LastIndex(h, "]"); j >= 0 {
			h = h[j+1:]
		}
		if _, port, has := strings.Cut(h, ":"); has && strings.Trim(port, "0123456789") != "" {
			return true
		}
	}
	path, query, _ := strings.Cut(rest, "?")
	if strings.Contains(path, "@") {
		return true
	}
	for _, kv := range strings.Split(query, "&") {
		k, _, _ := strings.Cut(kv, "=")
		if strings.Trim(k, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != "" || !strings.Contains(kv, "=") && kv != "" {
			return true
		}
	}
	return false
}

// Redact returns a connection string with its passwords replaced, whether
// it is a URL (postgres://user:secret@host/db?password=…) or key=value pairs.
// A URL that does not parse cleanly (see ambiguous) keeps nothing between
// :// and its last '@': where the password ends cannot be told.
func Redact(conn string) string {
	if ambiguous(conn) {
		i := strings.Index(conn, "://") + 3
		at := strings.LastIndex(conn, "@")
		return conn[:i] + redacted + queryPassword.ReplaceAllString(conn[at:], "${1}"+redacted)
	}
	prefix, info, rest, ok := userinfo(conn)
	if !ok {
		return dsnPassword.ReplaceAllString(conn, "${1}"+redacted)
	}
	if user, _, has := strings.Cut(info, ":"); has {
		info = user + ":" + redacted
	}
	return prefix + info + queryPassword.ReplaceAllString(rest, "${1}"+redacted)
}

// passwords returns the passwords conns carry, for scrubbing messages.
func passwords(conns []string) []string {
	var out []string
	add := func(p string) {
		if p == "" {
			return
		}
		out = append(out, p)
		if u, err := url.PathUnescape(p); err == nil && u != p && u != "" {
			out = append(out, u)
		}
	}
	for _, c := range conns {
		_, info, rest, ok := userinfo(c)
		if !ok {
			for _, m := range dsnPassword.FindAllStringSubmatch(c, -1) {
				add(strings.Trim(m[2], "'"))
			}
			continue
		}
		if _, p, has := strings.Cut(info, ":"); has {
			add(p)
		}
		if ambiguous(c) {
			// What the user may have meant as the password: all from the
			// first ':' of the userinfo to the last '@'.
			i := strings.Index(c, "://") + 3
			between := c[i:strings.LastIndex(c, "@")]
			if _, p, has := strings.Cut(between, ":"); has {
				add(p)
			}
		}
		for _, m := range queryPassword.FindAllStringSubmatch(rest, -1) {
			add(m[2])
		}
	}
	return out
}

// Scrub removes every password in secrets from msg, raw and in the escaped
// forms a URL may carry it in.
func Scrub(msg string, secrets []string) string {
	// Longest first: one secret may hold another (the password pgx reads
	// from an ambiguous URL, and the longer one its user meant).
	secrets = slices.Clone(secrets)
	slices.SortStableFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	for _, s := range secrets {
		if s == "" {
			continue
		}
		for _, form := range []string{s, url.QueryEscape(s), url.PathEscape(s), strings.ToLower(url.PathEscape(s)), strings.ToLower(url.QueryEscape(s))} {
			msg = strings.ReplaceAll(msg, form, redacted)
		}
	}
	return msg
}
