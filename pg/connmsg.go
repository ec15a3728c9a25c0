package pg

import (
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// attempt is pgx's account of one connection attempt: "ADDRESS (HOST):
// WHAT: CAUSE".
var attempt = regexp.MustCompile(`^(\S+) \(([^)]*)\): `)

// LibpqConnectMessage words a failed connection as libpq's PQerrorMessage
// does: for each address tried, `connection to server at "HOST" (ADDR),
// port PORT failed: ` or `connection to server on socket "PATH" failed: `
// and why (the server's "FATAL:  ..." message, or the system's, with
// libpq's hint), a host name that does not resolve as `could not
// translate host name "HOST" to address: ...`. The attempts pgx makes
// that libpq does not show (TLS refused by the server under
// sslmode=prefer, before the plain attempt to the same address) are left
// out. Each line ends in a newline; ok is false when err is not a failed
// connection.
func LibpqConnectMessage(err error) (msg string, ok bool) {
	var ce *pgconn.ConnectError
	if !errors.As(err, &ce) {
		return "", false
	}
	inner := errors.Unwrap(ce)
	var errs []error
	if j, isJoin := inner.(interface{ Unwrap() []error }); isJoin {
		errs = j.Unwrap()
	} else if w := errors.Unwrap(inner); w != nil && strings.HasPrefix(inner.Error(), "hostname resolving error: ") {
		if j, isJoin := w.(interface{ Unwrap() []error }); isJoin {
			errs = j.Unwrap()
		} else {
			errs = []error{w}
		}
	} else {
		errs = []error{inner}
	}
	var b strings.Builder
	// pgx tries each address twice under sslmode=prefer (TLS, then
	// plain), and looks each host up for each: libpq says each once.
	seen := map[string]bool{}
	once := func(s string) {
		if !seen[s] {
			seen[s] = true
			b.WriteString(s)
		}
	}
	for i, e := range errs {
		var dns *net.DNSError
		if errors.As(e, &dns) && !attempt.MatchString(e.Error()) {
			why := "Temporary failure in name resolution"
			if dns.IsNotFound {
				why = "Name or service not known"
			}
			once(fmt.Sprintf("could not translate host name \"%s\" to address: %s\n", dns.Name, why))
			continue
		}
		m := attempt.FindStringSubmatch(e.Error())
		if m == nil {
			once(e.Error() + "\n")
			continue
		}
		addr, host := m[1], m[2]
		// sslmode=prefer: pgx tries TLS, then plain, as two attempts;
		// libpq falls back on the same connection and says nothing.
		if strings.Contains(e.Error(), "tls error: server refused TLS connection") && i+1 < len(errs) &&
			strings.HasPrefix(errs[i+1].Error(), addr+" (") {
			continue
		}
		socket := strings.HasPrefix(addr, "/")
		var line string
		if socket {
			line = fmt.Sprintf("connection to server on socket \"%s\" failed: ", addr)
		} else {
			ip, port, _ := net.SplitHostPort(addr)
			if host == ip {
				line = fmt.Sprintf("connection to server at \"%s\", port %s failed: ", host, port)
			} else {
				line = fmt.Sprintf("connection to server at \"%s\" (%s), port %s failed: ", host, ip, port)
			}
		}
		once(line + connectCause(e, socket))
	}
	return b.String(), true
}

// connectCause is why one attempt failed, as libpq says it.
func connectCause(e error, socket bool) string {
	var pe *pgconn.PgError
	if errors.As(e, &pe) {
		return LibpqMessage(pe, "", "")
	}
	hint := "\tIs the server running on that host and accepting TCP/IP connections?\n"
	if socket {
		hint = "\tIs the server running locally and accepting connections on that socket?\n"
	}
	var errno syscall.Errno
	switch {
	case errors.As(e, &errno) && (errno == syscall.ECONNREFUSED || errno == syscall.ENOENT):
		return capitalized(errno.Error()) + "\n" + hint
	case errors.As(e, &errno):
		return capitalized(errno.Error()) + "\n"
	case errors.Is(e, os.ErrDeadlineExceeded) || pgconn.Timeout(e):
		return "timeout expired\n"
	}
	// pgx's own words, without the address it repeats.
	msg := attempt.ReplaceAllString(e.Error(), "")
	return msg + "\n"
}

func capitalized(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
