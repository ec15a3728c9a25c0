package pg

import (
	"errors"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// neturl is a parsed URL the tests edit.
type neturl struct{ *url.URL }

func (u *neturl) setUser(name, password string) { u.User = url.UserPassword(name, password) }

func (u *neturl) setQuery(key, value string) {
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
}

func parseURL(t *testing.T, s string) *neturl {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatalf("parsing %q: %v", s, err)
	}
	return &neturl{u}
}

func appName(t *testing.T, conn *pgx.Conn) string {
	t.Helper()
	var name string
	if err := conn.QueryRow(testCtx(t), "SHOW application_name").Scan(&name); err != nil {
		t.Fatal(err)
	}
	return name
}

// appURLs returns base three times, with application_name app1, app2, app3.
func appURLs(t *testing.T, base string) []string {
	var urls []string
	for _, app := range []string{"app1", "app2", "app3"} {
		u := parseURL(t, base)
		u.setQuery("application_name", app)
		urls = append(urls, u.String())
	}
	return urls
}

func TestTargetRoundRobin(t *testing.T) {
	ctx := testCtx(t)
	target, err := NewTarget(appURLs(t, srv.NewDatabase(t)))
	if err != nil {
		t.Fatalf("NewTarget: %v", err)
	}
	if n := target.Nodes(); n != 3 {
		t.Errorf("Nodes() = %d, want 3", n)
	}
	want := []string{"app1", "app2", "app3", "app1", "app2", "app3", "app1"}
	for i, w := range want {
		conn, err := target.Connect(ctx)
		if err != nil {
			t.Fatalf("Connect #%d: %v", i, err)
		}
		got := appName(t, conn)
		conn.Close(ctx)
		if got != w {
			t.Errorf("Connect #%d reached %q, want %q", i, got, w)
		}
	}
	// ConnectNode picks the node and leaves the rotation alone.
	for i, w := range []string{"app3", "app1"} {
		conn, err := target.ConnectNode(ctx, 2*(1-i))
		if err != nil {
			t.Fatalf("ConnectNode: %v", err)
		}
		if got := appName(t, conn); got != w {
			t.Errorf("ConnectNode(%d) reached %q, want %q", 2*(1-i), got, w)
		}
		conn.Close(ctx)
	}
	conn, err := target.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if got := appName(t, conn); got != "app2" {
		t.Errorf("Connect after ConnectNode reached %q, want app2", got)
	}
}

