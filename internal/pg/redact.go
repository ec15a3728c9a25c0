package pg

import (
	"net/url"
	"regexp"
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

// Redact returns a connection string with its passwords replaced, whether
// it is a URL (postgres://user:secret@host/db?password=…) or key=value pairs.
func Redact(conn string) string {
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
		for _, m := range queryPassword.FindAllStringSubmatch(rest, -1) {
			add(m[2])
		}
	}
	return out
}

// Scrub removes every password in secrets from msg, raw and in the escaped
// forms a URL may carry it in.
func Scrub(msg string, secrets []string) string {
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