// TestTargetRoundRobinConcurrent: connections made at once still spread
// evenly.
func TestTargetRoundRobinConcurrent(t *testing.T) {
	ctx := testCtx(t)
	target, err := NewTarget(appURLs(t, srv.NewDatabase(t)))
	if err != nil {
		t.Fatalf("NewTarget: %v", err)
	}
	const n = 12
	var (
		mu     sync.Mutex
		counts = map[string]int{}
		wg     sync.WaitGroup
	)
	for range n {
		wg.Go(func() {
			conn, err := target.Connect(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close(ctx)
			var name string
			if err := conn.QueryRow(ctx, "SHOW application_name").Scan(&name); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			counts[name]++
			mu.Unlock()
		})
	}
	wg.Wait()
	for _, app := range []string{"app1", "app2", "app3"} {
		if counts[app] != n/3 {
			t.Errorf("%d concurrent connects: %v, want %d on each node", n, counts, n/3)
			break
		}
	}
}

func TestTargetDefaults(t *testing.T) {
	ctx := testCtx(t)
	base := srv.NewDatabase(t)
	target, err := NewTarget([]string{base})
	if err != nil {
		t.Fatalf("NewTarget: %v", err)
	}
	conn, err := target.Connect(ctx)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	defer conn.Close(ctx)
	if got := appName(t, conn); got != "txload" {
		t.Errorf("default application_name = %q, want txload", got)
	}
	if got := target.configs[0].ConnectTimeout; got != DefaultConnectTimeout {
		t.Errorf("default ConnectTimeout = %v, want %v", got, DefaultConnectTimeout)
	}

	// Settings from the URL win over the defaults.
	u := parseURL(t, base)
	u.setQuery("connect_timeout", "3")
	u.setQuery("application_name", "mine")
	target, err = NewTarget([]string{u.String()})
	if err != nil {
		t.Fatalf("NewTarget: %v", err)
	}
	if got := target.configs[0].ConnectTimeout; got != 3*time.Second {
		t.Errorf("ConnectTimeout = %v, want 3s from the URL", got)
	}
	conn2, err := target.Connect(ctx)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	defer conn2.Close(ctx)
	if got := appName(t, conn2); got != "mine" {
		t.Errorf("application_name = %q, want mine from the URL", got)
	}
}

// TestTargetURLs: URLs() hides passwords; the embedded server trusts local
// connections, so a URL with a password still connects.
func TestTargetURLs(t *testing.T) {
	base := parseURL(t, srv.NewDatabase(t))
	withPW := parseURL(t, base.String())
	withPW.setUser(base.User.Username(), "t0pSecretPW")
	urls := []string{withPW.String(), base.String(), "host=127.0.0.1 user=alice password='kv secret' dbname=shop"}
	target, err := NewTarget(urls)
	if err != nil {
		t.Fatalf("NewTarget: %v", err)
	}
	got := target.URLs()
	if len(got) != len(urls) {
		t.Fatalf("URLs() = %q, want %d entries", got, len(urls))
	}
	for i, u := range urls {
		if got[i] != Redact(u) {
			t.Errorf("URLs()[%d] = %q, want %q", i, got[i], Redact(u))
		}
		for _, s := range []string{"t0pSecretPW", "kv secret"} {
			if strings.Contains(got[i], s) {
				t.Errorf("URLs()[%d] = %q leaks %q", i, got[i], s)
			}
		}
	}
	if got[1] != base.String() {
		t.Errorf("URLs()[1] = %q, want the password-less URL unchanged (%q)", got[1], base.String())
	}
	if msg := target.Scrub("auth t0pSecretPW / kv secret"); msg != "auth xxxxx / xxxxx" {
		t.Errorf("Scrub = %q", msg)
	}
	// The caller's slice is copied: changing it changes nothing.
	urls[0] = "postgres://changed@127.0.0.1/x"
	if target.URLs()[0] != got[0] {
		t.Errorf("NewTarget kept the caller's slice: URLs()[0] = %q", target.URLs()[0])
	}

	if os.Getenv("TXLOAD_TEST_URL") != "" {
		return // a server of unknown authentication
	}
	conn, err := target.ConnectNode(testCtx(t), 0)
	if err != nil {
		t.Fatalf("ConnectNode(0) with a password on a trusting server: %v", err)
	}
	conn.Close(t.Context())
}

func TestNewTargetErrors(t *testing.T) {
	tests := []struct {
		name   string
		urls   []string
		secret string
		want   string // the error contains this
		empty  bool   // the error is ErrEmptyURL, for the CLI's exit code 2
	}{
		{name: "no urls", urls: nil, want: "--url is empty: give a database URL such as postgres://user@host:5432/db", empty: true},
		{name: "empty list", urls: []string{}, want: "--url is empty", empty: true},
		{name: "empty url", urls: []string{""}, want: "--url is empty", empty: true},
		{name: "blank url", urls: []string{" \t"}, want: "--url is empty", empty: true},
		{name: "second url empty", urls: []string{"postgres://u@127.0.0.1/db", ""}, want: "--url is empty", empty: true},
		{
			name: "bad port", urls: []string{"postgres://u:s3cretPW@127.0.0.1:notaport/db"},
			secret: "s3cretPW", want: "parsing --url postgres://u:xxxxx@127.0.0.1:notaport/db: ",
		},
		{
			name: "second url bad", urls: []string{"postgres://u@127.0.0.1/db", "postgres://u:s3cretPW@127.0.0.1:99999999/db"},
			secret: "s3cretPW", want: "parsing --url postgres://u:xxxxx@127.0.0.1:99999999/db: ",
		},
		{
			name: "bad key=value", urls: []string{"host=127.0.0.1 password=s3cretPW sslmode=bogus"},
			secret: "s3cretPW", want: "parsing --url host=127.0.0.1 password=xxxxx sslmode=bogus: ",
		},
		{
			name: "unescaped # @ / in password", urls: []string{"postgres://alice:p#ss@ss/w0rd@127.0.0.1:1/shop"},
			secret: "ss/w0rd", want: "--url postgres://xxxxx@127.0.0.1:1/shop does not parse cleanly: a password with @, /, ? or # must be percent-encoded (@ as %40, / as %2F, ? as %3F, # as %23)",
		},
		{
			// libpq and pgx read up to the first @: "PW@127.0.0.1" as the host.
			name: "unescaped @ in password", urls: []string{"postgres://dave:S3cret@PW@127.0.0.1:5611/postgres"},
			secret: "S3cret@PW", want: "--url postgres://xxxxx@127.0.0.1:5611/postgres does not parse cleanly",
		},
		{
			name: "unescaped @ in password, no path", urls: []string{"postgres://dave:S3cret@PW@127.0.0.1:5611"},
			secret: "S3cret@PW", want: "--url postgres://xxxxx@127.0.0.1:5611 does not parse cleanly",
		},
		{
			name: "unescaped / after user:pass", urls: []string{"postgres://alice:pass/word@127.0.0.1/shop"},
			secret: "pass/word", want: "--url postgres://xxxxx@127.0.0.1/shop does not parse cleanly",
		},
		{
			name: "bad percent-encoding in password", urls: []string{"postgres://u:s3cret%zzPW@127.0.0.1/db"},
			secret: "s3cret", want: "parsing --url postgres://u:xxxxx@127.0.0.1/db: ",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target, err := NewTarget(tt.urls)
			if err == nil {
				t.Fatalf("NewTarget(%q) = %v, want an error", tt.urls, target)
			}
			t.Logf("error: %v", err)
			if target != nil {
				t.Errorf("NewTarget returned a target with its error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			if got := errors.Is(err, ErrEmptyURL); got != tt.empty {
				t.Errorf("errors.Is(%v, ErrEmptyURL) = %v, want %v", err, got, tt.empty)
			}
			if tt.secret != "" && strings.Contains(err.Error(), tt.secret) {
				t.Errorf("error %q leaks the password", err)
			}
		})
	}
}

// TestConnectErrorOnce: pgx reports each attempt on a line of its own, and
// with sslmode=prefer it makes two per address (TLS, then plain): the
// message says each failure once, on one line.
func TestConnectErrorOnce(t *testing.T) {
	tests := []struct {
		name, url string
		want      string // exact message; "" when it depends on the resolver
		contains  []string
	}{
		{
			name: "refused",
			url:  "postgres://alice:hunter2PW@127.0.0.1:1/shop",
			want: "connecting to postgres://alice:xxxxx@127.0.0.1:1/shop: 127.0.0.1:1 (127.0.0.1): connect: connection refused",
		},
		{
			name: "refused without TLS",
			url:  "postgres://alice@127.0.0.1:1/shop?sslmode=disable",
			want: "connecting to postgres://alice@127.0.0.1:1/shop?sslmode=disable: 127.0.0.1:1 (127.0.0.1): connect: connection refused",
		},
		{
			name: "two refusing hosts",
			url:  "postgres://alice@127.0.0.1:1,127.0.0.1:2/shop",
			want: "connecting to postgres://alice@127.0.0.1:1,127.0.0.1:2/shop: 127.0.0.1:1 (127.0.0.1): connect: connection refused; 127.0.0.1:2 (127.0.0.1): connect: connection refused",
		},
		{
			name:     "name that does not resolve",
			url:      "postgres://alice@no-such-host.invalid:5432/shop",
			contains: []string{"connecting to postgres://alice@no-such-host.invalid:5432/shop: hostname resolving error: lookup no-such-host.invalid"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target, err := NewTarget([]string{tt.url})
			if err != nil {
				t.Fatal(err)
			}
			conn, err := target.Connect(testCtx(t))
			if err == nil {
				conn.Close(testCtx(t))
				t.Fatalf("connecting to %s succeeded", tt.url)
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("message has several lines: %q", msg)
			}
			if tt.want != "" && msg != tt.want {
				t.Errorf("message\n %q, want\n %q", msg, tt.want)
			}
			for _, c := range tt.contains {
				if !strings.Contains(msg, c) {
					t.Errorf("message %q lacks %q", msg, c)
				}
			}
			// No failure is told twice.
			for _, part := range strings.Split(strings.TrimPrefix(msg, "connecting to "+Redact(tt.url)+": "), "; ") {
				if n := strings.Count(msg, part); n > 1 {
					t.Errorf("message %q says %q %d times", msg, part, n)
				}
				if i := strings.Index(part, "lookup "); i >= 0 && strings.Count(msg, part[i:]) > 1 {
					t.Errorf("message %q repeats %q", msg, part[i:])
				}
			}
		})
	}
}

// Pin sends every connection, pgx's and the executor's, to one host of a
// multi-host URL, whatever the order of its hosts says; Pin("") undoes it.
func TestTargetPin(t *testing.T) {
	ctx := testCtx(t)
	u := parseURL(t, srv.NewDatabase(t))
	live := u.Host
	u.Host = "127.0.0.1:1," + live // nothing listens on port 1: the URL falls back to the server
	u.setQuery("connect_timeout", "5")
	target, err := NewTarget([]string{u.String()})
	if err != nil {
		t.Fatal(err)
	}
	connect := func() error {
		conn, err := target.Connect(ctx)
		if err == nil {
			conn.Close(ctx)
		}
		raw, rerr := target.ConnectRaw(ctx)
		if rerr == nil {
			raw.Close(ctx)
		}
		return errors.Join(err, rerr)
	}
	if err := connect(); err != nil {
		t.Fatalf("unpinned: %v", err)
	}
	if err := target.Pin("127.0.0.1:1"); err != nil {
		t.Fatal(err)
	}
	err = connect()
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1 (") || strings.Contains(err.Error(), live+" (") {
		t.Fatalf("pinned to 127.0.0.1:1: %v, want a failure there alone", err)
	}
	if err := target.Pin(live); err != nil {
		t.Fatal(err)
	}
	if err := connect(); err != nil {
		t.Fatalf("pinned to %s: %v", live, err)
	}
	if err := target.Pin("127.0.0.1:2"); err == nil || !strings.Contains(err.Error(), "none of its URLs names that host") {
		t.Fatalf("pinned to a host no URL names: %v", err)
	}
	if err := target.Pin(""); err != nil {
		t.Fatal(err)
	}
	if err := connect(); err != nil {
		t.Fatalf("unpinned again: %v", err)
	}
}
